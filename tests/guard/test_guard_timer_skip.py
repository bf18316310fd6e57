"""Differential test of ``FlowGuard.on_chunk``'s shortcut.

A chunk is judged in full only when something the guard judges besides the clock changed since
the last full look (a call started or finished, the terminal event came, the stream failed: each
resets ``Accum.quiet_until``, which a full look sets to the armed deadline, and the carrier skips
the hook for a read before it), when the armed deadline is reached or the timer fired, at the end
of the message, or when observing stopped. Otherwise calls only made progress and bytes arrived,
which move every deadline later, so no rule can trip before the armed deadline and
``GuardTimer.arm`` would return at once.

The reference below judges every chunk in full and re-arms with a freshly computed deadline after
each one (what ``on_chunk`` did before). A due timer fires before the next read, as the event loop
would run it, or now and then after it (both ready in one loop iteration). The armed time, the
verdict and the client bytes must be the same after every chunk, for every fixture stream of the
three protocols and every 12th real recording (a malformed payload, a mid-stream error, truncation
and unfinished calls among them), at random splits, with clock steps that are mostly small and
sometimes cross the stall and idle thresholds.
"""

from __future__ import annotations

import asyncio
import gzip
import random
from pathlib import Path
from typing import Any

import pytest

from proxai.core.decode import make_decoder
from proxai.core.model import Protocol
from proxai.guard import GuardConfig
from proxai.mitm.carrier import Carrier
from proxai.mitm.guard_addon import FlowGuard
from proxai.pipeline.carrier import GuardAction, StreamCarrier
from proxai.pipeline.flow import FlowPipeline
from proxai.pipeline.observe import StreamObserver
from tests.splits import random_pieces

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CFG = GuardConfig(tool_stall=10.0, idle_timeout=25.0)
STREAMS = sorted((p.parent.name, p) for p in FIXTURES.glob("*/*.sse") if p.parent.name in set(Protocol))
# Every 12th recording of real APIs (the shapes providers send, which take the grammars' general
# paths far more often than the fixtures: extra fields, repeated roles, reasoning fields).
_REAL_DIRS = {"anthropic": "anthropic_messages", "chat": "openai_chat", "responses": "openai_responses"}
REAL = sorted((_REAL_DIRS[p.parent.name], p) for p in (FIXTURES / "real").glob("*/*.sse"))[::12]


class ReferenceGuard(FlowGuard):
    """The previous behaviour: every chunk is judged in full (open calls built, every rule), and
    after a chunk without a verdict a freshly computed deadline is armed."""

    def on_chunk(self, carrier: StreamCarrier, events: int, now: float) -> Any:
        if not self._guarding():
            self.timer.cancel()
            return None
        ending = carrier.ending
        open_before = self._open_count
        with_calls = ending or (events > 0 and self._calls_may_have_closed())
        verdict, open_calls = self.check(now, with_calls=with_calls, ended=ending)
        self._open_count = len(open_calls)
        if verdict is None and not with_calls and self._open_count < open_before:
            verdict, open_calls = self.check(now, with_calls=True)
        if verdict is None:
            if not ending:
                self.timer.arm(self.deadline(open_calls))
            return None
        self.verdict, self.path = verdict, "end" if ending else "data"
        self.timer.cancel()
        if ending:
            self.end_requested = True
        return GuardAction(
            close=True, inject=self.error_bytes(verdict), kind=verdict.error_kind, message=verdict.message
        )


def _run(
    guard_cls: type[FlowGuard],
    protocol: Protocol,
    pieces: list[bytes],
    steps: list[float],
    gzipped: bool = False,
    *,
    fires: list[bool] | None = None,
) -> list[Any]:
    async def main() -> list[Any]:
        clock = [0.0]
        observer = StreamObserver(protocol, start=0.0)
        observer.headers(200, 0.0)
        decoder = make_decoder("gzip") if gzipped else None
        carrier = Carrier(FlowPipeline(observer), decoder=decoder, clock=lambda: clock[0])
        guard = guard_cls(CFG, None, carrier, start=0.0, end_stream=lambda _flow: True)
        trace: list[Any] = []
        for i, (piece, step) in enumerate(zip(pieces, steps, strict=True)):
            clock[0] += step
            at = guard.timer.armed_at
            if at is not None and clock[0] >= at and (fires is None or fires[i]):
                # The event loop runs a due timer before the next read (or, in the same loop
                # iteration, after it: ``fires[i]`` False).
                guard.timer._cancel_handle()
                guard.on_timer()
            out = carrier(piece)
            trace.append((guard.timer.armed_at, guard.verdict, b"".join(out)))
        trace.append((guard.timer.armed_at, guard.verdict, b"".join(carrier(b""))))
        guard.timer.cancel()
        return trace

    return asyncio.run(main())


