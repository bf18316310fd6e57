"""The carrier: decode -> observe -> pass through / translate -> guard hooks; never breaks a flow."""

from __future__ import annotations

import gzip
import itertools
import random

import pytest

from proxai.core.decode import make_decoder
from proxai.core.model import ErrorKind, Outcome, Protocol
from proxai.core.sse import SseEvent
from proxai.mitm.carrier import Carrier, strip_translated_headers
from proxai.pipeline.carrier import CarrierState, GuardAction
from tests.splits import random_pieces

from .fakes import RecordingObserver, UpperTranslator, pipeline

STREAM = b"".join(b'data: {"n":%d}\n\n' % i for i in range(50)) + b"data: [DONE]\n\n"


def _carrier(
    obs: RecordingObserver, encoding: str | None = None, translator: UpperTranslator | None = None
) -> Carrier:
    clock = itertools.count(100.0, 0.5)
    return Carrier(pipeline(obs, translator), decoder=make_decoder(encoding), clock=lambda: next(clock))


def _run(c: Carrier, chunks: list[bytes]) -> list[list[bytes]]:
    outs = []
    for ch in chunks:
        out = c(ch)
        assert out != b"" and b"" not in out  # never an empty chunk mid-stream
        outs.append(out if isinstance(out, list) else [out])
    outs.append(list(c(b"")))  # type: ignore[arg-type]
    return outs


@pytest.mark.parametrize("split", ["whole", "bytewise", "random"])
@pytest.mark.parametrize("encoding", [None, "gzip"])
def test_observe_only_passes_exact_bytes(split: str, encoding: str | None) -> None:
    wire = gzip.compress(STREAM) if encoding == "gzip" else STREAM
    if split == "whole":
        chunks = [wire]
    elif split == "bytewise":
        chunks = [wire[i : i + 1] for i in range(len(wire))]
    else:
        chunks = random_pieces(wire, random.Random(3), max_size=40)
    obs = RecordingObserver()
    c = _carrier(obs, encoding)
    outs = _run(c, chunks)
    # Each call returns exactly the chunk it got; nothing at the end.
    assert [b"".join(o) for o in outs[:-1]] == chunks
    assert outs[-1] == []
    assert b"".join(obs.fed) == STREAM  # the observer saw decoded bytes
    assert len(obs.events) == 51 and obs.events[-1].data == "[DONE]"
    assert c.summary is not None and c.summary.outcome is Outcome.COMPLETED
    assert c.state is CarrierState.FINISHED
    assert c.client_bytes == c.upstream_bytes == len(wire)


def test_decode_error_keeps_passing_bytes_and_stops_observing() -> None:
    obs = RecordingObserver()
    c = _carrier(obs, "gzip")
    bad = b"\x1f\x8b\x08\x00garbage that is not deflate data at all......"
    assert c(bad) == [bad]
    assert c(b"more") == [b"more"]
    assert c(b"") == []
    assert c.observe_error is not None and "gzip" in c.observe_error
    assert obs.fed == []
    assert c.summary is not None and c.summary.outcome is Outcome.CLOSED


def test_unknown_encoding_is_recorded() -> None:
    obs = RecordingObserver()
    c = Carrier(pipeline(obs), decoder=None, decode_error="unsupported content-encoding 'x'")
    assert c(b"data: x\n\n") == [b"data: x\n\n"]
    assert not c.observing and obs.fed == []


def test_observer_bug_never_breaks_the_flow() -> None:
    obs = RecordingObserver(boom_on=b"BOOM")
    c = _carrier(obs)
    assert c(b"data: 1\n\n") == [b"data: 1\n\n"]
    assert c(b"data: BOOM\n\n") == [b"data: BOOM\n\n"]
    assert c(b"data: 2\n\n") == [b"data: 2\n\n"]
    assert c(b"") == []
    assert c.observe_error is not None and "RuntimeError" in c.observe_error
    assert obs.fed == [b"data: 1\n\n"]


