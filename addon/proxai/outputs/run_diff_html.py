"""Two runs compared, as one self-contained HTML page in the run report's style: the verdict (did
they diverge, and where first), the totals side by side, then each pair of turns with what differs
standing out: a divergence (outcome, tool calls, a turn without a counterpart) in red, any other
difference (stop reason, answer text, tokens, cost, timing) in amber, tool arguments as a line diff
(docs/design/run-report.md, "Comparing two runs").

Pure: a ``proxai.outputs.run_diff.RunDiff`` in, one HTML string out. Like the run report's page it loads
nothing and runs no script (the "only what differs" switch is a CSS checkbox), and every value taken
from a flow is HTML-escaped (and was redacted by ``proxai.outputs.run``).
"""

from __future__ import annotations

import difflib
from datetime import UTC, datetime
from typing import Any

import orjson

from proxai.outputs.run import Run, Turn
from proxai.outputs.run_diff import (
    DIVERGENCE_LABELS,
    LABELS,
    OUTCOME,
    Pair,
    RunDiff,
    ToolCallDiff,
    Value,
    show,
    show_delta,
    verdict_line,
    visible,
)
from proxai.outputs.run_html import COLOURS, CSS, MAX_TEXT, _clip, _e
from proxai.outputs.run_html import LABELS as VERDICT_LABELS

DIFF_CSS = """
table.cmp { border-collapse: collapse; margin: 6px 0; font-size: 13px; }
table.cmp th { text-align: left; font-weight: 600; color: var(--muted); padding: 2px 14px 2px 0; }
table.cmp td { padding: 2px 14px 2px 0; vertical-align: top; }
table.cmp td:first-child { color: var(--muted); }
tr.changed td { background: #fff4d6; } tr.diverged td { background: #fde2e2; }
tr.changed td:first-child, tr.diverged td:first-child { color: var(--fg); font-weight: 600; }
.verdict { border-radius: 6px; padding: 8px 12px; margin: 10px 0; font-weight: 600; }
.verdict.diverged { background: #fde2e2; border: 1px solid #e7a3a3; }
.verdict.same { background: #e3f4e9; border: 1px solid #9fd3b2; }
.pair { border: 1px solid var(--line); border-left: 5px solid #9aa5b1; border-radius: 6px;
  margin: 14px 0; padding: 10px 14px; }
.pair.changed { border-left-color: #d6a400; }
.pair.diverged { border-left-color: #d23c3c; background: #fffaf8; }
.pair h3 { font-size: 15px; margin: 0 0 6px; }
.call { border-top: 1px dashed var(--line); padding: 6px 0; } .call.differs .part-label { color: #b42323; }
pre.argdiff span { display: block; } pre.argdiff .del { background: #fde2e2; color: #8c1d1d; }
pre.argdiff .ins { background: #dff3e4; color: #1b6b35; }
.side-label { font-size: 12px; color: var(--muted); }
.absent { color: var(--muted); font-style: italic; }
#only-diffs:checked ~ main .pair.same { display: none; }
"""


DIFFERS = {"name": "name differs", "arguments": "arguments differ"}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _badge(t: Turn | None) -> str:
    if t is None:
        return '<span class="absent">no turn</span>'
    colour = COLOURS.get(t.verdict, "#777")
    label = VERDICT_LABELS.get(t.verdict, t.verdict)
    return f'<span class="badge" style="background:{colour}">{_e(label)}</span>'


def _row(key: str, v: Value, *, diverged: bool = False, label: str | None = None) -> str:
    cls = "" if not visible(key, v) else (' class="diverged"' if diverged else ' class="changed"')
    return (
        f'<tr data-key="{_e(key)}"{cls}><td>{_e(label or LABELS[key])}</td>'
        f"<td>{_e(show(key, v.base))}</td><td>{_e(show(key, v.new))}</td>"
        f"<td>{_e(show_delta(key, v))}</td></tr>"
    )


def _head() -> str:
    return "<tr><th></th><th>base</th><th>new</th><th>change</th></tr>"


def _pretty(args: str) -> str:
    try:
        return orjson.dumps(orjson.loads(args), option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONDecodeError:
        return args


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f" … {len(text) - MAX_TEXT} more characters"


def _line_diff(a: str, b: str) -> str:
    """The two texts' lines, each marked kept, removed (base only) or added (new only)."""
    x, y = _cut(a).splitlines(), _cut(b).splitlines()
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, x, y, autojunk=False).get_opcodes():
        if op == "equal":
            out.extend(f'<span class="ctx">  {_e(line)}</span>' for line in x[i1:i2])
            continue
        out.extend(f'<span class="del">- {_e(line)}</span>' for line in x[i1:i2])
        out.extend(f'<span class="ins">+ {_e(line)}</span>' for line in y[j1:j2])
    return '<pre class="argdiff">' + "".join(out) + "</pre>"


def _args_pre(c: dict[str, Any] | None) -> str:
    if c is None:
        return '<div class="absent">no such call</div>'
    if c["arguments"] is None:
        return '<div class="muted">(arguments not kept)</div>'
    return f"<pre>{_clip(_pretty(c['arguments']))}</pre>"


