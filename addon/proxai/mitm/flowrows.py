"""mitmproxy flows -> report rows (``proxai.report``), and ``.flow`` file reading.

``python -m proxai report FILE.flow`` (docs/bug-reports.md, "See what you have"). A flow recorded by the addon
carries its summary in ``flow.metadata["proxai"]``; a flow without one (saved by a mitmproxy without
ProxAI) is observed now from its stored body with the same observers, so a ``.flow`` read back gives
the same kind of row. Unfinished-tool diagnostics (docs/design/outcomes.md) are read
from the file the addon wrote when it still exists, else rebuilt from the stored body.

A flow file can come from someone else, and the diagnostics path in its metadata is theirs to choose
(``/dev/zero``, a FIFO, ``~/.ssh/...``). It is opened only when it lies inside the folder the caller
names (the flow file's own folder, or the addon's diagnostics folder), is a regular file, and holds at
most ``MAX_DIAGNOSTICS_FILE`` bytes; anything else is rebuilt from the stored body
(``docs/security.md``).
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import orjson
from mitmproxy import exceptions, http, io
from mitmproxy import flow as mflow

from proxai.core.detect import detect_protocol
from proxai.core.errors import ProxaiError
from proxai.core.model import Outcome
from proxai.mitm import urls
from proxai.outputs import cost
from proxai.outputs.report import ReportRow, diagnostics_from, make_row

logger = logging.getLogger(__name__)

TAIL_BYTES = 16 * 1024
MAX_DIAGNOSTICS_FILE = 4 * 1024 * 1024


class FlowFileError(ProxaiError):
    """A file could not be read as mitmproxy flows."""


# what mitmproxy's loading raises, besides FlowReadException, on a stored flow that lacks a part it
# needs (a state without "request" is a KeyError inside the flow's from_state)
_MALFORMED = (KeyError, TypeError, ValueError, AttributeError, IndexError)
_FLOW_START = re.compile(rb"[0-9]{1,10}:[0-9]{1,10}:")  # a saved flow: a dict whose first key is a string


def read_flows(path: str) -> list[mflow.Flow]:
    """All flows of a ``.flow`` file; raises ``FlowFileError``, whose message says whether the file
    is no flow file at all or one that broke after some flows (cut short or damaged)."""
    out: list[mflow.Flow] = []
    head = b""
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
            fh.seek(0)
            out.extend(io.FlowReader(fh).stream())
    except OSError as exc:
        raise FlowFileError(f"cannot read {path}: {exc}") from exc
    except (exceptions.FlowReadException, *_MALFORMED) as exc:
        reason = str(exc) if isinstance(exc, exceptions.FlowReadException) else f"{type(exc).__name__} {exc}"
        n = len(out)
        if n:
            where = f"cut short or damaged after {n} flow{'s' * (n != 1)}"
        elif _FLOW_START.match(head):  # a flow's tnetstring length: the first flow is the broken one
            where = "cut short or damaged in its first flow"
        else:
            where = "not a mitmproxy flow file"
        raise FlowFileError(f"cannot read {path}: {where} ({reason})") from exc
    return out


def write_flows(path: str, flows: Iterable[mflow.Flow]) -> int:
    n = 0
    with open(path, "wb") as fh:
        w = io.FlowWriter(fh)  # type: ignore[no-untyped-call]
        for f in flows:
            w.add(f)
            n += 1
    return n


def flow_metadata(f: http.HTTPFlow) -> Mapping[str, Any] | None:
    """The ProxAI summary of a flow: recorded, or observed now from the stored body. A summary
    without a cost (observed now, or recorded by an older ProxAI) is priced now, with the prices of
    the day the request was sent (docs/cost.md)."""
    meta = _summary(f)
    return None if meta is None else _priced(meta, f.request.pretty_url, f.request.timestamp_start)


def _priced(meta: Mapping[str, Any], url: str, at: float) -> Mapping[str, Any]:
    if "cost" in meta:
        return meta
    priced = dict(meta)
    cost.add_cost(priced, api_url=url, at=at)
    return priced


def _summary(f: http.HTTPFlow) -> Mapping[str, Any] | None:
    meta = f.metadata.get("proxai")
    if isinstance(meta, Mapping) and meta.get("outcome"):
        return meta
    protocol = detect_protocol(f.request.method, f.request.path)
    if protocol is None:
        return None
    if f.response is None:
        return {"schema": 1, "protocol": str(protocol), "outcome": "error", "error": _flow_error(f)}
    try:
        from proxai.pipeline.observe import observe_body  # type: ignore[import-untyped,unused-ignore]
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


def _load_diagnostics(meta: Mapping[str, Any], base_dir: str | None) -> Mapping[str, Any] | None:
    path = meta.get("diagnostics")
    if isinstance(path, Mapping):
        return path
    if not isinstance(path, str) or not path or base_dir is None:
        return None
    data = read_contained(path, base_dir, MAX_DIAGNOSTICS_FILE)
    if data is None:
        return None
    try:
        loaded = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return loaded if isinstance(loaded, Mapping) else None


def read_contained(path: str, base_dir: str, limit: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file inside ``base_dir`` (symbolic links
    resolved) of at most ``limit`` bytes; None otherwise. Never blocks on a FIFO or a device."""
    try:
        root = os.path.realpath(base_dir)
        real = os.path.realpath(path)
        if os.path.commonpath([real, root]) != root:
            return None
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_NOFOLLOW", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return None if size > limit else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


