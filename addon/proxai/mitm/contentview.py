"""The "ProxAI" mitmproxy contentview: an LLM request or response shown as what it means.

docs/contentview.md: chosen automatically for LLM flows (SSE and JSON bodies, requests and
responses) in ``mitmproxy``, ``mitmweb`` and ``mitmdump --flow-detail 3``. A response shows the
assembled message (text, reasoning, tool calls with pretty-printed arguments, usage, stop reason,
outcome, error / stall details); a request shows the conversation. On a translated flow both sides
are shown. The outcomes are docs/design/outcomes.md's; the rules of the view are docs/design/visibility.md's.

mitmproxy 12 contentview API (``mitmproxy/contentviews/_api.py``): a ``Contentview`` has ``name``,
``syntax_highlight``, ``prettify(data, metadata)`` and ``render_priority(data, metadata)``; it is
registered with ``mitmproxy.contentviews.add``. ``data`` is the DECODED body; ``metadata.flow`` and
``metadata.http_message`` say whose body it is. Rendering itself is pure (``proxai.outputs.view_text``); this
module only finds the inputs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import orjson
from mitmproxy import contentviews, http
from mitmproxy.contentviews import Contentview, Metadata, SyntaxHighlight

from proxai.core.detect import detect_protocol
from proxai.core.errors import ProxaiError
from proxai.core.model import Protocol, StreamSummary
from proxai.mitm.export import flow_redactor
from proxai.outputs import verdict, view_text
from proxai.safety.termsafe import escape, log_safe

logger = logging.getLogger(__name__)

VIEW_NAME = "ProxAI"
# Above every stock view that claims JSON or text (json: 1, raw: 0.1, xml/html: 0.5 ...).
PRIORITY = 3.0
MAX_VIEW_BODY = 64 * 1024 * 1024  # bodies above this are summarized from the metadata only


def flow_meta(flow: http.HTTPFlow) -> Mapping[str, Any] | None:
    meta = flow.metadata.get("proxai")
    return meta if isinstance(meta, Mapping) else None


def upstream_protocol(flow: http.HTTPFlow) -> Protocol | None:
    """The protocol the upstream speaks: from the metadata, else from the request path."""
    meta = flow_meta(flow)
    if meta is not None:
        try:
            return Protocol(str(meta.get("protocol")))
        except ValueError:
            pass
    return detect_protocol(flow.request.method, flow.request.path)


def _protocol(name: str | None) -> Protocol | None:
    try:
        return Protocol(str(name)) if name else None
    except ValueError:
        return None


def _is_llm_body(data: bytes, content_type: str | None) -> bool:
    ct = (content_type or "").lower()
    if "event-stream" in ct or ct.endswith("json") or "json" in ct:
        return True
    head = data.lstrip()[:6]
    return head.startswith((b"{", b"[", b"event:", b"data:"))


def observe_captured(protocol: Protocol, data: bytes, response: http.Response) -> StreamSummary | None:
    """The body re-observed with content capture; None when it cannot be (no observer, bad body)."""
    if not data or len(data) > MAX_VIEW_BODY:
        return None
    try:
        from proxai.pipeline.observe import observe_body  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # pragma: no cover - only while the observers are not there yet
        return None
    ct = response.headers.get("content-type")
    try:
        summary: StreamSummary = observe_body(
            protocol,
            data,
            status_code=response.status_code,
            start=0.0,
            headers_at=0.0,
            end=0.0,
            content_type=ct,
            capture=True,
        )
    except ProxaiError as exc:
        logger.debug("proxai contentview: cannot observe the body: %s", log_safe(exc))
        return None
    return summary


def _parse_json(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def response_text(flow: http.HTTPFlow, data: bytes) -> str:
    assert flow.response is not None
    meta = flow_meta(flow)
    upstream = upstream_protocol(flow)
    client = _protocol(verdict.client_protocol(meta)) if meta is not None else None
    body_protocol = client or upstream
    captured = observe_captured(body_protocol, data, flow.response) if body_protocol else None
    lines = view_text.flow_response_lines(meta, captured, str(body_protocol or ""), body=data)
    return "\n".join(lines) + "\n"


def request_text(flow: http.HTTPFlow, data: bytes) -> str:
    meta = flow_meta(flow)
    upstream = upstream_protocol(flow)
    body = _parse_json(data)
    return "\n".join(view_text.flow_request_lines(meta, str(upstream or ""), body)) + "\n"


class ProxaiContentview(Contentview):
    """The "ProxAI" view. ``prettify`` may raise; mitmproxy then falls back to the raw view."""

    @property
    def name(self) -> str:
        return VIEW_NAME

    @property
    def syntax_highlight(self) -> SyntaxHighlight:
        return "none"

    def render_priority(self, data: bytes, metadata: Metadata) -> float:
        flow, msg = metadata.flow, metadata.http_message
        if not isinstance(flow, http.HTTPFlow) or msg is None:
            return 0
        if upstream_protocol(flow) is None:
            return 0
        if isinstance(msg, http.Response):
            # An empty (streamed, not stored) body still has a summary worth showing.
            if not data:
                return PRIORITY if flow_meta(flow) is not None else 0
            return PRIORITY if _is_llm_body(data, metadata.content_type) else 0
        if data and _is_llm_body(data, metadata.content_type):
            return PRIORITY
        return 0

    def prettify(self, data: bytes, metadata: Metadata) -> str:
        flow, msg = metadata.flow, metadata.http_message
        if not isinstance(flow, http.HTTPFlow) or msg is None:
            raise ValueError("the ProxAI view shows HTTP LLM flows only")
        text = response_text(flow, data) if isinstance(msg, http.Response) else request_text(flow, data)
        # mitmdump prints the view as it is: redacted by the flow's engine, then terminal-safe
        return escape(flow_redactor(flow).text(text))


view = ProxaiContentview()


def register() -> None:
    """Add the view to mitmproxy's registry (idempotent)."""
    if contentviews.registry.get(VIEW_NAME.lower()) is not view:
        contentviews.add(view)


def unregister() -> None:
    """Remove the view again (mitmproxy 12 has no public removal; the registry is a dict)."""
    by_name = getattr(contentviews.registry, "_by_name", None)
    if isinstance(by_name, dict) and by_name.get(VIEW_NAME.lower()) is view:
        del by_name[VIEW_NAME.lower()]