def _call(c: ToolCallDiff) -> str:
    names = [x["name"] for x in (c.base, c.new) if x is not None]
    name = " → ".join(str(n) for n in names) if "name" in c.differs else str(names[0])
    flags = "".join(f' <span class="flag err">{_e(DIFFERS[w])}</span>' for w in c.differs if w in DIFFERS)
    if "missing" in c.differs:
        flags += f' <span class="flag err">only in {"base" if c.new is None else "new"}</span>'
    head = f'<span class="part-label">tool call {c.index + 1}</span> <code>{_e(name)}</code>{flags}'
    a = None if c.base is None else c.base["arguments"]
    b = None if c.new is None else c.new["arguments"]
    if not c.differs:
        body = _args_pre(c.base)
    elif a is not None and b is not None:
        body = _line_diff(_pretty(a), _pretty(b))
    else:
        body = (
            f'<div class="sides"><div><div class="side-label">base</div>{_args_pre(c.base)}</div>'
            f'<div><div class="side-label">new</div>{_args_pre(c.new)}</div></div>'
        )
    cls = "call differs" if c.differs else "call"
    return f'<div class="{cls}" data-index="{c.index}">{head}{body}</div>'


def _text(v: Value) -> str:
    def one(text: Any) -> str:
        return '<div class="absent">(no text)</div>' if text is None else f"<pre>{_clip(str(text))}</pre>"

    if v.same:
        return f'<div class="answer-text same"><div class="part-label">answer text</div>{one(v.base)}</div>'
    return (
        '<div class="answer-text changed"><div class="part-label">answer text '
        '<span class="flag warn">differs</span></div><div class="sides">'
        f'<div><div class="side-label">base</div>{one(v.base)}</div>'
        f'<div><div class="side-label">new</div>{one(v.new)}</div></div></div>'
    )


ROWS = tuple(k for k in LABELS if k not in ("text", "tool_calls", "turns", "outcomes", "unpriced_turns"))


def _pair(n: int, p: Pair) -> str:
    side = ["-" if t is None else f"#{t.index}" for t in (p.base, p.new)]
    turn = p.base or p.new
    model = "?" if turn is None else (turn.model or turn.requested_model or "?")
    flags = "".join(f' <span class="flag err">{_e(DIVERGENCE_LABELS[d])}</span>' for d in p.divergences)
    head = (
        f'<h3><span class="idx">pair {n}</span> base {_e(side[0])} {_badge(p.base)} · '
        f"new {_e(side[1])} {_badge(p.new)} · {_e(model)}{flags}</h3>"
    )
    rows = [_head()]
    for key in ROWS:
        rows.append(_row(key, p.values[key], diverged=key == "outcome" and OUTCOME in p.divergences))
    body = [head, '<table class="cmp facts-cmp">' + "".join(rows) + "</table>"]
    if p.tool_calls:
        body.append('<div class="tools">' + "".join(_call(c) for c in p.tool_calls) + "</div>")
    for name, t in (("base", p.base), ("new", p.new)):
        if t is not None and t.error is not None:
            body.append(
                f'<div class="errorbox" data-side="{name}"><b>{name}: {_e(t.error.get("kind"))}</b>'
                + (f" {_e(t.error['type'])}" if t.error.get("type") else "")
                + f": {_clip(str(t.error.get('message') or ''))}</div>"
            )
    body.append(_text(p.values["text"]))
    return (
        f'<section class="pair {p.state}" id="pair-{n}" data-divergences="{_e(" ".join(p.divergences))}" '
        f'data-changed="{_e(" ".join(p.changed))}">' + "".join(body) + "</section>"
    )


def _totals(d: RunDiff) -> str:
    rows = [_head()]
    for key, v in d.totals.items():
        rows.append(_row(key, v, diverged=key == "outcomes" and not v.same))
    return '<table class="cmp" id="totals">' + "".join(rows) + "</table>"


def _verdict(d: RunDiff) -> str:
    if not d.divergent:
        return f'<div class="verdict same" id="verdict">{_e(verdict_line(d))}</div>'
    anchor = f"#pair-{d.pairs.index(d.divergent[0]) + 1}"
    return f'<div class="verdict diverged" id="verdict"><a href="{anchor}">{_e(verdict_line(d))}</a></div>'


def _when(run: Run) -> str:
    starts = [t.start for t in run.turns if t.start is not None]
    return datetime.fromtimestamp(min(starts), UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if starts else "-"


def render_diff_html(d: RunDiff, *, base_name: str, new_name: str) -> str:
    differ = sum(1 for p in d.pairs if p.state != "same")
    notes = "".join(f"<div>{_e(n)}</div>" for n in d.notes)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>ProxAI run diff: {_e(base_name)} vs {_e(new_name)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{CSS}{DIFF_CSS}</style></head><body>"
        f'<input type="checkbox" id="only-diffs"> <label for="only-diffs">show only the pairs that '
        f"differ ({differ} of {len(d.pairs)}, timing aside)</label>"
        f"<main><h1>ProxAI run diff</h1>"
        f'<div class="muted" id="runs">base <b>{_e(base_name)}</b> ({_e(_count(len(d.base.turns), "turn"))}, '
        f"{_e(_when(d.base))}) · new <b>{_e(new_name)}</b> ({_e(_count(len(d.new.turns), 'turn'))}, "
        f"{_e(_when(d.new))})</div>"
        f"{_verdict(d)}"
        + (f'<div class="muted notes" id="notes">{notes}</div>' if notes else "")
        + f"<h2>Totals</h2>{_totals(d)}"
        f"<h2>Turns</h2>{''.join(_pair(n, p) for n, p in enumerate(d.pairs, 1))}"
        "</main></body></html>\n"
    )
