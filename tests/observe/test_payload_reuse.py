"""The carrier's path parses each event once (docs/performance.md).

A translated flow goes through the payload path: its pipeline (``build_flow``) gives the flow's
``StreamObserver`` one grammar, which feeds the translator's writer from its one parse of each
payload; ``StreamObserver.observe_payloads`` returns the read's events (``sse.Payloads``) and
``translator.collect`` only takes the writer's bytes. The observer's payload parser runs
exactly as often on a translated flow as on a pass-through one.

Differential: the real ``Carrier`` (a real observer and translator) gives every pair and normalize
mode's client exactly the bytes, read by read, and the same error as bare scanner events fed to a
``Translation`` (the same pipeline fed events, without a carrier), on every fixture (the
observer's and the fake upstream's scenarios) whole, byte by byte, at random splits, and on
hypothesis-mutated fixtures; its observer's summary is the pass-through observer's. What the
observer returns is exactly the scanner's events, and nothing reads the list afterwards (a
pass-through summary does not change when the caller overwrites it). The event-object path
(``StreamObserver.feed``, then ``Translation.feed``) gives the scanner's events and the same
client bytes too.
"""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.core.errors import ProxaiError
from proxai.core.model import Protocol
from proxai.core.sse import Payloads, SseEvent, SseScanner
from proxai.mitm.carrier import Carrier
from proxai.pipeline.flow import ClientSide, build_flow, make_stream_translator
from proxai.pipeline.observe import StreamObserver
from proxai.protocols import common
from proxai.translate.stream import PAIRS
from proxai.translate.stream.driver import error_kind_of
from tests.observe.harness import normalize, status_of
from tests.observe.test_one_reading import ending
from tests.observe.test_properties import STREAMS, cut, mutated
from tests.splits import random_pieces
from tests.translate_stream.harness import render
from tests.translate_stream.test_conformance import FAILURE, SUCCESS

# Every pair and normalize mode, by upstream protocol.
CLIENTS: dict[Protocol, list[Protocol]] = {up: [c for u, c in PAIRS if u is up] + [up] for up in Protocol}
SCENARIOS = [(up, s) for up in Protocol for s in SUCCESS + FAILURE]


def _translator(up: Protocol, client: Protocol) -> Any:
    return make_stream_translator(up, client, normalize=up is client, created=1_767_225_600)


def _bytes(out: bytes | list[bytes]) -> bytes:
    return out if isinstance(out, bytes) else b"".join(out)


def _carrier(
    up: Protocol, client: Protocol, pieces: list[bytes], status: int = 200
) -> tuple[list[bytes], str | None, dict[str, Any]]:
    """The real carrier on a translated flow: the client's bytes per read (the last: end of
    message), the translation error, the observer's summary."""
    tick = itertools.count(1)
    pipe = build_flow(up, ClientSide(client, created=1_767_225_600), capture=True)
    obs = pipe.observer
    obs.headers(status, 0.0)
    c = Carrier(pipe, decoder=None, clock=lambda: float(next(tick)))
    reads = [_bytes(c(p)) for p in pieces]
    reads.append(_bytes(c(b"")))
    assert c.summary is not None
    summary = normalize(c.summary, obs.failed)
    summary["repaired"] = any(f.severity == "repair" for f in obs.findings)
    return reads, c.translate_error, summary


def _scanned(up: Protocol, client: Protocol, pieces: list[bytes]) -> tuple[list[bytes], str | None]:
    """Bare scanner events (no parse in them) through ``translator.feed``, failed as the carrier
    fails a translation (``fail`` with the error's kind) and finished at the end."""
    sc = SseScanner()
    tr = _translator(up, client)
    reads: list[bytes] = []
    error: str | None = None
    for p in pieces:
        events = sc.feed(p)
        if error is not None:
            reads.append(b"")
            continue
        try:
            reads.append(tr.feed(events))
        except ProxaiError as exc:
            error = str(exc)
            reads.append(tr.fail(error_kind_of(exc), error))
    if error is not None:
        reads.append(b"")
        return reads, error
    # The end of the stream: the events the scanner completes only there (a pending CR ends its
    # line) reach the translator before its finish, in the same last read, as on the carrier.
    try:
        last = tr.feed(sc.close())
    except ProxaiError as exc:
        error = str(exc)
        reads.append(tr.fail(error_kind_of(exc), error))
        return reads, error
    reads.append(last + tr.finish())
    return reads, error