def test_hook_bug_is_contained_and_other_hooks_still_run() -> None:
    obs = RecordingObserver()
    c = _carrier(obs)
    seen: list[int] = []

    def bad(_c: Carrier, _e: int, _now: float) -> GuardAction | None:
        raise ValueError("hook bug")

    def good(_c: Carrier, events: int, _now: float) -> GuardAction | None:
        seen.append(events)
        return None

    c.on_chunk += [bad, good]
    assert c(b"data: 1\n\ndata: 2\n\n") == [b"data: 1\n\ndata: 2\n\n"]
    assert seen == [2] and c.hook_errors == 1


def test_guard_inject_and_close_in_callable() -> None:
    obs = RecordingObserver(Protocol.OPENAI_RESPONSES)
    c = _carrier(obs)
    closed: list[Carrier] = []
    ended: list[Outcome] = []
    c.close_handlers.append(closed.append)
    c.on_end.append(lambda _c, s: ended.append(s.outcome))

    def guard(_c: Carrier, _e: int, now: float) -> GuardAction | None:
        return (
            GuardAction(close=True, kind=ErrorKind.TOOL_STALL, message="tool args stalled")
            if now > 101
            else None
        )

    c.on_chunk.append(guard)
    assert c(b"data: 1\n\n") == [b"data: 1\n\n"]  # now = 100.0
    assert c(b"data: 2\n\n") == [b"data: 2\n\n"]  # now = 100.5
    out = c(b"data: 3\n\n")  # now = 101.0 -> no; 101.5 next
    assert out == [b"data: 3\n\n"]
    out = c(b"data: 4\n\n")
    assert isinstance(out, list) and out[0] == b"data: 4\n\n"
    err = out[1]
    assert b"event: error" in err and b"tool args stalled" in err and b"response.failed" in err
    assert b'"sequence_number":7' in err  # the observer's next sequence number
    assert c.state is CarrierState.CLOSED and closed == [c] and ended == [Outcome.ERROR]
    assert obs.aborted == ("tool args stalled", 101.5, ErrorKind.TOOL_STALL)
    # Later upstream bytes are dropped; the end is quiet; the summary stays the abort's.
    assert c(b"data: 5\n\n") == []
    assert c(b"") == []
    assert c.summary is not None and c.summary.outcome is Outcome.ERROR and ended == [Outcome.ERROR]


def test_guard_explicit_inject_without_close() -> None:
    obs = RecordingObserver()
    c = _carrier(obs)
    c.on_chunk.append(lambda _c, _e, _n: GuardAction(inject=b": keepalive\n\n"))
    assert c(b"data: 1\n\n") == [b"data: 1\n\n", b": keepalive\n\n"]
    assert c.state is CarrierState.STREAMING


def test_out_of_band_injection_delivered_by_injector() -> None:
    obs = RecordingObserver(Protocol.ANTHROPIC_MESSAGES)
    c = _carrier(obs)
    delivered: list[bytes] = []
    c.injector = lambda _c, data: delivered.append(data) is None
    assert c(b"event: ping\ndata: {}\n\n") == [b"event: ping\ndata: {}\n\n"]
    assert c.inject_and_close(ErrorKind.IDLE_TIMEOUT, "upstream silent", 200.0) is True
    assert len(delivered) == 1 and delivered[0].startswith(b"event: error\n")
    assert c.state is CarrierState.CLOSED and c.closed is not None and c.closed.out_of_band
    assert c(b"event: ping\ndata: {}\n\n") == []
    assert c.inject_and_close(ErrorKind.IDLE_TIMEOUT, "again", 201.0) is False


def test_out_of_band_injection_falls_back_to_next_chunk() -> None:
    obs = RecordingObserver(Protocol.OPENAI_CHAT)
    c = _carrier(obs)
    c.injector = lambda _c, _d: False  # the injection module could not deliver
    assert c.inject_and_close(ErrorKind.IDLE_TIMEOUT, "silent", 200.0) is False
    assert c.state is CarrierState.PENDING  # the error waits for the next call
    out = c(b"data: late\n\n")
    assert isinstance(out, list) and len(out) == 1 and out[0].startswith(b'data: {"error"')
    assert c.state is CarrierState.CLOSED and c(b"") == []


