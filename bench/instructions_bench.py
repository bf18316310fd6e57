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
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import fastpath_child, paced_bench, procs, streams, upstream


@dataclass
class Count:
    name: str
    instructions: int
    events: int


# Under callgrind mitmdump runs about 50x slower: the streams are paced so that it keeps up.
INTERVAL_MS = 20.0  # generated streams: one event per read, this far apart
PIECE = 256  # the real corpus: 256-byte pieces (cut anywhere in an event), as the paced section
PIECE_INTERVAL_MS = 30.0  # ... this far apart, 6 streams at once


def sets(quick: bool) -> list[paced_bench.Set]:
    """The four sets of the ``paced`` section, paced for callgrind: the generated streams (three at
    once, one event per read, each event stamped as the latency run does) and every recording of
    tests/fixtures/real (a few per protocol when ``quick``) in 256-byte pieces, each observe-only
    and with an Anthropic Messages client routed to a Chat upstream (plain mitmdump carries the
    same Chat stream)."""
    events = 60 if quick else 300
    gen = {"x-bench-events": str(events), "x-bench-interval-ms": f"{INTERVAL_MS:g}", "x-bench-stamp": "1"}
    n = 3

    def blocks(p: str) -> int:
        return len(upstream.blocks(p, events))

    def piece(f: str) -> dict[str, str]:
        return {
            "x-bench-file": f,
            "x-bench-piece": str(PIECE),
            "x-bench-interval-ms": f"{PIECE_INTERVAL_MS:g}",
        }

    def rec(files: list[tuple[str, str]]) -> tuple[int, int]:
        datas = [upstream.recorded(f) for _, f in files]
        return sum(map(len, datas)), sum(d.count(b"\n\n") for d in datas)

    real, real_chat = paced_bench.corpus(quick), paced_bench.corpus(quick, "openai_chat")
    protos = [streams.PROTOCOLS[i % 3] for i in range(n)]
    chat = upstream.blocks("openai_chat", events)
    return [
        paced_bench.Set(
            "bench, observe-only",
            False,
            [paced_bench.Job(p, gen) for p in protos],
            sum(sum(map(len, upstream.blocks(p, events))) for p in protos),
            sum(blocks(p) for p in protos),
        ),
        paced_bench.Set(
            "bench, anthropic client on chat upstream",
            True,
            [paced_bench.Job("anthropic_messages", gen, paced_bench.ROUTED_MODEL) for _ in range(n)],
            sum(map(len, chat)) * n,
            len(chat) * n,
        ),
        paced_bench.Set(
            "real, observe-only", False, [paced_bench.Job(p, piece(f)) for p, f in real], *rec(real)
        ),
        paced_bench.Set(
            "real, anthropic client on chat upstream",
            True,
            [paced_bench.Job("anthropic_messages", piece(f), paced_bench.ROUTED_MODEL) for _, f in real_chat],
            *rec(real_chat),
        ),
    ]


def _total(f: Path) -> int:
    """The ``totals:`` of one callgrind dump."""
    for line in f.read_text(errors="replace").splitlines():
        m = re.fullmatch(r"totals: (\d+)", line)
        if m:
            return int(m.group(1))
    return 0


def _count(upstream_url: str, the_sets: list[paced_bench.Set], *, addon: bool, routes: Path) -> list[int]:
    """mitmdump under callgrind: the instructions while each set runs (counting switched on for the
    set and off after it, then dumped: one dump per set, in order)."""
    out = Path(tempfile.mkdtemp(prefix="proxai-bench-cg-")) / "callgrind.out"
    wrapper = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    extra = ["--set", f"proxai_routes={routes}"] if addon else []
    md = procs.start_mitmdump(upstream_url, addon=addon, extra=extra, wrapper=wrapper)
    ctl = ["callgrind_control"]
    try:
        warm = {"x-bench-events": "30", "x-bench-interval-ms": f"{INTERVAL_MS:g}", "x-bench-stamp": "1"}
        jobs = [paced_bench.Job(p, warm) for p in streams.PROTOCOLS]
        jobs.append(paced_bench.Job("anthropic_messages", warm, paced_bench.ROUTED_MODEL))
        asyncio.run(paced_bench._run_jobs(md.url, jobs, addon))  # warm-up: imports, first flows
        for s in the_sets:
            subprocess.run([*ctl, "-i", "on", str(md.pid)], check=True, capture_output=True)
            _, errors = asyncio.run(paced_bench._run_jobs(md.url, s.jobs, addon))
            subprocess.run([*ctl, "-i", "off", str(md.pid)], check=True, capture_output=True)
            subprocess.run([*ctl, "-d", str(md.pid)], check=True, capture_output=True)
            if errors:
                raise RuntimeError(f"{s.name}: {len(errors)} failed streams, e.g. {errors[:3]}")
    finally:
        md.stop()
    return [_total(out.with_name(f"{out.name}.{i}")) for i in range(1, len(the_sets) + 1)]


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
    the_sets = sets(quick)
    up = procs.start_upstream()
    routes = Path(tempfile.mkdtemp(prefix="proxai-bench-cg-routes-")) / "routes.toml"
    routes.write_text(paced_bench.routes_toml(up.url))
    try:
        counts = {
            name: _count(up.url, the_sets, addon=name == "addon", routes=routes)
            for name in ("plain", "addon")
        }
    finally:
        up.stop()
    return {
        "sets": the_sets,
        "counts": counts,
        "fast_paths": fast_paths(40 if quick else 150),
    }


