"""Session fixtures of the hardening e2e tests: a replay upstream, the fake upstream, and a real
``mitmdump -s addon/proxai.py`` in reverse mode in front of each (helpers from tests/e2e)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.harness import Mitmdump, running_mitmdump

from .replay import Replay

TIME_SCALE = 0.02


@pytest.fixture(scope="session")
def replay() -> Iterator[Replay]:
    with Replay() as r:
        yield r


@pytest.fixture(scope="session")
def mitm_replay(replay: Replay, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    with running_mitmdump(replay.url, workdir=tmp_path_factory.mktemp("hard-replay")) as md:
        yield md


@pytest.fixture(scope="session")
def fake() -> Iterator[Any]:
    from proxai.upstream import FakeUpstream

    with FakeUpstream(time_scale=TIME_SCALE) as up:
        yield up


@pytest.fixture(scope="session")
def mitm_fake(fake: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    with running_mitmdump(fake.url, workdir=tmp_path_factory.mktemp("hard-fake")) as md:
        yield md