def test_pending_injection_delivered_at_end_of_message() -> None:
    obs = RecordingObserver(Protocol.OPENAI_CHAT)
    c = _carrier(obs)
    c.inject_and_close(ErrorKind.IDLE_TIMEOUT, "silent", 200.0)
    out = c(b"")
    assert isinstance(out, list) and len(out) == 1 and b"silent" in out[0]


def test_translator_replaces_bytes_and_finishes() -> None:
    obs = RecordingObserver()
    tr = UpperTranslator()
    c = _carrier(obs, translator=tr)
    assert c.client_protocol is Protocol.ANTHROPIC_MESSAGES
    assert c(b"data: a") == []  # no complete event yet: nothing, never b""
    assert c(b"bc\n\ndata: x\n\n") == [b"data: ABC\n\ndata: X\n\n"]
    assert c(b"") == [b"data: END\n\n"]
    # (a read without events collects too: the writer may have written comment lines in it)
    assert tr.calls == ["feed:0", "feed:2", "feed:0", "finish"]
    assert c.summary is not None and c.state is CarrierState.FINISHED


def test_translator_feed_error_fails_the_client_stream() -> None:
    obs = RecordingObserver()
    tr = UpperTranslator()
    c = _carrier(obs, translator=tr)
    out = c(b"data: ok\n\ndata: FAIL\n\n")
    assert out == [b"event: error\ndata: bad source event\n\n"]
    assert tr.calls[-1] == f"fail:{ErrorKind.UPSTREAM_PROTOCOL}:bad source event"
    assert c.state is CarrierState.CLOSED and c.translate_error == "bad source event"
    assert c(b"data: more\n\n") == [] and c(b"") == []
    assert "finish" not in tr.calls


def test_translator_decode_error_fails_the_client_stream() -> None:
    obs = RecordingObserver()
    tr = UpperTranslator()
    c = _carrier(obs, "gzip", translator=tr)
    out = c(b"\x1f\x8b\x08\x00not really gzip data here at all")
    assert isinstance(out, list) and len(out) == 1 and out[0].startswith(b"event: error")
    assert c.state is CarrierState.CLOSED


def test_guard_close_with_translator_renders_via_translator_fail() -> None:
    obs = RecordingObserver()
    tr = UpperTranslator()
    c = _carrier(obs, translator=tr)
    c.on_chunk.append(lambda _c, _e, _n: GuardAction(close=True, kind=ErrorKind.TOOL_STALL, message="stall"))
    assert c(b"data: a\n\n") == [b"data: A\n\n", b"event: error\ndata: stall\n\n"]


def test_abort_after_stream_died() -> None:
    obs = RecordingObserver()
    c = _carrier(obs)
    c(b"data: 1\n\n")
    s = c.abort("Server disconnected", 300.0)
    assert s.outcome is Outcome.ERROR and c.state is CarrierState.ABORTED
    assert obs.aborted == ("Server disconnected", 300.0, ErrorKind.CONNECTION)
    assert c.abort("again", 301.0) is s


def test_pending_delivered_at_end_does_not_call_close_handlers() -> None:
    obs = RecordingObserver(Protocol.OPENAI_CHAT)
    c = _carrier(obs)
    handled: list[Carrier] = []
    c.close_handlers.append(handled.append)
    c.inject_and_close(ErrorKind.IDLE_TIMEOUT, "silent", 200.0)
    assert c(b"") != []
    assert handled == [] and c.closed is not None and c.closed.out_of_band
    # ...while a pending error delivered with the next data chunk does end the stream.
    d = _carrier(RecordingObserver(Protocol.OPENAI_CHAT))
    d.close_handlers.append(handled.append)
    d.inject_and_close(ErrorKind.IDLE_TIMEOUT, "silent", 200.0)
    d(b"data: x\n\n")
    assert handled == [d]


