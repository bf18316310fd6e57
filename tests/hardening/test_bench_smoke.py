"""The benchmark harness keeps working (a smoke run of its in-process sections), and the streams
it measures are realistic: the real observers see them complete, with their tool calls."""

from __future__ import annotations

import pytest
from bench import (
    fastpath_child,
    instructions_bench,
    observer_bench,
    pair_instructions,
    streams,
    translate_bench,
)

from proxai.core.model import Outcome, Protocol
from proxai.pipeline.observe import StreamObserver

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


def test_the_fast_path_counter_runs_on_every_path() -> None:
    """The in-process part of the ``instructions`` section, without callgrind (its counts are then
    0): the child drives the real addon over every path, all fast paths on and one switched off,
    and each stream completes (the child checks the outcome and whether it was translated)."""
    fp = instructions_bench.fast_paths(5, ["chat _fast"], valgrind=False)
    paths = [p[0] for p in fastpath_child.PATHS]
    assert len(paths) == 9 and fp["paths"] == paths
    assert set(fp["per"]) == {(v, p) for v in ("all on", "chat _fast", "all on'") for p in paths}
    table = instructions_bench.report_fast_paths(fp, 340_000.0)
    assert len([line for line in table if line.startswith("| ")]) == 2 + len(paths) + 1


@pytest.mark.parametrize("name", list(fastpath_child.variants()))
def test_every_fast_path_switch_finds_its_general_path(name: str) -> None:
    """Each variant patches the general path in for the run and puts the fast path back."""
    before = _targets()
    with fastpath_child.variants()[name]():
        assert _targets() != before
    assert _targets() == before


def _targets() -> list[object]:
    from proxai.core.sse import SseScanner
    from proxai.mitm.guard_addon import FlowGuard
    from proxai.pipeline.carrier import StreamCarrier
    from proxai.protocols.anthropic import AnthropicGrammar
    from proxai.protocols.chat import ChatGrammar
    from proxai.protocols.responses import ResponsesGrammar

    return [
        StreamCarrier.feed,
        SseScanner.feed_payloads,
        AnthropicGrammar._lean,
        AnthropicGrammar._fast,
        ChatGrammar._fast,
        ResponsesGrammar._fast,
        FlowGuard.on_chunk,
    ]


def test_the_fast_path_counter_says_when_valgrind_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instructions_bench.shutil, "which", lambda _name: None)
    fp = instructions_bench.fast_paths(5)
    assert fp == {"missing": "valgrind is not installed (Debian: apt-get install valgrind)"}
    assert instructions_bench.report_fast_paths(fp, None) == [
        "fast paths: skipped: valgrind is not installed (Debian: apt-get install valgrind)"
    ]
    assert instructions_bench.run(quick=True) == fp


def test_pair_instructions_regions_run() -> None:
    """The callgrind-counted regions of ``bench.pair_instructions`` (a floor, the observer and
    every pair per protocol, on the generated streams and on the real corpus) run and name every
    pair."""
    names = [name for name, _ in pair_instructions.regions(200)]
    assert len(names) == 2 * (3 * 2 + 6) and sum(" -> " in n for n in names) == 12
    assert [n.removeprefix("real: ") for n in names[12:]] == names[:12]
    assert [name for name, _ in pair_instructions.regions(200, real=False)] == names[:12]
    assert pair_instructions.run(200, dry=True) == []


