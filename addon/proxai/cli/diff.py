"""``python -m proxai diff BASE.flow NEW.flow [--html OUT] [--json] [--fail-on divergence]``: two runs
compared turn by turn (docs/run-report.md, "Compare two runs"; the pairing and what counts as a
divergence: docs/design/run-report.md, "Comparing two runs").

A command-line shell: reading the files is mitmproxy's job (``proxai.mitm.flowrows``,
``proxai.mitm.runflows``), the turns are ``proxai.outputs.run``'s, the comparison
``proxai.outputs.run_diff``'s and
the page ``proxai.outputs.run_diff_html``'s. Exit status: 0, or 1 with ``--fail-on divergence`` when the runs
diverged; 2 when a file cannot be compared (one line on stderr).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from proxai.mitm.runflows import RecordedRun
    from proxai.outputs.run import Run
    from proxai.safety.redact import Redactor

NAME = "diff"
HELP = (
    "compare two runs (.flow files) turn by turn: outcome, stop reason, tool calls, answer, tokens, "
    "cost and timing"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "base", metavar="BASE.flow", help="the run to compare against (saved with mitmdump -w)"
    )
    parser.add_argument("new", metavar="NEW.flow", help="the run to compare")
    parser.add_argument(
        "--html",
        metavar="OUT.html",
        help="write the comparison, one self-contained HTML page, to OUT.html; stdout then gets only "
        "what --json asks for",
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON instead of text")
    parser.add_argument(
        "--fail-on",
        choices=["divergence"],
        help="exit with status 1 when the runs diverged: a turn's outcome or tool calls (names, "
        "arguments) differ, or a turn has no counterpart",
    )


class _Unusable(Exception):
    """A flow file that cannot be compared; the message is the one line printed."""


def _run(side: str, path: str, rec: RecordedRun, red: Redactor) -> tuple[Run, list[str]]:
    """The run of one file, without the flows that lack a body (a note for each)."""
    from proxai.outputs.run import build_run

    notes = [
        red.text(f"{side} turn #{inp.index} (flow {inp.flow_id}) skipped: {why}") for inp, why in rec.skipped
    ]
    if not rec.inputs:
        what = "no LLM flow with its bodies recorded" if rec.skipped else "no LLM flow"
        raise _Unusable(f"{path}: {what} to compare")
    return build_run(rec.inputs, red), notes


def run(args: argparse.Namespace) -> int:
    from proxai.mitm.flowrows import FlowFileError
    from proxai.mitm.runflows import read_recorded, run_redactor
    from proxai.outputs.run_diff import diff_runs, summary_lines
    from proxai.outputs.run_diff_html import render_diff_html
    from proxai.safety.termsafe import escape

    def say(line: str) -> None:
        print(f"proxai diff: {escape(line, newlines=False)}", file=sys.stderr)

    try:
        a, b = read_recorded(args.base), read_recorded(args.new)
        red = run_redactor([*a.flows, *b.flows])  # one engine: a secret of either run is gone from both
        base, base_notes = _run("base", args.base, a, red)
        new, new_notes = _run("new", args.new, b, red)
    except (FlowFileError, _Unusable) as exc:
        say(str(exc))
        return 2
    diff = diff_runs(base, new, [*base_notes, *new_notes])
    for note in diff.notes:
        say(note)
    names = os.path.basename(args.base), os.path.basename(args.new)
    if names[0] == names[1]:  # two runs saved under the same name: the paths tell them apart
        names = args.base, args.new
    if args.html:
        try:
            with open(args.html, "w", encoding="utf-8") as fh:
                fh.write(render_diff_html(diff, base_name=names[0], new_name=names[1]))
        except OSError as exc:
            say(f"cannot write {exc}")
            return 2
        n = len(diff.divergent)
        say(f"{len(diff.pairs)} pairs, {n} diverged -> {args.html}")
    if args.json:
        from proxai.safety.termsafe import escape_json

        doc = {"base": {"file": args.base}, "new": {"file": args.new}, **diff.to_json()}
        sys.stdout.write(escape_json(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()) + "\n")
    elif not args.html:
        lines = summary_lines(diff, base_name=names[0], new_name=names[1])
        sys.stdout.write("\n".join(escape(line, newlines=False) for line in lines) + "\n")
    return 1 if args.fail_on == "divergence" and diff.divergent else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proxai diff", description=HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