def report(result: dict[str, Any]) -> list[str]:
    if "missing" in result:
        return [f"skipped: {result['missing']}"]
    the_sets, counts = result["sets"], result["counts"]
    plain = counts["plain"][0] / the_sets[0].events  # the generated streams, observe-only
    return [
        *report_e2e(the_sets, counts),
        "",
        *report_fast_paths(result["fast_paths"], plain),
    ]


def report_e2e(the_sets: list[paced_bench.Set], counts: dict[str, list[int]]) -> list[str]:
    lines = [
        f"mitmdump under callgrind, counting only while each set runs. Generated streams: three at once, "
        f"one event per read, {INTERVAL_MS:g} ms apart; the real corpus: six at once, {PIECE}-byte pieces "
        f"{PIECE_INTERVAL_MS:g} ms apart. ProxAI with default options (body kept, guard on); plain "
        "mitmdump streams every body (stream_large_bodies=1) and carries the Chat stream of a routed set.",
        "",
        "| set | streams | events | plain: instructions per event | addon: instructions per event "
        "| addon / plain |",
        "|---|---|---|---|---|---|",
    ]
    for i, s in enumerate(the_sets):
        p, a = counts["plain"][i] / s.events, counts["addon"][i] / s.events
        lines.append(
            f"| {s.name} | {len(s.jobs)} | {s.events:,} | {p:,.0f} | {a:,.0f} | **{a / p:.3f}** "
            f"({(a / p - 1) * 100:+.1f}%) |"
        )
    return lines


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


def kept_body(events: int, repeats: int) -> dict[str, Any]:
    """The kept body's cost with the resolution it needs: default options and
    ``proxai_keep_body=false`` counted in alternation ``repeats`` times each (``fast_paths``, streams
    of ``events`` and twice as many events per path, the end of each stream counted with it)."""
    return fast_paths(events, ["keep body off", "all on"] * repeats)


def _counts_of(per: dict[tuple[str, str], float], variant: str, path: str) -> list[float]:
    """Every count of ``variant`` on ``path`` (a variant counted again carries a ``'`` per repeat)."""
    return [v for (name, p), v in per.items() if p == path and name.rstrip("'") == variant]


def report_kept_body(fp: dict[str, Any]) -> list[str]:
    """Per path: the median of the counts with the body kept and not kept, their spread, and the
    kept body's share of the addon's per-event count (the medians' difference over the kept one)."""
    if "missing" in fp:
        return [f"kept body: skipped: {fp['missing']}"]
    per = fp["per"]
    lines = [
        f"Default options against proxai_keep_body=false, counted in alternation, streams of {fp['events']} "
        f"and {2 * fp['events']} events per path (the end of the message and the response hook counted with "
        "them), instructions per event:",
        "",
        "| path | kept: median (min-max) | not kept: median (min-max) | the kept body: per event "
        "| % of the addon's |",
        "|---|---|---|---|---|",
    ]
    for p in fp["paths"]:
        on, off = sorted(_counts_of(per, "all on", p)), sorted(_counts_of(per, "keep body off", p))
        m_on, m_off = statistics.median(on), statistics.median(off)
        lines.append(
            f"| {p} | {m_on:,.0f} ({on[0]:,.0f}-{on[-1]:,.0f}) | {m_off:,.0f} ({off[0]:,.0f}-{off[-1]:,.0f}) "
            f"| {m_on - m_off:,.0f} | {(m_on - m_off) / m_on * 100:.1f}% |"
        )
    return lines
