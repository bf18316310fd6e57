"""The grammars' fast paths (a common delta taken in one step) leave every other event to the
general path: an event that misses any of a fast path's conditions gets the general path's exact
error, or its exact output (speed without a behaviour change)."""

from __future__ import annotations

import orjson
import pytest

from proxai.core.errors import ProxaiError
from proxai.core.model import Protocol
from proxai.core.sse import SseScanner, encode_event
from proxai.pipeline.flow import make_stream_translator

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES


def _a(etype: str, **fields: object) -> bytes:
    return encode_event(orjson.dumps({"type": etype, **fields}), etype)


def _c(delta: object, *, index: object = 0, id: str = "c1") -> bytes:
    chunk = {"id": id, "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return encode_event(orjson.dumps({**chunk, "choices": [{"index": index, "delta": delta}]}))


def _r(etype: str, **fields: object) -> bytes:
    return encode_event(orjson.dumps({"type": etype, **fields}), etype)


A_OPEN = _a("message_start", message={"id": "msg_1", "model": "m", "usage": {"input_tokens": 1}}) + _a(
    "content_block_start", index=0, content_block={"type": "text", "text": ""}
)
C_OPEN = _c({"role": "assistant"})
R_OPEN = (
    _r("response.created", response={"id": "resp_1", "model": "m"})
    + _r("response.output_item.added", item={"id": "msg_1", "type": "message"})
    + _r(
        "response.content_part.added",
        item_id="msg_1",
        content_index=0,
        part={"type": "output_text", "text": ""},
    )
    + _r("response.output_item.added", item={"id": "rs_1", "type": "reasoning"})
)


def _run(up: Protocol, body: bytes) -> tuple[bytes, str | None]:
    """The output and the error (``type: text``) of both pairs from ``up``, which must agree on
    the error; returns the first pair's."""
    results = []
    for client in Protocol:
        if client is up:
            continue
        t = make_stream_translator(up, client)
        try:
            results.append((t.feed(SseScanner().feed(body)), None))
        except ProxaiError as exc:
            results.append((b"", f"{type(exc).__name__}: {exc}"))
    assert results[0][1] == results[1][1]
    return results[0]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            A_OPEN + _a("content_block_delta", index=0, delta={"type": "text_delta", "text": 5}),
            "UpstreamProtocolError: text_delta without text (index 0)",
        ),
        (
            # a delta of another block's type: dropped, as the SDKs drop it (a conformance finding)
            A_OPEN + _a("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "x"}),
            None,
        ),
        (
            A_OPEN + _a("content_block_delta", index="x", delta={"type": "text_delta", "text": "x"}),
            "UpstreamProtocolError: content_block_delta index 'x' names no block",
        ),
        (  # the SDKs read "0" as 0
            A_OPEN + _a("content_block_delta", index="0", delta={"type": "text_delta", "text": "x"}),
            None,
        ),
        (
            A_OPEN + _a("content_block_delta", index=0, delta={"type": ["text_delta"], "text": "x"}),
            "UpstreamProtocolError: content_block_delta without a delta type (index 0)",
        ),
        # a delta type ProxAI does not know is Anthropic content it carries as it came (normalize)
        # or leaves out with a count (translation), not a refusal
        (A_OPEN + _a("content_block_delta", index=0, delta={"type": "new_delta", "x": 1}), None),
        (
            A_OPEN
            + _a("content_block_stop", index=0)
            + _a("content_block_delta", index=0, delta={"type": "text_delta", "text": "x"}),
            None,  # the SDKs append it to the stopped block: read
        ),
        (
            A_OPEN + _a("content_block_delta", index=1, delta={"type": "text_delta", "text": "x"}),
            None,  # a block that never started: the Python SDK raises, Node drops it (a finding)
        ),
        (
            A_OPEN
            + _a("content_block_stop", index=0)
            + _a("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": "{}"}),
            None,  # arguments for a text block: dropped
        ),
        (
            A_OPEN
            + _a("content_block_start", index=1, content_block={"type": "tool_use", "id": "t", "name": "f"})
            + _a("content_block_stop", index=1)
            + _a("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": "{}"}),
            None,  # the input it had ({}): left out
        ),
        (
            A_OPEN
            + _a("content_block_start", index=1, content_block={"type": "tool_use", "id": "t", "name": "f"})
            + _a("content_block_stop", index=1)
            + _a("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": "[1]"}),
            "SemanticStreamError: input_json_delta for tool block 1 after its content_block_stop changes the "
            "input of a call the client already has whole",
        ),
        (A_OPEN + _a("content_block_delta", index=0, delta={"type": "text_delta", "text": ""}), None),
    ],
)
def test_anthropic_deltas_off_the_hot_path(body: bytes, error: str | None) -> None:
    assert _run(A, body)[1] == error


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            C_OPEN + _c({"content": 5}),
            "TranslationError: choices[0].delta.content: delta content that is neither text nor a list "
            "of parts cannot be translated",
        ),
        (
            C_OPEN + _c({"content": "x"}, index=1),
            "TranslationError: choices[].index: only choice index 0 can be translated",
        ),
        (C_OPEN + _c({"content": "x"}, id="c2"), None),  # the SDK reads on (Groq's web search)
        # an entry that is no object: openai-node skips it (rule openai_chat.tool_call_object), so
        # does the translation; an object without an index or an id cannot be keyed
        (C_OPEN + _c({"tool_calls": [5]}), None),
        (
            C_OPEN + _c({"tool_calls": [{"function": {"arguments": "{}"}}]}),
            "UpstreamProtocolError: tool call delta without an integer index or an id",
        ),
        (C_OPEN + _c({"tool_calls": "x"}), "UpstreamProtocolError: delta.tool_calls is not an array"),
        # openai-python reads a choice index true as choice 1 (rule openai_chat.choice_index_bool)
        (
            C_OPEN + _c({"content": "x"}, index=True),
            "TranslationError: choices[].index: only choice index 0 can be translated",
        ),
        (C_OPEN + _c({"content": "x"}, index=False), None),  # choice 0 (the rule's finding)
        (C_OPEN + _c({"content": ""}) + _c({"tool_calls": []}), None),
    ],
)
def test_chat_deltas_off_the_hot_path(body: bytes, error: str | None) -> None:
    assert _run(C, body)[1] == error


