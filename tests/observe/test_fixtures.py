"""Every fixture stream, whole, byte by byte and at random splits, against its expected summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.observe.harness import case_id, expected_path, fixture_cases, run_case, splittings

CASES = fixture_cases()
STREAMS = [p for p in CASES if p.suffix == ".sse"]
BODIES = [p for p in CASES if p.suffix == ".json"]


def _expected(path: Path) -> dict[str, object]:
    exp = expected_path(path)
    assert exp.exists(), f"{exp} is missing (python -m tests.observe.regen_expected, then review it)"
    result: dict[str, object] = json.loads(exp.read_text())
    return result


def test_fixture_set_covers_every_protocol() -> None:
    protocols = {p.parent.name for p in STREAMS}
    assert protocols == {"anthropic_messages", "openai_chat", "openai_responses"}
    assert len(STREAMS) >= 30
    assert {p.parent.name for p in BODIES} == protocols


@pytest.mark.parametrize("events", [True, False], ids=["feed", "observe"])
@pytest.mark.parametrize("path", STREAMS, ids=case_id)
def test_stream_fixture(path: Path, events: bool) -> None:
    """``StreamObserver.feed`` (event objects) and ``.observe`` (the payload path) alike."""
    expected = _expected(path)
    data = path.read_bytes()
    for how, pieces in splittings(data, path.name):
        assert b"".join(pieces) == data
        assert run_case(path, pieces, events=events) == expected, f"{case_id(path)} fed {how}"


@pytest.mark.parametrize("path", BODIES, ids=case_id)
def test_body_fixture(path: Path) -> None:
    assert run_case(path) == _expected(path)
