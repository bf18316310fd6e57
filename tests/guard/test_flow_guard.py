"""FlowGuard with the REAL carrier and observers, no mitmproxy event loop: exact injected bytes.

The clock is a list the test advances; the timer never arms (no running loop), so these are the
data-driven and end-of-message paths; ``end_stream`` is recorded instead of reaching mitmproxy.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxai.core.decode import make_decoder
from proxai.core.errors.shapes import error_event
from proxai.core.model import ErrorKind, Outcome, Protocol
from proxai.core.sse import encode_event
from proxai.guard import GuardConfig
from proxai.mitm.carrier import Carrier
from proxai.mitm.guard_addon import FlowGuard
from proxai.pipeline.carrier import CarrierState
from proxai.pipeline.flow import FlowPipeline
from proxai.pipeline.observe import StreamObserver

CFG = GuardConfig(tool_stall=10.0, idle_timeout=100.0)


def ev(event: str, data: dict[str, Any]) -> bytes:
    return encode_event(json.dumps(data), event=event)


def chat(data: dict[str, Any]) -> bytes:
    return encode_event(json.dumps({"object": "chat.completion.chunk", "id": "c1", "model": "m", **data}))


ANTHROPIC_HEAD = [
    ev(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 5, "output_tokens": 1},
            },
        },
    ),
    ev(
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_A", "name": "read_file", "input": {}},
        },
    ),
    ev(
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"path": "/e'},
        },
    ),
]
PING = ev("ping", {"type": "ping"})


class Rig:
    def __init__(self, protocol: Protocol, config: GuardConfig = CFG, *, later: Any = None) -> None:
        """``later``: the guard's scheduler of judgements (``None``: judged at once)."""
        self.now = 0.0
        self.ended: list[Any] = []
        self.observer = StreamObserver(protocol, start=0.0)
        self.observer.headers(200, 0.0)
        # as the addon builds it: an identity decoder when the body has no content-encoding
        self.carrier = Carrier(
            FlowPipeline(self.observer), decoder=make_decoder(None), clock=lambda: self.now
        )
        self.guard = FlowGuard(
            config,
            object(),  # type: ignore[arg-type]
            self.carrier,
            start=0.0,
            end_stream=self._end,
            later=later,
        )

    def _end(self, flow: Any) -> bool:
        self.ended.append(flow)
        return True

    def feed(self, at: float, chunk: bytes) -> bytes:
        self.now = at
        out = self.carrier(chunk)
        return b"".join(out) if isinstance(out, list) else out


def test_anthropic_stall_while_pings_continue_injects_after_the_triggering_chunk() -> None:
    r = Rig(Protocol.ANTHROPIC_MESSAGES)
    for i, chunk in enumerate(ANTHROPIC_HEAD):
        assert r.feed(0.1 * i, chunk) == chunk
    assert r.feed(5.0, PING) == PING  # pings keep the connection alive...
    assert r.guard.verdict is None
    out = r.feed(10.3, PING)  # ...but are no progress of toolu_A (last delta at 0.2 s)
    v = r.guard.verdict
    assert v is not None and v.kind == "tool_stall"
    assert v.message == (
        "ProxAI guard: tool call 'read_file' (id toolu_A) stalled: no argument delta for 10.1s (limit 10s, "
        "proxai_tool_stall) after 12 argument bytes; the upstream stream was closed"
    )
    assert out == PING + error_event(Protocol.ANTHROPIC_MESSAGES, ErrorKind.TOOL_STALL, v.message)
    assert r.carrier.state is CarrierState.CLOSED
    assert r.ended == [r.guard.flow]  # the client stream is ended and the upstream closed
    assert r.feed(11.0, PING) == b""  # later upstream bytes are dropped
    assert r.feed(12.0, b"") == b""
    summary = r.carrier.summary
    assert summary is not None and summary.outcome is Outcome.UNFINISHED_TOOL
    assert summary.error is not None and summary.error.kind is ErrorKind.TOOL_STALL
    assert summary.extra["guard"] == {**v.to_metadata(injected=True), "path": "data"}


def test_end_of_message_inside_a_call_is_abnormal() -> None:
    r = Rig(Protocol.ANTHROPIC_MESSAGES)
    for chunk in ANTHROPIC_HEAD:
        r.feed(0.1, chunk)
    out = r.feed(0.5, b"")  # the upstream ends the body mid-arguments
    v = r.guard.verdict
    assert v is not None and v.kind == "abnormal_arguments"
    assert v.message == (
        "ProxAI guard: the upstream ended the stream while tool call 'read_file' (id toolu_A) was unfinished "
        "(12 argument bytes); the stream was closed"
    )
    assert out == error_event(Protocol.ANTHROPIC_MESSAGES, ErrorKind.UPSTREAM_PROTOCOL, v.message)
    assert r.ended == []  # mitmproxy ends the client stream itself
    assert r.carrier.summary is not None and r.carrier.summary.outcome is Outcome.UNFINISHED_TOOL
    assert r.carrier.summary.extra["guard"]["path"] == "end"


