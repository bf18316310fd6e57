"""Keeping the bytes of streamed LLM response bodies, within bounds, so every mitmproxy front end shows
them (docs/design/visibility.md, "Bodies are kept").

mitmproxy stores no streamed body unless ``store_streamed_bodies`` is set globally, and even then it
drops the body when the client hangs up before the upstream's end of message (an SDK closes its
connection once it has read the terminal event). ProxAI keeps, per LLM flow, the bytes the client
received, up to a per-flow cap and a total cap over all kept bodies that are still alive; past a cap
the flow's body is dropped (the summary still shows) and the reason is kept as a note.

Pure: no mitmproxy, no clock. ``KeepingStream`` wraps any stream callable (bytes -> bytes or a list of
bytes) and returns exactly what it returns: the client's bytes never change.
"""

from __future__ import annotations

from collections.abc import Callable

DEFAULT_MAX_PER_FLOW = 8 * 1024 * 1024
DEFAULT_MAX_TOTAL = 256 * 1024 * 1024

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


class KeepingStream:
    """A stream callable that keeps what another one returns. ``inner`` is the wrapped callable
    (the carrier), ``kept`` its body; the return value is ``inner``'s, unchanged."""

    __slots__ = ("inner", "kept")

    def __init__(self, inner: StreamFn, kept: KeptBody) -> None:
        self.inner = inner
        self.kept = kept

    def __call__(self, chunk: bytes) -> bytes | list[bytes]:
        out = self.inner(chunk)
        kept = self.kept
        if kept.dropped is None:
            if isinstance(out, bytes):
                kept.add(out)
            else:
                for piece in out:
                    kept.add(piece)
        return out
