"""Interleaved best-of-N timing, so the floor and the candidate see the same machine noise.

Figures are ratios to the floor, never absolute times; they compare the
once-per-chunk scanning (docs/design/scanner.md).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def best_of(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Run every function ``repeats`` times, interleaved; return each one's best wall time (s)."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            best[name] = min(best[name], dt)
    return best
