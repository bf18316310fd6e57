"""xAI's ``custom_tool_call`` items (docs/design/translation.md, "xAI's custom_tool_call"): a call
whose name is not one of the client's declared custom tools is one the server already ran (X
Search's ``x_keyword_search`` / ``view_x_video``, answered in the same response): on a translated
route it is left out with a note and counted, the answer arrives, and the summary does not count
it as the client's; a response that ends on such a call with no answer after it is a typed error
in the client's protocol. A ``custom_tool_call`` of a tool the client declared is the client's.

The xAI stream is a real recording (tests/fixtures/real/SOURCES.md) carried by the addon's real
``Carrier``; the short streams are written here in the recording's shape.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import orjson
import pytest
from corpus import run as corpus_run
from corpus import streams

from proxai.core.model import Outcome, Protocol, StopClass
from proxai.pipeline.flow import Translation, make_stream_translator
from proxai.pipeline.observe import StreamObserver
from proxai.protocols.conformance import Asked

from .harness import carry, sdk_anthropic, sdk_chat, sdk_responses

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
XAI = "responses/xai--vercel-ai--xai-x-search-tool.rebuilt.sse"
_STREAM = {s.name: s for s in streams.load()}[XAI]
_WS = "ws_b7b464ea-cc85-d44a-0f2f-1f7320e703c3_call_"
# the summary's tool calls of the recording: the two X Search calls the server ran, four web searches
XAI_CALLS = [
    ("xs_call_24148162", "x_keyword_search", "server_tool"),
    ("xs_call_14963218", "view_x_video", "server_tool"),
    (_WS + "55360208", "web_search_call", "server_tool"),
    (_WS + "63718660", "web_search_call", "server_tool"),
    (_WS + "09546004", "web_search_call", "server_tool"),
    (_WS + "45339693", "web_search_call", "server_tool"),
]
UNANSWERED = (
    "output[].type: the upstream ended on a 'custom_tool_call' item its server ran, with no answer"
    " after it: the client's protocol has no counterpart for it"
)


def _answer() -> str:
    final = sdk_responses(_STREAM.body())
    return "".join(p.text for o in final.output if o.type == "message" for p in o.content)


def _calls(meta: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(t["id"], t["name"], t["kind"]) for t in meta["tool_calls"]]


@pytest.mark.parametrize("client", [None, R])
def test_observe_only_and_normalize_carry_the_calls(client: Protocol | None) -> None:
    got = corpus_run.carry(_STREAM, client)
    if client is None:
        assert got.out == _STREAM.body()
    final = sdk_responses(got.out)
    assert [(o.type, getattr(o, "name", None)) for o in final.output if o.type != "web_search_call"] == [
        ("custom_tool_call", "x_keyword_search"),
        ("custom_tool_call", "view_x_video"),
        ("message", None),
    ]
    meta = got.summary.to_metadata()
    assert (got.summary.outcome, meta["stop_class"], _calls(meta)) == (
        Outcome.COMPLETED,
        "end_turn",
        XAI_CALLS,
    )
    assert got.bugs == []


def test_an_anthropic_client_gets_the_answer_and_a_note() -> None:
    got = corpus_run.carry(_STREAM, A)
    assert got.translation["left_out"] == {"custom_tool_call": 2}
    assert got.translation["notes"] == [
        "left out (no counterpart in the client protocol): custom_tool_call x2"
    ]
    msg = sdk_anthropic(got.out)
    assert [b.type for b in msg.content] == ["server_tool_use", "web_search_tool_result"] * 4 + ["text"]
    assert msg.content[-1].text == _answer()
    assert msg.stop_reason == "end_turn"
    meta = got.summary.to_metadata()
    assert (meta["stop_class"], _calls(meta)) == ("end_turn", XAI_CALLS)


def test_a_chat_client_gets_the_answer_and_a_note() -> None:
    got = corpus_run.carry(_STREAM, C)
    assert got.translation["left_out"] == {"custom_tool_call": 2, "web_search": 4}
    assert got.translation["notes"] == [
        "left out (no counterpart in the client protocol): custom_tool_call x2, web_search x4"
    ]
    final = sdk_chat(got.out)
    assert final.choices[0].message.content == _answer()
    assert final.choices[0].message.tool_calls is None
    assert final.choices[0].finish_reason == "stop"


# -- short streams in the recording's shape ------------------------------------------------------


def _ev(etype: str, **fields: Any) -> bytes:
    return b"event: %b\ndata: %b\n\n" % (etype.encode(), orjson.dumps({"type": etype, **fields}))


CALL = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "xs_call_1", "name": "x_keyword_search"}
MSG = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed"}
TEXT = {"type": "output_text", "text": "Found it.", "annotations": []}
ARGS = '{"query":"from:xai"}'


def _stream(answered: bool) -> bytes:
    done_call = {**CALL, "input": ARGS, "status": "completed"}
    output: list[dict[str, Any]] = [done_call]
    body = _ev("response.created", sequence_number=0, response={"id": "r1", "model": "grok", "output": []})
    body += _ev("response.output_item.added", sequence_number=1, output_index=0, item={**CALL, "input": ""})
    body += _ev(
        "response.custom_tool_call_input.delta",
        sequence_number=2,
        item_id="ctc_1",
        output_index=0,
        delta=ARGS,
    )
    body += _ev(
        "response.custom_tool_call_input.done", sequence_number=3, item_id="ctc_1", output_index=0, input=ARGS
    )
    body += _ev("response.output_item.done", sequence_number=4, output_index=0, item=done_call)
    n = 5
    if answered:
        body += _ev(
            "response.output_item.added", sequence_number=5, output_index=1, item={**MSG, "content": []}
        )
        body += _ev(
            "response.content_part.added",
            sequence_number=6,
            item_id="msg_1",
            output_index=1,
            content_index=0,
            part={**TEXT, "text": ""},
        )
        body += _ev(
            "response.output_text.delta",
            sequence_number=7,
            item_id="msg_1",
            output_index=1,
            content_index=0,
            delta=TEXT["text"],
        )
        body += _ev(
            "response.output_item.done", sequence_number=8, output_index=1, item={**MSG, "content": [TEXT]}
        )
        output.append({**MSG, "content": [TEXT]})
        n = 9
    snap = {"id": "r1", "model": "grok", "status": "completed", "output": output, "usage": {}}
    return body + _ev("response.completed", sequence_number=n, response=snap)


def _carry(
    client: Protocol, body: bytes, custom_tools: frozenset[str] = frozenset()
) -> tuple[bytes, Translation]:
    t = make_stream_translator(R, client, created=1, custom_tools=custom_tools)
    return carry(t, [body]), t


def test_the_answer_after_a_hosted_call_reaches_a_chat_client() -> None:
    out, t = _carry(C, _stream(answered=True))
    assert t.metadata()["left_out"] == {"custom_tool_call": 1}
    final = sdk_chat(out)
    assert (final.choices[0].message.content, final.choices[0].finish_reason) == ("Found it.", "stop")
    summary = t.observer.summary()
    assert summary.stop_class is StopClass.END_TURN
    assert [(c.id, c.name, c.kind, c.arguments_complete) for c in summary.tool_calls] == [
        ("xs_call_1", "x_keyword_search", "server_tool", True)
    ]


def test_a_hosted_call_with_no_answer_is_a_typed_error_for_a_chat_client() -> None:
    out, t = _carry(C, _stream(answered=False))
    assert str(t.error) == UNANSWERED
    with pytest.raises(openai.APIError) as info:
        sdk_chat(out)
    assert info.value.message == UNANSWERED
    assert b"[DONE]" not in out and b'"finish_reason":"stop"' not in out


def test_a_hosted_call_with_no_answer_is_a_typed_error_for_an_anthropic_client() -> None:
    out, t = _carry(A, _stream(answered=False))
    assert str(t.error) == UNANSWERED
    with pytest.raises(anthropic.APIStatusError) as info:
        sdk_anthropic(out)
    assert info.value.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": UNANSWERED},
    }
    assert b"end_turn" not in out


def test_a_declared_custom_tool_is_the_clients_call() -> None:
    """The same call, of a custom tool the Chat client declared: the client's call (the summary's
    kind custom, stop tool_use). The Chat stream writer has no custom tool call delta yet, so the
    streamed translation ends at it with the typed error naming the item (nothing lost silently)."""
    out, t = _carry(C, _stream(answered=False), frozenset({"x_keyword_search"}))
    message = (
        "output[].type: the upstream answered with a 'custom_tool_call' item, which the client must act on"
        " and its protocol has no counterpart for"
    )
    assert str(t.error) == message
    with pytest.raises(openai.APIError) as info:
        sdk_chat(out)
    assert info.value.message == message
    obs = StreamObserver(
        R, start=0.0, capture=True, asked=Asked(custom_tools=frozenset({"x_keyword_search"}))
    )
    obs.headers(200, 0.0)
    obs.observe(_stream(answered=False), 0.0)
    summary = obs.finish(0.0)
    assert summary.stop_class is StopClass.TOOL_USE
    assert [(c.id, c.name, c.kind, c.arguments) for c in summary.tool_calls] == [
        ("xs_call_1", "x_keyword_search", "custom", ARGS)
    ]
