"""The golden differential (bench/golden.py) is deterministic and records something worth comparing:
two runs over the same inputs give identical records, observe-only passes the upstream's bytes
through, translation changes them, and every summary has an outcome."""

from __future__ import annotations

import hashlib

from bench import golden

NAMES = (
    "fixture/anthropic_messages/text.sse",
    "fixture/openai_chat/parallel_tools.sse",
    "fixture/openai_responses/text.sse",
    "scenario/anthropic_messages/parallel_tools",
)


def _inputs() -> list[golden.Input]:
    found = {i.name: i for i in (*golden.fixture_inputs(), *golden.scenario_inputs()) if i.name in NAMES}
    assert sorted(found) == sorted(NAMES)
    return [found[n] for n in NAMES]


def test_records_are_deterministic_and_non_trivial() -> None:
    inputs = _inputs()
    first = golden.records(inputs)
    second = golden.records(inputs)
    assert first == second
    assert golden.differences(first, second) == []
    for inp in inputs:
        upstream_hash = hashlib.sha256(inp.body).hexdigest()
        for chunking in ("whole", "7", "random"):
            observed = first[f"{inp.name}|orig|observe|{chunking}"]
            assert observed["bytes"] == upstream_hash  # observe-only: the client gets the upstream's bytes
            assert observed["summary"]["outcome"] == "completed"
            assert observed["summary"]["protocol"] == inp.protocol.value
        for mode, _client, _ in golden.modes(inp.protocol)[2:]:
            rec = first[f"{inp.name}|orig|{mode}|whole"]
            assert rec["bytes"] != upstream_hash
            assert rec["summary"]["outcome"] == "completed"
            # The same stream read in other pieces gives the client the same bytes.
            assert first[f"{inp.name}|orig|{mode}|random"]["bytes"] == rec["bytes"]
    # Mutations are cases of their own, and a truncated stream is not completed.
    truncated = [k for k in first if "|truncate@" in k and k.endswith("|observe|whole")]
    assert len(truncated) == len(inputs)
    assert all(first[k]["summary"]["outcome"] != "completed" for k in truncated)


def test_differences_name_what_changed() -> None:
    inp = _inputs()[0]
    base = golden.records([inp], only="|orig|to-openai_chat|whole")
    assert len(base) == 1
    (cid,) = base
    changed = {cid: {"bytes": "0" * 64, "summary": {**base[cid]["summary"], "text_bytes": -1}}}
    assert golden.differences(base, changed) == [f"{cid}: client bytes hash; summary text_bytes"]
    assert golden.differences(base, {}) == [f"{cid}: case missing"]
