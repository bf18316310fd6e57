"""A run as one self-contained HTML page: a timeline of its LLM flows, then each turn with the
messages new since the request it continues, the answer, tool calls, reasoning, usage and cost,
and the run's totals (docs/design/run-report.md).

Pure: a ``proxai.outputs.run.Run`` in, one HTML string out. The page loads nothing and runs no script: its
CSS is inline (the "only problems" switch is a CSS checkbox), so it opens without a network.
Everything taken from a flow is HTML-escaped (and was redacted by ``proxai.outputs.run``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from html import escape
from typing import Any

import orjson

from proxai.outputs.cost import format_amount, lifetimes_text, total_text
from proxai.outputs.run import Message, Run, Turn

MAX_TEXT = 20_000  # characters of one text shown; the rest is counted

COLOURS = {
    "completed": "#2e9d5b",
    "truncated": "#d6a400",
    "closed": "#e07b00",
    "error": "#d23c3c",
    "unfinished_tool": "#8a4fd0",
}
LABELS = {
    "completed": "completed",
    "truncated": "truncated (cut short)",
    "closed": "closed before its end",
    "error": "error",
    "unfinished_tool": "unfinished tool call",
}

CSS = """
:root { --fg:#1d232a; --muted:#5f6b76; --line:#d9dee3; --bg:#fff; --soft:#f5f7f9; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background: var(--bg); margin: 0; padding: 20px 28px 60px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 28px 0 10px; }
.muted { color: var(--muted); } code, pre { font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0; background: var(--soft);
  padding: 6px 8px; border-radius: 4px; max-height: 420px; overflow: auto; }
table.totals { border-collapse: collapse; margin: 8px 0; }
table.totals td { padding: 2px 14px 2px 0; } table.totals td:first-child { color: var(--muted); }
.badge { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px; color: #fff;
  margin-right: 4px; white-space: nowrap; }
.flag { display: inline-block; padding: 0 6px; border-radius: 3px; font-size: 12px; margin-right: 4px;
  border: 1px solid currentColor; }
.flag.err { color: #b42323; } .flag.warn { color: #a05a00; } .flag.info { color: #285ea8; }
.timeline { border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; }
.tl-row { display: flex; align-items: center; height: 20px; }
.tl-label { width: 230px; flex: none; overflow: hidden; white-space: nowrap; text-overflow: ellipsis;
  font-size: 12px; } .tl-label a { color: inherit; text-decoration: none; }
.tl-track { position: relative; flex: 1; height: 14px; background: var(--soft); border-radius: 3px; }
.tl-bar { position: absolute; top: 0; height: 14px; border-radius: 3px; min-width: 3px; }
.tl-ttft { position: absolute; top: -2px; width: 2px; height: 18px; background: #1d232a; }
.tl-axis { display: flex; justify-content: space-between; margin-left: 230px; font-size: 11px; }
.legend span { margin-right: 14px; font-size: 12px; } .legend i { display: inline-block; width: 10px;
  height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: -1px; }
.turn { border: 1px solid var(--line); border-left: 5px solid var(--c); border-radius: 6px;
  margin: 14px 0; padding: 10px 14px; }
.turn.problem { background: #fffaf8; }
.turn h3 { font-size: 15px; margin: 0 0 6px; } .turn h3 .idx { color: var(--muted); margin-right: 6px; }
.facts { font-size: 12.5px; color: var(--muted); margin-bottom: 6px; }
.facts b { color: var(--fg); font-weight: 600; }
.msg { border-top: 1px dashed var(--line); padding: 6px 0; } .role { font-weight: 600; font-size: 12px;
  text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.part-label { font-size: 12px; color: var(--muted); }
.errorbox { border: 1px solid #e7a3a3; background: #fdf0f0; border-radius: 4px; padding: 6px 10px;
  margin: 6px 0; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
details > summary { cursor: pointer; color: #285ea8; font-size: 13px; margin: 4px 0; }
#only-problems:checked ~ main .turn:not(.problem) { display: none; }
"""


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return _e(text)
    return _e(text[:MAX_TEXT]) + f'<span class="muted"> … {len(text) - MAX_TEXT} more characters</span>'


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _secs(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}s"


def _pretty_args(args: str | None) -> str:
    if args is None:
        return '<span class="muted">(arguments not kept)</span>'
    try:
        return _clip(orjson.dumps(orjson.loads(args), option=orjson.OPT_INDENT_2).decode())
    except orjson.JSONDecodeError:
        return _clip(args)


def _part(p: Mapping[str, Any]) -> str:
    kind = p.get("type")
    if kind == "text":
        return f"<pre>{_clip(str(p.get('text') or ''))}</pre>"
    if kind == "reasoning":
        return (
            f'<details class="reasoning"><summary>reasoning ({len(str(p.get("text") or ""))} chars)</summary>'
            f"<pre>{_clip(str(p.get('text') or ''))}</pre></details>"
        )
    if kind == "tool_call":
        unfinished = "" if p.get("complete", True) else ' <span class="flag err">unfinished</span>'
        return (
            '<div class="tool-call"><span class="part-label">tool call</span> '
            f'<code>{_e(p.get("name"))}</code> <span class="muted">{_e(p.get("id"))}</span>{unfinished}'
            f"<pre>{_pretty_args(p.get('arguments'))}</pre></div>"
        )
    if kind == "tool_result":
        err = ' <span class="flag err">is_error</span>' if p.get("is_error") else ""
        return (
            f'<div class="tool-result"><span class="part-label">tool result</span> '
            f'<span class="muted">{_e(p.get("id"))}</span>{err}'
            f"<pre>{_clip(str(p.get('content') or ''))}</pre></div>"
        )
    if kind == "media":
        return f'<div class="muted">[{_e(p.get("kind"))}]</div>'
    return f'<div class="muted">[{_e(p.get("kind") or kind)}]</div>'


def _message(m: Message) -> str:
    parts = "".join(_part(p) for p in m.get("parts") or []) or '<div class="muted">(empty)</div>'
    return f'<div class="msg"><div class="role">{_e(m.get("role"))}</div>{parts}</div>'


def _tokens(t: Turn) -> str:
    u = t.usage
    bits = [
        f"<b>{_e(u.get('input_tokens') if u.get('input_tokens') is not None else '-')}</b> in",
        f"<b>{_e(u.get('output_tokens') if u.get('output_tokens') is not None else '-')}</b> out",
    ]
    if u.get("cache_read_tokens"):
        bits.append(f"{_e(u['cache_read_tokens'])} cache read")
    if u.get("cache_write_tokens"):
        lifetimes = lifetimes_text(u)
        split = f" ({_e(lifetimes)})" if lifetimes else ""
        bits.append(f"{_e(u['cache_write_tokens'])} cache write{split}")
    return " · ".join(bits)


def _cost(t: Turn) -> str:
    if t.cost is None:
        note = next((n for n in t.notes if n.startswith("cost:")), "no price")
        return f'<span title="{_e(note)}">cost -</span>'
    c = t.cost
    return (
        f'<span title="{_e(c.get("provider"))} {_e(c.get("model"))}, '
        f'{_e(c.get("source"))} {_e(c.get("version"))}">'
        f"cost <b>{_e(format_amount(c.get('amount')))}</b></span>"
    )


def _flags(t: Turn) -> str:
    out = []
    if t.error is not None:
        out.append(f'<span class="flag err">{_e(t.error.get("kind") or "error")}</span>')
    if t.verdict == "truncated":
        out.append('<span class="flag warn">truncated</span>')
    if t.guard is not None:
        out.append(f'<span class="flag err">guard: {_e(t.guard.get("kind"))} injected</span>')
    if t.translated:
        out.append(f'<span class="flag info">translated {_e(t.client_protocol)} → {_e(t.protocol)}</span>')
    return " ".join(out)


def _turn(t: Turn) -> str:
    colour = COLOURS.get(t.verdict, "#777")
    problem = t.verdict != "completed" or t.guard is not None or t.error is not None
    model = t.model or t.requested_model or "?"
    when = "-" if t.offset_s is None else f"+{t.offset_s:.2f}s"
    head = (
        f'<h3><span class="idx">#{t.index}</span> {_e(model)} '
        f'<span class="badge" style="background:{colour}">{_e(LABELS.get(t.verdict, t.verdict))}</span>'
        f" {_flags(t)}</h3>"
    )
    facts = (
        f'<div class="facts">{_e(when)} · {_e(t.method)} {_e(t.url)} · '
        f"HTTP {_e(t.status if t.status is not None else '-')}"
        f" · stop <b>{_e(t.stop_reason or '-')}</b> · first token <b>{_secs(t.ttft_s)}</b>"
        f" · duration <b>{_secs(t.total_s)}</b> · {_tokens(t)} · {_cost(t)}</div>"
    )
    body = [head, facts]
    guard = t.guard
    if t.error is not None and (guard is None or t.error.get("message") != guard.get("message")):
        body.append(
            f'<div class="errorbox"><b>{_e(t.error.get("kind"))}</b> {_e(t.error.get("type") or "")}: '
            f"{_clip(str(t.error.get('message') or ''))}</div>"
        )
    if guard is not None:
        body.append(
            f'<div class="errorbox guard"><b>guard injected {_e(guard.get("kind"))}</b>: '
            f"{_clip(str(guard.get('message') or ''))}</div>"
        )
    new = t.new_messages
    if t.continues is None:
        since = f"{_count(len(new), 'message')}: a new conversation"
    elif t.repeat:
        since = f"the same {_count(len(new), 'message')} as turn #{t.continues} (sent again)"
    else:
        since = f"{len(new)} new of {_count(len(t.messages), 'message')} since turn #{t.continues}"
    body.append(f'<div class="part-label diff">{_e(since)}</div>')
    if t.system and t.continues is None:
        body.append("<details><summary>system</summary>" + "".join(_part(p) for p in t.system) + "</details>")
    body.extend(_message(m) for m in new)
    body.append('<div class="part-label" style="margin-top:8px">answer</div>')
    answer = _message(t.answer) if t.answer["parts"] else '<div class="muted">(no answer captured)</div>'
    body.append(f'<div class="answer">{answer}</div>')
    if t.translated:
        body.append(_sides(t))
    if t.notes:
        body.append('<div class="muted">' + "<br>".join(_e(n) for n in t.notes) + "</div>")
    cls = "turn problem" if problem else "turn"
    return (
        f'<section class="{cls}" id="turn-{t.index}" data-verdict="{_e(t.verdict)}" style="--c:{colour}">'
        + "".join(body)
        + "</section>"
    )


def _sides(t: Turn) -> str:
    client = t.client_messages
    left = (
        "".join(_message(m) for m in client)
        if client is not None
        else '<div class="muted">(the client\'s request was not kept)</div>'
    )
    right = "".join(_message(m) for m in t.messages)
    return (
        '<details class="both-sides" open><summary>both sides of the translation</summary><div class="sides">'
        f'<div><div class="part-label">client request ({_e(t.client_protocol)})</div>{left}</div>'
        f'<div><div class="part-label">upstream request ({_e(t.protocol)})</div>{right}</div>'
        "</div></details>"
    )


def _timeline(run: Run) -> str:
    spans = [(t, t.offset_s, t.total_s or 0.0) for t in run.turns if t.offset_s is not None]
    if not spans:
        return '<div class="muted">no timestamps</div>'
    end = max(o + d for _, o, d in spans) or 1.0
    rows = []
    for t, off, dur in spans:
        colour = COLOURS.get(t.verdict, "#777")
        left = 100 * off / end
        width = max(100 * dur / end, 0.3)
        ttft = ""
        if t.ttft_s is not None:
            ttft = f'<div class="tl-ttft" style="left:{100 * (off + t.ttft_s) / end:.3f}%"></div>'
        title = (
            f"#{t.index} {t.model or ''}: {t.verdict}, start +{off:.2f}s, "
            f"first token {_secs(t.ttft_s)}, {dur:.2f}s"
        )
        rows.append(
            f'<div class="tl-row"><div class="tl-label"><a href="#turn-{t.index}">#{t.index} '
            f"{_e(t.model or t.requested_model or '?')}</a></div>"
            f'<div class="tl-track"><div class="tl-bar" title="{_e(title)}" data-verdict="{_e(t.verdict)}" '
            f'style="left:{left:.3f}%;width:{width:.3f}%;background:{colour}"></div>{ttft}</div></div>'
        )
    legend = "".join(
        f'<span><i style="background:{c}"></i>{_e(LABELS[v])}</span>' for v, c in COLOURS.items()
    )
    return (
        '<div class="timeline">'
        + "".join(rows)
        + f'<div class="tl-axis"><span>0s</span><span>{end / 2:.2f}s</span>'
        + f"<span>{end:.2f}s</span></div></div>"
        + f'<div class="legend muted">{legend}'
        + '<span><i style="background:#1d232a;width:2px"></i>first token</span></div>'
    )


def _totals(run: Run) -> str:
    tot = run.totals()
    verdicts = ", ".join(f"{n} {LABELS.get(v, v)}" for v, n in tot["verdicts"].items()) or "none"
    amounts = [None if t.cost is None else float(t.cost["amount"]) for t in run.turns]
    cost = total_text(amounts)
    split = tot["cache_write_5m_tokens"] or tot["cache_write_1h_tokens"]
    lifetimes = lifetimes_text(tot) if split else None
    rows = [
        ("flows", f"{tot['flows']} ({_e(verdicts)})"),
        ("duration", _secs(tot["duration_s"])),
        (
            "tokens",
            f"{tot['input_tokens']} in · {tot['output_tokens']} out · "
            f"{tot['cache_read_tokens']} cache read · {tot['cache_write_tokens']} cache write"
            + (f" ({_e(lifetimes)})" if lifetimes else ""),
        ),
        ("tool calls", str(tot["tool_calls"])),
        ("cost", _e(cost)),
    ]
    return (
        '<table class="totals" id="totals">'
        + "".join(f"<tr><td>{_e(k)}</td><td>{v}</td></tr>" for k, v in rows)
        + "</table>"
    )


def render_html(run: Run, *, title: str) -> str:
    starts = [t.start for t in run.turns if t.start is not None]
    when = datetime.fromtimestamp(min(starts), UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if starts else ""
    problems = sum(1 for t in run.turns if t.verdict != "completed" or t.guard is not None)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>ProxAI run report: {_e(title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{CSS}</style></head><body>"
        f'<input type="checkbox" id="only-problems"> <label for="only-problems">show only the '
        f"{_count(problems, 'flow')} that need a look</label>"
        f'<main><h1>ProxAI run report</h1><div class="muted">{_e(title)} · {_e(when)}</div>'
        f"<h2>Totals</h2>{_totals(run)}<h2>Timeline</h2>{_timeline(run)}"
        f"<h2>Turns</h2>{''.join(_turn(t) for t in run.turns) or '<div class=muted>no LLM flows</div>'}"
        "</main></body></html>\n"
    )
