"""Differential test of ``FlowGuard.on_chunk``'s shortcuts without an open call (issue 7).

Without an open tool call (before or after the chunk) and none finished, a data chunk is not judged
at all: only the idle rule could apply, and a chunk that arrived now cannot trip it.

Without an open tool call the guard's next deadline is the idle one, ``last_byte_at + idle_timeout``,
which only moves later; a timer already armed is at or before it, so ``GuardTimer.arm`` would return at
once and ``on_chunk`` does not compute it. The reference below re-arms with a freshly computed
deadline after every chunk (what ``on_chunk`` did before): the armed time, the verdict and the client
bytes must be the same after every chunk, for every fixture stream of the three protocols, at random
splits, with clock steps that cross the stall and idle thresholds.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from proxai.guard import GuardConfig
from proxai.mitm.carrier import Carrier, GuardAction
from proxai.mitm.guard_addon import FlowGuard
from proxai.model import Protocol
from proxai.observe import StreamObserver
from tests.splits import random_pieces

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CFG = GuardConfig(tool_stall=10.0, idle_timeout=25.0)
STREAMS = sorted((p.parent.name, p) for p in FIXTURES.glob("*/*.sse") if p.parent.name in set(Protocol))


class ReferenceGuard(FlowGuard):
    """The previous behaviour: every chunk is judged in full (open calls built, every rule), and
    after a chunk without a verdict a freshly computed deadline is armed."""

    def on_chunk(self, carrier: Carrier, events: int, now: float) -> Any:
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
    guard_cls: type[FlowGuard], protocol: Protocol, pieces: list[bytes], steps: list[float]
) -> list[Any]:
    async def main() -> list[Any]:
        clock = [0.0]
        observer = StreamObserver(protocol, start=0.0)
        observer.headers(200, 0.0)
        carrier = Carrier(observer, protocol=protocol, decoder=None, clock=lambda: clock[0])
        guard = guard_cls(CFG, None, carrier, start=0.0, end_stream=lambda _flow: True)
        trace: list[Any] = []
        for piece, step in zip(pieces, steps, strict=True):
            clock[0] += step
            out = carrier(piece)
            trace.append((guard.timer.armed_at, guard.verdict, b"".join(out)))
        trace.append((guard.timer.armed_at, guard.verdict, b"".join(carrier(b""))))
        guard.timer.cancel()
        return trace

    return asyncio.run(main())


@pytest.mark.parametrize(("protocol", "path"), STREAMS, ids=[f"{p}/{f.name}" for p, f in STREAMS])
def test_armed_deadline_verdict_and_bytes_match_the_reference(protocol: str, path: Path) -> None:
    data = path.read_bytes()
    rng = random.Random(f"{protocol}/{path.name}")
    for _ in range(5):
        pieces = random_pieces(data, rng, max_size=rng.choice([1, 7, 64, 4096]))
        # Mostly small steps, sometimes one past the stall (10 s) or idle (25 s) threshold.
        steps = [rng.choice([0.0, 0.001, 0.5, 3.0, 9.99, 10.0, 12.0, 25.0, 30.0]) for _ in pieces]
        p = Protocol(protocol)
        assert _run(FlowGuard, p, pieces, steps) == _run(ReferenceGuard, p, pieces, steps)
