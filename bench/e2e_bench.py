"""End to end: mitmdump with the addon vs plain mitmdump, same machine, same run.

Both variants run reverse mode in front of ``bench.upstream`` (a separate process), with the
same N concurrent streams:

- throughput: N concurrent unpaced streams (all three protocols); CPU seconds of the mitmdump
  process (/proc/PID/stat) per MB delivered; target: the addon adds <= 25%;
- latency: N concurrent paced streams whose events carry their send time; per event
  receive - send, p50 / p99, for direct (no proxy), plain and addon. Added latency = addon
  minus plain.

Variants alternate for ``rounds`` rounds; each reports its best round (noise only adds).

The floor (``bench.floor``: lines + ``orjson.loads`` of every payload, what a plain observer
does) runs in this process over the same bytes in the same read sizes, and is
reported per MB beside the two variants: it shows how much of the 25% budget any observer
needs before it does anything else.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from typing import Any

from . import client, procs, streams, upstream
from .floor import floor


@dataclass
class Variant:
    name: str
    cpu_per_mb: list[float] = field(default_factory=list)
    mb: float = 0.0
    latencies_ns: list[list[int]] = field(default_factory=list)
    paced_cpu_per_mb: list[float] = field(default_factory=list)
    paced_mb: float = 0.0
    errors: list[str] = field(default_factory=list)


async def _throughput(url: str, n: int, events: int) -> tuple[int, list[str]]:
    protos = [streams.PROTOCOLS[i % 3] for i in range(n)]
    results = await asyncio.gather(
        *(client.stream(url, p, {"x-bench-events": str(events)}) for p in protos), return_exceptions=True
    )
    total, errs = 0, []
    for r in results:
        if isinstance(r, BaseException):
            errs.append(repr(r))
        elif r.status != 200:
            errs.append(f"status {r.status}")
        else:
            total += r.body_bytes
    return total, errs


async def _latency(url: str, n: int, events: int, interval_ms: float) -> tuple[list[int], int]:
    protos = [streams.PROTOCOLS[i % 3] for i in range(n)]
    hdrs = {"x-bench-events": str(events), "x-bench-interval-ms": str(interval_ms), "x-bench-stamp": "1"}
    results = await asyncio.gather(*(client.stream(url, p, hdrs) for p in protos))
    return [lat for r in results for lat in r.latencies_ns], sum(r.body_bytes for r in results)


def _floor_per_mb(events: int, *, paced: bool) -> float:
    """The floor's CPU seconds per MB over the streams the variants carry, read as mitmdump reads
    them: one event per read (paced), or the upstream's 16 KiB writes (unpaced). Best of five."""
    chunks: list[bytes] = []
    for protocol in streams.PROTOCOLS:
        bl = upstream.blocks(protocol, events)
        if paced:
            chunks += bl
        else:
            body = b"".join(bl)
            chunks += [body[i : i + 16384] for i in range(0, len(body), 16384)]
    mb = sum(len(c) for c in chunks) / 1e6
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        floor(chunks)
        best = min(best, time.process_time() - t0)
    return best / mb


def _pct(values: list[int], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] / 1e6


def run(quick: bool) -> dict[str, Any]:
    """Both CPU layouts: ``pinned`` (mitmdump alone on one CPU, the upstream and the clients on
    the others) and ``shared`` (the scheduler places everything). On a 2-vCPU VM the shared
    layout adds kernel time that depends on where the scheduler wakes the client and the
    upstream, not on what mitmdump runs (docs/performance.md); pinning takes that out of the
    comparison. Returns ``{layout: result}``."""
    layouts: dict[str, tuple[set[int], set[int]] | None] = {}
    plan = procs.cpu_layout()
    if plan is not None:
        layouts["pinned"] = plan
    layouts["shared"] = None
    before = os.sched_getaffinity(0)
    out: dict[str, Any] = {}
    try:
        for name, layout in layouts.items():
            os.sched_setaffinity(0, layout[1] if layout else before)
            out[name] = _run_layout(quick, layout)
    finally:
        os.sched_setaffinity(0, before)
    return out


