"""``python -m proxai demo``: run the embedded demo (docs/usage.md, "The demo"); see
``proxai.cli.demo_run``."""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Sequence
from pathlib import Path

NAME = "demo"
HELP = "start the fake upstream and mitmdump, drive the real SDKs through it, print how each flow ended"
SDKS = ("openai", "anthropic")  # the clients the demo drives: the ``demo`` extra


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
    from proxai.cli.demo_run import run_demo, table
    from proxai.mitm.launch import ToolNotFound

    missing_sdks = [name for name in SDKS if importlib.util.find_spec(name) is None]
    if missing_sdks:
        print(
            f"proxai demo: the demo drives the {' and '.join(missing_sdks)} SDK"
            f"{'s' if len(missing_sdks) > 1 else ''}: pip install 'proxai[demo]'",
            file=sys.stderr,
        )
        return 2
    started = time.monotonic()
    try:
        rows = run_demo(flows_dir=Path(args.flows_dir), time_scale=args.time_scale)
    except ToolNotFound as exc:
        print(f"proxai demo: {exc}", file=sys.stderr)
        return 2
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
