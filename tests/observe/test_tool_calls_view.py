"""``StreamObserver.tool_calls()`` is ``summary().tool_calls`` at every moment of a stream.

The guard reads the observed calls whenever one may have closed; it asks ``tool_calls()``, which
builds only them, instead of a whole summary. Compared here after every read, after the end and
after an abort, with content capture on and off and small limits (calls past ``max_tool_args``),
over every recorded stream, the bench's streams and mutated recordings.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench import streams as bench_streams
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.core.model import Protocol
from proxai.pipeline.observe import Limits, StreamObserver
from tests.observe.harness import status_of
from tests.observe.test_properties import SMALL, STREAMS, mutated
from tests.splits import cut_pieces


def _check(protocol: Protocol, pieces: list[bytes], *, status: int, capture: bool, limits: Limits) -> int:
    """The number of tool calls seen at the end (so a caller knows the stream had some)."""
    for end in ("finish", "abort"):
        obs = StreamObserver(protocol, start=0.0, limits=limits, capture=capture)
        obs.headers(status, 0.0)
        assert obs.tool_calls() == obs.summary().tool_calls == []
        for i, piece in enumerate(pieces):
            obs.observe(piece, float(i))
            assert obs.tool_calls() == obs.summary().tool_calls
        if end == "finish":
            done = obs.finish(float(len(pieces)))
        else:
            done = obs.abort("connection reset", float(len(pieces)))
        assert obs.tool_calls() == done.tool_calls == obs.summary().tool_calls
    return len(done.tool_calls)


def _pieces(data: bytes, n: int = 7) -> list[bytes]:
    step = max(1, len(data) // n)
    return [data[i : i + step] for i in range(0, len(data), step)]


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_streams(path: Path) -> None:
    data = path.read_bytes()
    for capture in (True, False):
        for limits in (Limits(), SMALL):
            _check(
                Protocol(path.parent.name),
                _pieces(data),
                status=status_of(path),
                capture=capture,
                limits=limits,
            )


@pytest.mark.parametrize("protocol", list(Protocol))
def test_bench_streams_with_tool_calls(protocol: Protocol) -> None:
    data = bench_streams.generate(str(protocol), 150)
    pieces = [b + b"\n\n" for b in data.split(b"\n\n") if b]  # one event per read, as mitmdump
    assert _check(protocol, pieces, status=200, capture=False, limits=Limits()) >= 1
    assert _check(protocol, pieces, status=200, capture=True, limits=SMALL) >= 1


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated(), data=st.data())
def test_mutated_streams(case: tuple[Protocol, bytes], data: st.DataObject) -> None:
    protocol, raw = case
    pieces = data.draw(cut_pieces(raw, max_cuts=12, keep_empty=False))
    _check(protocol, pieces, status=200, capture=True, limits=SMALL)
