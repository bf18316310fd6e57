"""``StreamObserver.observe_payloads`` is the one observation of a read: ``feed`` (event objects,
through ``_scan``), ``observe_events`` and ``end_payloads`` go through it. Every stream fixture at
three cuttings, an error status's body, a limit hit inside a read and data-less blocks give through
``feed`` what they give through ``observe_payloads``: the same summary with its timing, failure and
pending bytes after every read, and ``feed``'s events are the scanner's own (docs/performance.md,
"The Chat observer, the per-read accounting and the Chat -> Anthropic pair, 2026-12-03 night")."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxai.core.errors import SseLimitError
from proxai.core.model import Protocol
from proxai.core.sse import SseEvent, SseScanner
from proxai.pipeline.observe import Limits, StreamObserver
from tests.observe.harness import (
    DEFAULT_LIMITS,
    case_id,
    fixture_cases,
    protocol_of,
    random_splits,
    status_of,
)

C = Protocol.OPENAI_CHAT
SSE_CASES = [p for p in fixture_cases() if p.suffix == ".sse"]


def _scanned(scanner: SseScanner, read: bytes) -> list[SseEvent]:
    try:
        return scanner.feed(read)
    except SseLimitError as exc:
        return exc.events


def _both(protocol: Protocol, reads: list[bytes], status: int = 200, limits: Limits = DEFAULT_LIMITS) -> None:
    by_feed = StreamObserver(protocol, start=0.0, limits=limits)
    by_payloads = StreamObserver(protocol, start=0.0, limits=limits)
    scanner = SseScanner(limits.max_line, limits.max_event)
    for obs in (by_feed, by_payloads):
        obs.headers(status, 0.5)
    for i, read in enumerate(reads):
        now = 1.0 + i
        stopped = by_feed.pending_bytes is None
        events = by_feed.feed(read, now)
        payloads = by_payloads.observe_payloads(read, now)
        if not stopped:
            assert events == _scanned(scanner, read)
        assert len(events) == len(payloads)
        assert by_feed.pending_bytes == by_payloads.pending_bytes
        assert repr(by_feed.failed) == repr(by_payloads.failed)
        assert by_feed.summary().to_metadata() == by_payloads.summary().to_metadata()
    end = len(reads) + 1.0
    assert len(by_feed.end_payloads(end)) == len(by_payloads.end_payloads(end))
    assert by_feed.finish(end).to_metadata() == by_payloads.finish(end).to_metadata()


@pytest.mark.parametrize("path", SSE_CASES, ids=case_id)
def test_feed_observes_as_observe_payloads(path: Path) -> None:
    data = path.read_bytes()
    for k in range(3):
        _both(protocol_of(path), random_splits(data, k, (7, 97, 4096)[k]), status_of(path))


CHUNK = (
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\n'
)


def test_a_limit_inside_a_read_an_error_body_and_dataless_blocks_alike() -> None:
    huge = b"data: " + b"x" * 3000 + b"\n\n"
    _both(
        C,
        [CHUNK, CHUNK + huge + CHUNK, CHUNK, b"data: [DONE]\n\n"],
        limits=Limits(max_line=1000, max_event=2000),
    )
    body = b'{"error": {"message": "slow down", "type": "rate_limit_error"}}'
    _both(C, [body[:20], body[20:]], status=429)
    _both(C, [CHUNK + b"event: ping\n\n" + CHUNK, b"id: 7\n\n", CHUNK + b"data: [DONE]\n\n"])


@pytest.mark.parametrize("delta", [[1], ["a", "b"], "x", "xy", 1, 1.5, True, None, []])
def test_a_delta_that_is_no_object_leaves_the_chat_fast_path(delta: object) -> None:
    """``ChatGrammar._fast`` has no type test of the delta: ``len`` or ``.get`` fails on any other
    JSON value inside its ``try``, so the general path reads it, as it did with the test."""
    from proxai.protocols.chat import ChatGrammar
    from proxai.protocols.common import Accum

    obs = StreamObserver(C, start=0.0)
    obs.headers(200, 0.0)
    obs.observe_payloads(CHUNK, 1.0)
    grammar = obs.grammar
    assert isinstance(grammar, ChatGrammar) and isinstance(grammar.acc, Accum)
    obj = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
    obj["choices"] = [{"index": 0, "delta": delta, "finish_reason": None}]
    assert grammar._fast(None, obj, 2.0) is False
