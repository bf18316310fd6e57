"""The bug-report bundle: redacted copies of flows as a ``.flow`` file, optionally HAR, plus a summary
JSON of the outcomes.

Issue 6 ("Commands": ``proxai.export FLOWS PATH``; "Outside mitmproxy": ``python -m proxai export``)
and the team rule that secrets never appear in exports. Every place a flow can hold a secret is
rewritten through ``proxai.redact``: request and response headers and trailers (auth headers, API
keys, cookies), the URL (query, userinfo), bodies (JSON keys, SSE data, forms, credential-shaped
tokens anywhere), ``flow.metadata``, the comment, the error message and WebSocket messages. The
original flows are never modified: the bundle is made of copies.

Files written for ``PATH`` (``.flow`` suffix optional): ``<base>.flow``, ``<base>.summary.json`` and,
when asked, ``<base>.har``.

Seed rule: seed 001 (001_5998ffc26e6ec2b6.txt), the unfinished-tool diagnostics travel with the
bundle, redacted.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from mitmproxy import flow as mflow
from mitmproxy import http
from mitmproxy.addons.savehar import SaveHar

from proxai.mitm.flowrows import report_rows, write_flows
from proxai.redact import (
    redact_body,
    redact_bytes,
    redact_headers,
    redact_metadata,
    redact_text,
    redact_url,
    truncate_body,
)
from proxai.report import report_json

REDACTION_NOTE = (
    "Secrets were removed: authorization / api-key / cookie headers and any header, query parameter, "
    "form field or JSON key named like a key, token, secret or password; credential-shaped values "
    "(sk-..., sk-ant-..., Bearer ..., AIza..., JWTs) anywhere; the same in flow metadata."
)


@dataclass(frozen=True, slots=True)
class ExportResult:
    flow_path: str
    summary_path: str
    har_path: str | None
    flows: int
    skipped: int
    truncated_bodies: int


def bundle_paths(path: str) -> tuple[str, str, str]:
    """``(flow, summary json, har)`` paths for the export target ``path``."""
    base = path[: -len(".flow")] if path.endswith(".flow") else path
    return base + ".flow", base + ".summary.json", base + ".har"


def _redact_message(msg: http.Message, max_body: int) -> int:
    """Redact one request / response in place (it is a copy); returns the bytes cut by truncation."""
    msg.headers.fields = tuple(redact_headers(msg.headers.fields))
    if msg.trailers is not None:
        msg.trailers.fields = tuple(redact_headers(msg.trailers.fields))
    if msg.raw_content is None:
        return 0
    ctype = msg.headers.get("content-type")
    try:
        content = msg.get_content(strict=True)
    except ValueError:
        content = None
    if content is None:  # undecodable: scrub what there is, in its encoded form
        msg.raw_content = redact_bytes(msg.raw_content)
        return 0
    data = redact_body(content, ctype).data
    data, cut = truncate_body(data, max_body)
    if data != content:
        msg.content = data  # re-encodes with the message's content-encoding, fixes content-length
    return cut


def redact_flow(f: http.HTTPFlow, *, max_body: int = 0) -> tuple[http.HTTPFlow, int]:
    """A redacted copy of ``f`` (same id) and the number of bodies truncated."""
    c = http.HTTPFlow.from_state(f.get_state())
    assert isinstance(c, http.HTTPFlow)
    c.live = False
    req = c.request
    req.path = redact_url(req.path)
    req.authority = redact_text(req.authority)
    truncated = 0
    for msg in (req, c.response):
        if msg is not None and _redact_message(msg, max_body):
            truncated += 1
    if c.websocket is not None:
        for m in c.websocket.messages:
            m.content = redact_bytes(m.content)
    if c.error is not None:
        c.error.msg = redact_text(c.error.msg)
    c.comment = redact_text(c.comment)
    c.metadata = redact_metadata(c.metadata)
    if truncated:
        c.metadata["proxai_export"] = {"truncated_bodies": truncated, "max_body": max_body}
    return c, truncated


def summary_document(flows: Sequence[mflow.Flow], redacted: Sequence[http.HTTPFlow]) -> dict[str, Any]:
    """The summary JSON: the report of the (redacted) flows plus what the export did."""
    doc = report_json(report_rows(redacted, load_files=False))
    doc["export"] = {
        "flows": len(redacted),
        "skipped_non_http": len(flows) - len(redacted),
        "redaction": REDACTION_NOTE,
    }
    return redact_metadata(doc)  # type: ignore[no-any-return]


def export_bundle(
    flows: Sequence[mflow.Flow], path: str, *, har: bool = False, max_body: int = 0
) -> ExportResult:
    """Write the bundle for ``flows`` at ``path`` (see the module docstring)."""
    flow_path, summary_path, har_path = bundle_paths(path)
    parent = os.path.dirname(os.path.abspath(flow_path))
    os.makedirs(parent, exist_ok=True)
    redacted: list[http.HTTPFlow] = []
    truncated = 0
    for f in flows:
        if isinstance(f, http.HTTPFlow):
            c, t = redact_flow(f, max_body=max_body)
            redacted.append(c)
            truncated += t
    write_flows(flow_path, redacted)
    doc = summary_document(flows, redacted)
    doc["export"]["truncated_bodies"] = truncated
    with open(summary_path, "wb") as fh:
        fh.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    written_har: str | None = None
    if har:
        har_doc = SaveHar().make_har(redacted)
        with open(har_path, "wb") as fh:
            fh.write(orjson.dumps(har_doc, option=orjson.OPT_INDENT_2))
        written_har = har_path
    return ExportResult(
        flow_path=flow_path,
        summary_path=summary_path,
        har_path=written_har,
        flows=len(redacted),
        skipped=len(flows) - len(redacted),
        truncated_bodies=truncated,
    )
