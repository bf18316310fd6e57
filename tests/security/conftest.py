"""Fixtures the security tests share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def route_host() -> Iterator[Any]:
    """A fake upstream as a route's host, recording what it receives."""
    from proxai.upstream import FakeUpstream

    with FakeUpstream(time_scale=0) as up:
        yield up
