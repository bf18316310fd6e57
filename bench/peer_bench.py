"""Optional peer benchmark: LiteLLM's Chat <-> Anthropic streaming adapters.

LiteLLM lives in its own venv, ``bench/.peer-venv`` (never in .venv). Create it with
``.venv/bin/python -m venv bench/.peer-venv && bench/.peer-venv/bin/pip install litellm orjson``.
Without it this section says so and is skipped. The child process (``bench/peer_child.py``)
times the same generated streams against the same floor, in its own process.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

PEER_PYTHON = Path(__file__).parent / ".peer-venv" / "bin" / "python"


def run(events: int, repeats: int) -> dict[str, Any]:
    if not PEER_PYTHON.exists():
        return {"skipped": f"{PEER_PYTHON} missing (see bench/peer_bench.py to create it)"}
    proc = subprocess.run(
        [str(PEER_PYTHON), "-m", "bench.peer_child", str(events), str(repeats)],
        cwd=Path(__file__).parent.parent,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if proc.returncode != 0:
        return {"skipped": f"peer child failed: {proc.stderr.strip().splitlines()[-1:]}"}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def report(result: dict[str, Any]) -> list[str]:
    if "skipped" in result:
        return [f"peer skipped: {result['skipped']}"]
    lines = [
        f"LiteLLM {result.get('version')} (bench/.peer-venv), same streams, same floor:",
        "",
        "| pair | events | LiteLLM x floor | events/s |",
        "|---|---|---|---|",
    ]
    for name, r in result.items():
        if not isinstance(r, dict):
            continue
        if "error" in r:
            lines.append(f"| {name} | - | error: {r['error'][:100]} | - |")
            continue
        ratio, eps = r["peer_s"] / r["floor_s"], r["events"] / r["peer_s"]
        lines.append(f"| {name} | {r['events']} | {ratio:.1f} | {eps:,.0f} |")
    return lines