def _passthrough(up: Protocol, pieces: list[bytes], status: int = 200) -> dict[str, Any]:
    obs = StreamObserver(up, start=0.0, capture=True)
    obs.headers(status, 0.0)
    for i, p in enumerate(pieces):
        obs.observe(p, float(i + 1))
    return normalize(obs.finish(float(len(pieces) + 1)), obs.failed)


def _without_comments(data: bytes) -> bytes:
    """The client's bytes without the upstream's comment lines the writer wrote among the events
    (events carry none: tests/translate_stream/test_comments.py checks those lines)."""
    return b"".join(line for line in data.splitlines(keepends=True) if line[:1] != b":")


def _check(up: Protocol, pieces: list[bytes], status: int = 200) -> None:
    passthrough = _passthrough(up, pieces, status)
    for client in CLIENTS[up]:
        reads, error, summary = _carrier(up, client, pieces, status)
        reads = [_without_comments(r) for r in reads]
        assert (reads, error) == _scanned(up, client, pieces), f"{up} -> {client}"
        repaired = summary.pop("repaired")
        assert not repaired or client is up  # only normalize mode repairs
        if repaired:  # the summary records the repaired stream the client received
            completed = summary["metadata"]["outcome"] == "completed"
            assert ending(client, b"".join(reads)) == ("success" if completed else "error")
            assert summary["metadata"]["extra"]["notes"]
        elif error is None:  # a failed translation aborts the observer (the summary says so)
            assert _route_free(summary) == _route_free(passthrough), f"{up} -> {client}"


_UNMODELLED = re.compile(r"(event .* is not modelled): (?:not read|left out|carried as it came)")
_COMMENTS = re.compile(r"(sse\.comments: .*): (?:passed on in the upstream's bytes|written to the client)")


def _route_free(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without what differs by route on purpose: the note on an event the grammar
    does not model says what the client's route did with it (not read when observed only, left
    out or carried as it came when written; docs/design/protocol-grammars.md), and so does the
    note on the stream's comment lines."""
    extra = summary["metadata"].get("extra") or {}
    if not extra.get("notes"):
        return summary
    notes = [_COMMENTS.sub(r"\1", _UNMODELLED.sub(r"\1", n)) for n in extra["notes"]]
    return {**summary, "metadata": {**summary["metadata"], "extra": {**extra, "notes": notes}}}


def _modes(raw: bytes) -> list[list[bytes]]:
    return [
        [raw],
        [raw[i : i + 1] for i in range(len(raw))],
        random_pieces(raw, random.Random(len(raw))),
        random_pieces(raw, random.Random(7), max_size=600),
    ]


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_carrier_path_equals_scanner_events_on_fixtures(path: Path) -> None:
    raw = path.read_bytes()
    for pieces in _modes(raw):
        _check(Protocol(path.parent.name), pieces, status_of(path))


@pytest.mark.parametrize(("up", "scenario"), SCENARIOS, ids=str)
def test_carrier_path_equals_scanner_events_on_scenarios(up: Protocol, scenario: str) -> None:
    raw, _ = render(up, scenario)
    for pieces in _modes(raw):
        _check(up, pieces)


def test_the_differential_sees_a_translation_error() -> None:
    """The comparison covers errors: a tool block without id or name fails both paths alike."""
    raw, _ = render(Protocol.ANTHROPIC_MESSAGES, "text")
    first = raw.index(b"\n\n") + 2
    tool = b'{"type":"content_block_start","index":0,"content_block":{"type":"tool_use"}}'
    bad = raw[:first] + b"event: content_block_start\ndata: " + tool + b"\n\n" + raw[first:]
    for pieces in ([bad], [bad[:first], bad[first:]]):
        reads, error, _ = _carrier(Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, pieces)
        assert error == "tool_use block 0 without id or name"
        assert b"tool_use block 0 without id or name" in reads[-2] and reads[-1] == b""
        assert (reads, error) == _scanned(Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, pieces)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated(), data=st.data())
