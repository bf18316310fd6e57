"""``python -m bench [--quick] [--only SECTION ...]``: every ProxAI benchmark in one run.

Sections: ``observe`` (scanner + observer per protocol), ``translate`` (each stream pair),
``memory`` (peak RSS growth on a 200 MB stream, in process and through mitmdump), ``e2e``
(mitmdump with the addon vs plain mitmdump, CPU seconds and latency), ``paced`` (plain, identity
callback and addon, 256-byte pieces 1 ms apart, generated and real streams, scheduler CPU),
``instructions`` (the same
in instructions counted by valgrind, paced), ``peer`` (LiteLLM's streaming adapters, optional).
Figures are ratios to a floor measured in the same process and the same run.

The rule measured (docs/design/scanner.md): the SSE scanner runs once per chunk on the
hot path; these figures check what that costs.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable

SECTIONS = ("observe", "translate", "memory", "e2e", "paced", "instructions", "peer")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat: a smoke run")
    ap.add_argument("--only", action="append", choices=SECTIONS, help="run only these sections")
    args = ap.parse_args(argv)
    sections = args.only or list(SECTIONS)
    quick: bool = args.quick
    print(f"# ProxAI bench ({'quick' if quick else 'full'}) {time.strftime('%Y-%m-%d %H:%M:%S')}")
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.node()}\n")
    runners: dict[str, Callable[[bool], list[str]]] = {
        "observe": _observe,
        "translate": _translate,
        "memory": _memory,
        "e2e": _e2e,
        "paced": _paced,
        "instructions": _instructions,
        "peer": _peer,
    }
    for name in sections:
        t0 = time.perf_counter()
        print(f"## {name}\n")
        try:
            lines = runners[name](quick)
        except Exception as exc:  # a broken section must not hide the others' figures
            lines = [f"section failed: {type(exc).__name__}: {exc}"]
        print("\n".join(lines))
        print(f"\n({name}: {time.perf_counter() - t0:.1f} s)\n", flush=True)
    return 0


def _observe(quick: bool) -> list[str]:
    from . import observer_bench

    return observer_bench.report(observer_bench.run(3000 if quick else 30000, 1 if quick else 7))


def _translate(quick: bool) -> list[str]:
    from . import translate_bench

    return translate_bench.report(translate_bench.run(3000 if quick else 30000, 1 if quick else 5))


def _memory(quick: bool) -> list[str]:
    from . import memory_bench

    return memory_bench.report(memory_bench.run(20 if quick else 200))


def _e2e(quick: bool) -> list[str]:
    from . import e2e_bench

    return e2e_bench.report(e2e_bench.run(quick))


def _paced(quick: bool) -> list[str]:
    from . import paced_bench

    return paced_bench.report(paced_bench.run(quick))


def _instructions(quick: bool) -> list[str]:
    from . import instructions_bench

    return instructions_bench.report(instructions_bench.run(quick))


def _peer(quick: bool) -> list[str]:
    from . import peer_bench

    return peer_bench.report(peer_bench.run(3000 if quick else 30000, 1 if quick else 5))


if __name__ == "__main__":
    sys.exit(main())
