"""A flow file -> the inputs of a run report (``proxai.outputs.run``): ``python -m proxai report FILE
--html/--json/--csv/--filter`` (docs/run-report.md, rules in docs/design/run-report.md).

Reading the file, the ``--filter`` expression (mitmproxy's own filter language) and the stored
bodies are mitmproxy's business, so they are here. For each LLM flow: its recorded summary (or one
observed now from its body, as the text report does), the request sent upstream, the client's
own request of a translated flow (the copy the router kept), and the answer, observed again from
the stored response body with content capture on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from mitmproxy import flow as mflow
from mitmproxy import flowfilter, http

from proxai.core.errors import ProxaiError
from proxai.core.model import Protocol
from proxai.mitm.export import flow_redactor
from proxai.mitm.flowrows import flow_metadata, missing_body, read_flows
from proxai.outputs.run import FlowInput
from proxai.outputs.view_text import client_request_body
from proxai.pipeline.observe import observe_body
from proxai.safety.redact import Redactor

MAX_BODY = 64 * 1024 * 1024


class FilterError(ProxaiError):
    """A ``--filter`` expression mitmproxy cannot parse."""


def parse_filter(expr: str | None) -> flowfilter.TFilter | None:
    if not expr:
        return None
    try:
        return flowfilter.parse(expr)
    except ValueError as exc:
        raise FilterError(f"--filter {expr!r}: {exc}") from exc


def select(flows: Sequence[mflow.Flow], expr: str | None) -> list[http.HTTPFlow]:
    """The HTTP flows the filter matches (all of them without one), in file order."""
    f = parse_filter(expr)
    return [x for x in flows if isinstance(x, http.HTTPFlow) and (f is None or f(x))]


def _json(raw: bytes | str | None) -> Any:
    if not raw or len(raw) > MAX_BODY:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _answer(f: http.HTTPFlow, meta: Mapping[str, Any]) -> tuple[str | None, str | None, list[str | None]]:
    """(text, reasoning, tool arguments) of the stored response, in the protocol the client got."""
    resp = f.response
    if resp is None:
        return None, None, []
    body = resp.get_content(strict=False) or b""
    if not body or len(body) > MAX_BODY:
        return None, None, []
    name = meta.get("client_protocol") or meta.get("protocol")
    try:
        protocol = Protocol(str(name))
    except ValueError:
        return None, None, []
    start = f.request.timestamp_start
    try:
        s = observe_body(
            protocol,
            body,
            status_code=resp.status_code,
            start=start,
            headers_at=resp.timestamp_start or start,
            end=resp.timestamp_end or resp.timestamp_start or start,
            content_type=resp.headers.get("content-type"),
            capture=True,
        )
    except ProxaiError:
        return None, None, []
    return s.text, s.reasoning, [t.arguments for t in s.tool_calls]


def run_redactor(flows: Sequence[http.HTTPFlow]) -> Redactor:
    """One redaction engine for the whole report: it learned the secrets of every flow (their
    URLs, headers and bodies), so a key sent in one flow is removed wherever it shows up."""
    red = Redactor()
    for f in flows:
        flow_redactor(f, red)
    return red


def run_inputs(flows: Sequence[http.HTTPFlow]) -> list[FlowInput]:
    """One input per LLM flow (other flows are left out), numbered from 1."""
    out: list[FlowInput] = []
    for f in flows:
        recorded = flow_metadata(f)
        if recorded is None:
            continue
        meta = dict(recorded)
        text, reasoning, args = _answer(f, meta)
        out.append(
            FlowInput(
                index=len(out) + 1,
                flow_id=f.id,
                method=f.request.method,
                url=f.request.pretty_url,
                status=f.response.status_code if f.response is not None else None,
                start=f.request.timestamp_start,
                meta=meta,
                request=_json(f.request.get_content(strict=False)),
                client_request=client_request_body(meta),
                answer_text=text,
                reasoning=reasoning,
                tool_arguments=args,
                marked=f.marked,
            )
        )
    return out


@dataclass(slots=True)
class RecordedRun:
    """A flow file read for comparing: its HTTP flows (for the redactor), the inputs of the LLM flows
    whose bodies were recorded, and the others with why they were left out."""

    flows: list[http.HTTPFlow]
    inputs: list[FlowInput] = field(default_factory=list)
    skipped: list[tuple[FlowInput, str]] = field(default_factory=list)


def read_recorded(path: str) -> RecordedRun:
    """Raises ``FlowFileError`` (``proxai.mitm.flowrows.read_flows``)."""
    flows = select(read_flows(path), None)
    out = RecordedRun(flows)
    by_id = {f.id: f for f in flows}
    for inp in run_inputs(flows):
        why = missing_body(by_id[inp.flow_id], inp.meta)
        if why is None:
            out.inputs.append(inp)
        else:
            out.skipped.append((inp, why))
    return out
