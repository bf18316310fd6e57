"""A mitmdump script for the memory section's diagnosis: what the Python heap holds at the peak of
one stream. ``mitmdump -s addon/proxai.py -s bench/tracemalloc_probe.py`` with ``PROXAI_PROBE_OUT``
set to a file.

A request carrying ``x-bench-probe: start`` starts ``tracemalloc`` (10 frames) and takes the baseline
snapshot; from then on a thread samples the traced size every 20 ms and snapshots the heap at its
highest; ``x-bench-probe: stop`` writes the peak and the top allocation sites, peak snapshot minus
baseline, grouped by traceback (docs/performance.md, "Memory: the transient, named").
"""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from typing import Any

_state: dict[str, Any] = {}


def _sampler(stop: threading.Event) -> None:
    best = 0
    while not stop.wait(0.02):
        cur, _ = tracemalloc.get_traced_memory()
        if cur > best:
            best = cur
            _state["peak_snap"] = tracemalloc.take_snapshot()
            _state["peak_cur"] = cur


def request(flow: Any) -> None:  # a mitmproxy HTTPFlow
    what = flow.request.headers.get("x-bench-probe")
    if what == "start":
        tracemalloc.start(10)
        _state["base"] = tracemalloc.take_snapshot()
        _state["base_cur"] = tracemalloc.get_traced_memory()[0]
        stop = threading.Event()
        _state["stop"] = stop
        threading.Thread(target=_sampler, args=(stop,), daemon=True).start()
    elif what == "stop" and "stop" in _state:
        _state["stop"].set()
        time.sleep(0.05)
        _, peak = tracemalloc.get_traced_memory()
        lines = [f"traced peak over baseline: {(peak - _state['base_cur']) / 1e6:.2f} MB"]
        snap = _state.get("peak_snap")
        if snap is not None:
            lines.append(
                f"sampled peak over baseline: {(_state['peak_cur'] - _state['base_cur']) / 1e6:.2f} MB"
            )
            for st in snap.compare_to(_state["base"], "traceback")[:12]:
                lines.append(f"{st.size_diff / 1e6:+.2f} MB, {st.count_diff:+d} blocks")
                lines += ["    " + ln for ln in st.traceback.format()[-12:]]
        tracemalloc.stop()
        with open(os.environ["PROXAI_PROBE_OUT"], "w") as f:
            f.write("\n".join(lines) + "\n")
