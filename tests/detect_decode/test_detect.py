"""detect.py: which requests are LLM generations, and of which protocol."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.core.detect import detect_protocol, parse_protocol, sniff_protocol
from proxai.core.model import Protocol

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/messages", A),
        ("/v1/messages?beta=true", A),
        ("/anthropic/v1/messages", A),
        ("/api/proxy/v1/messages/", A),
        ("/v1/chat/completions", C),
        ("/openai/v1/chat/completions", C),
        ("/chat/completions", C),
        ("/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21", C),
        ("/v1/responses", R),
        ("/openai/v1/responses?api-version=preview", R),
        ("/openai/responses?api-version=2025-04-01-preview", R),
        ("/openai/deployments/my-dep/responses?api-version=2025-04-01-preview", R),
        ("/base/v1/responses", R),
        ("/v1/messages/count_tokens", None),
        ("/v1/messages/batches", None),
        ("/v1/responses/resp_123", None),
        ("/v1/responses/resp_123/input_items", None),
        ("/v1/completions", None),
        ("/v1/embeddings", None),
        ("/responses", None),
        ("/", None),
        ("", None),
    ],
)
def test_paths(path: str, expected: Protocol | None) -> None:
    assert detect_protocol("POST", path) is expected


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "OPTIONS", "HEAD"])
def test_post_only(method: str) -> None:
    assert detect_protocol(method, "/v1/chat/completions") is None
    assert detect_protocol(method, "/v1/messages") is None


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/responses/resp_1?stream=true&starting_after=6", R),
        ("/v1/responses/resp_1?starting_after=6&stream=true", R),
        ("/v1/responses/resp_1?stream=true", R),
        ("/openai/v1/responses/resp_1?api-version=preview&stream=true", R),
        ("/v1/responses/resp_1", None),
        ("/v1/responses/resp_1?stream=false", None),
        ("/v1/responses/resp_1?xstream=true", None),
        ("/v1/responses/resp_1/input_items?stream=true", None),
        ("/v1/responses?stream=true", None),
    ],
)
def test_a_background_response_stream_is_a_get(path: str, expected: Protocol | None) -> None:
    """``GET /v1/responses/{id}?stream=true`` (optionally ``starting_after=N``) replays or resumes
    a background response's stream: a Responses stream."""
    assert detect_protocol("GET", path) is expected
    assert detect_protocol("DELETE", path) is None


def test_method_case() -> None:
    assert detect_protocol("post", "/v1/responses") is R


@pytest.mark.parametrize(
    ("body", "anthropic_headers", "expected"),
    [
        (b'{"model":"m","input":"hi"}', False, R),
        (b'{"model":"m","messages":[{"role":"user","content":"hi"}]}', False, C),
        (b'{"model":"m","messages":[{"role":"user","content":"hi"}]}', True, A),
        (b'{"model":"m","system":"s","messages":[{"role":"user","content":"hi"}],"max_tokens":5}', False, A),
        (b'{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5}', False, A),
        (b'{"model":"m","messages":[{"role":"system","content":"s"}],"max_tokens":5}', False, C),
        (b'{"model":"m","messages":[],"max_tokens":5,"n":1}', False, C),
        (b'{"model":"m","prompt":"hi"}', False, None),
        (b"[1,2]", False, None),
        (b"not json", False, None),
        (b"", False, None),
    ],
)
def test_sniff(body: bytes, anthropic_headers: bool, expected: Protocol | None) -> None:
    assert sniff_protocol(body, anthropic_headers=anthropic_headers) is expected


def test_parse_protocol() -> None:
    assert parse_protocol("openai_chat") is C
    assert parse_protocol(" Anthropic ") is A
    assert parse_protocol("responses") is R
    with pytest.raises(ValueError):
        parse_protocol("gemini")


def _each_pattern_in_order(path: str) -> Protocol | None:
    """The paths' rule as the three patterns state it, each tried in order (what
    ``detect_protocol`` gave before it picked the one pattern by the path's last segment)."""
    from proxai.core import detect

    p = detect._strip_query(path)
    for pattern, protocol in ((detect._MESSAGES, A), (detect._CHAT, C), (detect._RESPONSES, R)):
        if pattern.match(p):
            return protocol
    return None


_PIECES = [
    "/", "v1", "openai", "deployments", "d", "chat", "completions", "messages", "responses",
    "count_tokens", "\n", "?", "#", "x", "/v1/messages", "/chat/completions", "/v1/responses",
]  # fmt: skip


@settings(max_examples=3000, derandomize=True)
@given(st.lists(st.sampled_from(_PIECES), max_size=10))
def test_the_last_segment_picks_the_pattern_that_can_match(pieces: list[str]) -> None:
    path = "".join(pieces)
    assert detect_protocol("POST", path) is _each_pattern_in_order(path)
