"""Shared fake-upstream fixtures: one plain HTTP/1.1 server and one TLS server with HTTP/2."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from proxai.upstream import FakeUpstream

SCALE = 0.001  # every scripted delay x 0.001: a 60 s stall takes 60 ms


@pytest.fixture(scope="session")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(time_scale=SCALE) as up:
        yield up


@pytest.fixture(scope="session")
def upstream_h2() -> Iterator[FakeUpstream]:
    with FakeUpstream(tls=True, http2=True, time_scale=SCALE) as up:
        yield up
