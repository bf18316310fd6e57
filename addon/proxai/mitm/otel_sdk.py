"""The OpenTelemetry SDK behind ``proxai_otlp`` (docs/design/otlp.md, rules 7 to 10).

``SpanSink`` turns ``proxai.outputs.otel.Span`` objects (built pure from a flow's summary) into SDK spans:
a ``TracerProvider`` with a ``BatchSpanProcessor`` (its bounded queue and its one thread) and the
SDK's OTLP/HTTP exporter (``opentelemetry-exporter-otlp-proto-http``: protobuf, compression,
retries with backoff). A span starts and ends at the flow's own times and keeps the ids the pure
part derived (a ``traceparent``'s trace and parent, or the flow id's hash), through an
``IdGenerator`` handed the next ids. Ending a span only appends it to the processor's queue:
nothing here waits on the network on the event loop.

What the user reads: one ProxAI warning when exports start failing (with the receiver's URL,
redacted, and a reason that names no header), one line when they work again, one line at shutdown
when spans were not sent. The SDK's own log records go to ProxAI's debug log as their bare
message templates: their arguments are dropped, since the SDK logs a malformed header item whole.

Imported on the first ``configure`` that turns the export on; a proxy that exports nothing never
loads the SDK.
"""

from __future__ import annotations

import logging
import random
import socket
import threading
from collections.abc import Sequence
from typing import Any

import requests
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from proxai.outputs.otel import Span
from proxai.outputs.otlp import ExportSettings
from proxai.safety.redact import redact_url

logger = logging.getLogger("proxai.mitm.otlp_export")

SCOPE_NAME = "proxai"
SDK_LOGGER = "opentelemetry"
HTTP_LOGGER = "urllib3"  # under requests, the SDK's HTTP transport
# The BatchSpanProcessor's worker and ProxAI's closing thread: every export request runs on one.
EXPORT_THREADS = ("OtelBatchSpan", "proxai-otlp")
ABORT_S = 1.0  # after the flush's time: how long an export aborted in its retries may take to return


def _as_debug(record: logging.LogRecord) -> None:
    template = record.msg if isinstance(record.msg, str) else type(record.msg).__name__
    logger.debug("proxai: OpenTelemetry SDK %s (%s): %s", record.levelname, record.name, template)


class _SdkLogs(logging.Handler):
    """The SDK's records, as ProxAI debug lines holding only the record's message template."""

    def emit(self, record: logging.LogRecord) -> None:
        _as_debug(record)


class _ExportThreadLogs(logging.Filter):
    """The HTTP library's records made on the export's threads (a URL with its query), likewise."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not threading.current_thread().name.startswith(EXPORT_THREADS):
            return True
        _as_debug(record)
        return False


def route_sdk_logs() -> None:
    """The SDK's loggers, and the HTTP library's on the export's threads, stop reaching mitmproxy's
    log; ProxAI's debug log gets their templates."""
    sdk = logging.getLogger(SDK_LOGGER)
    if not any(isinstance(h, _SdkLogs) for h in sdk.handlers):
        sdk.addHandler(_SdkLogs())
    sdk.propagate = False
    # A logger's filter sees only its own records, not its children's: each of the library's
    # loggers (made when its modules were imported, above) gets one.
    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] == HTTP_LOGGER]
    for name in {HTTP_LOGGER, *names}:
        lib = logging.getLogger(name)
        if not any(isinstance(f, _ExportThreadLogs) for f in lib.filters):
            lib.addFilter(_ExportThreadLogs())


