"""The export through the OpenTelemetry SDK (``proxai.mitm.otel_sdk.SpanSink``) to a real OTLP/HTTP
receiver on loopback (``tests/otlp/receiver.py``), which decodes what arrived: the span as the pure
part built it (ids, the flow's own times, kind, status, every attribute), the resource, the
configured headers and compression, from the options or from the standard variables alone; and a
dead or refusing receiver, which costs one warning, never a record of the SDK, never a secret."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from bench.procs import free_port
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from proxai.mitm.otel_sdk import SpanSink
from proxai.outputs.otel import FlowFacts, Span, build_span, span_ids
from proxai.outputs.otlp import ExportSettings, export_settings

from .receiver import Receiver, attributes, running_receiver, wait_until
from .test_otel import BODY, START, _meta

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
KEY = "sk-proj-" + "K" * 40  # what a headers variable holds: a receiver's API key


@pytest.fixture(autouse=True)
def _no_otel_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in list(os.environ):
        if var.startswith("OTEL_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")  # the batch goes out at once


class RootLog(logging.Handler):
    """What reaches the root logger, where mitmproxy's log handler sits (pytest's own capture also
    hooks loggers that do not propagate, so caplog would show records mitmproxy never gets)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def log() -> Iterator[RootLog]:
    root = logging.getLogger()
    handler, level = RootLog(), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


@pytest.fixture
def rx() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


def _span(flow_id: str, traceparent: str | None = None, **meta: Any) -> Span:
    facts = FlowFacts(
        flow_id, "https://api.anthropic.com/v1/messages", START, START + 1_500_000_000, BODY, traceparent
    )
    return build_span(_meta(**meta), facts)


def _settings(option: str, headers: str = "", service: str = "proxai") -> ExportSettings:
    settings = export_settings(option, headers, service, os.environ)
    assert settings is not None
    return settings


def _sdk_records(log: RootLog) -> list[logging.LogRecord]:
    return [r for r in log.records if not r.name.startswith("proxai")]


def test_the_span_arrives_as_the_pure_part_built_it(rx: Receiver, log: RootLog) -> None:
    sink = SpanSink(_settings(rx.url, "x-team=blue,authorization=Bearer%20" + KEY, "proxai-ci"), "0.1.0")
    child = _span(
        "f1", f"00-{TRACE_ID}-{PARENT_ID}-00", outcome="error", error={"kind": "server", "message": "boom"}
    )
    root = _span("f2")
    sink.submit(child)
    sink.submit(root)
    rx.wait(lambda r: len(r.spans()) == 2, "two spans")
    sink.close(30)

    assert rx.received  # one batch, or two if the processor woke between the two spans
    for req in rx.received:
        assert req.path == "/v1/traces"
        assert req.headers["x-team"] == "blue"
        assert req.headers["authorization"] == f"Bearer {KEY}"
        assert req.headers["content-type"] == "application/x-protobuf"
        assert req.headers["content-encoding"] == "gzip"  # proxai_otlp=URL's default
        res = req.resource()
        assert (res["service.name"], res["service.version"], res["host.name"]) == (
            "proxai-ci",
            "0.1.0",
            socket.gethostname(),
        )
        assert res["telemetry.sdk.name"] == "opentelemetry"
        (rs,) = req.request.resource_spans
        (ss,) = rs.scope_spans
        assert (ss.scope.name, ss.scope.version) == ("proxai", "0.1.0")

    got = {attributes(s)["proxai.flow_id"]: s for s in rx.spans()}
    for built in (child, root):
        pb = got[built.attributes["proxai.flow_id"]]
        assert attributes(pb) == built.attributes  # every attribute, its value and its type
        assert (pb.trace_id, pb.span_id, pb.parent_span_id) == (
            built.trace_id,
            built.span_id,
            built.parent_span_id or b"",
        )
        assert (pb.start_time_unix_nano, pb.end_time_unix_nano) == (START, START + 1_500_000_000)
        assert pb.kind == PbSpan.SPAN_KIND_CLIENT
        assert pb.name == "chat claude-sonnet-4-6"
    pb_child, pb_root = got["f1"], got["f2"]
    # The client's trace (its sampled flag 00 notwithstanding), under its span.
    assert (pb_child.trace_id.hex(), pb_child.parent_span_id.hex()) == (TRACE_ID, PARENT_ID)
    assert (pb_child.status.code, pb_child.status.message) == (Status.STATUS_CODE_ERROR, "boom")
    # No trace context: the flow id's hash, as span_ids derives it.
    assert (pb_root.trace_id, pb_root.span_id) == span_ids("f2", None)[:2]
    assert (pb_root.status.code, pb_root.status.message) == (Status.STATUS_CODE_UNSET, "")
    assert attributes(pb_root)["gen_ai.usage.input_tokens"] == 130
    assert attributes(pb_root)["gen_ai.system"] == "anthropic"
    assert attributes(pb_root)["proxai.tool_calls"] == ["get_weather", "get_time"]

    assert sink.exporter.sent == 2 and sink.exporter.warnings == 0
    assert [r for r in log.records if r.levelno >= logging.INFO] == []  # all sent: nothing said
    assert _sdk_records(log) == []
    assert not any(KEY in r.getMessage() for r in log.records)