def test_observer_protocol_problem_is_left_to_the_translator() -> None:
    from proxai.core.errors import SseLimitError, UpstreamProtocolError

    obs = RecordingObserver()
    tr = UpperTranslator()
    c = _carrier(obs, translator=tr)
    obs.failed = UpstreamProtocolError("one malformed event")  # observing goes on
    assert c(b"data: a\n\n") == [b"data: A\n\n"]
    obs.failed = SseLimitError("line", 10)  # observing stopped: translation cannot go on
    out = c(b"data: b\n\n")
    assert isinstance(out, list) and out[0].startswith(b"event: error") and c.state is CarrierState.CLOSED
    assert tr.calls[-1].startswith(f"fail:{ErrorKind.STREAM_LIMIT}:")


def test_a_repeating_bug_is_logged_once_per_flow(caplog: pytest.LogCaptureFixture) -> None:
    c = _carrier(RecordingObserver())

    def bad(_c: Carrier, _e: int, _now: float) -> GuardAction | None:
        raise ValueError("hook bug")

    c.on_chunk.append(bad)
    with caplog.at_level("WARNING", logger="proxai.mitm.carrier"):
        for _ in range(5):
            assert c(b"data: 1\n\n") == [b"data: 1\n\n"]
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "on_chunk hook" in warnings[0].getMessage()
    assert "ValueError: hook bug" in warnings[0].getMessage() and c.hook_errors == 5


def test_a_bug_in_translated_mode_ends_the_client_stream_with_an_error() -> None:
    obs = RecordingObserver()
    tr = UpperTranslator()
    c = _carrier(obs, translator=tr)
    assert c(b"data: a\n\n") == [b"data: A\n\n"]

    def broken_feed(events: list[SseEvent]) -> bytes:
        raise AttributeError("bug in a translator")

    tr.feed = broken_feed  # type: ignore[method-assign]
    out = c(b"data: b\n\n")
    assert out == [b"event: error\ndata: ProxAI internal error while translating the stream\n\n"]
    assert c.state is CarrierState.CLOSED and c.translate_error is not None
    assert c(b"data: c\n\n") == [] and c(b"") == []


# -- event alignment (guarded pass-through) ----------------------------------------------------------


def _watch(_c: Carrier, _e: int, _now: float) -> GuardAction | None:
    return None


@pytest.mark.parametrize("seed", range(6))
def test_guarded_pass_through_forwards_whole_events_only(seed: int) -> None:
    body = STREAM.replace(b'data: {"n":7}\n\n', b'event: x\r\ndata: {"n":7}\r\n\r\n') + b"data: trunc"
    rng = random.Random(seed)
    chunks = random_pieces(body, rng, max_size=40) if seed else [body[i : i + 1] for i in range(len(body))]
    obs = RecordingObserver()
    c = _carrier(obs)
    c.on_chunk.append(_watch)
    outs = _run(c, chunks)
    sent = [b"".join(o) for o in outs]
    # Byte-identical overall; every piece before the end stops on an event boundary.
    assert b"".join(sent) == body
    done = b""
    for piece in sent[:-1]:
        done += piece
        assert not done or done.endswith((b"\n\n", b"\r\n\r\n")), done[-30:]
    assert sent[-1].endswith(b"data: trunc")  # the truncated last event is flushed at the end
    assert c.client_bytes == c.upstream_bytes == len(body)


def test_unguarded_pass_through_keeps_the_upstream_chunking() -> None:
    obs = RecordingObserver()
    c = _carrier(obs)
    assert c(b"data: 1\n\ndata: 2") == [b"data: 1\n\ndata: 2"]
    assert c(b"\n\n") == [b"\n\n"]


def test_guarded_compressed_pass_through_is_not_aligned() -> None:
    wire = gzip.compress(STREAM)
    obs = RecordingObserver()
    c = _carrier(obs, "gzip")
    c.on_chunk.append(_watch)
    chunks = random_pieces(wire, random.Random(1), max_size=40)
    assert [b"".join(o) for o in _run(c, chunks)[:-1]] == chunks


