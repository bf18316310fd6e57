"""The carrier's hot read against its general path.

``StreamCarrier.feed`` takes an uncompressed pass-through read of whole events with nothing held
(most reads of every observed flow) inline; every other read goes through ``StreamCarrier._chunk``.
The reference below sends every read through ``_chunk`` and does what ``feed`` does with its
result. Both must give the same client pieces for every read, the same byte counts, the same
guard state, the same kept body (exactly the client's bytes, or dropped past the per-flow cap) and
read marks, and the same summary: every fixture stream of the three protocols, guarded and not,
cut at event boundaries (so the hot read really runs), at random byte offsets, and with a guard
that trips (arguments that are not JSON).
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from proxai.core.model import Protocol
from proxai.guard import GuardConfig
from proxai.mitm.carrier import Carrier
from proxai.mitm.guard_addon import FlowGuard
from proxai.pipeline.flow import FlowPipeline
from proxai.pipeline.keep import KeepBudget, KeptBody
from proxai.pipeline.observe import StreamObserver
from tests.splits import random_pieces

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
STREAMS = sorted((p.parent.name, p) for p in FIXTURES.glob("*/*.sse") if p.parent.name in set(Protocol))
CFG = GuardConfig(tool_stall=10.0, idle_timeout=25.0)


class GeneralOnly(Carrier):
    """Every read through ``_chunk`` (the reference), kept through ``KeptBody.add_read``."""

    def feed(self, chunk: bytes, now: float | None = None) -> list[bytes]:
        if now is None:
            now = self.clock()
        out = self._end(now) if chunk == b"" else self._chunk(chunk, now)
        out = [b for b in out if b]
        sent = sum(len(b) for b in out)
        self.client_bytes += sent
        if sent and self.kept is not None:
            self.kept.add_read(out, sent, now)  # the pieces as they are, not joined
        return out


def _event_groups(data: bytes, rng: random.Random) -> list[bytes]:
    """``data`` cut after blank lines only, one to three events per piece."""
    blocks = [b + b"\n\n" for b in data.split(b"\n\n")[:-1]]
    tail = data[sum(len(b) for b in blocks) :]
    out, i = [], 0
    while i < len(blocks):
        n = rng.randint(1, 3)
        out.append(b"".join(blocks[i : i + n]))
        i += n
    return [*out, tail] if tail else out


def _run(
    cls: type[Carrier], protocol: Protocol, pieces: list[bytes], *, guarded: bool, keep_max: int = 1 << 30
) -> list[Any]:
    async def main() -> list[Any]:
        clock = [0.0]
        observer = StreamObserver(protocol, start=0.0)
        observer.headers(200, 0.0)
        carrier = cls(FlowPipeline(observer), decoder=None, clock=lambda: clock[0])
        budget = KeepBudget(max_per_flow=keep_max)
        kept = carrier.kept = KeptBody(budget, 0.0, most=8)  # few marks: thinned often
        guard = FlowGuard(CFG, None, carrier, start=0.0, end_stream=lambda _flow: True) if guarded else None
        trace: list[Any] = []
        for piece in [*pieces, b""]:
            clock[0] += 0.25
            out = carrier(piece)
            trace.append(list(out) if isinstance(out, list) else [out])
            if guard is not None:
                trace.append((guard.timer.armed_at, guard.verdict))
        if guard is not None:
            guard.timer.cancel()
        assert carrier.summary is not None
        trace.append((carrier.upstream_bytes, carrier.client_bytes, carrier.state))
        # The kept body is exactly what the client got (or dropped past the cap, with nothing
        # left counted), and the budget counts exactly its bytes.
        sent = b"".join(b for read in trace if isinstance(read, list) for b in read)
        marks = kept.marks() if kept.dropped is None else None
        body = kept.take_bytes() if kept.dropped is None else None
        assert body == (sent if len(sent) <= keep_max else None)
        assert budget.used == (len(sent) if body is not None else 0)
        trace.append((kept.dropped, marks, budget.used))
        trace.append(carrier.summary.to_metadata())
        return trace

    return asyncio.run(main())


def _compare(protocol: str, data: bytes, seed: str) -> None:
    rng = random.Random(seed)
    for guarded in (False, True):
        for pieces in (
            _event_groups(data, rng),
            _event_groups(data, rng),
            random_pieces(data, rng, max_size=rng.choice([7, 64, 4096])),
        ):
            p = Protocol(protocol)
            for keep_max in (1 << 30, len(data) // 2):
                hot = _run(Carrier, p, pieces, guarded=guarded, keep_max=keep_max)
                assert hot == _run(GeneralOnly, p, pieces, guarded=guarded, keep_max=keep_max)


@pytest.mark.parametrize(("protocol", "path"), STREAMS, ids=[f"{p}/{f.name}" for p, f in STREAMS])
def test_the_hot_read_matches_the_general_path(protocol: str, path: Path) -> None:
    _compare(protocol, path.read_bytes(), f"{protocol}/{path.name}")


@pytest.mark.parametrize("protocol", sorted(Protocol))
def test_the_hot_read_matches_when_the_guard_trips(protocol: str) -> None:
    data = (FIXTURES / protocol / "parallel_tools.sse").read_bytes()
    for field in (b'"partial_json":"{', b'"arguments":"{', b'"delta":"{'):
        data = data.replace(field, field + b"{")
    _compare(protocol, data, f"broken/{protocol}")
    # The case is real: the guard's error reaches the client on the hot path.
    trace = _run(Carrier, Protocol(protocol), _event_groups(data, random.Random(1)), guarded=True)
    assert trace[-1]["outcome"] == "unfinished_tool"


def test_the_hot_read_matches_when_the_observer_breaks() -> None:
    """An observer bug on a hot read: the bytes still pass, observing stops, the hooks still run
    (with no events), the same bug is counted, exactly as on the general path."""

    class Breaking(StreamObserver):
        def observe_payloads(self, data: bytes, now: float, scanned: Any = None) -> Any:
            if b"BOOM" in data:
                raise RuntimeError("observer bug")
            return super().observe_payloads(data, now, scanned)

    def run(cls: type[Carrier]) -> list[Any]:
        observer = Breaking(Protocol.OPENAI_CHAT, start=0.0)
        observer.headers(200, 0.0)
        carrier = cls(FlowPipeline(observer), decoder=None, clock=lambda: 1.0)
        hooked: list[int] = []
        carrier.on_chunk.append(lambda _c, n, _now: hooked.append(n))  # type: ignore[arg-type,func-returns-value]
        pieces = [b'data: {"a":1}\n\n', b"data: BOOM\n\n", b'data: {"b":2}\n\n', b""]
        out = [carrier(p) for p in pieces]
        return [out, hooked, carrier.observe_error, carrier.bugs, carrier.client_bytes, carrier.state]

    hot = run(Carrier)
    assert hot == run(GeneralOnly)
    assert hot[0] == [[b'data: {"a":1}\n\n'], [b"data: BOOM\n\n"], [b'data: {"b":2}\n\n'], []]
    assert hot[1] == [1, 0, 0] and hot[2] == "internal error in the observer: RuntimeError"
    assert hot[3] == {"internal error in the observer (observing stops for this flow)": 1}


def test_a_body_kept_from_a_later_read_is_marked_from_its_own_offsets() -> None:
    """The hot read marks the client's byte count as the read's body offset; a body attached after
    the stream's first bytes (so that count is not its offset) is kept through ``add_read`` only:
    its marks start at its own bytes, as the general path's."""

    def run(cls: type[Carrier]) -> tuple[dict[str, list[int] | list[float]], bytes]:
        data = (FIXTURES / "openai_chat" / "parallel_tools.sse").read_bytes()
        pieces = _event_groups(data, random.Random(3))
        observer = StreamObserver(Protocol.OPENAI_CHAT, start=0.0)
        observer.headers(200, 0.0)
        carrier = cls(FlowPipeline(observer), decoder=None, clock=lambda: 0.0)
        first = b"".join(carrier.feed(pieces[0], 0.5))
        kept = carrier.kept = KeptBody(KeepBudget(), 0.0, most=8)
        for i, piece in enumerate([*pieces[1:], b""]):
            carrier.feed(piece, 1.0 + i)
        assert carrier.client_bytes == len(first) + kept.size
        assert kept.limit == -1 or cls is GeneralOnly  # the carrier keeps no later read inline
        return kept.marks(), kept.take_bytes()

    marks, body = run(Carrier)
    assert (marks, body) == run(GeneralOnly)
    assert marks["offsets"][-1] == len(body) and marks["seconds"][0] == 1.0
