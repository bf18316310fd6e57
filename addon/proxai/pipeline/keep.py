"""Keeping the bytes of streamed LLM response bodies, within bounds, so every mitmproxy front end shows
them (docs/design/visibility.md, "Bodies are kept").

mitmproxy stores no streamed body unless ``store_streamed_bodies`` is set globally, and even then it
drops the body when the client hangs up before the upstream's end of message (an SDK closes its
connection once it has read the terminal event). ProxAI keeps, per LLM flow, the bytes the client
received, up to a per-flow cap and a total cap over all kept bodies that are still alive; past a cap
the flow's body is dropped (the summary still shows) and the reason is kept as a note.

With the bytes, the moments they left: ``ReadMarks`` holds, for each read the client got, the body
offset it ended at and its time since the request (what a replay plays back, docs/replay.md), at most
``MAX_READS`` of them (past it every other one is dropped and only every second read is marked from
then on, so the marks stay even over the whole body); the last read is always kept
(docs/design/replay.md, 8).

Pure: no mitmproxy, and no clock of its own (the shell hands ``KeepingStream`` its clock).
``KeepingStream`` wraps any stream callable (bytes -> bytes or a list of bytes) and returns exactly
what it returns: the client's bytes never change.
"""

from __future__ import annotations

from collections.abc import Callable

DEFAULT_MAX_PER_FLOW = 8 * 1024 * 1024
DEFAULT_MAX_TOTAL = 256 * 1024 * 1024
MAX_READS = 1024

StreamFn = Callable[[bytes], bytes | list[bytes]]


class KeepBudget:
    """The total cap: bytes of kept bodies that are still alive, over all flows."""

    __slots__ = ("max_per_flow", "max_total", "used")

    def __init__(self, max_per_flow: int = DEFAULT_MAX_PER_FLOW, max_total: int = DEFAULT_MAX_TOTAL) -> None:
        self.max_per_flow = max_per_flow
        self.max_total = max_total
        self.used = 0

    def take(self, n: int) -> bool:
        """Reserve ``n`` more bytes; False (nothing reserved) when that would pass the total cap."""
        if self.used + n > self.max_total:
            return False
        self.used += n
        return True

    def give_back(self, n: int) -> None:
        self.used = max(0, self.used - n)


class KeptBody:
    """The body of one flow as it is kept: its pieces, their size, or why it was dropped."""

    __slots__ = ("budget", "dropped", "pieces", "size")

    def __init__(self, budget: KeepBudget) -> None:
        self.budget = budget
        self.pieces: list[bytes] = []
        self.size = 0
        self.dropped: str | None = None

    def add(self, data: bytes) -> None:
        if self.dropped is not None or not data:
            return
        n = len(data)
        if self.size + n > self.budget.max_per_flow:
            self.drop(
                f"the response body was not kept: it passed proxai_keep_body_max "
                f"({self.budget.max_per_flow} bytes)"
            )
            return
        if not self.budget.take(n):
            self.drop(
                f"the response body was not kept: the kept bodies passed proxai_keep_body_total "
                f"({self.budget.max_total} bytes)"
            )
            return
        self.pieces.append(data)
        self.size += n

    def drop(self, why: str) -> None:
        """Forget the pieces (their bytes go back to the budget) and remember why."""
        self.budget.give_back(self.size)
        self.pieces = []
        self.size = 0
        self.dropped = why

    def take_bytes(self) -> bytes:
        """The kept body, once: the pieces are handed over (their reservation stays with the caller,
        who gives it back when the body is freed, ``KeepBudget.give_back(len(body))``)."""
        data = b"".join(self.pieces)
        self.pieces = []
        return data


class ReadMarks:
    """When the client's reads left: (body offset the read ended at, seconds since ``start``)."""

    __slots__ = ("last", "marks", "most", "offset", "reads", "start", "stride")

    def __init__(self, start: float, most: int = MAX_READS) -> None:
        self.start = start
        self.most = max(2, most)
        self.marks: list[tuple[int, float]] = []
        self.last: tuple[int, float] | None = None  # the latest read, marked or not
        self.offset = 0  # bytes sent so far
        self.reads = 0
        self.stride = 1

    def read(self, n: int, now: float) -> None:
        if n <= 0:
            return
        self.offset += n
        mark = (self.offset, now - self.start)
        self.last = mark
        if self.reads % self.stride == 0:
            if len(self.marks) >= self.most:
                self.marks = self.marks[::2]
                self.stride *= 2
            self.marks.append(mark)
        self.reads += 1

    def to_metadata(self) -> list[list[float]]:
        """``[[offset, seconds], ...]`` (seconds rounded to 0.1 ms), the last read included."""
        marks = list(self.marks)
        if self.last is not None and (not marks or marks[-1] != self.last):
            marks.append(self.last)
        return [[offset, round(at, 4)] for offset, at in marks]


class KeepingStream:
    """A stream callable that keeps what another one returns. ``inner`` is the wrapped callable
    (the carrier), ``kept`` its body; the return value is ``inner``'s, unchanged. With a
    ``clock``, ``marks`` records when each read left."""

    __slots__ = ("clock", "inner", "kept", "marks")

    def __init__(
        self,
        inner: StreamFn,
        kept: KeptBody,
        clock: Callable[[], float] | None = None,
        marks: ReadMarks | None = None,
    ) -> None:
        self.inner = inner
        self.kept = kept
        self.clock = clock
        self.marks = marks

    def __call__(self, chunk: bytes) -> bytes | list[bytes]:
        out = self.inner(chunk)
        kept = self.kept
        n = 0
        if isinstance(out, bytes):
            n = len(out)
            if kept.dropped is None:
                kept.add(out)
        else:
            for piece in out:
                n += len(piece)
                if kept.dropped is None:
                    kept.add(piece)
        marks = self.marks
        if n and marks is not None and self.clock is not None:
            marks.read(n, self.clock())
        return out
