"""mitmproxy flows -> report rows (``proxai.report``), and ``.flow`` file reading.

Issue 6 ("Outside mitmproxy": ``python -m proxai report FILE.flow``). A flow recorded by the addon
carries its summary in ``flow.metadata["proxai"]``; a flow without one (saved by a mitmproxy without
ProxAI) is observed now from its stored body with the same observers, so a ``.flow`` read back gives
the same kind of row. Unfinished-tool diagnostics (seed 001, ``001_5998ffc26e6ec2b6.txt``) are read
from the file the addon wrote when it still exists, else rebuilt from the stored body.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson
from mitmproxy import exceptions, http, io
from mitmproxy import flow as mflow

from proxai.detect import detect_protocol
from proxai.errors import ProxaiError
from proxai.report import ReportRow, diagnostics_from, make_row

logger = logging.getLogger(__name__)

TAIL_BYTES = 16 * 1024
MAX_DIAGNOSTICS_FILE = 4 * 1024 * 1024


class FlowFileError(ProxaiError):
    """A file could not be read as mitmproxy flows."""


def read_flows(path: str) -> list[mflow.Flow]:
    """All flows of a ``.flow`` file; raises ``FlowFileError``."""
    try:
        with open(path, "rb") as fh:
            return list(io.FlowReader(fh).stream())
    except (OSError, exceptions.FlowReadException) as exc:
        raise FlowFileError(f"cannot read {path}: {exc}") from exc


def write_flows(path: str, flows: Iterable[mflow.Flow]) -> int:
    n = 0
    with open(path, "wb") as fh:
        w = io.FlowWriter(fh)  # type: ignore[no-untyped-call]
        for f in flows:
            w.add(f)
            n += 1
    return n


def flow_metadata(f: http.HTTPFlow) -> Mapping[str, Any] | None:
    """The ProxAI summary of a flow: recorded, or observed now from the stored body."""
    meta = f.metadata.get("proxai")
    if isinstance(meta, Mapping) and meta.get("outcome"):
        return meta
    protocol = detect_protocol(f.request.method, f.request.path)
    if protocol is None:
        return None
    if f.response is None:
        return {"schema": 1, "protocol": str(protocol), "outcome": "error", "error": _flow_error(f)}
    try:
        from proxai.observe import observe_body  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # pragma: no cover - only while the observers are not there yet
        return None
    resp = f.response
    start = f.request.timestamp_start
    try:
        summary = observe_body(
            protocol,
            resp.get_content(strict=False) or b"",
            status_code=resp.status_code,
            start=start,
            headers_at=resp.timestamp_start or start,
            end=resp.timestamp_end or resp.timestamp_start or start,
            content_type=resp.headers.get("content-type"),
        )
    except ProxaiError as exc:
        return {"schema": 1, "protocol": str(protocol), "outcome": "error", "error": {"message": str(exc)}}
    observed: dict[str, Any] = summary.to_metadata()
    observed["observed_by"] = "report"
    return observed


def _flow_error(f: http.HTTPFlow) -> dict[str, Any]:
    return {"kind": "connection", "message": f.error.msg if f.error else "no response"}


def _load_diagnostics(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    path = meta.get("diagnostics")
    if isinstance(path, Mapping):
        return path
    if not isinstance(path, str) or not path:
        return None
    try:
        if os.path.getsize(path) > MAX_DIAGNOSTICS_FILE:
            return None
        with open(path, "rb") as fh:
            loaded = orjson.loads(fh.read())
    except (OSError, orjson.JSONDecodeError):
        return None
    return loaded if isinstance(loaded, Mapping) else None


def report_rows(flows: Sequence[mflow.Flow], *, load_files: bool = True) -> list[ReportRow]:
    """One row per LLM flow (other flows are skipped), numbered from 1 in order."""
    rows: list[ReportRow] = []
    for f in flows:
        if not isinstance(f, http.HTTPFlow):
            continue
        meta = flow_metadata(f)
        if meta is None:
            continue
        loaded = _load_diagnostics(meta) if load_files else None
        body_tail: bytes | None = None
        if loaded is None and f.response is not None:
            body = f.response.get_content(strict=False) or b""
            body_tail = body[-TAIL_BYTES:]
        rows.append(
            make_row(
                meta,
                index=len(rows) + 1,
                flow_id=f.id,
                method=f.request.method,
                url=f.request.pretty_url,
                status=f.response.status_code if f.response is not None else None,
                diagnostics=diagnostics_from(meta, loaded, body_tail),
            )
        )
    return rows
