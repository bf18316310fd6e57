"""Child process of the memory benchmark: observe ``MB`` megabytes of one protocol's stream in
observe-only mode (``StreamObserver`` alone), or also translate it to ``CLIENT``
(``StreamObserver`` + stream translator, the carrier's path), and print the peak RSS growth.

``python -m bench.memory_child PROTOCOL MB [CLIENT]``

Run in its own process so the peak (VmHWM, reset through /proc/self/clear_refs) belongs to this
stream only. The stream is generated on the fly (a run of delta events repeated), never held.

The rule (docs/design/core.md, "Bounded and linear"): memory stays bounded (the 16 KiB recent tail, never
the whole stream).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from proxai.core.model import Protocol

from .procs import reset_peak_rss, status_kb
from .upstream import _DELTA_START, blocks


def main() -> None:
    protocol, mb = sys.argv[1], int(sys.argv[2])
    client = sys.argv[3] if len(sys.argv) > 3 else None
    bl = blocks(protocol, 30000)
    start = _DELTA_START[protocol]
    head, middle, tail = b"".join(bl[:start]), b"".join(bl[start : start + 1000]), b"".join(bl[start:])
    chunk = 16384
    mids = [middle[i : i + chunk] for i in range(0, len(middle), chunk)]
    import os

    pid = os.getpid()
    from proxai.pipeline.flow import ClientSide, build_flow

    # as the carrier's flow: the pipeline built once, the observer's one reading feeds the writer
    pipe = build_flow(Protocol(protocol), None if client is None else ClientSide(Protocol(client)))
    obs, tr = pipe.observer, pipe.translator
    obs.headers(200, 0.0)
    feed = obs.observe_payloads
    out_bytes = 0
    if tr is not None:

        def feed(chunk: bytes, now: float) -> list[Any]:
            nonlocal out_bytes
            payloads = obs.observe_payloads(chunk, now)
            if payloads:
                out_bytes += len(tr.collect())
            return payloads

    feed(head, 0.0)
    rss0 = status_kb(pid, "VmRSS")
    reset_ok = reset_peak_rss(pid)
    total, now = len(head), 0.0
    while total < mb * 1_000_000:
        for m in mids:
            now += 1e-4
            feed(m, now)
        total += len(middle)
    for i in range(0, len(tail), chunk):
        feed(tail[i : i + chunk], now)
    total += len(tail)
    s = obs.finish(now)
    if tr is not None:
        out_bytes += len(tr.finish())
    hwm = status_kb(pid, "VmHWM")
    print(
        json.dumps(
            {
                "protocol": protocol,
                "client": client,
                "out_mb": out_bytes / 1e6,
                "mb": total / 1e6,
                "rss0_kb": rss0,
                "hwm_kb": hwm,
                "reset": reset_ok,
                "outcome": str(s.outcome),
                "events": s.counts.events,
                "failed": None if obs.failed is None else str(obs.failed),
            }
        )
    )


if __name__ == "__main__":
    main()