class SeenFlow(NamedTuple):
    """What a report row reads of a flow, without the flow. mitmdump has no view: ``proxai.report``
    reports the last LLM flows it saw from these, so that nothing holds a finished flow (its kept
    body, its request) for the report. ``body_tail``: the end of the stored body, for an unfinished
    tool's diagnostics when their file cannot be read (no other row reads the body). A tuple: one is
    made at the end of every LLM flow, and a frozen dataclass's fields are set one call each."""

    id: str
    method: str
    url: str
    at: float
    status: int | None
    meta: Mapping[str, Any]
    body_tail: bytes | None


def seen(f: http.HTTPFlow) -> SeenFlow | None:
    """The report's part of an LLM flow (None for any other flow)."""
    meta = f.metadata.get("proxai")
    if not (isinstance(meta, (dict, Mapping)) and meta.get("outcome")):
        meta = _summary(f)  # not recorded: observed now from the body
        if meta is None:
            return None
    resp = f.response
    tail = None
    if resp is not None and meta.get("outcome") == Outcome.UNFINISHED_TOOL:
        tail = (resp.get_content(strict=False) or b"")[-TAIL_BYTES:]
    status = resp.status_code if resp is not None else None
    req = f.request
    # the memo the response hook filled (mitmproxy's property costs about 30,000 instructions)
    return SeenFlow(f.id, req.method, urls.pretty_url(req), req.timestamp_start, status, meta, tail)


def report_rows(
    flows: Sequence[mflow.Flow], *, load_files: bool = True, base_dir: str | None = None
) -> list[ReportRow]:
    """One row per LLM flow (other flows are skipped), numbered from 1 in order. ``base_dir``: the
    only folder diagnostics files are read from (none: they are rebuilt from the stored body)."""
    got = (seen(f) for f in flows if isinstance(f, http.HTTPFlow))
    return seen_rows([s for s in got if s is not None], load_files=load_files, base_dir=base_dir)


def seen_rows(
    flows: Sequence[SeenFlow], *, load_files: bool = True, base_dir: str | None = None
) -> list[ReportRow]:
    """``report_rows`` of flows seen before (``seen``)."""
    rows: list[ReportRow] = []
    for s in flows:
        meta = _priced(s.meta, s.url, s.at)
        loaded = _load_diagnostics(meta, base_dir) if load_files else None
        rows.append(
            make_row(
                meta,
                index=len(rows) + 1,
                flow_id=s.id,
                method=s.method,
                url=s.url,
                status=s.status,
                diagnostics=diagnostics_from(meta, loaded, s.body_tail if loaded is None else None),
            )
        )
    return rows


def missing_body(f: http.HTTPFlow, meta: Mapping[str, Any]) -> str | None:
    """Why a recorded LLM flow holds too little to compare, or None: its request body was not
    recorded (an LLM request always has one), or its response body was not (the addon dropped it past
    a ``proxai_keep_body`` cap, mitmproxy streamed it without storing it, or a tool saved the flow
    without it: a successful answer is never empty). A response that never came is an outcome, not a
    missing body."""
    if not f.request.raw_content:
        return "the request body was not recorded"
    if isinstance(meta.get("body_not_kept"), str):
        return str(meta["body_not_kept"])  # "the response body was not kept: it passed ..."
    resp = f.response
    if resp is not None and (resp.raw_content is None or (not resp.raw_content and resp.status_code < 300)):
        return "the response body was not recorded"
    return None
