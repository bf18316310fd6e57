"""The bug-report bundle: redacted copies of flows as a ``.flow`` file, optionally HAR, plus a summary
JSON of the outcomes.

The ``proxai.export FLOWS PATH`` command and ``python -m proxai export`` (docs/bug-reports.md), and the
rule that secrets never appear in exports (docs/design/core.md, "Secrets stay out"). Every place a flow
can hold a secret is rewritten through ``proxai.safety.redact``: request and response headers and trailers
(auth headers, API keys, cookies), the URL (query, userinfo), bodies (JSON keys, SSE data, forms,
credential-shaped tokens anywhere), ``flow.metadata``, the comment, the error message and WebSocket
messages. The original flows are never modified: the bundle is made of copies.

Files written for ``PATH`` (``.flow`` suffix optional): ``<base>.flow``, ``<base>.summary.json`` and,
when asked, ``<base>.har``.

Rule: the unfinished-tool diagnostics (docs/design/outcomes.md) travel with the bundle, redacted.
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

from proxai.mitm import urls
from proxai.mitm.flowrows import report_rows, write_flows
from proxai.outputs.report import report_json
from proxai.safety.redact import Redactor, truncate_body

REDACTION_NOTE = (
    "Secrets were removed: authorization / api-key / cookie headers and any header, query parameter, "
    "form field or JSON key named like a key, token, secret or password; credential-shaped values "
    "(sk-..., sk-ant-..., Bearer ..., Basic ..., AIza..., AWS, JWTs) anywhere; every value removed so "
    "anywhere else in the same flow (bodies, error messages, streams split into deltas); the same in "
    "flow metadata. Bodies that could not be decoded were left out (see proxai_export in the flow)."
)
OMITTED_NOTE = "body left out: it could not be decoded ({reason}), so it could not be redacted"


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


def _decoded(msg: http.Message) -> tuple[bytes | None, str | None]:
    """The decoded body, or why it cannot be decoded."""
    try:
        return msg.get_content(strict=True), None
    except ValueError as exc:
        return None, str(exc) or "bad content-encoding"


def live_redactor(flow: http.HTTPFlow) -> Redactor:
    """The redaction engine for a live flow's metadata, diagnostics and telemetry (cheaper than
    ``flow_redactor``, which also reads the bodies): it knows the credentials of the request (URL
    and headers) and of the response headers, so their echoes are removed too."""
    red = Redactor()
    red.learn_url(urls.url(flow.request))
    red.learn_headers(flow.request.headers.fields)
    if flow.response is not None:
        red.learn_headers(flow.response.headers.fields)
    return red


def flow_redactor(f: http.HTTPFlow, red: Redactor | None = None) -> Redactor:
    """The redaction engine for one flow (or, given ``red``, one more flow of a bundle): it has
    learned every secret the flow's request and response carry by name or by shape, so it removes
    their echoes everywhere else."""
    red = Redactor() if red is None else red
    red.learn_url(f.request.url)
    for msg in (f.request, f.response):
        if msg is None:
            continue
        red.learn_headers(msg.headers.fields)
        if msg.trailers is not None:
            red.learn_headers(msg.trailers.fields)
        content, _why = _decoded(msg) if msg.raw_content is not None else (None, None)
        if content:
            red.learn_body(content, msg.headers.get("content-type"))
    return red


def _redact_message(msg: http.Message, red: Redactor, max_body: int) -> tuple[int, str | None]:
    """Redact one request / response in place (it is a copy); returns the bytes cut by truncation
    and, for a body left out, why."""
    msg.headers.fields = tuple(red.headers(msg.headers.fields))
    if msg.trailers is not None:
        msg.trailers.fields = tuple(red.headers(msg.trailers.fields))
    if msg.raw_content is None:
        return 0, None
    content, why = _decoded(msg)
    if content is None:  # undecodable: never copied raw
        for name in ("content-encoding", "content-length"):
            if name in msg.headers:
                del msg.headers[name]
        msg.content = b""
        return 0, why
    data = red.body(content, msg.headers.get("content-type")).data
    data, cut = truncate_body(data, max_body)
    if data != content:
        msg.content = data  # re-encodes with the message's content-encoding, fixes content-length
    return cut, None


def redact_flow(
    f: http.HTTPFlow, *, max_body: int = 0, red: Redactor | None = None
) -> tuple[http.HTTPFlow, int]:
    """A redacted copy of ``f`` (same id) and the number of bodies truncated. ``red``: the bundle's
    engine (secrets learned from every flow of the export), else one learned from ``f`` alone."""
    red = flow_redactor(f) if red is None else red
    c = http.HTTPFlow.from_state(f.get_state())
    assert isinstance(c, http.HTTPFlow)
    c.live = False
    req = c.request
    req.path = red.url(req.path)
    req.authority = red.text(req.authority)
    truncated = 0
    omitted: dict[str, str] = {}
    for side, msg in (("request", req), ("response", c.response)):
        if msg is None:
            continue
        cut, why = _redact_message(msg, red, max_body)
        truncated += 1 if cut else 0
        if why is not None:
            omitted[side] = OMITTED_NOTE.format(reason=why)
    if c.websocket is not None:
        for m in c.websocket.messages:
            m.content = red.binary(m.content)
    if c.error is not None:
        c.error.msg = red.text(c.error.msg)
    c.comment = red.text(c.comment)
    c.metadata = red.metadata(c.metadata)
    note: dict[str, object] = {}
    if truncated:
        note |= {"truncated_bodies": truncated, "max_body": max_body}
    if omitted:
        note["omitted_bodies"] = omitted
    if note:
        c.metadata["proxai_export"] = note
    return c, truncated


def summary_document(
    flows: Sequence[mflow.Flow], redacted: Sequence[http.HTTPFlow], red: Redactor | None = None
) -> dict[str, Any]:
    """The summary JSON: the report of the (redacted) flows plus what the export did."""
    doc = report_json(report_rows(redacted, load_files=False))
    doc["export"] = {
        "flows": len(redacted),
        "skipped_non_http": len(flows) - len(redacted),
        "redaction": REDACTION_NOTE,
    }
    return (red or Redactor()).metadata(doc)  # type: ignore[no-any-return]


def export_bundle(
    flows: Sequence[mflow.Flow], path: str, *, har: bool = False, max_body: int = 0
) -> ExportResult:
    """Write the bundle for ``flows`` at ``path`` (see the module docstring)."""
    flow_path, summary_path, har_path = bundle_paths(path)
    parent = os.path.dirname(os.path.abspath(flow_path))
    os.makedirs(parent, exist_ok=True)
    redacted: list[http.HTTPFlow] = []
    truncated = 0
    http_flows = [f for f in flows if isinstance(f, http.HTTPFlow)]
    red = Redactor()
    for f in http_flows:  # a secret of one flow is redacted in every flow of the bundle
        flow_redactor(f, red)
    for f in http_flows:
        if isinstance(f, http.HTTPFlow):
            c, t = redact_flow(f, max_body=max_body, red=red)
            redacted.append(c)
            truncated += t
    write_flows(flow_path, redacted)
    doc = summary_document(flows, redacted, red)
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
