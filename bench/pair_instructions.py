"""The ``translate`` section's ratios in instructions: the same floor, observer and carrier's path
per pair (``translate_bench``), counted under valgrind's callgrind instead of timed.

``python -m bench.pair_instructions [EVENTS]`` (default 2000) runs itself under callgrind and
prints, per protocol, the observer's and each translated pair's path as a multiple of the floor,
in user-space machine instructions (valgrind's ``Ir``), on two sets of streams: the generated
streams of ``bench.streams`` (EVENTS events each) and the real corpus (every recording of
tests/fixtures/real of the protocol, each its own flow, in the same 512-byte reads: the recorded
key orders, ``obfuscation`` fields, padding and event shapes, not only the generated ones). The
timed section scatters by up to +-10% when the machine is busy; these counts move by about 1%
(hash randomization is off: ``PYTHONHASHSEED=0``). They are not the timed ratios (a cache miss
costs time, not instructions), but a change that lowers one lowers the other, and two commits
can be compared at any load.

Each region runs inside one ``functools.reduce`` call, which nothing else in the process calls:
callgrind, started with ``--collect-atstart=no --toggle-collect=functools_reduce
--dump-after=functools_reduce``, counts only inside it and writes one dump per region, in order.
Every path runs once before it is counted (warm caches, interned strings). ``--child`` is the
counted process; ``--dry``: the regions run without callgrind (the smoke test).
"""

from __future__ import annotations

import contextlib
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

from . import instructions_bench, paced_bench, streams, translate_bench, upstream
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


def _each(call: Callable[[list[bytes]], Any], flows: list[list[bytes]]) -> int:
    """``call`` on every flow's reads in turn. A translation the client's protocol cannot carry
    (a typed refusal, a few of the real recordings per pair) ends its flow there, as the carrier
    ends it."""
    from proxai.core.errors import ProxaiError

    n = 0
    for chunks in flows:
        with contextlib.suppress(ProxaiError):
            call(chunks)
        n += 1
    return n


def _real(protocol: str) -> list[list[bytes]]:
    """Every real recording of ``protocol``, in 512-byte reads."""
    files = paced_bench.corpus(False, protocol)
    return [streams.chunks((upstream.REAL / f).read_bytes(), 512) for _, f in files]


def regions(events: int, *, real: bool = True) -> list[tuple[str, Callable[[], Any]]]:
    """(name, call) per counted region: per protocol its floor, its observer, each pair's path, on
    the generated streams (``events`` each), then (``real``) on the real corpus (names ``real: ``)."""
    from proxai.core.model import Protocol

    sets = [("", lambda up: [streams.chunks(streams.generate(up, events), 512)])]
    if real:
        sets.append(("real: ", _real))
    out: list[tuple[str, Callable[[], Any]]] = []
    for prefix, flows_of in sets:
        for up in streams.PROTOCOLS:
            flows = flows_of(up)
            out.append((f"{prefix}floor {up}", partial(_each, floor, flows)))
            out.append((f"{prefix}observe {up}", partial(_each, partial(_observe_only, up), flows)))
            for client in streams.PROTOCOLS:
                if client != up:
                    path = partial(translate_bench._full_path, Protocol(up), Protocol(client))
                    out.append((f"{prefix}{up} -> {client}", partial(_each, path, flows)))
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
        prefix, _, path = name.rpartition(": ")
        if not path.startswith("floor "):
            up = path.split()[-1] if path.startswith("observe ") else path.split(" -> ")[0]
            rows.append((name, total / counts[f"{prefix}{': ' if prefix else ''}floor {up}"]))
    return rows


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        _child(int(argv[1]), argv[2])
        return 0
    events = int(argv[0]) if argv else 2000
    rows = dict(run(events))
    print(f"| path (512-byte reads), instructions x floor | bench streams ({events} events) | real corpus |")
    print("|---|---|---|")
    for name, ratio in rows.items():
        if not name.startswith("real: "):
            print(f"| {name} | {ratio:.2f} | {rows[f'real: {name}']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