def test_injection_drops_the_held_partial_event() -> None:
    obs = RecordingObserver(Protocol.ANTHROPIC_MESSAGES)
    c = _carrier(obs)
    fire = [False]
    c.on_chunk.append(
        lambda _c, _e, _n: (
            GuardAction(close=True, kind=ErrorKind.TOOL_STALL, message="stalled") if fire[0] else None
        )
    )
    assert c(b'event: a\ndata: {}\n\nevent: message_delta\ndata: {"type":"message_de') == [
        b"event: a\ndata: {}\n\n"
    ]
    fire[0] = True
    out = c(b'lta","del')
    assert isinstance(out, list) and len(out) == 1 and out[0].startswith(b"event: error\ndata: ")
    assert b"stalled" in out[0]
    assert c.held_dropped == len(b'event: message_delta\ndata: {"type":"message_delta","del')


def test_pending_injection_at_end_drops_the_held_partial_event() -> None:
    obs = RecordingObserver(Protocol.OPENAI_CHAT)
    c = _carrier(obs)
    c.on_chunk.append(_watch)
    assert c(b'data: {"a":1}\n\ndata: {"par') == [b'data: {"a":1}\n\n']
    c.inject_and_close(ErrorKind.IDLE_TIMEOUT, "silent", 200.0)
    out = c(b"")
    assert isinstance(out, list) and len(out) == 1 and out[0].startswith(b'data: {"error"')


def test_alignment_is_given_up_when_the_scanner_stops() -> None:
    obs = RecordingObserver()
    c = _carrier(obs)
    c.on_chunk.append(_watch)
    assert c(b"data: 1\n\ndata: 2") == [b"data: 1\n\n"]
    obs.scanner = None  # type: ignore[assignment]  # pending_bytes now fails: a bug in the observer
    out = c(b"\n\ndata: 3")
    assert b"".join(out) == b"data: 2\n\ndata: 3"  # held bytes released with the chunk, never lost
    assert c(b"\n\n") == [b"\n\n"]


def test_a_large_held_event_goes_out_as_its_pieces_without_a_copy() -> None:
    obs = RecordingObserver()
    c = _carrier(obs)
    c.on_chunk.append(_watch)
    pieces = [b"data: " + b"x" * 40_000, b"y" * 40_000, b"z" * 40_000]
    assert [c(p) for p in pieces] == [[], [], []]  # one unfinished event: all held
    out = c(b"\n\ndata: 2")
    assert isinstance(out, list)
    assert len(out) == 3 and out[0] is pieces[0] and out[1] is pieces[1]  # the very objects, no copy
    assert out[2] == pieces[2] + b"\n\n"  # a small last piece takes the event's end in one write
    assert c(b"") == [b"data: 2"]  # the truncated tail is flushed at the end


def test_a_small_held_event_goes_out_in_one_write() -> None:
    obs = RecordingObserver()
    c = _carrier(obs)
    c.on_chunk.append(_watch)
    for b in b"data: 1":
        assert c(bytes([b])) == []
    assert c(b"\n\n") == [b"data: 1\n\n"]


@pytest.mark.parametrize(
    "raw",
    [
        ((b"Content-Type", b"text/event-stream"), (b"Content-Length", b"12"), (b"X-Id", b"1")),
        ((b"content-encoding", b"gzip"), (b"ETag", b'"a"'), (b"etag", b'"b"'), (b"Content-MD5", b"x")),
        ((b"x", b"1"),),
        (
            (b"CONTENT-TYPE", b"text/event-stream"),
            (b"content-type", b"text/plain"),
            (b"content-length", b"1"),
        ),
    ],
)
def test_a_translated_response_loses_its_framing_headers_as_headers_deletes_them(
    raw: tuple[tuple[bytes, bytes], ...],
) -> None:
    from mitmproxy.test import tutils

    want, got = tutils.tresp(headers=raw), tutils.tresp(headers=raw)
    for name in ("content-encoding", "content-length", "content-md5", "etag"):
        if name in want.headers:
            del want.headers[name]
    want.headers["content-type"] = "text/event-stream; charset=utf-8"
    strip_translated_headers(got)
    assert got.headers.fields == want.headers.fields
