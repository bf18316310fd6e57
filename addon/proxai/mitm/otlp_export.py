"""OpenTelemetry export of LLM flows over OTLP/HTTP (``proxai_otlp=URL``; docs/otlp.md, rules in
docs/design/otlp.md).

The addon half builds one span per recorded LLM flow (``proxai.otel``, cheap and pure) and hands
it to a ``Sender``: a bounded queue drained by one background thread that batches spans, encodes
them (``proxai.otlp``) and POSTs them. Nothing of the export runs on a stream's path or blocks
the event loop. A receiver that is down or refuses costs one warning, whatever the number of
flows: spans wait in the bounded queue (the newest are dropped when it is full) and go out when
the receiver answers again, which is logged once too.
"""

from __future__ import annotations

import collections
import gzip
import logging
import os
import socket
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

import orjson
from mitmproxy import ctx, exceptions, http

from proxai import otlp
from proxai.mitm.export import live_redactor
from proxai.mitm.option_errors import checked_options
from proxai.model import StreamSummary
from proxai.otel import AttrValue, FlowFacts, Span, build_span
from proxai.redact import redact_url

logger = logging.getLogger(__name__)

MAX_QUEUE = 4096  # spans waiting to be sent; past it new spans are dropped (and counted)
MAX_BATCH = 256  # spans per request
INTERVAL_S = 1.0  # a partial batch waits at most this long
TIMEOUT_S = 5.0  # one request
MAX_BACKOFF_S = 30.0  # between attempts while the receiver fails
CLOSE_S = 3.0  # how long shutdown waits to flush
RETRYABLE = frozenset({408, 429, 502, 503, 504})

Post = Callable[[str, bytes, Mapping[str, str], float], int]


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("proxai")
    except Exception:
        return "unknown"


def urllib_post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> int:
    """POST ``body``; the HTTP status (an error status is returned, not raised)."""
    req = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            resp.read()
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        exc.read()
        return int(exc.code)


def parse_headers(text: str) -> dict[str, str]:
    """``key=value,key2=value2`` (the ``OTEL_EXPORTER_OTLP_HEADERS`` form, values URL-encoded)."""
    out: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected key=value, got {item.strip()!r}")
        out[unquote(key.strip())] = unquote(value.strip())
    return out


class Sender:
    """A bounded span queue and the thread that exports it."""

    def __init__(
        self,
        url: str,
        resource: Mapping[str, AttrValue],
        headers: Mapping[str, str] | None = None,
        *,
        post: Post = urllib_post,
        max_queue: int = MAX_QUEUE,
        max_batch: int = MAX_BATCH,
        interval: float = INTERVAL_S,
        timeout: float = TIMEOUT_S,
    ) -> None:
        self.url = url
        self.shown_url = redact_url(url)
        self.resource = dict(resource)
        self.headers = {
            **dict(headers or {}),
            "Content-Type": otlp.CONTENT_TYPE,
            "Content-Encoding": "gzip",
        }
        self.post = post
        self.max_queue = max_queue
        self.max_batch = max_batch
        self.interval = interval
        self.timeout = timeout
        self.queue: collections.deque[Span] = collections.deque()
        self.cond = threading.Condition()
        self.closing = False
        self.failing: str | None = None  # why the last attempt failed, while it fails
        self.sent = 0
        self.dropped = 0  # spans lost: queue full, or refused for good by the receiver
        self.warnings = 0
        self.attempts = 0  # export requests tried
        self.thread: threading.Thread | None = None

    # -- the event loop's side: never blocks ---------------------------------------------------

    def submit(self, span: Span) -> bool:
        with self.cond:
            if self.closing:
                return False
            if len(self.queue) >= self.max_queue:
                self.dropped += 1
                return False
            self.queue.append(span)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="proxai-otlp", daemon=True)
                self.thread.start()
            if len(self.queue) >= self.max_batch:
                self.cond.notify()
        return True

    def close(self, timeout: float = CLOSE_S) -> None:
        """Send what is queued (one attempt if the receiver fails), waiting at most ``timeout``."""
        with self.cond:
            self.closing = True
            self.cond.notify()
            thread = self.thread
        if thread is not None:
            thread.join(timeout)
        with self.cond:
            left = len(self.queue)
        if left or self.dropped:
            logger.info(
                "proxai: OTLP export to %s: %d spans sent, %d not sent",
                self.shown_url,
                self.sent,
                left + self.dropped,
            )

    # -- the export thread -----------------------------------------------------------------------

    def _run(self) -> None:
        backoff = 0.0
        while True:
            with self.cond:
                wait = backoff or self.interval
                deadline = time.monotonic() + wait
                # A full batch goes at once, unless the receiver is failing: then wait the backoff.
                while not self.closing and (backoff or len(self.queue) < self.max_batch):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self.cond.wait(left)
                batch = [self.queue.popleft() for _ in range(min(self.max_batch, len(self.queue)))]
                closing = self.closing
            if batch:
                ok, retry = self._send(batch)
                if ok:
                    backoff = 0.0
                else:
                    if retry and not closing:
                        with self.cond:
                            self.queue.extendleft(reversed(batch))
                            while len(self.queue) > self.max_queue:
                                self.queue.pop()
                                self.dropped += 1
                    else:
                        with self.cond:
                            self.dropped += len(batch)
                    backoff = min(MAX_BACKOFF_S, max(1.0, backoff * 2))
            with self.cond:
                if self.closing and (not self.queue or self.failing is not None):
                    return

    def _send(self, batch: list[Span]) -> tuple[bool, bool]:
        """(sent, worth retrying)."""
        self.attempts += 1
        try:
            body = gzip.compress(otlp.encode_request(batch, self.resource, _version()), compresslevel=5)
            status = self.post(self.url, body, self.headers, self.timeout)
        except (OSError, ValueError) as exc:  # refused, unreachable, timed out, bad URL
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            self._failed(
                f"{type(reason).__name__}: {reason}" if isinstance(reason, BaseException) else str(reason)
            )
            return False, True
        except Exception as exc:  # a bug here must not kill the thread silently
            self._failed(f"internal error: {type(exc).__name__}: {exc}")
            return False, False
        if 200 <= status < 300:
            if self.failing is not None:
                logger.info("proxai: OTLP export to %s works again", self.shown_url)
                self.failing = None
            self.sent += len(batch)
            return True, False
        self._failed(f"HTTP {status}")
        return False, status in RETRYABLE

    def _failed(self, reason: str) -> None:
        if self.failing is None:
            self.warnings += 1
            logger.warning(
                "proxai: OTLP export to %s failed (%s); spans wait in a bounded queue and are sent "
                "when it answers (no further warning until then)",
                self.shown_url,
                reason,
            )
        self.failing = reason


