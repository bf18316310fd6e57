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


def _through(addon: bool, up_url: str, mb: int) -> dict[str, Any]:
    md = procs.start_mitmdump(up_url, addon=addon)
    rows: dict[str, Any] = {}
    try:
        asyncio.run(client.stream(md.url, "openai_chat", {"x-bench-events": "500"}))  # warm-up
        for p in streams.PROTOCOLS:
            rss0 = procs.status_kb(md.pid, "VmRSS")
            reset = procs.reset_peak_rss(md.pid)
            r = asyncio.run(client.stream(md.url, p, {"x-bench-bytes": str(mb * 1_000_000)}))
            hwm = procs.status_kb(md.pid, "VmHWM")
            rows[p] = {"mb": r.body_bytes / 1e6, "rss0_kb": rss0, "hwm_kb": hwm, "reset": reset}
        if "Traceback" in md.log():
            rows["error"] = "traceback in mitmdump log"
    finally:
        md.stop()
    return rows


def run(mb: int) -> dict[str, Any]:
    res: dict[str, Any] = {"mb": mb, "in_process": {}, "addon": {}, "plain": {}, "translate": {}}
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
    finally:
        up.stop()
    return res


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
    for k in ("addon", "plain"):
        if "error" in r[k]:
            lines.append(f"\n{k}: {r[k]['error']}")
    bad = [p for p in streams.PROTOCOLS if r["in_process"][p].get("failed")]
    for p in bad:
        lines.append(f"\n{p} observer failed: {r['in_process'][p]['failed']}")
    return lines
