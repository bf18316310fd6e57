"""A run as CSV, one row per LLM flow, for spreadsheets and scripts (docs/design/run-report.md).

Pure: a ``proxai.outputs.run.Run`` in, CSV text out. A cell that a spreadsheet would take for a formula
(it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) is prefixed with ``'``.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from proxai.outputs.run import USAGE_KEYS, Run, Turn

COLUMNS = (
    "index",
    "flow_id",
    "start",
    "offset_s",
    "method",
    "url",
    "status",
    "protocol",
    "client_protocol",
    "requested_model",
    "model",
    "verdict",
    "outcome",
    "stop_reason",
    "error_kind",
    *USAGE_KEYS,
    "first_token_s",
    "total_s",
    "tool_calls",
    "new_messages",
    "cost",
    "currency",
    "cost_note",
)


def _safe(v: Any) -> str:
    if isinstance(v, float):
        return format(Decimal(repr(v)), "f")  # 0.0000825, never 8.25e-05
    s = "" if v is None else str(v)
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") else s


def _row(t: Turn) -> list[str]:
    start = datetime.fromtimestamp(t.start, UTC).isoformat() if t.start is not None else None
    note = next((n for n in t.notes if n.startswith("cost:")), None) if t.cost is None else None
    values: list[Any] = [
        t.index,
        t.flow_id,
        start,
        t.offset_s,
        t.method,
        t.url,
        t.status,
        t.protocol,
        t.client_protocol,
        t.requested_model,
        t.model,
        t.verdict,
        t.outcome,
        t.stop_reason,
        None if t.error is None else t.error.get("kind"),
        *(t.usage.get(k) for k in USAGE_KEYS),
        t.ttft_s,
        t.total_s,
        " ".join(str(c.get("name")) for c in t.tool_calls),
        len(t.new_messages),
        None if t.cost is None else t.cost.get("amount"),
        None if t.cost is None else t.cost.get("currency"),
        note,
    ]
    return [_safe(v) for v in values]


def render_csv(run: Run) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    for t in run.turns:
        w.writerow(_row(t))
    return out.getvalue()
