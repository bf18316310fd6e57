"""A small real OTLP/HTTP receiver on loopback for the export tests: it records each request's
path and headers, undoes its Content-Encoding, decodes the protobuf body with OpenTelemetry's own
message classes, and answers 200 (or, while ``status`` says so, that error).

``wait`` polls with a bounded deadline for what the test expects to have arrived; nothing here
judges time.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

WAIT_S = 60.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]  # names lowercased
    request: ExportTraceServiceRequest

    def spans(self) -> list[Any]:
        return [s for rs in self.request.resource_spans for ss in rs.scope_spans for s in ss.spans]

    def resource(self) -> dict[str, Any]:
        (rs,) = self.request.resource_spans
        return {kv.key: value(kv.value) for kv in rs.resource.attributes}


@dataclass
class Receiver:
    port: int
    status: int = 200  # the answer to the next requests
    received: list[Received] = field(default_factory=list)
    attempts: int = 0  # requests seen, answered with an error or not
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def spans(self) -> list[Any]:
        with self.lock:
            return [s for r in self.received for s in r.spans()]

    def wait(self, cond: Callable[[Receiver], bool], what: str) -> None:
        wait_until(lambda: cond(self), f"the receiver to see {what}")


def wait_until(cond: Callable[[], bool], what: str) -> None:
    """Poll ``cond`` until it holds; fail after a bounded deadline (a bound, not a measurement)."""
    deadline = time.monotonic() + WAIT_S
    while not cond():
        assert time.monotonic() < deadline, f"waited {WAIT_S:.0f} s for {what}"
        time.sleep(0.02)


def value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as a Python value."""
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def attributes(span: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in span.attributes}


def _handler(rx: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            encoding = headers.get("content-encoding", "")
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            with rx.lock:
                rx.attempts += 1
                status = rx.status
                if status == 200:
                    rx.received.append(
                        Received(self.path, headers, ExportTraceServiceRequest.FromString(body))
                    )
            self.send_response(status)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    rx = Receiver(port=0)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(rx))
    server.daemon_threads = True
    rx.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="otlp-receiver", daemon=True)
    thread.start()
    try:
        yield rx
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
