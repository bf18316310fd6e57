"""The benchmark harness keeps working (a smoke run of its in-process sections), and the streams
it measures are realistic: the real observers see them complete, with their tool calls."""

from __future__ import annotations

import pytest
from bench import observer_bench, streams, translate_bench

from proxai.model import Outcome, Protocol
from proxai.observe import StreamObserver

TOOL_CALLS = {"anthropic_messages": 2, "openai_chat": 2, "openai_responses": 1}


@pytest.mark.parametrize("protocol", streams.PROTOCOLS)
def test_generated_streams_are_complete_and_valid(protocol: str) -> None:
    obs = StreamObserver(Protocol(protocol), start=0.0)
    obs.headers(200, 0.0)
    for c in streams.chunks(streams.generate(protocol, 2000), 512):
        obs.feed(c, 0.1)
    s = obs.finish(0.2)
    assert obs.failed is None
    assert s.outcome is Outcome.COMPLETED
    assert s.text_bytes > 1000
    assert len(s.tool_calls) == TOOL_CALLS[protocol]
    assert all(t.arguments_complete and t.arguments_valid_json for t in s.tool_calls)
    assert s.counts.events >= 1990  # "about 2000" events


def test_observe_and_translate_sections_run() -> None:
    rows = observer_bench.run(300, 1)
    assert [r.protocol for r in rows] == list(streams.PROTOCOLS)
    for r in rows:
        assert r.note == "" and r.observer_ratio is not None and r.scanner_ratio > 0
        assert r.events_ratio is not None  # both observer paths ran
    table = observer_bench.report(rows)
    assert len([line for line in table if line.startswith("| ")]) == 1 + len(rows)
    pairs = translate_bench.run(300, 1)
    assert len(pairs) == 6
    for p in pairs:
        assert p.note == "" and p.out_bytes > 0 and p.path_s is not None
