"""The kept body (``proxai.pipeline.keep``): exactly the client's bytes, in one buffer, counted
exactly against the caps, with the read marks of the per-read rule.

The body is kept in one ``io.BytesIO`` taken from the total budget a step at a time
(``keep.STEP``); these tests check, structurally, that the kept bytes are the bytes read, that the
body handed over is one bytes object of exactly their size (no pieces, no join), that the budget
counts exactly the kept bytes once the body is handed over, and that the marks are the ones the
per-read rule gives (a reference of that rule is below)."""

from __future__ import annotations

import random
import sys
import tracemalloc

import orjson
import pytest

from proxai.pipeline import keep
from proxai.pipeline.keep import KeepBudget, KeepingStream, KeptBody


def _reads(rng: random.Random, total: int) -> list[bytes]:
    out: list[bytes] = []
    size = 0
    while size < total:
        n = min(total - size, rng.choice([1, 7, 256, 289, 4096, 70_000]))
        out.append(rng.randbytes(n))
        size += n
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_kept_body_is_the_bytes_read_and_counted_exactly(seed: int) -> None:
    rng = random.Random(seed)
    reads = _reads(rng, rng.choice([1, 5_000, 300_000]))
    data = b"".join(reads)
    budget = KeepBudget()
    kept = KeptBody(budget, 0.0)
    for i, r in enumerate(reads):
        if i % 3:
            kept.add_read(r, len(r), float(i))
        else:
            kept.add([r[:5], r[5:]], float(i))  # one read of two pieces
        assert kept.size == sum(map(len, reads[: i + 1]))
        assert budget.used == kept.taken and kept.taken - kept.size == kept.room < keep.STEP + len(r)
    assert kept.reads == len(reads)
    body = kept.take_bytes()
    assert body == data
    # One bytes object of exactly the body's size, and the budget counts exactly its bytes.
    assert type(body) is bytes and sys.getsizeof(body) == sys.getsizeof(b"") + len(data)
    assert budget.used == len(data) and kept.room == 0


def test_the_body_is_handed_over_without_a_copy() -> None:
    reads = [bytes([i % 256]) * 289 for i in range(4000)]  # about 1.1 MB in paced reads
    kept = KeptBody(KeepBudget(), 0.0)
    tracemalloc.start()
    try:
        for i, r in enumerate(reads):
            kept.add_read(r, 289, float(i))
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        body = kept.take_bytes()
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = 289 * len(reads)
    assert body == b"".join(reads)
    # While streaming: the bytes, the buffer's growth margin (an eighth) and the read log.
    assert size <= held <= size + size // 8 + 64 * len(reads) + 64 * 1024
    # Handing the body over allocates no second body (no join, no copy).
    assert peak - held < 64 * 1024 and after <= held


def test_exactly_the_per_flow_cap_is_kept_and_one_byte_more_is_dropped() -> None:
    reads = _reads(random.Random(7), 200_000)
    size = sum(map(len, reads))
    for cap, kept_it in ((size, True), (size - 1, False)):
        budget = KeepBudget(max_per_flow=cap)
        kept = KeptBody(budget, 0.0)
        for r in reads:
            kept.add_read(r, len(r), 0.0)
        assert (kept.dropped is None) == kept_it
        if kept_it:
            assert kept.take_bytes() == b"".join(reads) and budget.used == size
        else:
            assert kept.dropped == (
                f"the response body was not kept: it passed proxai_keep_body_max ({cap} bytes)"
            )
            assert budget.used == 0 and kept.take_bytes() == b""


def test_the_total_cap_counts_what_live_bodies_took() -> None:
    budget = KeepBudget(max_total=1000)
    a, b = KeptBody(budget, 0.0), KeptBody(budget, 0.0)
    a.add_read(b"a" * 600, 600, 0.0)
    b.add_read(b"b" * 300, 300, 0.0)
    assert budget.used == 900  # near the cap a flow takes only what it needs
    b.add_read(b"b" * 200, 200, 0.0)
    assert b.dropped == (
        "the response body was not kept: the kept bodies passed proxai_keep_body_total (1000 bytes)"
    )
    assert budget.used == 600
    assert a.take_bytes() == b"a" * 600 and budget.used == 600
    c = KeptBody(budget, 0.0)
    c.add_read(b"c", 1, 0.0)
    assert budget.used == 601 and c.room == 0  # no step ahead past the cap: what it needs
    assert c.take_bytes() == b"c" and budget.used == 601
    d = KeptBody(KeepBudget(), 0.0)
    d.add_read(b"d", 1, 0.0)
    assert d.budget.used == keep.STEP and d.room == keep.STEP - 1  # a step ahead
    assert d.take_bytes() == b"d" and d.budget.used == 1  # what it did not fill goes back


