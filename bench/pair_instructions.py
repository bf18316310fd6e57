"""The ``translate`` section's ratios in instructions: the same floor, observer and carrier's path
per pair (``translate_bench``), counted under valgrind's callgrind instead of timed.

``python -m bench.pair_instructions [EVENTS]`` (default 2000) runs itself under callgrind and
prints, per protocol, the observer's and each translated pair's path as a multiple of the floor,
in user-space machine instructions (valgrind's ``Ir``). The timed section scatters by up to
+-10% when the machine is busy; these counts move by about 1% (hash randomization is off:
``PYTHONHASHSEED=0``). They are not the timed ratios (a cache miss costs time, not instructions),
but a change that lowers one lowers the other, and two commits can be compared at any load.

Each region runs inside one ``functools.reduce`` call, which nothing else in the process calls:
callgrind, started with ``--collect-atstart=no --toggle-collect=functools_reduce
--dump-after=functools_reduce``, counts only inside it and writes one dump per region, in order.
Every path runs once before it is counted (warm caches, interned strings). ``--child`` is the
counted process; ``--dry``: the regions run without callgrind (the smoke test).
"""

from __future__ import annotations

import functools
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from . import instructions_bench, streams, translate_bench
from .floor import floor


def _observe_only(protocol: str, chunks: list[bytes]) -> int:
    from proxai.core.model import Protocol
    from proxai.pipeline.observe import StreamObserver

    obs = StreamObserver(Protocol(protocol), start=0.0)
    obs.headers(200, 0.0)
    now = 0.0
    n = 0
    for c in chunks:
        now += 1e-4
        n += len(obs.observe_payloads(c, now))
    obs.finish(now)
    return n


def regions(events: int) -> list[tuple[str, Callable[[], Any]]]:
    """(name, call) per counted region: per protocol its floor, its observer, each pair's path."""
    from proxai.core.model import Protocol

    out: list[tuple[str, Callable[[], Any]]] = []
    for up in streams.PROTOCOLS:
        chunks = streams.chunks(streams.generate(up, events), 512)
        out.append((f"floor {up}", partial(floor, chunks)))
        out.append((f"observe {up}", partial(_observe_only, up, chunks)))
        for client in streams.PROTOCOLS:
            if client != up:
                out.append(
                    (
                        f"{up} -> {client}",
                        partial(translate_bench._full_path, Protocol(up), Protocol(client), chunks),
                    )
                )
    return out


def _child(events: int, names_file: str) -> None:
    names = []
    for name, call in regions(events):
        call()  # warm
        gc.collect()
        gc.disable()
        functools.reduce(lambda _, f: f(), [call], None)  # the counted region
        gc.enable()
        names.append(name)
    Path(names_file).write_text(json.dumps(names))


def run(events: int = 2000, *, dry: bool = False) -> list[tuple[str, float]]:
    """(region, instructions as a multiple of its protocol's floor) for every observer and pair."""
    if dry:
        for _, call in regions(events):
            call()
        return []
    if shutil.which("valgrind") is None:
        raise RuntimeError("valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="proxai-pairs-cg-") as tmp:
        out, names_file = Path(tmp) / "callgrind.out", Path(tmp) / "names.json"
        child = ["-m", "bench.pair_instructions", "--child", str(events), str(names_file)]
        cmd = [*instructions_bench.regions_callgrind(out), sys.executable, *child]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        root = Path(__file__).resolve().parent.parent
        subprocess.run(cmd, check=True, capture_output=True, cwd=root, env=env)
        names = json.loads(names_file.read_text())
        totals = [
            instructions_bench._total(out.with_name(f"{out.name}.{i}")) for i in range(1, len(names) + 1)
        ]
    counts = dict(zip(names, totals, strict=True))
    rows = []
    for name, total in counts.items():
        if not name.startswith("floor "):
            up = name.split()[-1] if name.startswith("observe ") else name.split(" -> ")[0]
            rows.append((name, total / counts[f"floor {up}"]))
    return rows


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        _child(int(argv[1]), argv[2])
        return 0
    events = int(argv[0]) if argv else 2000
    print(f"| path ({events} events, 512-byte chunks) | instructions x floor |")
    print("|---|---|")
    for name, ratio in run(events):
        print(f"| {name} | {ratio:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