def _run_layout(quick: bool, layout: tuple[set[int], set[int]] | None) -> dict[str, Any]:
    md_cpus, rest = layout if layout else (None, None)
    n = 6 if quick else 24
    events = 2000 if quick else 20000
    # Paced like a real LLM API (one event per read), at a load that leaves plain mitmdump idle
    # most of the time, so the latency is the per-event cost and not queueing.
    lat_n, lat_events, interval = (6, 100, 10.0) if quick else (12, 1000, 5.0)
    rounds = 1 if quick else 7
    up = procs.start_upstream(rest)
    variants = {name: Variant(name) for name in ("plain", "addon")}
    direct: list[int] = []
    try:
        direct = asyncio.run(_latency(up.url, lat_n, lat_events, interval))[0]
        for _ in range(rounds):
            for name, v in variants.items():
                md = procs.start_mitmdump(up.url, addon=name == "addon", cpus=md_cpus)
                try:
                    asyncio.run(_throughput(md.url, 3, 500))  # warm-up: imports, first flows
                    cpu0 = procs.cpu_seconds(md.pid)
                    total, errs = asyncio.run(_throughput(md.url, n, events))
                    cpu = procs.cpu_seconds(md.pid) - cpu0
                    v.errors += errs
                    v.mb = total / 1e6
                    v.cpu_per_mb.append(cpu / (total / 1e6) if total else float("nan"))
                    cpu0 = procs.cpu_seconds(md.pid)
                    lat, nbytes = asyncio.run(_latency(md.url, lat_n, lat_events, interval))
                    cpu = procs.cpu_seconds(md.pid) - cpu0
                    v.latencies_ns.append(lat)
                    v.paced_mb = nbytes / 1e6
                    v.paced_cpu_per_mb.append(cpu / v.paced_mb if nbytes else float("nan"))
                    if "Traceback" in md.log():
                        v.errors.append("traceback in mitmdump log")
                finally:
                    md.stop()
    finally:
        up.stop()
    return {
        "n": n,
        "events": events,
        "floor": (_floor_per_mb(events, paced=False), _floor_per_mb(lat_events, paced=True)),
        "lat": (lat_n, lat_events, interval),
        "direct": direct,
        "layout": "the scheduler places every process"
        if layout is None
        else f"mitmdump on CPU {sorted(layout[0])}, upstream and clients on CPU {sorted(layout[1])}",
        **variants,
    }


def report(results: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for name, r in results.items():
        lines += [f"### {name}: {r['layout']}", "", *_report_layout(r), ""]
    return lines


def _rounds(plain: list[float], addon: list[float]) -> str:
    """Per-round ratios, and their median."""
    ratios = sorted(a / p - 1 for p, a in zip(plain, addon, strict=True))
    if not ratios:
        return "none"
    median = ratios[len(ratios) // 2]
    return ", ".join(f"{x * 100:+.0f}%" for x in ratios) + f" (median {median * 100:+.0f}%)"


def _report_layout(r: dict[str, Any]) -> list[str]:
    plain: Variant = r["plain"]
    addon: Variant = r["addon"]
    lat_n, lat_events, interval = r["lat"]

    def best_lat(v: Variant) -> tuple[float, float]:
        pairs = [(_pct(lat, 0.5), _pct(lat, 0.99)) for lat in v.latencies_ns]
        return min(pairs) if pairs else (float("nan"), float("nan"))

    cp, ca = min(plain.cpu_per_mb), min(addon.cpu_per_mb)
    fu, fp = r["floor"]
    pp, pa = min(plain.paced_cpu_per_mb), min(addon.paced_cpu_per_mb)
    (p50p, p99p), (p50a, p99a) = best_lat(plain), best_lat(addon)
    lines = [
        f"Throughput: {r['n']} concurrent unpaced streams x {r['events']} events "
        f"({addon.mb:.0f} MB per round), reverse mode, bench.upstream.",
        "",
        "| variant | unpaced: CPU s / MB | vs plain | paced: CPU s / MB | vs plain |",
        "|---|---|---|---|---|",
        f"| plain mitmdump (stream_large_bodies=1) | {cp:.4f} | 1.00 | {pp:.4f} | 1.00 |",
        f"| mitmdump -s addon/proxai.py | {ca:.4f} | {ca / cp:.2f} ({(ca / cp - 1) * 100:+.0f}%) "
        f"| {pa:.4f} | {pa / pp:.2f} ({(pa / pp - 1) * 100:+.0f}%) |",
        f"| the floor alone, in process | {fu:.4f} | {fu / cp:.2f} ({fu / cp * 100:.0f}% of plain) "
        f"| {fp:.4f} | {fp / pp:.2f} ({fp / pp * 100:.0f}% of plain) |",
        "",
        "The floor: lines + `orjson.loads` of every payload over the same streams in the same read "
        "sizes (bench/floor.py), what a plain observer does; what the addon adds, in "
        f"floors: {(ca - cp) / fu:.1f} unpaced, {(pa - pp) / fp:.1f} paced.",
        "",
        "Each variant's best round above; addon / plain within each round (they alternate), paced: "
        f"{_rounds(plain.paced_cpu_per_mb, addon.paced_cpu_per_mb)}; unpaced: "
        f"{_rounds(plain.cpu_per_mb, addon.cpu_per_mb)}.",
        "",
        "Unpaced: the upstream writes 16 KiB at a time (about 100 events per read). Paced: one event per "
        f"read, the latency run below ({addon.paced_mb:.1f} MB).",
        "",
        f"Latency: {lat_n} concurrent streams x {lat_events} events, one event every {interval:g} ms; "
        "receive time minus upstream send time, per event.",
        "",
        "| path | p50 ms | p99 ms |",
        "|---|---|---|",
        f"| direct (no proxy) | {_pct(r['direct'], 0.5):.3f} | {_pct(r['direct'], 0.99):.3f} |",
        f"| plain mitmdump | {p50p:.3f} | {p99p:.3f} |",
        f"| mitmdump + addon | {p50a:.3f} | {p99a:.3f} |",
        f"| added by the addon | {p50a - p50p:+.3f} | {p99a - p99p:+.3f} |",
    ]
    for v in (plain, addon):
        if v.errors:
            lines.append(f"\n{v.name} errors: {sorted(set(v.errors))[:5]}")
    return lines
