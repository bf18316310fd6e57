"""``python -m corpus [--out docs/real-streams.md]``: run the real-streams corpus and write its
table (the SDK's verdict on each original stream, the summary's agreement with it, and what each
mode delivers to the client SDK)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from pathlib import Path

from . import run as corpus_run
from . import streams

MODES = ("normalize", "anthropic", "chat", "responses")
MARK = {"equal": "=", "differs": "≠", "refused": "R", "sdk_rejected": "X", "crash": "!", "skipped": "-"}


def render(results: list[corpus_run.StreamResult]) -> str:
    n = len(results)
    providers = Counter(r.stream.provider for r in results)
    ok = [r for r in results if r.ref.ok]
    lines = [
        "# Real provider streams through ProxAI",
        "",
        "Written by `python -m corpus` (do not edit by hand). The corpus is `tests/fixtures/real/`",
        f"({n} streams recorded from {len(providers)} providers by other open-source projects; provenance",
        "in `tests/fixtures/real/SOURCES.md`). Each stream is carried by the addon's real `Carrier` in",
        "one read, observe-only, normalized, and translated to each other protocol; each output is read",
        "back by the client protocol's official Python SDK (anthropic beta `messages.stream`, openai",
        "`chat.completions.stream`, `responses.stream`) and compared with that SDK's reading of the",
        "original: text, client tool calls (id, name, arguments), stop class, usage, reasoning.",
        "",
        "## Totals",
        "",
        f"- SDK verdict on the originals: {dict(Counter(r.ref.verdict for r in results))}",
        f"- crashes (a bug in ProxAI, any mode): {sum(1 for r in results if _crashed(r))}",
        f"- observe-only output not byte-identical: {sum(1 for r in results if not r.observe_bytes_equal)}",
        f"- SDK-accepted streams the summary calls a protocol violation: {sum(1 for r in ok if r.violation)}",
        "- SDK-accepted streams whose summary disagrees with the SDK's final object: "
        f"{sum(1 for r in ok if r.disagreements)}",
        "",
        "| mode | "
        + " | ".join(k for k in MARK if k != "skipped")
        + " | share equal (SDK-accepted originals) |",
        "|---|" + "---|" * (len(MARK)),
    ]
    for mode in MODES:
        rows = [m for r in ok for m in r.modes if m.mode == mode]
        c = Counter(m.status for m in rows)
        share = f"{c['equal']}/{len(rows)} ({100 * c['equal'] / len(rows):.1f}%)" if rows else "-"
        lines.append(f"| {mode} | " + " | ".join(str(c[k]) for k in MARK if k != "skipped") + f" | {share} |")
    lines += [
        "",
        "Cross-protocol: " + _cross(ok),
        "",
        "## Per stream",
        "",
        "Marks: `=` the client SDK's reading equals the reference; `≠` accepted, content differs;",
        "`R` the stream was refused with a typed error (translation or protocol); `X` the client SDK",
        "rejected the output; `!` a ProxAI bug. `summary` is `ok` when the observer's summary agrees",
        "with the SDK's final object.",
        "",
        "| stream | provider | SDK | summary | normalize | anthropic | chat | responses |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        by_mode = {m.mode: m for m in r.modes}
        cells = []
        for mode in MODES:
            m = by_mode.get(mode)
            cells.append("" if m is None else MARK[m.status])
        summary = "-" if not r.ref.ok else ("ok" if not r.disagreements and not r.violation else "≠")
        lines.append(
            f"| `{r.stream.name}` | {r.stream.provider} | {r.ref.verdict} | {summary} | "
            + " | ".join(cells)
            + " |"
        )
    lines += ["", "## What differs", ""]
    for r in results:
        notes = [f"summary: {d}" for d in r.disagreements]
        if r.violation:
            notes.append(f"violation: {r.violation}")
        notes += [f"{m.mode} {m.status}: {m.detail}" for m in r.modes if m.status != "equal"]
        if notes:
            lines.append(f"- `{r.stream.name}`")
            lines += [f"  - {x[:300]}" for x in notes]
    return "\n".join(lines) + "\n"


def _crashed(r: corpus_run.StreamResult) -> bool:
    return bool(r.bugs) or any(m.status == "crash" for m in r.modes)


def _cross(ok: list[corpus_run.StreamResult]) -> str:
    rows = [m for r in ok for m in r.modes if m.mode != "normalize"]
    c = Counter(m.status for m in rows)
    if not rows:
        return "-"
    return (
        f"{c['equal']}/{len(rows)} translated streams equal to the reference "
        f"({100 * c['equal'] / len(rows):.1f}%), "
        f"{c['refused']} refused with a typed error, {c['differs']} delivered with different content, "
        f"{c['sdk_rejected']} rejected by the client SDK, {c['crash']} crashed."
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m corpus", description=__doc__)
    ap.add_argument("--out", type=Path, default=streams.ROOT / "docs" / "real-streams.md")
    ap.add_argument(
        "--known",
        type=Path,
        help="also write the checks that do not hold yet (tests/real/known.py); review its diff: "
        "an entry that appears is a regression unless it is a new stream or a new check",
    )
    args = ap.parse_args(argv)
    logging.disable(logging.WARNING)  # the carrier logs each bug it catches; the table counts them
    results = [corpus_run.run(s) for s in streams.load()]
    args.out.write_text(render(results), encoding="utf-8")
    print(f"{len(results)} streams -> {args.out}", file=sys.stderr)
    if args.known is not None:
        args.known.write_text(render_known(results), encoding="utf-8")
        print(f"known failing checks -> {args.known}", file=sys.stderr)
    return 0


def render_known(results: list[corpus_run.StreamResult]) -> str:
    """``tests/real/known.py``: the checks each stream fails today (crashes and observe-only
    byte differences are never listed: they always fail the test)."""
    lines = [
        '"""The checks of ``test_corpus`` that do not hold yet, per stream (see docs/real-streams.md for',
        "why). Written by ``python -m corpus --known tests/real/known.py``. Remove an entry as soon as",
        'its check holds; never add one to hide a regression."""',
        "",
        "KNOWN: dict[str, str] = {",
    ]
    for r in results:
        failing = corpus_run.failing_checks(r)
        failing.pop("crash", None)
        failing.pop("observe_bytes", None)
        if failing:
            lines.append(f'    "{r.stream.name}": "{" ".join(sorted(failing))}",')
    lines.append("}")
    if any(len(line) > 110 for line in lines):  # long stream names: the project's line limit
        lines.insert(0, "# ruff: noqa: E501")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