def _body_json(req: http.Request) -> Any:
    raw = req.get_content(strict=False) or b""
    if not raw or len(raw) > 64 * 1024 * 1024:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def flow_facts(flow: http.HTTPFlow, meta: Mapping[str, Any], now: float) -> FlowFacts:
    """The plain facts ``proxai.otel`` needs, read from a mitmproxy flow."""
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
        self.sender: Sender | None = None
        self.content = False
        self.post: Post = urllib_post
        self.exported: weakref.WeakSet[http.HTTPFlow] = weakref.WeakSet()

    def load(self, loader: Any) -> None:
        loader.add_option(
            "proxai_otlp",
            str,
            "",
            "Export one OpenTelemetry span per LLM flow over OTLP/HTTP to this URL (a collector, "
            "Jaeger, Tempo, Phoenix, Langfuse): http://host:4318 gets /v1/traces appended, a URL "
            "with a path is used as it is. Empty: no export.",
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
            "Authorization header. Empty: OTEL_EXPORTER_OTLP_TRACES_HEADERS or "
            "OTEL_EXPORTER_OTLP_HEADERS from the environment.",
        )
        loader.add_option(
            "proxai_otlp_service",
            str,
            "proxai",
            "The service.name of the exported spans' resource (tell many proxies apart).",
        )

    @checked_options
    def configure(self, updated: set[str]) -> None:
        opts = ctx.options
        if "proxai_otlp_content" in updated:
            self.content = bool(opts.proxai_otlp_content)
        keys = {"proxai_otlp", "proxai_otlp_headers", "proxai_otlp_service"}
        if not keys & updated:
            return
        endpoint = opts.proxai_otlp.strip()
        if not endpoint:
            self._replace(None)
            return
        try:
            url = otlp.traces_url(endpoint)
        except ValueError as exc:
            raise exceptions.OptionsError(f"proxai_otlp: {exc}") from exc  # type: ignore[no-untyped-call]
        header_text = opts.proxai_otlp_headers or os.environ.get(
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS", os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "")
        )
        try:
            headers = parse_headers(header_text)
        except ValueError as exc:
            raise exceptions.OptionsError(f"proxai_otlp_headers: {exc}") from exc  # type: ignore[no-untyped-call]
        resource: dict[str, AttrValue] = {
            "service.name": opts.proxai_otlp_service or "proxai",
            "service.version": _version(),
            "host.name": socket.gethostname(),
            "telemetry.sdk.name": "proxai",
        }
        self._replace(Sender(url, resource, headers, post=self.post))

    def _replace(self, sender: Sender | None) -> None:
        old, self.sender = self.sender, sender
        if old is not None:
            threading.Thread(target=old.close, name="proxai-otlp-close", daemon=True).start()

    def done(self) -> None:
        if self.sender is not None:
            self.sender.close()

    def record(self, flow: http.HTTPFlow, summary: StreamSummary, meta: Mapping[str, Any]) -> None:
        sender = self.sender
        if sender is None or flow in self.exported:
            return
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
        sender.submit(span)
