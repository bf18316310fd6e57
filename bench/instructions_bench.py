"""End to end in instructions: what mitmdump executes per paced event, with the addon and without
(the target: the addon adds <= 25% CPU over plain mitmdump streaming).

CPU seconds on a small VM scatter by +-10% from round to round (the ``e2e`` section keeps the
best of five). Instructions do not: mitmdump runs under valgrind's callgrind with its counting
off while it starts and warms up, on for the paced streams only, then the counts are dumped.
The figure is user-space machine instructions (valgrind's ``Ir``: the interpreter, mitmproxy,
h11, orjson, the regex engine, libc), the same streams through both variants; the kernel's share
(one receive and one send per event in both, ``strace -c``) is not counted. Needs ``valgrind``
on PATH; without it the section says so.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import e2e_bench, procs, streams, upstream


@dataclass
class Count:
    name: str
    instructions: int
    events: int


def _events(n: int, events: int) -> int:
    return sum(len(upstream.blocks(streams.PROTOCOLS[i % 3], events)) for i in range(n))


def _totals(out: Path) -> int:
    """The sum of the ``totals:`` lines of every dump callgrind wrote for ``out``."""
    total = 0
    for f in out.parent.glob(out.name + "*"):
        for line in f.read_text(errors="replace").splitlines():
            m = re.fullmatch(r"totals: (\d+)", line)
            if m:
                total += int(m.group(1))
    return total


def _count(upstream_url: str, *, addon: bool, n: int, events: int, interval: float) -> int:
    out = Path(tempfile.mkdtemp(prefix="proxai-bench-cg-")) / "callgrind.out"
    wrapper = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    md = procs.start_mitmdump(upstream_url, addon=addon, wrapper=wrapper)
    try:
        asyncio.run(e2e_bench._latency(md.url, 3, 30, 20.0))  # warm-up: imports, first flows
        subprocess.run(["callgrind_control", "-i", "on", str(md.pid)], check=True, capture_output=True)
        asyncio.run(e2e_bench._latency(md.url, n, events, interval))
        subprocess.run(["callgrind_control", "-i", "off", str(md.pid)], check=True, capture_output=True)
        subprocess.run(["callgrind_control", "-d", str(md.pid)], check=True, capture_output=True)
    finally:
        md.stop()
    return _totals(out)


def run(quick: bool) -> dict[str, Any]:
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        return {"missing": "valgrind is not installed (Debian: apt-get install valgrind)"}
    # Under valgrind mitmdump runs about 50x slower: few streams, 20 ms apart, so that it keeps
    # up and every read still carries one event.
    n, events, interval = (3, 60, 20.0) if quick else (3, 300, 20.0)
    up = procs.start_upstream()
    try:
        total = _events(n, events)
        counts = [
            Count(name, _count(up.url, addon=addon, n=n, events=events, interval=interval), total)
            for name, addon in (("plain", False), ("addon", True))
        ]
    finally:
        up.stop()
    return {"counts": counts, "n": n, "events": events, "interval": interval}


def report(result: dict[str, Any]) -> list[str]:
    if "missing" in result:
        return [f"skipped: {result['missing']}"]
    plain, addon = result["counts"]
    per = {c.name: c.instructions / c.events for c in (plain, addon)}
    return [
        f"{result['n']} concurrent paced streams x {result['events']} events, one every "
        f"{result['interval']:g} ms, one event per read; mitmdump under callgrind, counting only "
        "while the streams run.",
        "",
        "| variant | instructions per event | vs plain |",
        "|---|---|---|",
        f"| plain mitmdump (stream_large_bodies=1) | {per['plain']:,.0f} | 1.000 |",
        f"| mitmdump -s addon/proxai.py | {per['addon']:,.0f} | {per['addon'] / per['plain']:.3f} "
        f"({(per['addon'] / per['plain'] - 1) * 100:+.1f}%) |",
    ]
