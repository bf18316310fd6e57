"""How the tests cut a byte stream into chunks, shared by every folder that feeds one.

The team's quality bar: every stream test runs whole, byte by byte, and at random splits, and
hypothesis checks that chunking never changes the result (the
SSE scanner runs once per chunk, so chunk boundaries are where its bugs live).
"""

from __future__ import annotations

import random

from hypothesis import strategies as st


def random_pieces(data: bytes, rng: random.Random, max_size: int = 64) -> list[bytes]:
    """``data`` in consecutive non-empty pieces of 1 to ``max_size`` bytes, sizes drawn from ``rng``."""
    out, i = [], 0
    while i < len(data):
        n = rng.randint(1, max_size)
        out.append(data[i : i + n])
        i += n
    return out


@st.composite
def cut_pieces(draw: st.DrawFn, data: bytes, max_cuts: int = 12, keep_empty: bool = True) -> list[bytes]:
    """``data`` cut at up to ``max_cuts`` hypothesis-drawn offsets; empty pieces kept unless
    ``keep_empty`` is false."""
    points = sorted(draw(st.sets(st.integers(0, len(data)), max_size=max_cuts)))
    pieces, prev = [], 0
    for c in [*points, len(data)]:
        pieces.append(data[prev:c])
        prev = c
    return pieces if keep_empty else [p for p in pieces if p]
