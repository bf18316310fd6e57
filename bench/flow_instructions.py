"""``python -m bench.flow_instructions``: the addon's per-flow work on the real corpus's short streams,
by hook, in instructions counted by callgrind (``bench/flow_child.py`` runs the hooks; docs/performance.md,
"Per-flow work on short streams"). Needs ``valgrind``.

For each set: instructions per flow of the ``request`` and ``responseheaders`` hooks, of the end of
the body (the summary) and of the ``response`` hook; their sum per flow and over the set's events
(what the per-flow work adds to a paced event in the real corpus's mix); with ``--reads`` the stream
reads per event too. The harness's own cost (the reduce over the flows, over the pieces) is
subtracted. ``--dump DIR`` keeps the callgrind dumps
(``callgrind_annotate DIR/callgrind.out.N`` shows where a region's instructions go by C function);
``--every N``: every N-th recording only; ``--reads``: count the reads too (slow under callgrind).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .instructions_bench import MISSING, _total, regions_callgrind


def run(dump: Path | None = None, every: int = 1, reads: bool = False) -> dict[str, Any]:
    if shutil.which("valgrind") is None:
        return {"missing": MISSING}
    with tempfile.TemporaryDirectory(prefix="proxai-bench-flow-") as tmp:
        where = dump or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        out, regions_file = where / "callgrind.out", where / "regions.json"
        cmd = [
            *regions_callgrind(out),
            "--instr-atstart=no",
            sys.executable,
            "-m",
            "bench.flow_child",
            str(regions_file),
            "--callgrind",
            "--every",
            str(every),
            *(["--reads"] if reads else []),
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        root = Path(__file__).resolve().parent.parent
        subprocess.run(cmd, check=True, capture_output=True, cwd=root, env=env)
        got = json.loads(regions_file.read_text())
        n = len(got["regions"])
        counts = [_total(out.with_name(f"{out.name}.{i}")) for i in range(1, n + 1)]
        if out.with_name(f"{out.name}.{n + 1}").exists() or _total(out):
            raise RuntimeError(
                "callgrind counted outside the regions (something else called functools.reduce)"
            )
    names = [r["region"] for r in got["regions"]]
    return {"counts": dict(zip(names, counts, strict=True)), "sets": got["sets"]}


PER_FLOW = ("request", "responseheaders", "end of body", "response")


def report(r: dict[str, Any]) -> list[str]:
    if "missing" in r:
        return [f"skipped: {r['missing']}"]
    c = r["counts"]
    first = r["sets"][0]
    hf = c["harness: per flow"] / first["flows"]  # the harness per flow
    reads = "harness: reads" in c
    hr = (c["harness: reads"] - c["harness: per flow"]) / first["reads"] if reads else 0.0
    head = " | ".join(f"{h} / flow" for h in PER_FLOW)
    lines = [
        f"| set | flows | events | {head} | per-flow work / flow | per-flow work / event"
        + (" | reads / event |" if reads else " |"),
        "|---|---|---|" + "---|" * (len(PER_FLOW) + 2) + ("---|" if reads else ""),
    ]
    for s in r["sets"]:
        n, ev, name = s["flows"], s["events"], s["set"]
        per = {h: c[f"{name}: {h}"] - hf * n for h in PER_FLOW}
        total = sum(per.values())
        cells = " | ".join(f"{per[h] / n:,.0f}" for h in PER_FLOW)
        line = f"| {name} | {n} | {ev:,} | {cells} | {total / n:,.0f} | {total / ev:,.0f} |"
        if reads:
            line += f" {(c[f'{name}: reads'] - hf * n - hr * s['reads']) / ev:,.0f} |"
        lines.append(line)
    return lines


def main() -> None:
    args = sys.argv[1:]
    dump = Path(args[args.index("--dump") + 1]) if "--dump" in args else None
    every = int(args[args.index("--every") + 1]) if "--every" in args else 1
    print("\n".join(report(run(dump, every, "--reads" in args))))


if __name__ == "__main__":
    main()
