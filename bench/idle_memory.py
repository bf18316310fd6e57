"""The addon's resident footprint: mitmdump's idle RSS with and without the addon, and what each
import adds in a fresh interpreter.

``python -m bench.idle_memory [ROUNDS]``:

- mitmdump idle: plain mitmdump and mitmdump with the addon (default options) in alternating rounds,
  each in reverse mode before ``bench.upstream``; one flow of each protocol through it (so the addon
  has priced a flow of each of its protocols: its price table is loaded), a pause for the start-up
  threads, then VmRSS. The rounds' spread is printed beside the median.
- the import ladder: one fresh interpreter imports ``mitmproxy.tools.dump`` and then each of
  ``LADDER`` in turn, VmRSS after each step (an observe-only proxy's imports, the price table and a
  flow of each protocol priced; then what a routes file adds), so a module's share is the growth at
  its step.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from . import client, procs, streams

_PRICED = (
    "import proxai.outputs.cost as c\n"
    "for p, m in (('anthropic_messages', 'claude-sonnet-4-5'), ('openai_chat', 'gpt-4o-2024-08-06'),"
    " ('openai_responses', 'gpt-4.1-2025-04-14')):\n"
    "    u = {'input_tokens': 9, 'output_tokens': 9}\n"
    "    assert c.price_flow({'protocol': p, 'model': m, 'usage': u}, api_url='http://127.0.0.1:9/v1').cost\n"
)

# (label, statement run at that step); each step's modules are imported by those before it too. The
# steps up to ``OBSERVED`` are what an observe-only proxy (default options) imports, in its order;
# the later ones what a routes file (``proxai_routes``) adds: pydantic and the translation.
LADDER: list[tuple[str, str]] = [
    ("mitmproxy.tools.dump", "import mitmproxy.tools.dump"),
    ("orjson", "import orjson"),
    ("proxai.safety.redact", "import proxai.safety.redact"),
    ("proxai.pipeline.observe", "import proxai.pipeline.observe"),
    ("proxai.outputs.cost", "import proxai.outputs.cost"),
    ("proxai.mitm.addon", "import proxai.mitm.addon"),
    ("the price table (cost.warm)", "import proxai.outputs.cost as c; c.warm()"),
    ("a flow of each protocol priced", _PRICED),
    ("+ a routes file: pydantic", "import pydantic"),
    ("+ a routes file: proxai.translate.request", "import proxai.translate.request"),
    ("+ a routes file: proxai.mitm.routed (routes, stream writers)", "import proxai.mitm.routed"),
]
OBSERVED = 8  # LADDER[:OBSERVED]: an observe-only proxy's imports

_CHILD = """
import json, sys
def rss():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
steps = json.loads(sys.argv[1])
out = [('start', rss())]
for label, stmt in steps:
    exec(stmt, {})
    out.append((label, rss()))
print(json.dumps(out))
"""


def ladder() -> list[tuple[str, int]]:
    """VmRSS (kB) after each step of ``LADDER`` in one fresh interpreter."""
    env = {"PYTHONPATH": str(procs.REPO / "addon")}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(LADDER)],
        cwd=procs.REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return [(label, kb) for label, kb in json.loads(out.stdout.strip().splitlines()[-1])]


def _idle(addon: bool, up_url: str) -> int:
    md = procs.start_mitmdump(up_url, addon=addon)
    try:
        for p in streams.PROTOCOLS:
            asyncio.run(client.stream(md.url, p, {"x-bench-events": "200"}))
        time.sleep(3.0)  # the addon's start-up threads (the price table) have ended
        if "Traceback" in md.log():
            raise RuntimeError("traceback in mitmdump log:\n" + md.log()[-2000:])
        return procs.status_kb(md.pid, "VmRSS")
    finally:
        md.stop()


def mitmdump_idle(rounds: int) -> dict[str, list[int]]:
    """VmRSS (kB) of plain mitmdump and of mitmdump with the addon, ``rounds`` alternating rounds."""
    res: dict[str, list[int]] = {"plain": [], "addon": []}
    up = procs.start_upstream()
    try:
        for _ in range(rounds):
            res["plain"].append(_idle(False, up.url))
            res["addon"].append(_idle(True, up.url))
    finally:
        up.stop()
    return res


def report(idle: dict[str, list[int]], steps: list[list[tuple[str, int]]]) -> list[str]:
    def mb(kb: float) -> str:
        return f"{kb / 1024:.1f}"

    over = [a - p for a, p in zip(idle["addon"], idle["plain"], strict=True)]
    lines = [
        "| variant | idle RSS MB, median | every round |",
        "|---|---|---|",
        *(
            f"| {name} | {mb(statistics.median(kbs))} | {', '.join(mb(k) for k in kbs)} |"
            for name, kbs in idle.items()
        ),
        f"| addon over plain | {mb(statistics.median(over))} | {', '.join(mb(k) for k in over)} |",
        "",
        "| import step | RSS growth MB, median | every run |",
        "|---|---|---|",
    ]
    labels = [label for label, _ in steps[0]]
    for i in range(1, len(labels)):
        growth = [run[i][1] - run[i - 1][1] for run in steps]
        lines.append(
            f"| {labels[i]} | {mb(statistics.median(growth))} | {', '.join(mb(g) for g in growth)} |"
        )
    # run[i] is the RSS after LADDER[i - 1] (run[0]: the interpreter's start)
    for label, last in (("observe-only", OBSERVED), ("with a routes file", len(LADDER))):
        total = [run[last][1] - run[1][1] for run in steps]
        lines.append(f"| **after mitmproxy.tools.dump, {label}** | **{mb(statistics.median(total))}** | "
                     f"{', '.join(mb(t) for t in total)} |")  # fmt: skip
    return lines


def main(argv: list[str]) -> None:
    rounds = int(argv[0]) if argv else 3
    steps = [ladder() for _ in range(rounds)]
    idle = mitmdump_idle(rounds)
    result: dict[str, Any] = {"idle": idle, "ladder": steps}
    print(json.dumps(result), file=sys.stderr)
    print("\n".join(report(idle, steps)))


if __name__ == "__main__":
    main(sys.argv[1:])