def test_carrier_path_equals_scanner_events_on_mutated_streams(
    case: tuple[Protocol, bytes], data: st.DataObject
) -> None:
    protocol, raw = case
    _check(protocol, data.draw(cut(raw)))


# -- what the observer returns, and how often it parses -------------------------------------------


def _observed_lists(
    up: Protocol, pieces: list[bytes]
) -> tuple[list[Payloads], list[Payloads], StreamObserver]:
    obs = StreamObserver(up, start=0.0)
    obs.headers(200, 0.0)
    sc = SseScanner()
    observed = [obs.observe_payloads(p, float(i)) for i, p in enumerate(pieces)]
    return observed, [sc.feed_payloads(p) for p in pieces], obs


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_observer_returns_the_scanners_events(path: Path) -> None:
    """Each read's events are the scanner's, ``(type, data)`` for each, the data as scanned."""
    raw = path.read_bytes()
    up = Protocol(path.parent.name)
    for pieces in ([raw], [raw[i : i + 5] for i in range(0, len(raw), 5)]):
        observed, scanned, _ = _observed_lists(up, pieces)
        assert observed == scanned
        assert sum(map(len, observed)) > 0
        for batch in observed:
            for name, data in batch:
                assert name is None or isinstance(name, (bytes, str))
                assert isinstance(data, (bytes, str))


def _counting_loads(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every payload the grammars read, in order: parsed whole (``GrammarBase.observe``'s
    parser), or read lean (``AnthropicGrammar._lean``: only its one string value parsed)."""
    from proxai.protocols.anthropic import AnthropicGrammar

    seen: list[object] = []
    real = common._loads
    real_lean = AnthropicGrammar._lean

    def loads(data: bytes | str) -> Any:
        seen.append(data)  # held: no two payloads share an id
        return real(data)

    def lean(self: AnthropicGrammar, data: bytes, now: float) -> bool:
        read = real_lean(self, data, now)
        if read:
            seen.append(data)
        return read

    monkeypatch.setattr(common, "_loads", loads)
    monkeypatch.setattr(AnthropicGrammar, "_lean", lean)
    return seen


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_translated_flow_parses_each_payload_once(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the real carrier, every pair and normalize mode: the grammar's parser runs on the
    stream's payloads in order, once each (the attached translator parses none again), and a
    translated flow parses the same payloads as the pass-through flow unless the translation
    stopped the reading earlier (normalize mode may read on where the pass-through stops)."""
    raw = path.read_bytes()
    up = Protocol(path.parent.name)
    status = status_of(path)
    seen = _counting_loads(monkeypatch)
    for pieces in ([raw], random_pieces(raw, random.Random(11))):
        sc = SseScanner()
        payloads = [d for p in pieces for _, d in sc.feed_payloads(p)] + [d for _, d in sc.close_payloads()]
        seen.clear()
        _passthrough(up, pieces, status)
        alone = seen[:]
        assert alone == payloads[: len(alone)]
        assert len({id(d) for d in alone}) == len(alone) > 0
        for client in CLIENTS[up]:
            seen.clear()
            _, error, _ = _carrier(up, client, pieces, status)
            assert seen == payloads[: len(seen)], f"{up} -> {client}"
            assert len({id(d) for d in seen}) == len(seen), f"{up} -> {client}: a payload parsed twice"
            if client is not up:
                assert seen == (alone if error is None else alone[: len(seen)]), f"{up} -> {client}"


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_nothing_reads_the_list_after_observing(path: Path) -> None:
    """Overwriting every returned list (and growing it) changes no pass-through summary."""
    raw = path.read_bytes()
    up = Protocol(path.parent.name)
    status = status_of(path)
    for pieces in ([raw], [raw[i : i + 1] for i in range(len(raw))], random_pieces(raw, random.Random(3))):
        obs = StreamObserver(up, start=0.0, capture=True)
        obs.headers(status, 0.0)
        events = 0
        for i, p in enumerate(pieces):
            payloads = obs.observe_payloads(p, float(i + 1))
            events += len(payloads)
            payloads[:] = [(b"error", b'{"type":"junk","choices":[]}'), (None, b"data: {\n")] * len(payloads)
            payloads.append(("message", b"{}"))
        assert events > 0
        got = normalize(obs.finish(float(len(pieces) + 1)), obs.failed)
        assert got == _passthrough(up, pieces, status)


# -- the event-object path ----------------------------------------------------------------------


def _translate_events(upstream: Protocol, client: Protocol, batches: list[list[SseEvent]]) -> list[object]:
    """Every output piece and the first error (type and text), then the finish bytes."""
    tr = _translator(upstream, client)
    out: list[object] = []
    for batch in batches:
        try:
            out.append(tr.feed(batch))
        except ProxaiError as exc:
            out.append((type(exc).__name__, str(exc)))
            break
    out.append(tr.finish())
    return out


def _check_events(protocol: Protocol, pieces: list[bytes]) -> None:
    obs = StreamObserver(protocol, start=0.0)
    obs.headers(200, 0.0)
    observed = [obs.feed(p, float(i)) for i, p in enumerate(pieces)]
    sc = SseScanner()
    scanned = [sc.feed(p) for p in pieces]
    assert observed == scanned
    for client in CLIENTS[protocol]:
        assert _translate_events(protocol, client, observed) == _translate_events(protocol, client, scanned)


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_translators_of_the_observers_events_give_the_scanners_bytes(path: Path) -> None:
    raw = path.read_bytes()
    protocol = Protocol(path.parent.name)
    _check_events(protocol, [raw])
    _check_events(protocol, [raw[i : i + 7] for i in range(0, len(raw), 7)])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated(), data=st.data())
