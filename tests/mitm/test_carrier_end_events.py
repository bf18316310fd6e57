"""Events that the SSE scanner can only complete at the end of the stream reach every consumer.

With CR line ends, a stream's last blank line is a lone CR: a LF may still follow it, so the
scanner dispatches the last event only when the stream ends (WHATWG: a pending CR ends its line
at EOF). The carrier takes those events from the observer before the guard's end-of-message
check and before the translator's end, so a translated client stream ends as its upstream did,
and the guard judges the last events. Found by the translate-payloads review: the observer used
to see them only in ``finish``, after the translator had reported a truncated upstream.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from proxai.core.model import Protocol
from proxai.guard import GuardConfig
from proxai.mitm.carrier import Carrier
from proxai.mitm.guard_addon import FlowGuard
from proxai.pipeline.flow import ClientSide, build_flow
from proxai.pipeline.observe import StreamObserver

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PAIRS = [(u, c) for u in Protocol for c in Protocol if u is not c]


def _run(
    protocol: Protocol, data: bytes, client: Protocol | None, *, guarded: bool = False
) -> tuple[bytes, Carrier]:
    async def main() -> tuple[bytes, Carrier]:
        clock = itertools.count(1.0, 0.001)
        pipe = build_flow(protocol, None if client is None else ClientSide(client))
        pipe.observer.headers(200, 0.0)
        carrier = Carrier(pipe, decoder=None, clock=lambda: next(clock))
        guard = None
        if guarded:
            guard = FlowGuard(GuardConfig(), None, carrier, start=0.0, end_stream=lambda _flow: True)
        out = [*carrier(data), *carrier(b"")]
        if guard is not None:
            guard.timer.cancel()
        return b"".join(out), carrier

    return asyncio.run(main())


@pytest.mark.parametrize(("upstream", "client"), PAIRS, ids=[f"{u}->{c}" for u, c in PAIRS])
def test_a_translated_stream_whose_last_event_ends_at_eof_ends_like_its_upstream(
    upstream: Protocol, client: Protocol
) -> None:
    lf = (FIXTURES / upstream / "parallel_tools.sse").read_bytes()
    cr = lf.replace(b"\n", b"\r")
    expected, ref = _run(upstream, lf, client)
    body, carrier = _run(upstream, cr, client)
    assert body == expected
    assert carrier.translate_error is None and ref.translate_error is None
    assert carrier.summary is not None and ref.summary is not None
    assert carrier.summary.outcome == ref.summary.outcome == "completed"


def _through_first_finished_call(protocol: Protocol, data: bytes) -> bytes:
    """``data`` up to and with the event that finishes its first tool call."""
    obs = StreamObserver(protocol, start=0.0)
    obs.headers(200, 0.0)
    blocks = [b + b"\n\n" for b in data.split(b"\n\n") if b]
    for i, block in enumerate(blocks):
        obs.observe(block, 1.0)
        if obs.finished_tool_calls:
            return b"".join(blocks[: i + 1])
    raise AssertionError("no tool call finished")


@pytest.mark.parametrize("protocol", sorted(Protocol))
def test_the_guard_end_check_sees_the_last_events(protocol: Protocol) -> None:
    """The stream ends with a call's end, and its arguments are not JSON: with LF line ends the
    guard judges it at that read, with CR line ends at the end check, which must see the call as
    declared done (abnormal arguments), not as left open."""
    data = (FIXTURES / protocol / "parallel_tools.sse").read_bytes()
    for field in (b'"partial_json":"{', b'"arguments":"{', b'"delta":"{'):
        data = data.replace(field, field + b"{")
    lf = _through_first_finished_call(protocol, data)
    verdicts = []
    for stream in (lf, lf.replace(b"\n", b"\r")):
        _, carrier = _run(protocol, stream, None, guarded=True)
        assert carrier.summary is not None and carrier.closed is not None
        verdicts.append((carrier.summary.outcome, carrier.closed.message))
    assert verdicts[0] == verdicts[1]
    assert verdicts[0][0] == "unfinished_tool"
    assert "declared done" in verdicts[0][1]
