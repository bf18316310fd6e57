"""Peak RSS growth while observing a 200 MB stream in observe-only mode.

- in process: ``bench.memory_child`` per protocol (its own process, peak reset after warm-up);
- through mitmdump: one 200 MB stream per protocol through ``mitmdump -s addon/proxai.py`` and
  through plain mitmdump (streaming); growth = VmHWM after the stream minus VmRSS before it
  (peak reset through /proc/PID/clear_refs after a warm-up flow).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

from . import client, procs, streams


def _in_process(protocol: str, mb: int, client: str | None = None) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.memory_child", protocol, str(mb), *([client] if client else [])],
        cwd=procs.REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _through(
    addon: bool, up_url: str, mb: int, *, write: int = 16384, extra: list[str] | None = None, events: int = 0
) -> dict[str, Any]:
    """One stream of ``mb`` MB per protocol through one mitmdump, the upstream writing ``write``
    bytes at a time; ``extra``: more mitmdump arguments (``--set proxai_keep_body=false``)."""
    md = procs.start_mitmdump(up_url, addon=addon, extra=extra)
    rows: dict[str, Any] = {}
    try:
        asyncio.run(client.stream(md.url, "openai_chat", {"x-bench-events": "500"}))  # warm-up
        rows["idle_kb"] = procs.status_kb(md.pid, "VmRSS")
        for p in streams.PROTOCOLS:
            rss0 = procs.status_kb(md.pid, "VmRSS")
            reset = procs.reset_peak_rss(md.pid)
            size = {"x-bench-events": str(events)} if events else {"x-bench-bytes": str(mb * 1_000_000)}
            hdrs = {**size, "x-bench-write": str(write)}
            r = asyncio.run(client.stream(md.url, p, hdrs))
            hwm = procs.status_kb(md.pid, "VmHWM")
            rows[p] = {"mb": r.body_bytes / 1e6, "rss0_kb": rss0, "hwm_kb": hwm, "reset": reset}
        if "Traceback" in md.log():
            rows["error"] = "traceback in mitmdump log"
    finally:
        md.stop()
    return rows


def run(mb: int) -> dict[str, Any]:
    res: dict[str, Any] = {"mb": mb, "in_process": {}, "addon": {}, "plain": {}, "translate": {}, "64k": {}}
    for p in streams.PROTOCOLS:
        res["in_process"][p] = _in_process(p, mb)
    for src in streams.PROTOCOLS:
        for target in streams.PROTOCOLS:
            if target != src:
                try:
                    res["translate"][f"{src} -> {target}"] = _in_process(src, mb, target)
                except subprocess.CalledProcessError as exc:
                    res["translate"][f"{src} -> {target}"] = {"error": exc.stderr.strip()[-200:]}
    up = procs.start_upstream()
    try:
        res["addon"] = _through(True, up.url, mb)
        res["plain"] = _through(False, up.url, mb)
        res["64k"] = reads_64k(up.url, mb)
    finally:
        up.stop()
    return res


KEEP_OFF = ["--set", "proxai_keep_body=false"]
KEPT_EVENTS = 20000  # a stream of 4-5 MB, under proxai_keep_body_max (8 MiB): the whole body is kept


def reads_64k(up_url: str, mb: int) -> dict[str, Any]:
    """64 KiB upstream writes: plain, the addon with the body not kept and kept, on a ``mb`` MB
    stream (past proxai_keep_body_max, so a kept body is dropped at the cap) and on a ``KEPT_MB`` MB
    one of ``KEPT_EVENTS`` events (kept whole)."""
    w = 65536
    return {
        "plain": _through(False, up_url, mb, write=w),
        "addon, body not kept": _through(True, up_url, mb, write=w, extra=KEEP_OFF),
        "addon, body kept (default)": _through(True, up_url, mb, write=w),
        "plain, short": _through(False, up_url, 0, write=w, events=KEPT_EVENTS),
        "addon, body not kept, short": _through(True, up_url, 0, write=w, extra=KEEP_OFF, events=KEPT_EVENTS),
        "addon, body kept, short": _through(True, up_url, 0, write=w, events=KEPT_EVENTS),
    }


def report_64k(rows: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "64 KiB upstream writes; growth = VmHWM minus VmRSS before the stream (MB); idle = VmRSS after "
        "the warm-up flow (MB):",
        "",
        "| variant | idle RSS | " + " | ".join(streams.PROTOCOLS) + " | stream MB |",
        "|---|---|" + "---|" * len(streams.PROTOCOLS) + "---|",
    ]
    for name, row in rows.items():
        cells = [
            f"{(row[p]['hwm_kb'] - row[p]['rss0_kb']) / 1024:.1f}" if p in row else "-"
            for p in streams.PROTOCOLS
        ]
        mb = max((row[p]["mb"] for p in streams.PROTOCOLS if p in row), default=0.0)
        lines.append(f"| {name} | {row['idle_kb'] / 1024:.1f} | " + " | ".join(cells) + f" | {mb:.1f} |")
    return lines


def report(r: dict[str, Any]) -> list[str]:
    lines = [
        f"Observe-only, {r['mb']} MB per stream; growth = peak RSS (VmHWM) minus RSS before the stream.",
        "",
        "| protocol | in process: growth MB | outcome | mitmdump + addon: growth MB "
        "| plain mitmdump: growth MB |",
        "|---|---|---|---|---|",
    ]
    for p in streams.PROTOCOLS:
        ip = r["in_process"][p]
        a, pl = r["addon"].get(p, {}), r["plain"].get(p, {})

        def growth(x: dict[str, Any]) -> str:
            if not x:
                return "-"
            g = (x["hwm_kb"] - x["rss0_kb"]) / 1024
            return f"{g:.1f}" + ("" if x.get("reset") else " (peak not reset)")

        lines.append(f"| {p} | {growth(ip)} | {ip['outcome']} | {growth(a)} | {growth(pl)} |")
    lines += [
        "",
        "Observe + translate in process (the carrier's path), same streams:",
        "",
        "| pair | growth MB | output MB |",
        "|---|---|---|",
    ]
    for name, t in r["translate"].items():
        if "error" in t:
            lines.append(f"| {name} | error: {t['error']} | - |")
        else:
            lines.append(f"| {name} | {(t['hwm_kb'] - t['rss0_kb']) / 1024:.1f} | {t['out_mb']:.0f} |")
    lines += report_64k(r.get("64k", {}))
    for k in ("addon", "plain"):
        if "error" in r[k]:
            lines.append(f"\n{k}: {r[k]['error']}")
    bad = [p for p in streams.PROTOCOLS if r["in_process"][p].get("failed")]
    for p in bad:
        lines.append(f"\n{p} observer failed: {r['in_process'][p]['failed']}")
    return lines
