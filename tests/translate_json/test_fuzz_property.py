"""Property: arbitrary JSON bodies never raise anything but ProxAI's typed errors (docs/design/core.md
"hypothesis: arbitrary bytes raise nothing but our typed errors"), for requests (client input,
the trust boundary) and JSON responses / error bodies (upstream input), in all directions."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.core.errors import ProxaiError
from proxai.core.model import Protocol
from proxai.translate.errors import translate_error
from proxai.translate.request import parse_body, translate_request
from proxai.translate.response import load_json, translate_response

PAIRS = [(a, b) for a in Protocol for b in Protocol if a is not b]

KEYS = [
    "model", "messages", "role", "content", "type", "text", "tool_calls", "id", "function", "name",
    "arguments", "tool_call_id", "input", "system", "tools", "tool_choice", "max_tokens", "stream",
    "image_url", "url", "source", "data", "media_type", "tool_use_id", "choices", "message", "output",
    "status", "usage", "stop_reason", "finish_reason", "call_id", "instructions", "reasoning", "thinking",
    "refusal", "summary", "encrypted_content", "stop", "temperature", "file", "file_data", "parameters",
]  # fmt: skip
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False), st.text(max_size=8),
    st.sampled_from(["user", "assistant", "system", "tool", "function", "text", "image", "tool_use",
                     "tool_result", "function_call", "function_call_output", "message", "reasoning",
                     "custom", "image_url", "input_text", "output_text", "refusal", "{}", "data:a;base64,x"]),
)  # fmt: skip
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=6),
    ),
    max_leaves=30,
)
bodies = st.dictionaries(st.sampled_from(KEYS), values, max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies, pair=st.sampled_from(PAIRS))
def test_requests_raise_only_typed_errors(body: dict[str, Any], pair: tuple[Protocol, Protocol]) -> None:
    with contextlib.suppress(ProxaiError):
        translate_request(body, pair[0], pair[1])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies, pair=st.sampled_from(PAIRS))
def test_responses_raise_only_typed_errors(body: dict[str, Any], pair: tuple[Protocol, Protocol]) -> None:
    with contextlib.suppress(ProxaiError):
        translate_response(body, pair[0], pair[1])


@settings(max_examples=100, deadline=None)
@given(raw=st.binary(max_size=200), status=st.integers(100, 599), client=st.sampled_from(list(Protocol)))
def test_bytes_raise_only_typed_errors(raw: bytes, status: int, client: Protocol) -> None:
    for fn in (parse_body, load_json):
        with contextlib.suppress(ProxaiError):
            fn(raw)
    te = translate_error(raw, status, client)
    assert te.status >= 400
