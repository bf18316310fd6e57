"""Whether a finished flow's kept body is still held: ``FLOWS`` streams (the three protocols in
turn, 20,000 events each, 2.5-6.0 MB, kept whole at default options) through one mitmdump with
ProxAI and ``bench/kept_probe_addon.py``, which at each new request collects garbage and records
the flows, kept bodies and keep-budget bytes still alive, what refers to a live flow, and VmRSS.

``PYTHONPATH=$PWD/addon:$PWD .venv/bin/python -m bench.kept_memory [FLOWS]``

Prints one line per stream (protocol, body bytes, VmRSS in KB after it) and the probe's rows.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from . import client, procs, streams

PROBE = Path(__file__).resolve().parent / "kept_probe_addon.py"


def run(flows: int) -> tuple[list[str], list[dict[str, object]]]:
    out = Path(tempfile.mkdtemp(prefix="proxai-kept-")) / "probe.jsonl"
    os.environ["PROXAI_KEPT_PROBE"] = str(out)  # the mitmdump child inherits it
    lines: list[str] = []
    up = procs.start_upstream()
    md = procs.start_mitmdump(up.url, addon=True, extra=["-s", str(PROBE)])
    try:
        for i in range(flows):
            p = streams.PROTOCOLS[i % len(streams.PROTOCOLS)]
            r = asyncio.run(client.stream(md.url, p, {"x-bench-events": "20000", "x-bench-write": "65536"}))
            time.sleep(0.5)
            lines.append(f"{p} {r.body_bytes} {procs.status_kb(md.pid, 'VmRSS')}")
        asyncio.run(client.stream(md.url, "openai_chat", {"x-bench-events": "10"}))  # the last report
    finally:
        md.stop()
        up.stop()
    return lines, [json.loads(line) for line in out.read_text().splitlines()]


def main() -> None:
    lines, rows = run(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
    print("\n".join(lines))
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
