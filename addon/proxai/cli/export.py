"""``python -m proxai export IN.flow OUT.flow [--har] [--max-body N]``: a redacted bug-report bundle.

The same redaction as the ``proxai.export`` command (docs/bug-reports.md): writes
``OUT.flow``, ``OUT.summary.json`` (outcomes) and, with ``--har``, ``OUT.har``; secrets removed as
described in ``docs/bug-reports.md``. A command-line shell over ``proxai.mitm.export``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

NAME = "export"
HELP = "write a redacted copy of a .flow file for a bug report (+ summary JSON, optional HAR)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("infile", metavar="IN.flow", help="a flow file saved with mitmdump -w")
    parser.add_argument("outfile", metavar="OUT.flow", help="where to write the redacted flows")
    parser.add_argument("--har", action="store_true", help="also write OUT.har (HTTP Archive)")
    parser.add_argument(
        "--max-body",
        type=int,
        default=0,
        metavar="N",
        help="cut bodies longer than N bytes after redaction (default 0: keep whole bodies)",
    )


def run(args: argparse.Namespace) -> int:
    from proxai.mitm.export import export_bundle
    from proxai.mitm.flowrows import FlowFileError, read_flows
    from proxai.safety.termsafe import escape

    if args.max_body < 0:
        print("proxai export: --max-body must be >= 0", file=sys.stderr)
        return 2
    try:
        flows = read_flows(args.infile)
    except FlowFileError as exc:
        print(f"proxai export: {escape(str(exc), newlines=False)}", file=sys.stderr)
        return 2
    try:
        res = export_bundle(flows, args.outfile, har=args.har, max_body=args.max_body)
    except OSError as exc:
        print(f"proxai export: cannot write {args.outfile}: {exc}", file=sys.stderr)
        return 2
    written = [res.flow_path, res.summary_path] + ([res.har_path] if res.har_path else [])
    print(f"proxai export: {res.flows} flow(s) redacted -> {', '.join(written)}")
    if res.truncated_bodies:
        print(f"proxai export: {res.truncated_bodies} bodies truncated to {args.max_body} bytes")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proxai export", description=HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