def test_chat_hot_path_output_equals_the_general_paths() -> None:
    """A content-only delta (hot) and the same text with a ``role`` (general) read alike."""
    hot, _ = _run(C, C_OPEN + _c({"content": "hi"}))
    general, _ = _run(C, C_OPEN + _c({"content": "hi", "role": "assistant"}))
    assert hot == general and b'"text_delta","text":"hi"' in hot


@pytest.mark.parametrize(
    ("body", "error"),
    [
        # a delta that is no string is not read (rule openai_responses.text_delta_type; a reasoning
        # one: the note openai_responses.delta_not_string)
        (R_OPEN + _r("response.output_text.delta", item_id="msg_1", content_index=0, delta=5), None),
        (
            R_OPEN + _r("response.output_text.delta", item_id="msg_1", content_index=1, delta="x"),
            "SemanticStreamError: response.output_text.delta for 'msg_1' part 1 without content_part.added",
        ),
        (
            R_OPEN + _r("response.output_text.delta", item_id="rs_1", content_index=0, delta="x"),
            "SemanticStreamError: response.output_text.delta inside a reasoning item ('rs_1')",
        ),
        (
            R_OPEN
            + _r("response.output_item.done", item={"id": "msg_1", "type": "message"})
            + _r("response.output_text.delta", item_id="msg_1", content_index=0, delta="x"),
            "SemanticStreamError: response.output_text.delta for item 'msg_1' after output_item.done",
        ),
        (
            R_OPEN + _r("response.function_call_arguments.delta", item_id="msg_1", delta="{"),
            "SemanticStreamError: openai_responses: response.function_call_arguments.delta"
            " for a message item",
        ),
        (
            R_OPEN + _r("response.reasoning_text.delta", item_id="rs_2", delta="x"),
            "SemanticStreamError: openai_responses: response.reasoning_text.delta for item 'rs_2'"
            " that was never added",
        ),
        (R_OPEN + _r("response.reasoning_text.delta", item_id="rs_1", delta=7), None),
        (R_OPEN + _r("response.output_text.delta", item_id="msg_1", content_index=True, delta="x"), None),
        (R_OPEN + _r("response.reasoning_text.delta", item_id="rs_1", delta=""), None),
    ],
)
def test_responses_deltas_off_the_hot_path(body: bytes, error: str | None) -> None:
    assert _run(R, body)[1] == error


def test_responses_reasoning_block_opens_on_an_empty_delta() -> None:
    """The general path opens the thinking block before reading the delta; so does the hot one."""
    out, err = _run(R, R_OPEN + _r("response.reasoning_text.delta", item_id="rs_1", delta=""))
    assert err is None  # (Responses -> Anthropic) the thinking block after the text block
    assert b'"index":1,"content_block":{"type":"thinking"' in out


def test_responses_delta_format_keeps_a_percent_in_the_item_id() -> None:
    """The Responses writer formats a delta with one ``bytes %`` of a pre-serialized event: a
    ``%`` in a source tool id (the item id, passed through) is text, not a conversion."""
    tid = "toolu_%s%%d%"
    body = (
        _a("message_start", message={"id": "msg_1", "model": "m", "usage": {"input_tokens": 1}})
        + _a(
            "content_block_start",
            index=0,
            content_block={"type": "tool_use", "id": tid, "name": "f", "input": {}},
        )
        + _a(
            "content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": '{"a": "%d"}'}
        )
        + _a("content_block_stop", index=0)
        + _a("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 1})
        + _a("message_stop")
    )
    t = make_stream_translator(A, R)
    out = t.feed(SseScanner().feed(body)) + t.finish()
    deltas = [e for e in SseScanner().feed(out) if e.event == "response.function_call_arguments.delta"]
    assert len(deltas) == 1
    payload = orjson.loads(deltas[0].data)
    assert (payload["item_id"], payload["delta"], payload["output_index"]) == (tid, '{"a": "%d"}', 0)
    assert payload["sequence_number"] == 3  # created, in_progress, output_item.added