def _why(exc: BaseException) -> str:
    """A failed request's reason without its URL or headers: the operating system's error where
    the chain holds one (``ConnectionRefusedError: [Errno 111] Connection refused``), else the
    exception's class."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and type(e).__module__ in ("builtins", "socket", "ssl"):
            return f"{type(e).__name__}: {e}"
        todo += [c for c in (e.__cause__, e.__context__, getattr(e, "reason", None)) if c is not None]
        todo += [a for a in e.args if isinstance(a, BaseException)]
    return type(exc).__name__


class _WatchedSession(requests.Session):
    """The exporter's HTTP session (the SDK takes one): remembers where the last request went and
    why it failed, for the one warning."""

    def __init__(self) -> None:
        super().__init__()
        self.url: str | None = None
        self.failure: str | None = None

    def request(self, method: str, url: Any, *args: Any, **kwargs: Any) -> requests.Response:
        self.url = url.decode() if isinstance(url, bytes) else str(url)
        try:
            response = super().request(method, url, *args, **kwargs)
        except Exception as exc:
            self.failure = _why(exc)
            raise
        self.failure = None if 200 <= response.status_code < 400 else f"HTTP {response.status_code}"
        return response


class _Watch(SpanExporter):
    """The SDK's exporter, counted and watched: the first failed export warns once, the first
    success after it says so; after ``shutdown`` nothing more is tried."""

    def __init__(self, inner: OTLPSpanExporter, session: _WatchedSession, shown: str) -> None:
        self.inner = inner
        self.session = session
        self.shown = shown
        self.lock = threading.Lock()
        self.closed = False
        self.quiet = False  # after the closing line: an export still running says nothing more
        self.sent = 0
        self.warnings = 0
        self.failed = 0  # exports that failed (each after the SDK's retries)
        self.failing: str | None = None

    def where(self) -> str:
        return redact_url(self.session.url) if self.session.url else self.shown

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.closed:
            return SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # a bug of the SDK must not kill its thread silently
            self.session.failure = f"internal error: {type(exc).__name__}"
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.sent += len(spans)
            if self.failing is not None and not self.quiet:
                self.failing = None
                logger.info("proxai: OTLP export to %s works again", self.where())
            return result
        self.failed += 1
        if self.quiet or (self.closed and self.session.failure is None):
            return result  # cut short by ``shutdown``, not refused: the closing line counts it
        if self.failing is None:
            self.failing = self.session.failure or "the exporter refused the batch"
            self.warnings += 1
            logger.warning(
                "proxai: OTLP export to %s failed (%s); each batch is retried within the export "
                "timeout, then dropped; new spans wait in a bounded queue (no further warning "
                "until an export succeeds)",
                self.where(),
                self.failing,
            )
        return result

    def shutdown(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        self.inner.shutdown()  # type: ignore[no-untyped-call]  # also ends the wait between two retries

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class _FlowIds(IdGenerator):
    """The ids of the span being started, handed in by ``SpanSink.submit`` (the SDK asks its
    ``IdGenerator`` for them); random only if nothing was handed in."""

    def __init__(self) -> None:
        self.local = threading.local()

    def next(self, trace_id: int, span_id: int) -> None:
        self.local.ids = (trace_id, span_id)

    def _take(self) -> tuple[int, int] | None:
        ids: tuple[int, int] | None = getattr(self.local, "ids", None)
        return ids

    def generate_trace_id(self) -> int:
        ids = self._take()
        return ids[0] if ids else random.getrandbits(128) or 1

    def generate_span_id(self) -> int:
        ids = self._take()
        self.local.ids = None
        return ids[1] if ids else random.getrandbits(64) or 1


def resource(settings: ExportSettings, version: str) -> Resource:
    """The spans' resource: ProxAI's attributes, the standard variables' (``Resource.create`` reads
    ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME``), and with ``proxai_otlp=otel`` the
    variables win."""
    own = Resource.create(
        {"service.name": settings.service_name, "service.version": version, "host.name": socket.gethostname()}
    )
    return own.merge(OTELResourceDetector().detect()) if settings.resource_from_env else own


class SpanSink:
    """One exporter: ``submit`` never blocks, ``close`` flushes for a bounded time."""

    def __init__(self, settings: ExportSettings, version: str) -> None:
        route_sdk_logs()
        self.session = _WatchedSession()
        inner = OTLPSpanExporter(
            endpoint=settings.endpoint,
            headers=settings.headers,
            timeout=settings.timeout_s,
            compression=Compression(settings.compression),
            session=self.session,
        )
        shown = redact_url(settings.endpoint) if settings.endpoint else "the OTEL_EXPORTER_OTLP_* endpoint"
        self.exporter = _Watch(inner, self.session, shown)
        self.ids = _FlowIds()
        # Queue, batch and delay: the SDK's (OTEL_BSP_MAX_QUEUE_SIZE 2048, OTEL_BSP_MAX_EXPORT_BATCH_SIZE
        # 512, OTEL_BSP_SCHEDULE_DELAY 5000 ms). A full queue drops its oldest span.
        self.processor = BatchSpanProcessor(self.exporter)
        self.provider = TracerProvider(
            sampler=ALWAYS_ON,  # one span per flow, whatever the client's sampled flag
            resource=resource(settings, version),
            shutdown_on_exit=False,  # ``close`` does it, bounded; never an exit that waits 30 s
            id_generator=self.ids,
        )
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer(SCOPE_NAME, version)
        self.submitted = 0
        self.closed = False

    def submit(self, span: Span) -> None:
        """End ``span`` into the processor's queue (the event loop's side: never waits)."""
        if self.closed:
            return
        context = Context()  # a root span, unless the client sent its trace context
        if span.parent_span_id is not None:
            parent = trace.SpanContext(
                int.from_bytes(span.trace_id),
                int.from_bytes(span.parent_span_id),
                is_remote=True,
                trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
            )
            context = trace.set_span_in_context(trace.NonRecordingSpan(parent), context)
        self.ids.next(int.from_bytes(span.trace_id), int.from_bytes(span.span_id))
        sdk_span = self.tracer.start_span(
            span.name,
            context=context,
            kind=trace.SpanKind.CLIENT,
            attributes=span.attributes,
            start_time=span.start_ns,
        )
        if span.error:
            sdk_span.set_status(trace.Status(trace.StatusCode.ERROR, span.status_message))
        if sdk_span.is_recording():  # OTEL_SDK_DISABLED=true makes none
            self.submitted += 1
        sdk_span.end(end_time=span.end_ns)

    def close(self, timeout: float) -> None:
        """Send what is queued, waiting at most ``timeout`` seconds; then stop the exporter (an
        export still retrying gives up) and say how many spans were not sent."""
        self.closed = True
        flush = threading.Thread(target=self.provider.shutdown, name="proxai-otlp-close", daemon=True)
        flush.start()
        flush.join(timeout)
        self.exporter.shutdown()
        flush.join(ABORT_S)  # an export that was waiting to retry returns at once and is counted
        self.exporter.quiet = True
        left = self.submitted - self.exporter.sent
        if left:
            logger.info(
                "proxai: OTLP export to %s: %d spans sent, %d not sent",
                self.exporter.where(),
                self.exporter.sent,
                left,
            )
