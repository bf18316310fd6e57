"""The export queue (``proxai.mitm.otlp_export.Sender``) against a port nothing listens on: it
never blocks the caller, stays bounded, warns once, and says at shutdown what was not sent."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest
from bench.procs import free_port

from proxai.mitm.otlp_export import Sender, parse_headers
from proxai.otel import FlowFacts, Span, build_span


def _span(i: int) -> Span:
    return build_span(
        {"protocol": "openai_chat", "outcome": "completed"}, FlowFacts(f"f{i}", "http://h/v1", 1, 2)
    )


def _wait(cond: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not cond():
        assert time.monotonic() < deadline, "the export thread did not get there in 60 s"
        time.sleep(0.01)


def test_a_full_queue_drops_new_spans_and_shutdown_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="proxai.mitm.otlp_export")
    url = f"http://127.0.0.1:{free_port()}/v1/traces"
    # No batch is ever full and the interval is an hour: nothing leaves before close().
    sender = Sender(url, {"service.name": "t"}, max_queue=50, max_batch=100, interval=3600, timeout=1.0)
    accepted = [sender.submit(_span(i)) for i in range(80)]
    assert accepted == [True] * 50 + [False] * 30  # never blocks: full means dropped, counted
    sender.close(timeout=30)  # one attempt at shutdown, refused
    assert (sender.attempts, sender.warnings, sender.sent) == (1, 1, 0)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "failed (ConnectionRefusedError: [Errno 111] Connection refused)" in warnings[0]
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == [f"proxai: OTLP export to {url}: 0 spans sent, 80 not sent"]
    assert not sender.submit(_span(99))  # closed


def test_a_receiver_that_stays_dead_costs_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="proxai.mitm.otlp_export")
    url = f"http://127.0.0.1:{free_port()}/v1/traces"
    sender = Sender(url, {"service.name": "t"}, max_queue=50, max_batch=1, interval=0.01, timeout=1.0)
    sender.submit(_span(0))
    _wait(lambda: sender.warnings == 1)
    for i in range(5):
        sender.submit(_span(1 + i))
    _wait(lambda: sender.attempts >= 3)  # retried (after a backoff), failing again
    sender.close(timeout=30)
    assert sender.warnings == 1 and sender.sent == 0
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
    # the batch being retried and the queued spans are kept, not lost, until shutdown
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == [f"proxai: OTLP export to {url}: 0 spans sent, 6 not sent"]


def test_parse_headers() -> None:
    assert parse_headers("Authorization=Basic%20abc, x-project-name=team ") == {
        "Authorization": "Basic abc",
        "x-project-name": "team",
    }
    assert parse_headers("") == {}
    with pytest.raises(ValueError):
        parse_headers("novalue")
