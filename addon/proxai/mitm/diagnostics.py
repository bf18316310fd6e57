"""Unfinished-tool diagnostics: a local JSON report of the recent stream tail and the state.

docs/design/outcomes.md, "Unfinished-tool diagnostics": the observer keeps the last
16 KiB of stream bytes (``recent_tail``); when the outcome is ``UnfinishedTool`` a local
diagnostics JSON is written from that tail, to see whether the terminal event or the
arguments-done event was missing. The data lives where it is seen: the observer owns the tail,
this module only writes the report.

The report holds the tail as text (invalid UTF-8 replaced), the summary and the open tool
calls. It NEVER holds request or response headers, query strings or bodies, and all of it goes
through the flow's redaction engine (``proxai.safety.redact.Redactor``, ``docs/security.md``): a key the
stream quotes, or splits across deltas, is removed from the tail too.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from dataclasses import asdict, is_dataclass
from typing import Any

import orjson

from proxai.core.model import StreamSummary
from proxai.safety.redact import Redactor

_SAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")


def build_report(
    *,
    flow_id: str,
    method: str,
    path: str,
    summary: StreamSummary,
    tail: bytes,
    open_tool_calls: list[Any],
    written_at: float,
    redactor: Redactor | None = None,
) -> dict[str, Any]:
    """The diagnostics document. ``path`` loses its query string (it may carry a key); everything
    is redacted by ``redactor`` (the flow's engine; a fresh one when not given)."""
    red = redactor or Redactor()
    tail = red.body(tail, "text/event-stream").data
    calls: list[Any] = []
    for call in open_tool_calls:
        if is_dataclass(call) and not isinstance(call, type):
            calls.append(asdict(call))
        else:
            calls.append(repr(call))
    report = {
        "schema": 1,
        "kind": "proxai.unfinished_tool",
        "flow_id": flow_id,
        "request": {"method": method, "path": path.split("?", 1)[0]},
        "written_at": written_at,
        "summary": summary.to_metadata(),
        "open_tool_calls": calls,
        "tail_bytes": len(tail),
        "tail": tail.decode("utf-8", "replace"),
    }
    return red.metadata(report)  # type: ignore[no-any-return]


def write_report(directory: str, flow_id: str, report: dict[str, Any]) -> str:
    """Write ``<directory>/<flow_id>.json`` atomically; returns the path."""
    os.makedirs(directory, exist_ok=True)
    name = _SAFE_ID.sub("_", flow_id) or "flow"
    path = os.path.join(directory, f"unfinished-tool-{name}.json")
    fd, tmp = tempfile.mkstemp(prefix=".proxai-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path