class ReferenceMarks:
    """The per-read rule: each read's (offset, time) marked while fewer than ``most`` marks are
    kept; then every other mark dropped and only every second read marked from then on."""

    def __init__(self, start: float, most: int) -> None:
        self.start, self.most = start, max(2, most)
        self.marks: list[tuple[int, float]] = []
        self.last: tuple[int, float] | None = None
        self.offset = self.reads = 0
        self.stride = 1

    def read(self, n: int, now: float) -> None:
        self.offset += n
        mark = (self.offset, now - self.start)
        self.last = mark
        if self.reads % self.stride == 0:
            if len(self.marks) >= self.most:
                self.marks = self.marks[::2]
                self.stride *= 2
            self.marks.append(mark)
        self.reads += 1

    def to_metadata(self) -> dict[str, list[int] | list[float]]:
        """The marks as the metadata holds them: the offsets and the seconds, unrounded."""
        marks = list(self.marks)
        if self.last is not None and (not marks or marks[-1] != self.last):
            marks.append(self.last)
        return {"offsets": [o for o, _ in marks], "seconds": [at for _, at in marks]}


@pytest.mark.parametrize("most", [2, 3, 8, 1024])
@pytest.mark.parametrize("reads", [0, 1, 2, 7, 8, 9, 16, 17, 100, 255, 256, 257, 2049, 5000])
def test_the_marks_follow_the_per_read_rule(most: int, reads: int) -> None:
    rng = random.Random(reads * 31 + most)
    ref, kept = ReferenceMarks(10.0, most), KeptBody(KeepBudget(), 10.0, most=most)
    now = 10.0
    for _ in range(reads):
        n = rng.choice([1, 9, 289])
        now += rng.random() / 50
        ref.read(n, now)
        kept.add_read(b"x" * n, n, now)
        if rng.random() < 0.05:
            assert kept.marks() == ref.to_metadata()  # drawn mid-stream, the stream goes on
        # bounded: at most ``most`` marks and the reads since the last check
        assert len(kept.offsets) == len(kept.seconds) <= kept.most + keep.COUNT
    assert kept.reads == ref.reads
    marks = kept.marks()
    assert marks == ref.to_metadata()
    assert len(marks["offsets"]) <= max(2, most) + 1  # the marks and the last read
    # plain JSON types: an int offset and float seconds per read, in two lists
    assert type(marks) is dict and list(marks) == ["offsets", "seconds"]
    assert all(type(o) is int for o in marks["offsets"]) and all(type(t) is float for t in marks["seconds"])
    assert orjson.loads(orjson.dumps(marks)) == marks


def test_the_keeping_stream_keeps_what_the_wrapped_stream_returns() -> None:
    out: list[bytes | list[bytes]] = [b"ab", [b"c", b"de"], [], b""]
    t = [0.0]

    def inner(chunk: bytes) -> bytes | list[bytes]:
        return out.pop(0)

    def clock() -> float:
        t[0] += 1.0
        return t[0]

    kept = KeptBody(KeepBudget(), 0.0)
    stream = KeepingStream(inner, kept, clock)
    assert [stream(b"x") for _ in range(4)] == [b"ab", [b"c", b"de"], [], b""]
    assert kept.reads == 2 and kept.marks() == {"offsets": [2, 5], "seconds": [1.0, 2.0]}
    assert kept.take_bytes() == b"abcde"


def test_the_marks_are_the_ones_before_unrounded() -> None:
    """The form before (``[[offset, seconds rounded to 0.1 ms], ...]``) and this one hold the same
    reads: each offset the same, each time the same once rounded as it was."""
    rng = random.Random(5)
    start = 1.0e6 + 0.123456
    kept, ref = KeptBody(KeepBudget(), start), ReferenceMarks(start, keep.MAX_READS)
    now = start
    for _ in range(3000):
        n = rng.choice([1, 256, 4000])
        now += rng.random() / rng.choice([7, 50, 3000])
        kept.add_read(b"x" * n, n, now)
        ref.read(n, now)
    marks = kept.marks()
    # the last read was thinned out of the marks: it comes last
    before = [[o, round(at * 10_000) / 10_000] for o, at in [*ref.marks, ref.last]]
    assert [[o, round(at * 10_000) / 10_000] for o, at in zip(*marks.values(), strict=True)] == before


def test_held_bytes_go_back_when_their_owner_is_freed() -> None:
    import gc

    class Owner:
        pass

    budget = KeepBudget()
    assert budget.take(30)
    owners = [Owner(), Owner(), Owner()]
    for o, n in zip(owners, (5, 10, 15), strict=True):
        budget.hold(o, n)
    budget.hold(owners[0], 0)  # the same owner twice: each hold on its own
    del o
    owners.pop(1)
    gc.collect()
    assert budget.used == 20 and len(budget._held) == 3
    owners.clear()
    gc.collect()
    assert budget.used == 0 and budget._held == {}
