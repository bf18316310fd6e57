"""``python -m proxai report FILE.flow [--json]``: a table of the LLM flows of a saved flow file.

Issue 6 ("Outside mitmproxy"): protocol, model, outcome, stop reason, tokens, tool calls, timings,
ending with totals; the diagnostics (recent tail and state, seed 001 ``001_5998ffc26e6ec2b6.txt``)
of every ``unfinished_tool`` flow. A command-line shell: reading the file is mitmproxy's job
(``proxai.mitm.flowrows``), the table is ``proxai.report``'s.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import orjson

NAME = "report"
HELP = "print a table of the LLM flows in a .flow file (outcome, stop reason, tokens, tool calls, timings)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE.flow", help="a flow file saved with mitmdump -w")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument(
        "--no-diagnostics-files",
        action="store_true",
        help="do not read the unfinished-tool diagnostics files the addon wrote; rebuild from the body",
    )


def run(args: argparse.Namespace) -> int:
    from proxai.mitm.flowrows import FlowFileError, read_flows, report_rows
    from proxai.report import report_json, table_lines
    from proxai.termsafe import escape, escape_json

    try:
        flows = read_flows(args.file)
    except FlowFileError as exc:
        print(f"proxai report: {escape(str(exc), newlines=False)}", file=sys.stderr)
        return 2
    rows = report_rows(flows, load_files=not args.no_diagnostics_files, base_dir=bundle_dir(args.file))
    # every string below came from the network or from the file: terminal-safe (docs/security.md)
    if args.json:
        text = orjson.dumps(report_json(rows), option=orjson.OPT_INDENT_2).decode()
        sys.stdout.write(escape_json(text) + "\n")
    else:
        sys.stdout.write("\n".join(escape(line, newlines=False) for line in table_lines(rows)) + "\n")
    return 0


def bundle_dir(path: str) -> str:
    """The folder a flow file's own diagnostics files may be read from: the file's folder."""
    import os

    return os.path.dirname(os.path.abspath(path))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proxai report", description=HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