def test_otel_mode_takes_receiver_headers_compression_and_service_from_the_variables(
    rx: Receiver, monkeypatch: pytest.MonkeyPatch, log: RootLog
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{KEY},x-project-name=team-a")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "deflate")  # the traces variable wins
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "7")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "ci-proxy")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=not-this,deployment.environment=ci")
    settings = _settings("otel", service="proxai")
    assert settings == ExportSettings(None, {}, "deflate", 7.0, "proxai", True)
    sink = SpanSink(settings, "0.1.0")
    sink.submit(_span("f1"))
    rx.wait(lambda r: len(r.spans()) == 1, "the span")
    sink.close(30)

    (req,) = rx.received
    assert req.path == "/v1/traces"  # OTEL_EXPORTER_OTLP_ENDPOINT gets the signal's path
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.headers["x-project-name"] == "team-a"
    assert req.headers["content-encoding"] == "deflate"
    res = req.resource()
    assert res["service.name"] == "ci-proxy"  # OTEL_SERVICE_NAME over the attributes' and ours
    assert res["deployment.environment"] == "ci"
    assert res["service.version"] == "0.1.0"
    assert attributes(req.spans()[0])["gen_ai.request.model"] == "claude-sonnet-4-6"
    assert _sdk_records(log) == []
    assert not any(KEY in r.getMessage() for r in log.records)


def test_otel_mode_traces_endpoint_is_used_as_it_is_and_without_a_compression_variable_none(
    rx: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # the traces one wins
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rx.url + "/ingest/otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-only=traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-general=1")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attributes")
    sink = SpanSink(_settings("otel", "x-added=opt"), "0.1.0")
    sink.submit(_span("f1"))
    rx.wait(lambda r: len(r.spans()) == 1, "the span")
    sink.close(30)
    (req,) = rx.received
    assert req.path == "/ingest/otlp"
    assert req.headers["x-only"] == "traces" and req.headers["x-added"] == "opt"
    assert "x-general" not in req.headers  # the traces variable replaces the general one
    assert "content-encoding" not in req.headers  # the standard default: none
    assert req.resource()["service.name"] == "from-attributes"


def test_url_mode_keeps_its_service_name_over_the_variables(
    rx: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "not-this")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci")
    sink = SpanSink(_settings(rx.url, service="proxy-7"), "0.1.0")
    sink.submit(_span("f1"))
    rx.wait(lambda r: len(r.spans()) == 1, "the span")
    sink.close(30)
    res = rx.received[0].resource()
    assert (res["service.name"], res["deployment.environment"]) == ("proxy-7", "ci")


def _warnings(log: RootLog) -> list[str]:
    return [r.getMessage() for r in log.records if r.levelno >= logging.WARNING]


