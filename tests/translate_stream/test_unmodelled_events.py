"""Events the Responses grammar does not model (docs/design/protocol-grammars.md, "Events the
grammars do not model"), through the addon's real ``Carrier`` in every mode, the client's bytes
read by the official Python SDK: an SSE comment a gateway sends while it works, a ``keepalive``
event, an event type no SDK knows, an MCP call that fails (``response.mcp_call.failed``) and is
tried again, and a usage object that carries a ``cost``. Never a refusal: each is noted, normalize
mode carries what an SDK reads, a translation leaves out what its client has no counterpart for.

No recording in ``tests/fixtures/real`` shows these Responses events; the body is written from
the API's event shapes (the Python SDK's types hold ``response.mcp_call.failed``, the Node SDK's
accumulator ``keepalive``, ``ResponseUsage`` a ``cost``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corpus import run as corpus_run
from corpus import streams

from proxai.core.model import Outcome, Protocol

from .harness import sdk_anthropic, sdk_chat, sdk_responses

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES


def _ev(etype: str, seq: int, **fields: Any) -> bytes:
    return (
        f"event: {etype}\ndata: {json.dumps({'type': etype, 'sequence_number': seq, **fields})}\n\n".encode()
    )


R0 = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "status": "in_progress",
    "model": "m",
    "output": [],
}
PART = {"type": "output_text", "text": "", "annotations": []}
MSG = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
DONE_MSG = {**MSG, "status": "completed", "content": [{**PART, "text": "Hi"}]}
USAGE = {
    "input_tokens": 3,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 1,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 4,
    "cost": 0.00012,
}


def _mcp(i: int, status: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"mcp_{i}",
        "type": "mcp_call",
        "server_label": "docs",
        "name": "search",
        "arguments": "",
        "status": status,
        **fields,
    }


FAILED = _mcp(1, "failed", arguments='{"q":"a"}', error="timeout")
RETRIED = _mcp(2, "completed", arguments='{"q":"a"}', output="found")


def _call(i: int, at: int, outcome: str, item: dict[str, Any]) -> list[bytes]:
    loc = {"item_id": f"mcp_{i}", "output_index": i - 1}
    return [
        _ev("response.output_item.added", at, output_index=i - 1, item=_mcp(i, "in_progress")),
        _ev("response.mcp_call_arguments.delta", at + 1, **loc, delta='{"q":"a"}'),
        _ev("response.mcp_call_arguments.done", at + 2, **loc, arguments='{"q":"a"}'),
        _ev("response.mcp_call.in_progress", at + 3, **loc),
        _ev(f"response.mcp_call.{outcome}", at + 4, **loc),
        _ev("response.output_item.done", at + 5, output_index=i - 1, item=item),
    ]


TEXT = {"item_id": "msg_1", "output_index": 2, "content_index": 0}
BODY = b"".join(
    [
        _ev("response.created", 0, response=R0),
        b": keep-alive\n\n",
        _ev("keepalive", 1),
        _ev("response.future_thing", 2, detail="x"),
        *_call(1, 3, "failed", FAILED),
        *_call(2, 9, "completed", RETRIED),
        _ev("response.output_item.added", 15, output_index=2, item=MSG),
        _ev("response.content_part.added", 16, **TEXT, part=PART),
        _ev("response.output_text.delta", 17, **TEXT, delta="Hi", logprobs=[]),
        _ev("response.output_text.done", 18, **TEXT, text="Hi", logprobs=[]),
        _ev("response.content_part.done", 19, **TEXT, part={**PART, "text": "Hi"}),
        _ev("response.output_item.done", 20, output_index=2, item=DONE_MSG),
        _ev(
            "response.completed",
            21,
            response={**R0, "status": "completed", "output": [FAILED, RETRIED, DONE_MSG], "usage": USAGE},
        ),
    ]
)


def _carry(client: Protocol | None) -> corpus_run.Carried:
    path = Path(f"/tmp/proxai-unmodelled-{id(BODY)}.sse")
    path.write_bytes(BODY)
    try:
        got = corpus_run.carry(streams.Stream("responses/u.sse", path, R, "t", "t", False), client)
    finally:
        path.unlink()
    assert got.bugs == []
    return got


def _notes(how_keepalive: str, how_future: str, how_comment: str = "written to the client") -> list[str]:
    return [
        f"event 'keepalive' of no item is not modelled: {how_keepalive}",
        "event type 'response.future_thing' is unknown to the Node SDK",
        f"event 'response.future_thing' of no item is not modelled: {how_future}",
        f"sse.comments: 1 SSE comment line (not events, the SDKs skip them): {how_comment}",
    ]


CALLS = [("mcp_1", "search", "mcp", '{"q":"a"}'), ("mcp_2", "search", "mcp", '{"q":"a"}')]


def test_observed_the_sdk_reads_every_event() -> None:
    ref = sdk_responses(BODY)
    assert [(o.type, o.id, o.status) for o in ref.output] == [
        ("mcp_call", "mcp_1", "failed"),
        ("mcp_call", "mcp_2", "completed"),
        ("message", "msg_1", "completed"),
    ]
    assert (ref.output_text, ref.usage.cost) == ("Hi", 0.00012)
    got = _carry(None)
    assert got.out == BODY
    s = got.summary
    assert (s.outcome, s.stop_reason, s.text_bytes) == (Outcome.COMPLETED, "completed", 2)
    assert [(t.id, t.name, t.kind, t.arguments) for t in s.tool_calls] == CALLS
    assert (s.usage.input_tokens, s.usage.output_tokens, s.usage.total_tokens) == (3, 1, 4)
    assert s.extra["notes"] == _notes("not read", "not read", "passed on in the upstream's bytes")


def test_normalize_carries_what_an_sdk_reads() -> None:
    """The keepalive (the Node SDK's accumulator knows it), the failed call and its retry, and
    the usage's cost reach the client as they came; the event type no SDK knows is left out
    (the Python SDK reads nothing of it, openai-node raises on it)."""
    got = _carry(R)
    types = [json.loads(line[6:])["type"] for line in got.out.split(b"\n") if line.startswith(b"data: ")]
    call = [
        "response.output_item.added",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.in_progress",
    ]
    assert types == [
        "response.created",
        "response.in_progress",
        "keepalive",
        *call,
        "response.mcp_call.failed",
        "response.output_item.done",
        *call,
        "response.mcp_call.completed",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    final = sdk_responses(got.out)
    assert [(o.type, o.id, o.status) for o in final.output] == [
        ("mcp_call", "mcp_1", "failed"),
        ("mcp_call", "mcp_2", "completed"),
        ("message", "msg_1_0", "completed"),
    ]
    assert (final.output[0].error, final.output[1].output) == ("timeout", "found")
    assert (final.output_text, final.usage.total_tokens, final.usage.cost) == ("Hi", 4, 0.00012)
    assert got.summary.extra["notes"] == _notes("carried as it came", "left out")
    assert got.out.count(b"\n: keep-alive\n") == 1  # the comment line, as it came
    assert "left_out" not in got.translation


def test_translated_the_answer_arrives_and_the_rest_is_noted() -> None:
    for client in (A, C):
        got = _carry(client)
        assert got.summary.outcome is Outcome.COMPLETED
        assert got.translation["left_out"] == {"mcp_call": 2}
        notes = got.summary.extra["notes"]
        assert notes[:4] == _notes("left out", "left out")
    msg = sdk_anthropic(_carry(A).out)
    assert ([(b.type, b.text) for b in msg.content], msg.stop_reason) == ([("text", "Hi")], "end_turn")
    chat = sdk_chat(_carry(C).out)
    assert (chat.choices[0].message.content, chat.choices[0].finish_reason) == ("Hi", "stop")


# An event whose payload has no ``type``: both SDKs read an event by its payload's type alone, so
# neither reads this one as the text delta its ``event:`` line names (openai-python passes over it,
# openai-node raises "Unhandled response stream event").
UNTYPED = (
    b'event: response.output_text.delta\ndata: {"sequence_number":18,"item_id":"msg_1",'
    b'"output_index":2,"content_index":0,"delta":"!","logprobs":[]}\n\n'
)
UNTYPED_BODY = BODY.replace(
    b"event: response.output_text.done", UNTYPED + b"event: response.output_text.done"
)


def test_an_event_without_a_type_is_read_as_the_sdks_read_it_in_every_mode() -> None:
    from tests.conformance import sdks

    assert UNTYPED_BODY.count(UNTYPED) == 1
    py = sdk_responses(UNTYPED_BODY)
    assert py.output_text == "Hi"  # passed over; the final response is response.completed's
    (node,) = sdks.node([("responses", UNTYPED_BODY)])
    assert not node.ok and node.message.startswith("Unhandled response stream event")
    path = Path(f"/tmp/proxai-untyped-{id(UNTYPED_BODY)}.sse")
    path.write_bytes(UNTYPED_BODY)
    try:
        for client in (None, R, A, C):
            got = corpus_run.carry(streams.Stream("responses/u.sse", path, R, "t", "t", False), client)
            assert got.bugs == []
            s = got.summary
            assert (s.outcome, s.text_bytes) == (Outcome.COMPLETED, 2), client
            how = "not read" if client is None else "left out"
            assert f"an event whose payload has no type is not modelled: {how}" in s.extra["notes"]
            assert [c["rule"] for c in s.extra["conformance"]] == ["openai_responses.unknown_event"]
            if client is None:
                assert got.out == UNTYPED_BODY
                continue
            assert b'"delta":"!"' not in got.out  # no client gets it
            if client is R:
                final = sdk_responses(got.out)
                assert final.output_text == "Hi"
                (back,) = sdks.node([("responses", got.out)])
                assert back.ok, back
            elif client is A:
                assert [b.text for b in sdk_anthropic(got.out).content] == ["Hi"]
            else:
                assert sdk_chat(got.out).choices[0].message.content == "Hi"
    finally:
        path.unlink()
