"""Anthropic events the grammar does not model (docs/design/protocol-grammars.md, "Events the
grammars do not model"), through the addon's real ``Carrier`` in every mode, the client's bytes
read by the official Python SDK: a named event whose type no SDK models (a gateway's own status
event) after ``message_start``. Never a refusal: noted once per type; normalize mode carries it
as it came (anthropic's ``Stream`` yields every named event, ``accumulate_event`` passes over a
type it does not know; @anthropic-ai/sdk's ``#accumulateMessage`` returns the snapshot for it),
a translation leaves it out.

No recording in ``tests/fixtures/real`` shows such an event; the body is written from the API's
event shapes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corpus import run as corpus_run
from corpus import streams

from proxai.core.model import Outcome, Protocol
from tests.conformance import sdks

from .harness import sdk_anthropic, sdk_chat, sdk_responses

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES


def _ev(etype: str, **fields: Any) -> bytes:
    return f"event: {etype}\ndata: {json.dumps({'type': etype, **fields})}\n\n".encode()


MSG: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [],
    "stop_reason": None,
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 1},
}
STATUS = {"type": "gateway_status", "phase": "thinking"}
BODY = b"".join(
    [
        _ev("message_start", message=MSG),
        _ev("gateway_status", phase="thinking"),
        _ev("gateway_status", phase="writing"),
        _ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        _ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}),
        _ev("content_block_stop", index=0),
        _ev(
            "message_delta",
            delta={"stop_reason": "end_turn", "stop_sequence": None},
            usage={"output_tokens": 2},
        ),
        _ev("message_stop"),
    ]
)


def _carry(client: Protocol | None) -> corpus_run.Carried:
    path = Path(f"/tmp/proxai-unmodelled-a-{id(BODY)}.sse")
    path.write_bytes(BODY)
    try:
        got = corpus_run.carry(streams.Stream("anthropic/u.sse", path, A, "t", "t", False), client)
    finally:
        path.unlink()
    assert got.bugs == []
    return got


def _note(how: str) -> list[str]:
    return [f"event 'gateway_status' is not modelled: {how}"]


def _events(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]


def test_observed_the_sdk_reads_past_it() -> None:
    ref = sdk_anthropic(BODY)
    assert ([(b.type, b.text) for b in ref.content], ref.stop_reason) == ([("text", "Hi")], "end_turn")
    got = _carry(None)
    assert got.out == BODY
    s = got.summary
    assert (s.outcome, s.stop_reason, s.text_bytes) == (Outcome.COMPLETED, "end_turn", 2)
    assert s.extra["notes"] == _note("not read")


def test_normalize_carries_it_as_it_came() -> None:
    got = _carry(A)
    events = _events(got.out)
    assert [e["type"] for e in events] == [
        "message_start",
        "gateway_status",
        "gateway_status",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[1:3] == [STATUS, {**STATUS, "phase": "writing"}]
    assert b"event: gateway_status\ndata: " in got.out
    msg = sdk_anthropic(got.out)
    assert ([(b.type, b.text) for b in msg.content], msg.stop_reason) == ([("text", "Hi")], "end_turn")
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (3, 2)
    assert got.summary.extra["notes"] == _note("carried as it came")


def test_translated_it_is_left_out_with_the_note() -> None:
    for client in (C, R):
        got = _carry(client)
        assert got.summary.outcome is Outcome.COMPLETED
        assert b"gateway_status" not in got.out
        assert got.summary.extra["notes"] == _note("left out")
    chat = sdk_chat(_carry(C).out)
    assert (chat.choices[0].message.content, chat.choices[0].finish_reason) == ("Hi", "stop")
    resp = sdk_responses(_carry(R).out)
    assert (resp.output_text, resp.status) == ("Hi", "completed")


def test_the_node_sdks_read_every_client_stream() -> None:
    """@anthropic-ai/sdk reads the original and the normalized stream past the unmodelled event,
    the openai Node SDK the translations."""
    got = sdks.node(
        [
            ("anthropic", BODY),
            ("anthropic", _carry(A).out),
            ("chat", _carry(C).out),
            ("responses", _carry(R).out),
        ]
    )
    assert all(r.ok for r in got), [r.message for r in got]
    for r in got[:2]:
        assert [(b["type"], b["text"]) for b in r.final["content"]] == [("text", "Hi")]
    assert got[2].final["choices"][0]["message"]["content"] == "Hi"
    assert got[3].final["output"][0]["content"][0]["text"] == "Hi"
