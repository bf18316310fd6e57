"""The carrier's path parses each event once: the observer leaves its parse of a JSON-object payload
in ``SseEvent.payload`` and the stream translators take it instead of parsing ``data`` again
(docs/performance.md). Differential: a translator fed the observer's events gives exactly what it
gives fed bare scanner events (no payload), on every fixture, mutated fixtures and any chunking,
output and errors alike; the payload never changes an event's value."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.errors import ProxaiError
from proxai.model import Protocol
from proxai.observe import StreamObserver
from proxai.sse import SseEvent, SseScanner
from proxai.translate.stream import PAIRS, make_stream_translator
from tests.observe.test_properties import STREAMS, cut, mutated


def _translate(upstream: Protocol, client: Protocol, batches: list[list[SseEvent]]) -> list[object]:
    """Every output piece and the first error (type and text), then the finish bytes."""
    tr = make_stream_translator(upstream, client)
    out: list[object] = []
    for batch in batches:
        try:
            out.append(tr.feed(batch))
        except ProxaiError as exc:
            out.append((type(exc).__name__, str(exc)))
            break
    out.append(tr.finish())
    return out


def _observed(protocol: Protocol, pieces: list[bytes]) -> list[list[SseEvent]]:
    obs = StreamObserver(protocol, start=0.0)
    obs.headers(200, 0.0)
    return [obs.feed(p, float(i)) for i, p in enumerate(pieces)]


def _scanned(pieces: list[bytes]) -> list[list[SseEvent]]:
    sc = SseScanner()
    return [sc.feed(p) for p in pieces]


def _check(protocol: Protocol, pieces: list[bytes]) -> None:
    observed = _observed(protocol, pieces)
    scanned = _scanned(pieces)
    assert observed == scanned  # the payload is not part of an event's value
    assert all(ev.payload is None for batch in scanned for ev in batch)
    for upstream, client in PAIRS:
        if upstream is protocol:
            assert _translate(upstream, client, observed) == _translate(upstream, client, scanned)


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_translators_reuse_the_observers_parse_unchanged(path: Path) -> None:
    raw = path.read_bytes()
    protocol = Protocol(path.parent.name)
    observed = [ev for batch in _observed(protocol, [raw]) for ev in batch]
    assert observed[0].payload is not None  # the reuse happens (every fixture opens with JSON)
    _check(protocol, [raw])
    _check(protocol, [raw[i : i + 7] for i in range(0, len(raw), 7)])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated(), data=st.data())
def test_translators_reuse_the_observers_parse_on_mutated_streams(
    case: tuple[Protocol, bytes], data: st.DataObject
) -> None:
    protocol, raw = case
    _check(protocol, data.draw(cut(raw)))