def test_the_paced_upstream_serves_recorded_and_generated_streams_exactly() -> None:
    """The ``paced`` section's upstream modes: a real recording (``x-bench-file``) and a generated
    stream, each in 256-byte pieces, reach the client as exactly those bytes; the section's sets
    cover every recording of tests/fixtures/real and route the translated ones."""
    import asyncio

    from bench import client, paced_bench, procs, upstream

    files = paced_bench.corpus(quick=False)
    assert len(files) == len(list(upstream.REAL.glob("*/*.sse")))
    assert {p for p, _ in files} == set(streams.PROTOCOLS)
    protocol, name = files[0]
    up = procs.start_upstream()
    try:
        got = asyncio.run(
            client.stream(up.url, protocol, {"x-bench-file": name, "x-bench-piece": "256"}, keep_body=True)
        )
        gen = asyncio.run(
            client.stream(
                up.url, "openai_chat", {"x-bench-events": "50", "x-bench-piece": "256"}, keep_body=True
            )
        )
    finally:
        up.stop()
    assert got.status == 200 and got.body == upstream.recorded(name)
    assert gen.body == b"".join(upstream.blocks("openai_chat", 50))
    sets = paced_bench.sets(quick=True)
    assert [s.routed for s in sets] == [False, True, False, True]
    assert all(j.model == paced_bench.ROUTED_MODEL for s in sets if s.routed for j in s.jobs)
    assert paced_bench.routes_toml("http://127.0.0.1:1").count("[[route]]") == 1


def test_the_kept_body_variant_runs_and_is_reported() -> None:
    """The ``instructions`` section's option variant (``keep body off``, default options otherwise):
    every path completes with the body kept and without it (the child checks both), and the report
    gives one row per path."""
    fp = instructions_bench.fast_paths(5, ["keep body off"], valgrind=False)
    paths = [p[0] for p in fastpath_child.PATHS]
    assert set(fp["per"]) == {(v, p) for v in ("all on", "keep body off", "all on'") for p in paths}
    table = instructions_bench.report_options(fp, 340_000.0)
    assert len([line for line in table if line.startswith("| ")]) == 1 + len(paths)
    assert "keep body off" not in "".join(instructions_bench.report_fast_paths(fp, None)[: -len(table)])


def test_the_kept_body_is_counted_in_alternation_and_reported() -> None:
    """``kept_body``: default options and the body not kept, each counted ``repeats`` times; the
    report takes the medians (a synthetic count per path: kept 1,100 / 1,000 / 1,300, not kept
    1,000 / 990 / 1,010 gives a median difference of 110, 10% of the kept median)."""
    fp = instructions_bench.fast_paths(5, ["keep body off", "all on"] * 2, valgrind=False)
    paths = [p[0] for p in fastpath_child.PATHS]
    assert {(k[0].rstrip("'"), k[1]) for k in fp["per"]} == {
        (v, p) for v in ("all on", "keep body off") for p in paths
    }
    on, off = [1_100.0, 1_000.0, 1_300.0], [1_000.0, 990.0, 1_010.0]
    fp["per"] = {
        **{("all on" + "'" * i, p): v for p in paths for i, v in enumerate(on)},
        **{("keep body off" + "'" * i, p): v for p in paths for i, v in enumerate(off)},
    }
    rows = [line for line in instructions_bench.report_kept_body(fp) if line.startswith("| observe")]
    assert len(rows) == 3
    assert rows[0].endswith("| 1,100 (1,000-1,300) | 1,000 (990-1,010) | 100 | 9.1% |")


def test_the_paced_instruction_sets_cover_the_real_corpus() -> None:
    """``bench --only instructions`` counts the generated streams and the real recordings, each
    observe-only and routed (an Anthropic client on a Chat upstream), and reports each set."""
    sets = instructions_bench.sets(quick=True)
    assert [s.name for s in sets] == [
        "bench, observe-only",
        "bench, anthropic client on chat upstream",
        "real, observe-only",
        "real, anthropic client on chat upstream",
    ]
    real = [j.headers for s in sets[2:] for j in s.jobs]
    assert real and all("x-bench-file" in h and h["x-bench-piece"] == "256" for h in real)
    counts = {"plain": [100 * s.events for s in sets], "addon": [112 * s.events for s in sets]}
    table = instructions_bench.report_e2e(sets, counts)
    assert [line.split("|")[-2].strip() for line in table if line.startswith("| real")] == [
        "**1.120** (+12.0%)",
        "**1.120** (+12.0%)",
    ]
