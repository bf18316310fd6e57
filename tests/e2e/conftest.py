"""Session-scoped e2e fixtures: the fake upstream (plain and TLS) and mitmdump in both modes.

Reuse them from any ``tests/e2e`` test:

- ``upstream`` / ``upstream_tls``: a ``proxai.upstream.FakeUpstream`` (HTTP / HTTPS, small time scale);
- ``mitm_reverse``: mitmdump ``--mode reverse:<upstream>``; SDK base URL = ``mitm_reverse.base_url()``;
- ``mitm_regular``: mitmdump in regular mode; the SDK talks to ``upstream_tls`` through CONNECT and
  trusts mitmproxy's CA (``mitm_regular.http_client()`` wires both);
- ``mitm``: parametrized over both modes.

All processes are terminated at the end of the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .harness import Mitmdump, running_mitmdump

TIME_SCALE = 0.02


@pytest.fixture(scope="session")
def upstream() -> Iterator[Any]:
    from proxai.upstream import FakeUpstream

    with FakeUpstream(time_scale=TIME_SCALE) as up:
        yield up


@pytest.fixture(scope="session")
def upstream_tls() -> Iterator[Any]:
    from proxai.upstream import FakeUpstream

    with FakeUpstream(tls=True, time_scale=TIME_SCALE) as up:
        yield up


@pytest.fixture(scope="session")
def mitm_reverse(upstream: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    with running_mitmdump(
        upstream.url, mode="reverse", workdir=tmp_path_factory.mktemp("mitm-reverse")
    ) as md:
        yield md


@pytest.fixture(scope="session")
def mitm_regular(upstream_tls: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    with running_mitmdump(
        upstream_tls.url, mode="regular", workdir=tmp_path_factory.mktemp("mitm-regular")
    ) as md:
        yield md


@pytest.fixture(params=["reverse", "regular"])
def mitm(request: pytest.FixtureRequest) -> Mitmdump:
    md: Mitmdump = request.getfixturevalue(f"mitm_{request.param}")
    return md
