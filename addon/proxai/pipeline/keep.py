"""Keeping the bytes of streamed LLM response bodies, within bounds, so every mitmproxy front end shows
them (docs/design/visibility.md, "Bodies are kept").

mitmproxy stores no streamed body unless ``store_streamed_bodies`` is set globally, and even then it
drops the body when the client hangs up before the upstream's end of message (an SDK closes its
connection once it has read the terminal event). ProxAI keeps, per LLM flow, the bytes the client
received, up to a per-flow cap and a total cap over all kept bodies that are still alive; past a cap
the flow's body is dropped (the summary still shows) and the reason is kept as a note.

``KeptBody`` holds one flow's body in one buffer (``io.BytesIO``: its bytes are handed over at the end
without a copy, so the kept body costs its bytes plus the buffer's growth margin, never a list of
pieces and a join). It takes its bytes from the total in steps (``STEP``): a read that fits what the
flow has taken costs one comparison, and at the end the flow gives back what it took and did not use,
so the total then counts exactly the kept bytes.

With the bytes, the moments they left: for each read the client got, the body offset it ended at and
its seconds since the request (what a replay plays back, docs/replay.md), kept in the form the
metadata holds them (``reads``: ``{"offsets": [...], "seconds": [...]}``, docs/metadata.md), so the
end draws nothing per read. At most ``MAX_READS`` marks (past it every other one is dropped and only
every second read is marked from then on, so the marks stay even over the whole body); the last read
is always kept (docs/design/replay.md, 8). Each read is appended as it comes; every ``COUNT`` reads
(and when the marks are drawn) the reads since the last check are thinned by that rule.

Pure: no mitmproxy, and no clock of its own. The carrier keeps what it returns itself (the flow's
usual stream callable, ``StreamCarrier.kept``: the hot read keeps its chunk inline, every other read
through ``KeptBody.add``); ``KeepingStream`` wraps any other stream callable (bytes -> bytes or a
list of bytes: the scrub of an env route's key, a fault stage) with the shell's clock and returns
exactly what it returns: the client's bytes never change.
"""

from __future__ import annotations

import io
import weakref
from collections.abc import Callable

DEFAULT_MAX_PER_FLOW = 8 * 1024 * 1024
DEFAULT_MAX_TOTAL = 256 * 1024 * 1024
MAX_READS = 1024
COUNT = 256  # reads between two checks of the marks' bound (a small int: ``left`` allocates nothing)
STEP = 64 * 1024  # bytes a flow takes from the total at a time

StreamFn = Callable[[bytes], bytes | list[bytes]]


class KeepBudget:
    """The total cap: bytes of kept bodies that are still alive, over all flows."""

    __slots__ = ("_held", "max_per_flow", "max_total", "used")

    def __init__(self, max_per_flow: int = DEFAULT_MAX_PER_FLOW, max_total: int = DEFAULT_MAX_TOTAL) -> None:
        self.max_per_flow = max_per_flow
        self.max_total = max_total
        self.used = 0
        # a weak reference to each owner of kept bytes (by the reference's id), with their count
        self._held: dict[int, tuple[weakref.ref[object], int]] = {}

    def hold(self, owner: object, n: int) -> None:
        """Give ``n`` bytes back once ``owner`` (the flow a kept body was handed to) is freed: a weak
        reference with a callback (``weakref.finalize`` does the same through several Python
        calls, about three times the instructions)."""
        ref = weakref.ref(owner, self._freed)
        self._held[id(ref)] = (ref, n)

    def _freed(self, ref: weakref.ref[object]) -> None:
        _, n = self._held.pop(id(ref))
        self.give_back(n)

    def take(self, n: int) -> bool:
        """Reserve ``n`` more bytes; False (nothing reserved) when that would pass the total cap."""
        if self.used + n > self.max_total:
            return False
        self.used += n
        return True

    def give_back(self, n: int) -> None:
        self.used = max(0, self.used - n)


