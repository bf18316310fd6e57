"""The one request reader of each protocol, read liberally (``read_request(..., strict=False)``):
total on any JSON, the first refusal is the error a strict reading raises, and what it cannot
read stands at its place as an ``UnreadPart`` (docs/design/request-reading.md)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.core.errors import TranslationError
from proxai.core.model import Protocol
from proxai.translate import ir
from proxai.translate.request import read_request

KEYS = [
    "model", "messages", "input", "system", "instructions", "role", "content", "type", "text", "tools",
    "tool_calls", "tool_call_id", "name", "id", "arguments", "input_schema", "call_id", "output",
    "tool_use_id", "thinking", "reasoning", "summary", "top_k", "n", "function", "tool_choice",
]  # fmt: skip
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(KEYS), kids, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(body=JSON, protocol=st.sampled_from(list(Protocol)))
def test_a_liberal_reading_is_total_and_its_first_refusal_is_the_strict_error(
    body: Any, protocol: Protocol
) -> None:
    liberal = read_request(body, protocol, strict=False)
    try:
        strict = read_request(body, protocol) if isinstance(body, dict) else None
    except TranslationError as exc:
        assert liberal.refused and str(liberal.refused[0]) == str(exc)
    else:
        if strict is not None:
            assert liberal == strict and not liberal.refused


def test_what_the_translation_refuses_is_kept_at_its_place() -> None:
    body = {
        "model": "claude",
        "top_k": 5,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "search_result", "x": 1}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls"}]},
        ],
    }
    with pytest.raises(TranslationError, match="top_k"):
        read_request(body, Protocol.ANTHROPIC_MESSAGES)
    req = read_request(body, Protocol.ANTHROPIC_MESSAGES, strict=False)
    assert [str(e) for e in req.refused] == [
        "top_k: top_k has no equivalent in OpenAI APIs",
        "messages[0].content[1].type: content block type 'search_result' cannot be translated",
        "messages[1].content[0].input: Field required",
    ]
    assert req.messages == (
        ir.Message(
            "user",
            (
                ir.TextPart("hi", "messages[0].content[0]"),
                ir.UnreadPart(
                    {"type": "search_result", "x": 1},
                    "content block type 'search_result' cannot be translated",
                    "messages[0].content[1]",
                ),
            ),
            "messages[0]",
        ),
        ir.Message(
            "assistant",
            (
                ir.UnreadPart(
                    {"type": "tool_use", "id": "t1", "name": "ls"}, "Field required", "messages[1].content[0]"
                ),
            ),
            "messages[1]",
        ),
    )


def test_a_chat_message_of_an_unknown_role_is_kept_whole() -> None:
    body = {
        "messages": [{"role": "function", "name": "f", "content": "x"}, {"role": "user", "content": "go"}]
    }
    req = read_request(body, Protocol.OPENAI_CHAT, strict=False)
    assert req.messages == (
        ir.Message(
            "user",
            (
                ir.UnreadPart(
                    body["messages"][0],
                    "role 'function' (legacy function result) has no tool_call_id to reference;"
                    " use role 'tool'",
                    "messages[0]",
                ),
            ),
            "messages[0]",
        ),
        ir.Message("user", (ir.TextPart("go", "messages[1].content"),), "messages[1]"),
    )


def test_a_body_that_is_not_an_object_reads_as_empty() -> None:
    req = read_request([1, 2], Protocol.OPENAI_RESPONSES, strict=False)
    assert req.messages == () and str(req.refused[0]) == "body: the request body must be a JSON object"