def _compare(
    protocol: str, data: bytes, seed: str, *, gzipped: bool = False, long_steps: bool = True
) -> list[list[Any]]:
    """Both guards over ``data`` at five random splittings; the reference's traces.
    ``long_steps=False``: no step reaches a threshold (no timer verdict comes first)."""
    rng = random.Random(seed)
    traces = []
    for _ in range(5):
        pieces = random_pieces(data, rng, max_size=rng.choice([1, 7, 64, 4096]))
        # Mostly small steps, sometimes one past the stall (10 s) or idle (25 s) threshold.
        small = [0.0, 0.001, 0.01, 0.5]
        long = [3.0, 9.99, 10.0, 12.0, 25.0, 30.0] if long_steps else [3.0]
        steps = [rng.choice(small * 12 + long) for _ in pieces]
        p = Protocol(protocol)
        fires = [rng.random() < 0.7 for _ in pieces]
        expected = _run(ReferenceGuard, p, pieces, steps, gzipped, fires=fires)
        assert _run(FlowGuard, p, pieces, steps, gzipped, fires=fires) == expected
        traces.append(expected)
    return traces


@pytest.mark.parametrize(("protocol", "path"), STREAMS, ids=[f"{p}/{f.name}" for p, f in STREAMS])
def test_armed_deadline_verdict_and_bytes_match_the_reference(protocol: str, path: Path) -> None:
    _compare(protocol, path.read_bytes(), f"{protocol}/{path.name}")


@pytest.mark.parametrize(("protocol", "path"), REAL, ids=[f"real/{p.name}" for _, p in REAL])
def test_real_recordings_match_the_reference(protocol: str, path: Path) -> None:
    _compare(protocol, path.read_bytes(), f"real/{path.name}")


def _broken_arguments(data: bytes) -> bytes:
    """Every call's arguments start with ``{{``: not JSON once the call is declared done."""
    for field in (b'"partial_json":"{', b'"arguments":"{', b'"delta":"{'):
        data = data.replace(field, field + b"{")
    return data


@pytest.mark.parametrize("protocol", sorted(Protocol))
def test_a_call_started_and_finished_within_one_chunk_is_still_judged(protocol: str) -> None:
    """Calls with invalid JSON arguments, often started and declared done inside one chunk (no call
    open before or after it): the abnormal-argument verdict comes at the same chunk as the reference's."""
    data = _broken_arguments((FIXTURES / protocol / "parallel_tools.sse").read_bytes())
    traces = _compare(protocol, data, f"broken/{protocol}", long_steps=False)
    verdicts = {str(t[-1][1].kind) for t in traces if t[-1][1] is not None}
    assert "abnormal_arguments" in verdicts  # the case is really exercised


@pytest.mark.parametrize(("protocol", "path"), STREAMS[::3], ids=[f"{p}/{f.name}" for p, f in STREAMS[::3]])
def test_compressed_chunks_that_decode_to_nothing_are_judged_by_the_idle_rule(
    protocol: str, path: Path
) -> None:
    """A gzip piece may decode to no byte: then the last byte is older than the chunk and the idle
    rule may trip on it (the shortcut must not skip that chunk)."""
    _compare(protocol, gzip.compress(path.read_bytes()), f"gzip/{protocol}/{path.name}", gzipped=True)
    # A corrupt gzip body: decoding fails mid-stream, observing stops, the guard stands down.
    packed = bytearray(gzip.compress(path.read_bytes()))
    packed[len(packed) // 2 :: 7] = bytes(len(packed[len(packed) // 2 :: 7]))
    traces = _compare(protocol, bytes(packed), f"gzip-bad/{protocol}/{path.name}", gzipped=True)
    assert all(t[-1][0] is None for t in traces)  # no timer left armed
    # The same at one instant (no clock step): the guard must stand down at the failing chunk.
    pieces = [bytes(packed[i : i + 16]) for i in range(0, len(packed), 16)]
    steps = [0.0] * len(pieces)
    p = Protocol(protocol)
    expected = _run(ReferenceGuard, p, pieces, steps, gzipped=True)
    assert _run(FlowGuard, p, pieces, steps, gzipped=True) == expected


@pytest.mark.parametrize("protocol", sorted(Protocol))
def test_a_call_that_stalls_while_bytes_arrive_is_judged_as_the_reference_judges_it(protocol: str) -> None:
    """A call starts, its arguments stop, SSE comment lines keep the stream alive past the stall
    threshold: each read of the call's start must be looked at in full (``Accum.tool_start``
    resets ``quiet_until``), so the stall deadline is armed at once and the verdict comes at the
    reference's read (the skip would leave the idle deadline armed)."""
    data = (FIXTURES / protocol / "unfinished_tool.sse").read_bytes()
    events = [b + b"\n\n" for b in data.split(b"\n\n") if b.strip()]
    alive = b": keepalive\n\n"
    pieces = [alive, alive, *events, *[alive] * 8]  # the first read is looked at in full anyway
    steps = [0.5] * (len(events) + 2) + [3.0] * 8
    p = Protocol(protocol)
    expected = _run(ReferenceGuard, p, pieces, steps)
    assert _run(FlowGuard, p, pieces, steps) == expected
    verdict = expected[-1][1]
    assert verdict is not None and str(verdict.kind) == "tool_stall"  # the case is really exercised
