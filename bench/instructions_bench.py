"""End to end in instructions: what mitmdump executes per paced event, with the addon and without
(the target: the addon adds <= 25% CPU over plain mitmdump streaming), and what each of the
addon's fast paths saves.

CPU seconds on a small VM scatter by +-10% from round to round (the ``e2e`` section keeps the
best of five). Instructions do not: mitmdump runs under valgrind's callgrind with its counting
off while it starts and warms up, on for the paced streams only, then the counts are dumped.
The figure is user-space machine instructions (valgrind's ``Ir``: the interpreter, mitmproxy,
h11, orjson, the regex engine, libc), the same streams through both variants; the kernel's share
(one receive and one send per event in both, ``strace -c``) is not counted. Needs ``valgrind``
on PATH; without it the section says so.

The paced run still moves by about 2% (pacing decides how many events a read carries), more
than one fast path's effect. So the section also counts the addon's per-read work in process
(``fast_paths``, ``bench/fastpath_child.py``): the real addon, one event per read, every fast
path on and each switched off, observe-only and on every translated pair. A fast path stays where
it saves at least 5% of the addon's per-event instructions on a path it serves
(docs/performance.md, "Fast paths, counted").
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import e2e_bench, fastpath_child, procs, streams, upstream


@dataclass
class Count:
    name: str
    instructions: int
    events: int


def _events(n: int, events: int) -> int:
    return sum(len(upstream.blocks(streams.PROTOCOLS[i % 3], events)) for i in range(n))


def _total(f: Path) -> int:
    """The ``totals:`` of one callgrind dump."""
    for line in f.read_text(errors="replace").splitlines():
        m = re.fullmatch(r"totals: (\d+)", line)
        if m:
            return int(m.group(1))
    return 0


def _totals(out: Path) -> int:
    """The sum of the ``totals:`` lines of every dump callgrind wrote for ``out``."""
    return sum(_total(f) for f in out.parent.glob(out.name + "*"))


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


MISSING = "valgrind is not installed (Debian: apt-get install valgrind)"


def regions_callgrind(out: Path) -> list[str]:
    """valgrind counting only inside ``functools.reduce`` calls, one dump per call (``out.N``)."""
    return [
        "valgrind",
        "--tool=callgrind",
        "--collect-atstart=no",
        "--toggle-collect=functools_reduce",
        "--dump-after=functools_reduce",
        f"--callgrind-out-file={out}",
    ]


def fast_paths(events: int, names: list[str] | None = None, *, valgrind: bool = True) -> dict[str, Any]:
    """The in-process part: the addon's per-read work per path, every fast path on (``all on``) and
    each switched off (``bench/fastpath_child.py``), instructions per event. ``valgrind=False``
    runs the same regions without counting (the smoke test): every count is then 0."""
    # "all on" again at the end: how far two counts of the same code lie apart in one run.
    if names is None:
        names = [*fastpath_child.variants(), *fastpath_child.OPTIONS]
    names = ["all on", *names, "all on"]
    with tempfile.TemporaryDirectory(prefix="proxai-bench-fp-") as tmp:
        out, regions_file = Path(tmp) / "callgrind.out", Path(tmp) / "regions.json"
        cmd = [sys.executable, "-m", "bench.fastpath_child", str(events), str(regions_file), *names]
        if valgrind:
            if shutil.which("valgrind") is None:
                return {"missing": MISSING}
            cmd = [*regions_callgrind(out), *cmd]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        root = Path(__file__).resolve().parent.parent
        subprocess.run(cmd, check=True, capture_output=True, cwd=root, env=env)
        regions = [tuple(r) for r in json.loads(regions_file.read_text())]
        counts = [
            _total(out.with_name(f"{out.name}.{i}")) if valgrind else 0 for i in range(1, len(regions) + 1)
        ]
        if valgrind and (out.with_name(f"{out.name}.{len(regions) + 1}").exists() or _total(out)):
            raise RuntimeError(
                "callgrind counted outside the regions (something else called functools.reduce)"
            )
    # (variant, path) -> instructions per event: the longer stream's count minus the shorter's,
    # over the difference of their events; minus the harness's own per-read cost.
    per: dict[tuple[str, str], float] = {}
    kept = [(r, c) for r, c in zip(regions, counts, strict=True) if r[0] != "warm-up"]
    for ((variant, path, n1), c1), ((_, _, n2), c2) in zip(kept[::2], kept[1::2], strict=True):
        key = (variant, path)
        while key in per:  # a variant given twice (the repeatability check)
            key = (key[0] + "'", path)
        per[key] = (c2 - c1) / (n2 - n1)
    harness = per.pop(("harness", "harness"))
    return {
        "events": events,
        "harness": harness,
        "per": {k: v - harness for k, v in per.items()},
        "variants": names[1:-1],
        "paths": [p[0] for p in fastpath_child.PATHS],
    }


def run(quick: bool) -> dict[str, Any]:
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        return {"missing": MISSING}
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
    return {
        "counts": counts,
        "n": n,
        "events": events,
        "interval": interval,
        "fast_paths": fast_paths(40 if quick else 150),
    }


def report(result: dict[str, Any]) -> list[str]:
    if "missing" in result:
        return [f"skipped: {result['missing']}"]
    plain, addon = result["counts"]
    per = {c.name: c.instructions / c.events for c in (plain, addon)}
    return [
        *_report_e2e(result, per),
        "",
        *report_fast_paths(result["fast_paths"], per["plain"]),
    ]


def _report_e2e(result: dict[str, Any], per: dict[str, float]) -> list[str]:
    return [
        f"{result['n']} concurrent paced streams x {result['events']} events, one every "
        f"{result['interval']:g} ms, one event per read; mitmdump under callgrind, counting only "
        "while the streams run.",
        "",
        "| variant | instructions per event | vs plain |",
        "|---|---|---|",
        f"| plain mitmdump (stream_large_bodies=1) | {per['plain']:,.0f} | 1.000 |",
        "| mitmdump -s addon/proxai.py (default options: body kept, guard on) "
        f"| {per['addon']:,.0f} | {per['addon'] / per['plain']:.3f} "
        f"({(per['addon'] / per['plain'] - 1) * 100:+.1f}%) |",
    ]


# The criterion: a fast path stays where it saves at least this share of the addon's
# per-event instructions on some path it serves.
KEEP = 0.05


def report_fast_paths(fp: dict[str, Any], plain: float | None) -> list[str]:
    """The in-process part's tables: the addon's instructions per event on each path with every
    fast path on, and what each fast path saves (switched off minus on), as a share of the addon's
    per-event count on that path and of plain mitmdump's paced per-event count (``plain``)."""
    if "missing" in fp:
        return [f"fast paths: skipped: {fp['missing']}"]
    per, paths = fp["per"], fp["paths"]
    lines = [
        f"In process: the addon's per-read work as mitmdump calls it (the real addon, default options, "
        f"one event per read, clock +20 ms per read), streams of {fp['events']} and {2 * fp['events']} "
        f"events per path, the difference per event; the harness's own {fp['harness']:,.0f} per read "
        "subtracted. Each fast path switched off the way its equivalence test does.",
        "",
        "| path | addon instructions per event (all on) |" + (" % of plain mitmdump |" if plain else ""),
        "|---|---|" + ("---|" if plain else ""),
    ]
    for p in paths:
        on = per[("all on", p)]
        lines.append(f"| {p} | {on:,.0f} |" + (f" {on / plain * 100:.1f}% |" if plain else ""))
    repeat = max(
        abs(per[("all on'", p)] / per[("all on", p)] - 1) if per[("all on", p)] else 0.0 for p in paths
    )
    lines += [
        "",
        f"The same code counted again at the end of the run: within {repeat * 100:.1f}% on every path "
        "(the allocator's state differs; a saving below that is not resolved).",
        "",
        "| fast path | paths it serves | saved per event (instructions) | % of the addon's per-event "
        "count | % of plain mitmdump's | >= 5% of the addon's on a path |",
        "|---|---|---|---|---|---|",
    ]
    for v in fp["variants"]:
        if v in fastpath_child.OPTIONS:
            continue
        serves = fastpath_child.served(v)
        saved = [per[(v, p)] - per[("all on", p)] for p in serves]
        shares = [
            d / per[("all on", p)] if per[("all on", p)] else 0.0 for d, p in zip(saved, serves, strict=True)
        ]
        what = fastpath_child.SERVES.get(v)
        where = "every path" if what is None else "observe-only" if what == "observe" else f"{what} upstream"
        e2e = f"{min(saved) / plain * 100:.1f}-{max(saved) / plain * 100:.1f}%" if plain else "-"
        lines.append(
            f"| {v} | {where} ({len(serves)}) | {min(saved):,.0f} to {max(saved):,.0f} "
            f"| {min(shares) * 100:.1f}-{max(shares) * 100:.1f}% | {e2e} "
            f"| {'yes' if max(shares) >= KEEP else 'no'} |"
        )
    return lines + report_options(fp, plain)


def report_options(fp: dict[str, Any], plain: float | None) -> list[str]:
    """What each option variant's work costs per event: default options (all on) minus the option
    changed, as a share of the addon's per-event count (the kept body: ``keep body off``)."""
    per, paths = fp["per"], fp["paths"]
    options = [v for v in fp["variants"] if v in fastpath_child.OPTIONS]
    if not options:
        return []
    lines = [
        "",
        "Default options (body kept, guard on) against one option changed, per event:",
        "",
        "| path | "
        + " | ".join(f"{v}: instructions per event | its work, % of the addon's" for v in options)
        + " |",
        "|---|" + "---|---|" * len(options),
    ]
    for p in paths:
        on = per[("all on", p)]
        cells = []
        for v in options:
            off = per[(v, p)]
            cells.append(f"{off:,.0f} | {(on - off) / on * 100 if on else 0.0:.1f}%")
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return lines
