"""A mitmdump script for the kept body's memory check (``bench/kept_memory.py``): at each request
(a new flow) and at ``done`` it collects garbage and appends one JSON line to ``PROXAI_KEPT_PROBE``:
the flows, kept bodies and streamed bodies still alive, the keep budget's count, what refers to each
live flow other than the request's own, and the traced and resident memory.

``mitmdump -s addon/proxai.py -s bench/kept_probe_addon.py`` (after ProxAI: it reads its budget).
Nothing here changes a flow.
"""

from __future__ import annotations

import gc
import json
import os
import tracemalloc
from typing import Any

_OUT = os.environ.get("PROXAI_KEPT_PROBE", "/tmp/proxai-kept-probe.jsonl")
_TRACE = os.environ.get("PROXAI_KEPT_TRACE") == "1"
if _TRACE:
    tracemalloc.start()


def _rss_kb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _budget() -> Any:
    from proxai.pipeline.keep import KeepBudget

    budgets = [o for o in gc.get_objects() if isinstance(o, KeepBudget)]
    return budgets[0] if len(budgets) == 1 else None


def _describe(obj: Any) -> str:
    t = type(obj)
    if isinstance(obj, dict):
        return f"dict({len(obj)} keys: {sorted(map(str, obj))[:6]})"
    if isinstance(obj, (list, tuple)):
        return f"{t.__name__}({len(obj)})"
    return f"{t.__module__}.{t.__qualname__}"


def _report(where: str, current: Any = None) -> None:
    from proxai.pipeline.keep import KeptBody

    lingering = [o for o in gc.get_objects() if type(o).__name__ == "HTTPFlow" and o is not current]
    before = len(lingering)
    cycle = [[_describe(r) for r in gc.get_referrers(f) if r is not lingering] for f in lingering[:2]]
    del lingering
    rss_before = _rss_kb()
    gc.collect()
    flows = [o for o in gc.get_objects() if type(o).__name__ == "HTTPFlow" and o is not current]
    kept = [o for o in gc.get_objects() if isinstance(o, KeptBody)]
    budget = _budget()
    row: dict[str, Any] = {
        "where": where,
        "live_flows_before_collect": before,
        "rss_kb_before_collect": rss_before,
        "referrers_before_collect": cycle,
        "live_flows": len(flows),
        "live_kept_bodies": len(kept),
        "flow_body_bytes": sum(len(f.response.raw_content or b"") for f in flows if f.response),
        "budget_used": getattr(budget, "used", None),
        "budget_held": len(getattr(budget, "_held", {}) or {}),
        "rss_kb": _rss_kb(),
        "referrers": [[_describe(r) for r in gc.get_referrers(f) if r is not flows] for f in flows[:3]],
    }
    if _TRACE:
        row["traced_kb"] = tracemalloc.get_traced_memory()[0] // 1024
    del flows, kept
    with open(_OUT, "a") as fh:
        fh.write(json.dumps(row) + "\n")


def request(flow: Any) -> None:
    _report("request", flow)


def done() -> None:
    _report("done")
