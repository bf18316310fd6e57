"""OpenTelemetry export of LLM flows over OTLP/HTTP (``proxai_otlp=URL`` or ``proxai_otlp=otel``;
docs/otlp.md, rules in docs/design/otlp.md).

The addon half: the options, and one span per recorded LLM flow, built by ``proxai.outputs.otel`` (cheap
and pure) from the flow's summary and its own times, and handed to a ``proxai.mitm.otel_sdk``
``SpanSink`` (the OpenTelemetry SDK's batch processor and OTLP/HTTP exporter). The settings come
from the options and the standard ``OTEL_*`` variables through ``proxai.outputs.otlp.export_settings``.
The SDK is imported with the first export setting and ``proxai.outputs.otel`` (which reads the
request with translate's reader) with the first span: a proxy that exports nothing imports neither
(docs/design/footprint.md). Nothing of the export runs on a stream's path or blocks the event
loop; a receiver that is down costs one warning.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson
from mitmproxy import ctx, exceptions, http

from proxai.core.model import StreamSummary
from proxai.mitm.export import live_redactor
from proxai.mitm.option_errors import checked_options
from proxai.outputs.otlp import export_settings

if TYPE_CHECKING:
    from proxai.mitm.otel_sdk import SpanSink
    from proxai.outputs.otel import FlowFacts

CLOSE_S = 3.0  # how long shutdown waits for the queue to be sent


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("proxai")
    except Exception:
        return "unknown"


def _body_json(req: http.Request) -> Any:
    raw = req.get_content(strict=False) or b""
    if not raw or len(raw) > 64 * 1024 * 1024:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def flow_facts(flow: http.HTTPFlow, meta: Mapping[str, Any], now: float) -> FlowFacts:
    """The plain facts ``proxai.outputs.otel`` needs, read from a mitmproxy flow the export records."""
    from proxai.outputs.otel import FlowFacts

    start = flow.request.timestamp_start
    timing = meta.get("timing")
    total = timing.get("total_s") if isinstance(timing, Mapping) else None
    if isinstance(total, (int, float)) and not isinstance(total, bool):
        end = start + float(total)
    elif flow.response is not None and flow.response.timestamp_end:
        end = flow.response.timestamp_end
    else:
        end = now
    return FlowFacts(
        flow_id=flow.id,
        url=flow.request.pretty_url,
        start_ns=int(start * 1e9),
        end_ns=int(end * 1e9),
        request_body=_body_json(flow.request),
        traceparent=flow.request.headers.get("traceparent"),
    )


def captured_content(summary: StreamSummary) -> dict[str, Any]:
    return {
        "text": summary.text,
        "reasoning": summary.reasoning,
        "tool_arguments": [t.arguments for t in summary.tool_calls],
    }


class OtlpExport:
    """The options and the per-flow hook (``ProxAI.record`` calls ``record``)."""

    def __init__(self) -> None:
        self.sink: SpanSink | None = None
        self.content = False
        self.exported: weakref.WeakSet[http.HTTPFlow] = weakref.WeakSet()

    def load(self, loader: Any) -> None:
        loader.add_option(
            "proxai_otlp",
            str,
            "",
            "Export one OpenTelemetry span per LLM flow over OTLP/HTTP. A URL (a collector, Jaeger, "
            "Tempo, Phoenix, Langfuse): http://host:4318 gets /v1/traces appended, a URL with a path "
            "is used as it is. 'otel': the receiver, headers, timeout and compression from the "
            "standard OTEL_EXPORTER_OTLP_* variables, the service name from OTEL_SERVICE_NAME / "
            "OTEL_RESOURCE_ATTRIBUTES. Empty: no export.",
        )
        loader.add_option(
            "proxai_otlp_content",
            bool,
            False,
            "Put the messages (request and answer, redacted) into the exported spans. Off: "
            "metadata only (models, tokens, outcome, timings, cost).",
        )
        loader.add_option(
            "proxai_otlp_headers",
            str,
            "",
            "Headers for the OTLP receiver, key=value,key2=value2 (values URL-encoded), e.g. an "
            "Authorization header; added over those of OTEL_EXPORTER_OTLP_TRACES_HEADERS or "
            "OTEL_EXPORTER_OTLP_HEADERS.",
        )
        loader.add_option(
            "proxai_otlp_service",
            str,
            "proxai",
            "The service.name of the exported spans' resource (tell many proxies apart); with "
            "proxai_otlp=otel, OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES' service.name wins.",
        )

    @checked_options
    def configure(self, updated: set[str]) -> None:
        opts = ctx.options
        if "proxai_otlp_content" in updated:
            self.content = bool(opts.proxai_otlp_content)
        if not {"proxai_otlp", "proxai_otlp_headers", "proxai_otlp_service"} & updated:
            return
        try:
            settings = export_settings(
                opts.proxai_otlp, opts.proxai_otlp_headers, opts.proxai_otlp_service, os.environ
            )
        except ValueError as exc:  # a variable at fault is named under the option it spoils
            why = str(exc) if str(exc).startswith("proxai_") else f"proxai_otlp: {exc}"
            raise exceptions.OptionsError(why) from None  # type: ignore[no-untyped-call]
        if settings is None:
            self._replace(None)
            return
        from proxai.mitm.otel_sdk import SpanSink

        self._replace(SpanSink(settings, _version()))

    def _replace(self, sink: SpanSink | None) -> None:
        old, self.sink = self.sink, sink
        if old is not None:
            threading.Thread(target=old.close, args=(CLOSE_S,), name="proxai-otlp-close", daemon=True).start()

    def done(self) -> None:
        if self.sink is not None:
            self.sink.close(CLOSE_S)

    def record(self, flow: http.HTTPFlow, summary: StreamSummary, meta: Mapping[str, Any]) -> None:
        sink = self.sink
        if sink is None or flow in self.exported:
            return
        from proxai.outputs.otel import build_span  # once per exported flow (otel_sdk imported it)

        self.exported.add(flow)
        red = live_redactor(flow)
        if self.content:  # the exported conversation: its secret-named fields are echoes too
            red.learn_body(
                flow.request.get_content(strict=False) or b"", flow.request.headers.get("content-type")
            )
        span = build_span(
            meta,
            flow_facts(flow, meta, time.time()),
            content=self.content,
            captured=captured_content(summary) if self.content else None,
            redactor=red,
        )
        sink.submit(span)