def test_translators_of_the_observers_events_give_the_scanners_bytes_on_mutated_streams(
    case: tuple[Protocol, bytes], data: st.DataObject
) -> None:
    protocol, raw = case
    _check_events(protocol, data.draw(cut(raw)))


def _without_fast_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every grammar's ``_fast`` declines every event: the general path reads them all."""
    from proxai.protocols.anthropic import AnthropicGrammar
    from proxai.protocols.chat import ChatGrammar
    from proxai.protocols.common import GrammarBase
    from proxai.protocols.responses import ResponsesGrammar

    for cls in (AnthropicGrammar, ChatGrammar, ResponsesGrammar):
        monkeypatch.setattr(cls, "_fast", GrammarBase._fast)


def _translated(up: Protocol, raw: bytes) -> list[Any]:
    return [_carrier(up, client, pieces) for client in CLIENTS[up] for pieces in _modes(raw)[::2]]


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_grammars_fast_paths_change_no_translated_byte(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grammar's fast path feeds the writer as its general path does: every pair and normalize
    mode gives the client the same bytes, read by read, the same error and the same summary with
    the fast paths and without them (whole and at random splits)."""
    up = Protocol(path.parent.name)
    raw = path.read_bytes()
    expected = _translated(up, raw)
    _without_fast_paths(monkeypatch)
    assert _translated(up, raw) == expected


REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
# The recordings of real APIs, whose shapes take fast paths the fixtures do not (the Chat deltas
# of real providers: ``role`` repeated, ``reasoning_content`` beside ``content``, empty deltas).
REAL_STREAMS = sorted(REAL.glob("*/*.sse"))
_REAL_UP = {
    "anthropic": Protocol.ANTHROPIC_MESSAGES,
    "chat": Protocol.OPENAI_CHAT,
    "responses": Protocol.OPENAI_RESPONSES,
}


@pytest.mark.parametrize("path", REAL_STREAMS[::3], ids=lambda p: f"real/{p.name}")
def test_the_grammars_fast_paths_change_no_translated_byte_on_real_recordings(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same on every 3rd real recording: bytes, errors and summaries with and without the fast
    paths (every pair and normalize mode, whole and at random splits)."""
    up = _REAL_UP[path.parent.name]
    raw = path.read_bytes()
    expected = _translated(up, raw)
    _without_fast_paths(monkeypatch)
    assert _translated(up, raw) == expected


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated())
def test_the_grammars_fast_paths_change_no_translated_byte_on_mutated_streams(
    case: tuple[Protocol, bytes],
) -> None:
    up, raw = case
    expected = _translated(up, raw)
    with pytest.MonkeyPatch.context() as mp:
        _without_fast_paths(mp)
        assert _translated(up, raw) == expected


