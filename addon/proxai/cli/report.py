"""``python -m proxai report FILE.flow [--json] [--filter EXPR] [--html OUT] [--csv] [--turns]``: a
table of the LLM flows of a saved flow file, or the run report (docs/run-report.md).

Protocol, model, outcome, stop reason, tokens, tool calls, timings, ending with totals; the
diagnostics (recent tail and state, docs/design/outcomes.md) of every ``unfinished_tool`` flow
(docs/bug-reports.md, "See what you have"). A command-line shell: reading the file is mitmproxy's job
(``proxai.mitm.flowrows``), the table is ``proxai.report``'s.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import orjson

NAME = "report"
HELP = "print a table of the LLM flows in a .flow file (outcome, stop reason, tokens, tool calls, timings)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE.flow", help="a flow file saved with mitmdump -w")
    parser.add_argument(
        "--html",
        metavar="OUT.html",
        help="write the run report, one self-contained HTML page (timeline, turns, totals), to OUT.html; "
        "stdout then gets only what --json, --csv or --turns asks for",
    )
    # what goes to stdout: one of these, or the table
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    out.add_argument(
        "--csv", action="store_true", help="print one CSV row per LLM flow (verdict, tokens, timings, cost)"
    )
    out.add_argument(
        "--turns",
        action="store_true",
        help="print the run's turns as JSON (new messages, answer, tool calls, usage, cost)",
    )
    parser.add_argument(
        "--filter",
        metavar="EXPR",
        help="only the flows this mitmproxy filter expression matches, e.g. '~marked' or '~u /v1/messages'",
    )
    parser.add_argument(
        "--no-diagnostics-files",
        action="store_true",
        help="do not read the unfinished-tool diagnostics files the addon wrote; rebuild from the body",
    )


def run(args: argparse.Namespace) -> int:
    from proxai.mitm.flowrows import FlowFileError, read_flows, report_rows
    from proxai.mitm.runflows import FilterError, run_inputs, run_redactor, select
    from proxai.outputs.report import report_json, table_lines
    from proxai.outputs.run import build_run
    from proxai.outputs.run_csv import render_csv
    from proxai.outputs.run_html import render_html
    from proxai.safety.termsafe import escape

    try:
        flows = select(read_flows(args.file), args.filter)
    except (FlowFileError, FilterError) as exc:
        print(f"proxai report: {escape(str(exc), newlines=False)}", file=sys.stderr)
        return 2
    # every string printed came from the network or from the file: terminal-safe (docs/security.md)
    run = build_run(run_inputs(flows), run_redactor(flows)) if args.html or args.csv or args.turns else None
    if args.html and run is not None:
        title = os.path.basename(args.file) + (f" · filter {args.filter}" if args.filter else "")
        try:
            with open(args.html, "w", encoding="utf-8") as fh:
                fh.write(render_html(run, title=title))
        except OSError as exc:
            print(f"proxai report: cannot write {escape(str(exc), newlines=False)}", file=sys.stderr)
            return 2
        n = len(run.turns)
        print(
            f"proxai report: {n} LLM flow{'s' if n != 1 else ''} -> {escape(args.html, newlines=False)}",
            file=sys.stderr,
        )
    if args.csv and run is not None:
        sys.stdout.write(escape(render_csv(run)))
    elif args.turns and run is not None:
        sys.stdout.write(_json(run.to_json()))
    elif args.json or not args.html:
        rows = report_rows(flows, load_files=not args.no_diagnostics_files, base_dir=bundle_dir(args.file))
        if args.json:
            sys.stdout.write(_json(report_json(rows)))
        else:
            sys.stdout.write("\n".join(escape(line, newlines=False) for line in table_lines(rows)) + "\n")
    return 0


def _json(doc: object) -> str:
    from proxai.safety.termsafe import escape_json

    return escape_json(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()) + "\n"


def bundle_dir(path: str) -> str:
    """The folder a flow file's own diagnostics files may be read from: the file's folder."""
    return os.path.dirname(os.path.abspath(path))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proxai report", description=HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
