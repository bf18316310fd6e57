"""A table of LLM flows and their outcomes, with totals: the report CLI, the ``proxai.report``
command and the summary JSON of an export bundle.

Protocol, model, outcome, stop reason, tokens, tool calls, timings, ending with totals; for an
``unfinished_tool`` flow the diagnostics: the recent tail and the state (docs/bug-reports.md). The
outcomes and the diagnostics are docs/design/outcomes.md's.
Pure: ``flow.metadata["proxai"]`` dicts and a few plain flow facts in, rows / lines / JSON out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from proxai.core.model import Outcome
from proxai.outputs import cost
from proxai.outputs.verdict import protocol_label
from proxai.protocols import conformance
from proxai.safety.redact import redact_text, redact_url

TAIL_CHARS = 1200  # of the recent tail shown in the text report (the JSON keeps it whole)
OUTCOME_ORDER = [str(o) for o in Outcome]


@dataclass(frozen=True, slots=True)
class Diagnostics:
    """Unfinished-tool diagnostics: the open tool calls (state) and the recent tail (outcomes.md)."""

    open_tool_calls: list[dict[str, Any]]
    tail: str
    source: str  # "file <path>" | "body" | "metadata"

    def to_json(self) -> dict[str, Any]:
        return {"open_tool_calls": self.open_tool_calls, "tail": self.tail, "source": self.source}


@dataclass(frozen=True, slots=True)
class ReportRow:
    index: int
    flow_id: str
    method: str
    url: str
    status: int | None
    protocol: str
    model: str | None
    outcome: str
    stop_reason: str | None
    error_kind: str | None
    error_message: str | None
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    tool_names: list[str]
    first_token_s: float | None
    total_s: float | None
    diagnostics: Diagnostics | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, Any] | None = None  # the summary's ``cost`` (docs/cost.md), None unpriced
    # The official SDKs' requirements the stream broke (``extra.conformance`` of the summary).
    conformance: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "flow_id": self.flow_id,
            "method": self.method,
            "url": self.url,
            "status": self.status,
            "protocol": self.protocol,
            "model": self.model,
            "outcome": self.outcome,
            "stop_reason": self.stop_reason,
            "error": None
            if self.error_kind is None
            else {"kind": self.error_kind, "message": self.error_message},
            "usage": {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "total_tokens": self.total_tokens,
            },
            "tool_calls": self.tool_names,
            "timing": {"first_token_s": self.first_token_s, "total_s": self.total_s},
            "diagnostics": None if self.diagnostics is None else self.diagnostics.to_json(),
            "cost": self.cost,
            "conformance": self.conformance,
        }


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def diagnostics_from(
    meta: Mapping[str, Any], loaded: Mapping[str, Any] | None, body_tail: bytes | None
) -> Diagnostics | None:
    """The diagnostics of an ``unfinished_tool`` flow: the written report when it could be loaded,
    else the unfinished tool calls of the metadata and the end of the stored body."""
    if meta.get("outcome") != Outcome.UNFINISHED_TOOL:
        return None
    if loaded is not None:
        calls = loaded.get("open_tool_calls")
        tail = loaded.get("tail")
        return Diagnostics(
            open_tool_calls=[c if isinstance(c, dict) else {"call": str(c)} for c in calls]
            if isinstance(calls, list)
            else [],
            tail=redact_text(tail) if isinstance(tail, str) else "",
            source=f"file {meta.get('diagnostics')}",
        )
    tools = meta.get("tool_calls")
    open_calls = [
        {
            "id": t.get("id"),
            "name": t.get("name"),
            "arguments_bytes": t.get("arguments_bytes"),
        }
        for t in (tools if isinstance(tools, list) else [])
        if isinstance(t, Mapping) and not t.get("arguments_complete")
    ]
    tail_text = redact_text(body_tail.decode("utf-8", "replace")) if body_tail else ""
    return Diagnostics(open_calls, tail_text, "body" if body_tail else "metadata")


def make_row(
    meta: Mapping[str, Any],
    *,
    index: int,
    flow_id: str,
    method: str,
    url: str,
    status: int | None,
    diagnostics: Diagnostics | None = None,
) -> ReportRow:
    usage = meta.get("usage") if isinstance(meta.get("usage"), Mapping) else {}
    timing = meta.get("timing") if isinstance(meta.get("timing"), Mapping) else {}
    err = meta.get("error") if isinstance(meta.get("error"), Mapping) else None
    tools = meta.get("tool_calls") if isinstance(meta.get("tool_calls"), list) else []
    assert isinstance(usage, Mapping) and isinstance(timing, Mapping) and isinstance(tools, list)
    return ReportRow(
        index=index,
        flow_id=flow_id,
        method=method,
        url=redact_url(url),
        status=status,
        protocol=protocol_label(meta),
        model=meta.get("model") if isinstance(meta.get("model"), str) else None,
        outcome=str(meta.get("outcome") or "?"),
        stop_reason=str(meta["stop_reason"]) if meta.get("stop_reason") is not None else None,
        error_kind=str(err.get("kind")) if err is not None and err.get("kind") is not None else None,
        error_message=redact_text(str(err.get("message")))
        if err is not None and err.get("message")
        else None,
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        total_tokens=_int(usage.get("total_tokens")),
        tool_names=[str(t.get("name") or "?") for t in tools if isinstance(t, Mapping)],
        first_token_s=_float(timing.get("first_token_s")),
        total_s=_float(timing.get("total_s")),
        diagnostics=diagnostics,
        cost=dict(meta["cost"]) if cost.amount(meta) is not None else None,
        conformance=[dict(f) for f in conformance.findings_of(meta)],
    )


def _amount(r: ReportRow) -> float | None:
    return None if r.cost is None else float(r.cost["amount"])


def totals(rows: Sequence[ReportRow]) -> dict[str, Any]:
    by_outcome: dict[str, int] = {}
    for r in rows:
        by_outcome[r.outcome] = by_outcome.get(r.outcome, 0) + 1
    ordered = {o: by_outcome[o] for o in OUTCOME_ORDER if o in by_outcome}
    ordered.update({o: n for o, n in sorted(by_outcome.items()) if o not in ordered})
    return {
        "flows": len(rows),
        "outcomes": ordered,
        "input_tokens": sum(r.input_tokens or 0 for r in rows),
        "output_tokens": sum(r.output_tokens or 0 for r in rows),
        "total_tokens": sum(r.total_tokens or 0 for r in rows),
        "tool_calls": sum(len(r.tool_names) for r in rows),
        "cost": cost.total([_amount(r) for r in rows]),
    }


def report_json(rows: Sequence[ReportRow]) -> dict[str, Any]:
    return {"schema": 1, "flows": [r.to_json() for r in rows], "totals": totals(rows)}


def _n(v: int | None) -> str:
    return "-" if v is None else str(v)


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}s"


HEADERS = [
    *("#", "protocol", "model", "status", "outcome", "stop"),
    *("in", "out", "cost", "tools", "ttft", "total"),
]
RIGHT = {"#", "status", "in", "out", "cost", "ttft", "total"}


def _cells(r: ReportRow) -> list[str]:
    outcome = r.outcome if r.error_kind is None else f"{r.outcome} ({r.error_kind})"
    tools = ",".join(r.tool_names) if r.tool_names else "-"
    if len(tools) > 40:
        tools = f"{len(r.tool_names)} calls"
    return [
        str(r.index),
        r.protocol,
        r.model or "-",
        _n(r.status),
        outcome,
        r.stop_reason or "-",
        _n(r.input_tokens),
        _n(r.output_tokens),
        cost.format_amount(_amount(r)),
        tools,
        _s(r.first_token_s),
        _s(r.total_s),
    ]


def table_lines(rows: Sequence[ReportRow]) -> list[str]:
    """The text report: one row per flow, a totals line, then diagnostics of unfinished tool calls."""
    grid = [HEADERS, *[_cells(r) for r in rows]]
    widths = [max(len(row[i]) for row in grid) for i in range(len(HEADERS))]

    def fmt(row: list[str]) -> str:
        cells = [
            c.rjust(w) if HEADERS[i] in RIGHT else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    lines = [fmt(HEADERS), fmt(["-" * w for w in widths])]
    lines.extend(fmt(c) for c in grid[1:])
    t = totals(rows)
    outcomes = ", ".join(f"{n} {o}" for o, n in t["outcomes"].items()) or "none"
    lines.append(
        f"total: {t['flows']} flow{'s' if t['flows'] != 1 else ''} ({outcomes}) · "
        f"tokens {t['input_tokens']} in / {t['output_tokens']} out · {t['tool_calls']} tool calls · "
        f"cost {cost.total_text([_amount(r) for r in rows])}"
    )
    for r in rows:
        if r.conformance:
            lines.append("")
            raising = sum(1 for f in r.conformance if f.get("raises"))
            lines.append(
                f"flow {r.index} ({r.protocol}): {len(r.conformance)} conformance finding"
                f"{'s' if len(r.conformance) != 1 else ''}"
                + (f", an official SDK raises on {raising}" if raising else "")
            )
            for f in r.conformance:
                lines.append(f"  {f.get('rule')} at event {f.get('event_index')}: {f.get('detail')}")
                lines.append(f"    requires {f.get('requires')}")
                sdks = f.get("sdks")
                for name, text in sorted(sdks.items()) if isinstance(sdks, Mapping) else ():
                    lines.append(f"    {name}: {text}")
    for r in rows:
        if r.diagnostics is None:
            continue
        d = r.diagnostics
        lines.append("")
        lines.append(f"flow {r.index} ({r.protocol}, unfinished_tool) diagnostics from {d.source}:")
        if d.open_tool_calls:
            for call in d.open_tool_calls:
                desc = ", ".join(f"{k}={call[k]}" for k in sorted(call) if call[k] is not None)
                lines.append(f"  open tool call: {desc}")
        else:
            lines.append("  open tool call: (none recorded)")
        tail = d.tail[-TAIL_CHARS:]
        cut = len(d.tail) - len(tail)
        lines.append(f"  recent tail ({len(d.tail)} chars{f', last {len(tail)} shown' if cut else ''}):")
        lines.extend(f"    | {line}" for line in tail.splitlines())
    return lines