def _infos(log: RootLog) -> list[str]:
    return [r.getMessage() for r in log.records if r.levelno == logging.INFO]


def test_a_dead_receiver_costs_one_warning_and_shutdown_says_what_was_not_sent(
    monkeypatch: pytest.MonkeyPatch, log: RootLog
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "0.5")  # each export gives up quickly
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer%20{KEY}")
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    sink = SpanSink(_settings(url), "0.1.0")
    sink.submit(_span("f0"))
    wait_until(lambda: sink.exporter.failed >= 1, "a failed export")
    for i in range(5):
        sink.submit(_span(f"f{1 + i}"))
    wait_until(
        lambda: sink.exporter.failed >= 2, "a second failed export"
    )  # failing again, after the warning
    sink.close(30)
    assert sink.exporter.warnings == 1 and sink.exporter.sent == 0
    assert _warnings(log) == [
        f"proxai: OTLP export to {url}/v1/traces failed (ConnectionRefusedError: [Errno 111] Connection "
        "refused); each batch is retried within the export timeout, then dropped; new spans wait in a "
        "bounded queue (no further warning until an export succeeds)"
    ]
    assert _infos(log) == [f"proxai: OTLP export to {url}/v1/traces: 0 spans sent, 6 not sent"]
    # The SDK's own records (its retries, its failures) reach only ProxAI's debug log, as templates.
    assert _sdk_records(log) == []
    sdk_lines = [r.getMessage() for r in log.records if "OpenTelemetry SDK" in r.getMessage()]
    assert sdk_lines and all(
        r.levelno == logging.DEBUG for r in log.records if "OpenTelemetry SDK" in r.getMessage()
    )
    assert any("Failed to export %s batch" in line for line in sdk_lines)
    assert not any(KEY in r.getMessage() for r in log.records)
    sink.submit(_span("late"))  # closed: ignored, nothing raised
    assert sink.submitted == 6


def test_a_refusing_receiver_warns_once_and_says_when_it_works_again(
    rx: Receiver, monkeypatch: pytest.MonkeyPatch, log: RootLog
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "0.5")
    rx.status = 503
    sink = SpanSink(_settings(rx.url), "0.1.0")
    sink.submit(_span("f0"))
    wait_until(lambda: sink.exporter.failed >= 1, "a failed export")
    sink.submit(_span("f1"))
    wait_until(lambda: sink.exporter.failed >= 2, "a second failed export")
    rx.status = 200
    sink.submit(_span("f2"))
    rx.wait(lambda r: len(r.spans()) >= 1, "a span once it answers")
    sink.close(30)
    assert [attributes(s)["proxai.flow_id"] for s in rx.spans()] == ["f2"]  # failed batches are dropped
    assert _warnings(log) == [
        f"proxai: OTLP export to {rx.url}/v1/traces failed (HTTP 503); each batch is retried within the "
        "export timeout, then dropped; new spans wait in a bounded queue (no further warning until an "
        "export succeeds)"
    ]
    assert _infos(log) == [
        f"proxai: OTLP export to {rx.url}/v1/traces works again",
        f"proxai: OTLP export to {rx.url}/v1/traces: 1 spans sent, 2 not sent",
    ]


def test_shutdown_does_not_wait_for_an_export_that_hangs(
    monkeypatch: pytest.MonkeyPatch, log: RootLog
) -> None:
    """A receiver that takes the connection and never answers, and an export timeout of an hour:
    ``close`` still returns (the test's own time limit would fail it otherwise), and says so."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "3600")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        sink = SpanSink(_settings(url), "0.1.0")
        sink.submit(_span("f0"))
        wait_until(lambda: sink.session.url is not None, "the request")  # the request is on its way
        sink.close(0.5)
    assert _infos(log) == [f"proxai: OTLP export to {url}/v1/traces: 0 spans sent, 1 not sent"]
    assert _warnings(log) == []  # cut short by the shutdown: not the receiver's refusal