_NO_START_TAIL = (
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn",'
    b'"stop_sequence":null},"usage":{"output_tokens":3}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


@pytest.mark.parametrize(
    "name", [b"event: content_block_delta\n", b"\x00vent: content_block_delta\n"], ids=["named", "nul"]
)
@pytest.mark.parametrize(
    "delta", [b'{"type":"ext_delta","text":"x"}', b'{"type":"input_json_delta","partial_json":"{}"}']
)
def test_a_delta_before_message_start_that_opens_no_block_reads_alike_in_normalize_mode(
    name: bytes, delta: bytes
) -> None:
    """Hypothesis found it with a NUL byte in place of an ``event:`` line's first byte (an unnamed
    delta) in a stream whose message_start was cut: before message_start, normalize mode judged a
    delta that opens no block (a type no block takes, a tool fragment) by its block ("a delta for
    block 0, never started", block_index) where the observe-only reading says what the SDKs read,
    nothing before message_start. Only a text or thinking delta starts the message there (a
    repair); any other is read alike, and the summaries agree."""
    body = (
        name + b'data: {"type":"content_block_delta","index":0,"delta":' + delta + b"}\n\n" + _NO_START_TAIL
    )
    up = Protocol.ANTHROPIC_MESSAGES
    unnamed = [("anthropic_messages.unnamed_event", 0)] if name.startswith(b"\x00") else []
    for summary in (_passthrough(up, [body]), _carrier(up, up, [body])[2]):
        meta = summary["metadata"]
        assert meta["outcome"] == "closed"
        assert [(c["rule"], c["event_index"]) for c in meta["extra"]["conformance"]] == [
            *unnamed,
            ("anthropic_messages.before_message_start", 0),
            ("anthropic_messages.no_message_start", 3),
        ]
    reads, error, summary = _carrier(up, up, [body])
    assert (reads, error, summary["repaired"]) == (
        [
            b"",
            b'event: error\ndata: {"type":"error","error":{"type":"api_error",'
            b'"message":"upstream closed the Anthropic stream before message_stop"}}\n\n',
        ],
        None,
        False,
    )
    _check(up, [body])


def test_the_comment_lines_note_is_last_on_every_route() -> None:
    """Hypothesis found a Chat stream with a comment line before its first chunk and no [DONE]:
    the pass-through summary noted the comment lines before the end's own notes, a translated
    flow after them (its writer's finish asked for those first). The note is the last on every
    route."""
    chunk = (
        b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
        b'"choices":[{"index":0,"delta":%s,"finish_reason":%s}]}\r\n\r\n'
    )
    body = b": keep-alive\r\n\r\n" + chunk % (b'{"content":"Hi"}', b"null") + chunk % (b"{}", b'"stop"')
    up = Protocol.OPENAI_CHAT
    notes = [
        "the stream ended after finish_reason without [DONE]",
        "choice 0 got no role",
        "sse.comments: 1 SSE comment line (not events, the SDKs skip them)",
    ]
    for summary in (_passthrough(up, [body]), *(_carrier(up, c, [body])[2] for c in CLIENTS[up])):
        assert _route_free(summary)["metadata"]["extra"]["notes"] == notes
    _check(up, [body])