class KeptBody:
    """The body of one flow as it is kept, and when its reads left; or why it was dropped.

    Per read (``add_read``, or the carrier's hot read inline, which does the same): ``left`` (reads
    until the next check of the marks' bound) goes down, the read's end (its body offset) is
    compared with ``limit`` (the bytes the flow has taken from the budget: a read that ends past it
    takes more, ``_take``, or drops the body), the bytes are written and the read's end and seconds
    since ``start`` appended to ``offsets`` and ``seconds``. ``limit`` is -1 while only ``add_read``
    may keep a read (nothing taken yet, handed over, dropped, or a carrier whose count of client
    bytes is not the body's offset)."""

    __slots__ = (
        "_buf",
        "_last",
        "_marked",
        "_reads",
        "_stride",
        "budget",
        "dropped",
        "left",
        "limit",
        "most",
        "offsets",
        "seconds",
        "start",
        "taken",
        "write",
    )

    def __init__(self, budget: KeepBudget, start: float = 0.0, most: int = MAX_READS) -> None:
        self.budget = budget
        self.start = start
        self.most = max(2, most)
        self._buf: io.BytesIO | None = io.BytesIO()
        self.write: Callable[[bytes], object] = self._buf.write
        self.taken = 0  # bytes reserved from the budget: the kept bytes plus ``room``
        self.limit = -1
        self.dropped: str | None = None
        # The marks, as the metadata holds them: the first ``_marked`` entries are thinned (every
        # ``_stride``-th of the first ``_reads`` reads), the rest every read since, each appended
        # as it came; ``_last`` the latest read once a thinning may have left it out.
        self.offsets: list[int] = []
        self.seconds: list[float] = []
        self.left = COUNT  # reads until the entries since the last check are thinned
        self._marked = 0
        self._reads = 0
        self._stride = 1
        self._last: tuple[int, float] | None = None

    @property
    def size(self) -> int:
        """The bytes kept so far (the buffer's position: every read is written at the end)."""
        buf = self._buf
        return buf.tell() if buf is not None else self.taken

    @property
    def room(self) -> int:
        """The bytes the flow has taken from the budget and not filled."""
        return self.taken - self.size

    @property
    def reads(self) -> int:
        """How many reads the client got (each with bytes)."""
        return self._reads + len(self.offsets) - self._marked

    def add(self, out: list[bytes], now: float) -> None:
        """Keep one read the client got at ``now``: the pieces one call of the stream returned
        (nothing when they are empty or the body was dropped)."""
        if self.dropped is not None:
            return
        n = 0
        for piece in out:
            n += len(piece)
        if n:
            self.add_read(out, n, now)

    def add_read(self, out: bytes | list[bytes], n: int, now: float) -> None:
        """``add`` for a read of ``n`` bytes (not 0) whose size is known: one piece or a list.
        The carrier's hot read does the same inline for one piece that ends within ``limit``."""
        buf = self._buf
        if buf is None:
            return  # dropped, or handed over already: nothing more is kept
        end = buf.tell() + n
        if end > self.taken and not self._take(end):
            return  # dropped
        if isinstance(out, bytes):
            self.write(out)
        else:
            for piece in out:
                self.write(piece)
        self.offsets.append(end)
        self.seconds.append(now - self.start)
        self.left -= 1
        if self.left <= 0:
            self._thin()
            self.left = COUNT

    def _take(self, end: int) -> bool:
        """Take from the budget what a read that ends at ``end`` needs, a step ahead when the caps
        allow; False when a cap is passed (the body is dropped). The first step also sizes the
        buffer to what was taken, so a body that fits it is written without the buffer growing
        (each growth is a copy of the body so far)."""
        budget = self.budget
        need = end - self.taken
        if end > budget.max_per_flow:
            self.drop(
                f"the response body was not kept: it passed proxai_keep_body_max "
                f"({budget.max_per_flow} bytes)"
            )
            return False
        ahead = min(max(need, STEP), budget.max_per_flow - self.taken)
        if not budget.take(ahead):
            ahead = need
            if not budget.take(need):
                self.drop(
                    f"the response body was not kept: the kept bodies passed proxai_keep_body_total "
                    f"({budget.max_total} bytes)"
                )
                return False
        buf = self._buf
        if not self.taken and buf is not None and ahead > 1:
            # the buffer sized once (one zeroed allocation, later writes overwrite it); what is
            # not written is cut off when the body is handed over (``take_bytes``)
            buf.seek(ahead - 1)
            buf.write(b"\0")
            buf.seek(0)
        self.taken += ahead
        self.limit = self.taken
        return True

    def _thin(self) -> None:
        """Thin the entries appended since the last check by the per-read rule: every
        ``_stride``-th read marked, the marks halved (and the stride doubled) while there are more
        than ``most``; the latest read kept in ``_last``. While every read is marked and the marks
        fit (a flow of fewer than ``most`` reads, the usual one) there is nothing to do."""
        offsets, seconds = self.offsets, self.seconds
        n = len(offsets)
        first = self._marked
        if self._stride == 1 and n <= self.most:
            self._reads += n - first
            self._marked = n
            return
        if n == first:
            return
        self._last = (offsets[-1], seconds[-1])
        new_o, new_s = offsets[first:], seconds[first:]
        del offsets[first:], seconds[first:]
        done = self._reads
        stride = self._stride
        most = self.most
        i = -done % stride  # the first new read that is marked
        while i < n - first:
            if len(offsets) >= most:
                offsets, seconds = offsets[::2], seconds[::2]
                stride *= 2
            offsets.append(new_o[i])
            seconds.append(new_s[i])
            i += stride - (done + i) % stride  # the next read whose number the stride divides
        self.offsets, self.seconds, self._stride = offsets, seconds, stride
        self._reads = done + n - first
        self._marked = len(offsets)

    def drop(self, why: str) -> None:
        """Forget the bytes (what the flow took goes back to the budget) and remember why."""
        self.budget.give_back(self.taken)
        self.taken = 0
        self.limit = -1
        self._buf = None
        self.write = _nothing
        self.offsets, self.seconds = [], []
        self._marked = self._reads = 0
        self._last = None
        self.dropped = why

    def take_bytes(self) -> bytes:
        """The kept body, once, without a copy (``BytesIO.getvalue`` hands over its buffer, cut to
        the bytes written). What the flow took and did not fill goes back to the budget; the body's
        own bytes stay with the caller, who gives them back when the body is freed
        (``KeepBudget.hold``)."""
        buf, self._buf = self._buf, None
        data = b""
        if buf is not None:
            buf.truncate()  # the sized buffer's unwritten end
            data = buf.getvalue()
        self.budget.give_back(self.taken - len(data))
        self.taken = len(data)
        self.limit = -1
        self.write = _nothing
        return data

    def marks(self) -> dict[str, list[int] | list[float]]:
        """``{"offsets": [...], "seconds": [...]}``: each marked read's body offset and its
        seconds since ``start`` (unrounded), the last read included. A flow of at most ``most``
        reads (the usual one) gets the lists themselves, no copy: drawn at the end of the flow
        (a later read would be appended to them)."""
        self._thin()
        offsets, seconds = self.offsets, self.seconds
        last = self._last
        if last is not None and (not offsets or offsets[-1] != last[0]):
            return {"offsets": [*offsets, last[0]], "seconds": [*seconds, last[1]]}
        return {"offsets": offsets, "seconds": seconds}


def _nothing(data: bytes) -> None:
    """The ``write`` of a body that is no longer kept."""


class KeepingStream:
    """A stream callable that keeps what another one returns. ``inner`` is the wrapped callable
    (the scrub of an env route's key, a fault stage over the carrier), ``kept`` its body, ``clock``
    the time of each read; the return value is ``inner``'s, unchanged."""

    __slots__ = ("clock", "inner", "kept")

    def __init__(self, inner: StreamFn, kept: KeptBody, clock: Callable[[], float]) -> None:
        self.inner = inner
        self.kept = kept
        self.clock = clock

    def __call__(self, chunk: bytes) -> bytes | list[bytes]:
        out = self.inner(chunk)
        kept = self.kept
        if kept.dropped is None:
            if isinstance(out, bytes):
                if out:
                    kept.add_read(out, len(out), self.clock())
            else:
                kept.add(out, self.clock())
        return out
