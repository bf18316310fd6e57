"""``python -m proxai demo``: run the embedded demo (docs/usage.md, "The demo"); see ``proxai.demo``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

NAME = "demo"
HELP = "start the fake upstream and mitmdump, drive the real SDKs through it, print how each flow ended"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--flows-dir", default="flows", help="where demo.flow and the diagnostics go (default: flows)"
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=0.05,
        help="multiply the fake upstream's realistic delays by this (default: 0.05)",
    )


def run(args: argparse.Namespace) -> int:
    from proxai.demo import run_demo, table

    started = time.monotonic()
    rows = run_demo(flows_dir=Path(args.flows_dir), time_scale=args.time_scale)
    sys.stdout.write("\n".join(table(rows)) + "\n")
    missing = sum(1 for r in rows if r.meta is None)
    flow_file = Path(args.flows_dir) / "demo.flow"
    took = time.monotonic() - started
    log_file = Path(args.flows_dir) / "demo-mitmdump.log"
    sys.stdout.write(
        f"\n{len(rows)} flows saved to {flow_file} in {took:.1f} s; mitmdump's log: {log_file}\n"
        f"open the flows with: mitmproxy -r {flow_file}   (or mitmweb -r {flow_file})\n"
    )
    return 1 if missing else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proxai demo", description=HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))