def test_invalid_json_declared_done_is_abnormal() -> None:
    r = Rig(Protocol.ANTHROPIC_MESSAGES)
    for chunk in ANTHROPIC_HEAD:
        r.feed(0.1, chunk)
    stop = ev("content_block_stop", {"type": "content_block_stop", "index": 0})
    out = r.feed(0.2, stop)
    v = r.guard.verdict
    assert v is not None and v.kind == "abnormal_arguments"
    assert (v.tool_id, v.tool_name, v.arguments_bytes) == ("toolu_A", "read_file", 12)
    assert out == stop + error_event(Protocol.ANTHROPIC_MESSAGES, ErrorKind.UPSTREAM_PROTOCOL, v.message)


def test_healthy_stream_with_slow_arguments_is_untouched() -> None:
    r = Rig(Protocol.ANTHROPIC_MESSAGES)
    chunks = [*ANTHROPIC_HEAD]
    for _ in range(5):  # a delta every 9 s: slow, but under the 10 s limit
        chunks.append(
            ev(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": "x"},
                },
            )
        )
    chunks.append(
        ev(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '"}'},
            },
        )
    )
    chunks += [
        ev("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ev(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
        ),
        ev("message_stop", {"type": "message_stop"}),
    ]
    wire = b""
    for i, chunk in enumerate(chunks):
        wire += r.feed(9.0 * i, chunk)
    wire += r.feed(9.0 * len(chunks), b"")
    assert wire == b"".join(chunks)
    assert r.guard.verdict is None
    assert r.carrier.summary is not None and r.carrier.summary.outcome is Outcome.COMPLETED
    assert "guard" not in r.carrier.summary.extra


def test_responses_error_continues_the_sequence_numbers() -> None:
    r = Rig(Protocol.OPENAI_RESPONSES)
    resp = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "in_progress",
        "model": "gpt-x",
        "output": [],
    }
    chunks = [
        ev("response.created", {"type": "response.created", "sequence_number": 0, "response": resp}),
        ev(
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "sequence_number": 1,
                "output_index": 0,
                "item": {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": "shell",
                    "arguments": "",
                    "status": "in_progress",
                },
            },
        ),
        ev(
            "response.function_call_arguments.delta",
            {
                "type": "response.function_call_arguments.delta",
                "sequence_number": 2,
                "output_index": 0,
                "item_id": "fc_1",
                "delta": '{"cmd": "l',
            },
        ),
    ]
    for chunk in chunks:
        r.feed(0.0, chunk)
    out = r.feed(30.0, encode_event(b'{"type":"keepalive","sequence_number":3}', event="keepalive"))
    v = r.guard.verdict
    assert v is not None and v.kind == "tool_stall" and v.tool_id == "call_1" and v.tool_name == "shell"
    injected = error_event(
        Protocol.OPENAI_RESPONSES,
        ErrorKind.TOOL_STALL,
        v.message,
        response_id="resp_1",
        model="gpt-x",
        sequence_number=4,
    )
    assert out.endswith(injected)


@pytest.mark.parametrize("threshold", [0.0])
def test_disabled_rules_never_trip(threshold: float) -> None:
    r = Rig(Protocol.ANTHROPIC_MESSAGES, GuardConfig(tool_stall=threshold, idle_timeout=threshold))
    for chunk in ANTHROPIC_HEAD:
        r.feed(0.0, chunk)
    assert r.feed(1e6, PING) == PING
    assert r.guard.verdict is None


def test_timer_path_mid_event_drops_the_held_partial_event_and_goes_out_at_end_of_message() -> None:
    """The upstream went silent after a complete data line but before the blank line that ends the
    event: the carrier held that unfinished event back (event alignment), so the injection drops it
    and ours starts on an event boundary."""
    r = Rig(Protocol.ANTHROPIC_MESSAGES)
    for chunk in ANTHROPIC_HEAD:
        r.feed(0.2, chunk)
    partial = (
        b"event: content_block_delta\n"
        b'data: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"input_json_delta","partial_json":"x"}}\n'
    )
    assert r.feed(0.3, partial) == b""  # held until the event is complete
    r.now = 10.25
    r.guard.on_timer()  # what the asyncio timer calls
    v = r.guard.verdict
    assert v is not None and v.kind == "tool_stall" and v.arguments_bytes == 12
    assert r.ended == [r.guard.flow]  # mitmproxy is asked to end the stream...
    out = r.feed(10.3, b"")  # ...and calls the carrier with its end of message
    assert out == error_event(Protocol.ANTHROPIC_MESSAGES, ErrorKind.TOOL_STALL, v.message)
    assert r.carrier.held_dropped == len(partial)
    assert r.carrier.summary is not None
    assert r.carrier.summary.extra["guard"] == {**v.to_metadata(injected=True), "path": "timer"}


def test_timer_fires_early_nothing_happens() -> None:
    r = Rig(Protocol.ANTHROPIC_MESSAGES)
    for chunk in ANTHROPIC_HEAD:
        r.feed(0.2, chunk)
    r.now = 5.0
    r.guard.on_timer()
    assert r.guard.verdict is None and r.ended == []
    assert r.feed(5.1, PING) == PING
