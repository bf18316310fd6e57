"""Session fixtures for the translation e2e tests: one fake upstream, one routes file that sends
each client protocol to each other protocol (chosen by model name), and mitmdump in reverse
mode and in regular (CONNECT, TLS) mode with ``proxai_routes`` set."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Mitmdump, running_mitmdump

TIME_SCALE = 0.01
ENV_KEY_VAR = "PROXAI_TEST_ROUTE_KEY"
ENV_KEY_VALUE = "sk-route-env-key-not-a-secret"

# client path, model glob, upstream suffix, protocol
DIRECTIONS = {
    ("anthropic_messages", "openai_chat"): ("/v1/messages", "via-chat*", "/v1"),
    ("anthropic_messages", "openai_responses"): ("/v1/messages", "via-responses*", "/v1"),
    ("openai_chat", "anthropic_messages"): ("/v1/chat/completions", "via-anthropic*", ""),
    ("openai_chat", "openai_responses"): ("/v1/chat/completions", "via-responses*", "/v1"),
    ("openai_responses", "anthropic_messages"): ("/v1/responses", "via-anthropic*", ""),
    ("openai_responses", "openai_chat"): ("/v1/responses", "via-chat*", "/v1"),
}


def routes_toml(upstream_url: str, plain_url: str | None = None) -> str:
    out = [
        # env-var auth + model mapping, checked by the upstream's recorded request
        f"""[[route]]
name = "env-auth"
match = {{ path = "/v1/chat/completions", model = "envkey*" }}
upstream = "{upstream_url}"
protocol = "anthropic_messages"
auth = {{ env = "{ENV_KEY_VAR}" }}
model = "mapped-model"
"""
    ]
    for (client, target), (path, glob, suffix) in DIRECTIONS.items():
        out.append(
            f"""[[route]]
name = "{client}-to-{target}"
match = {{ path = "{path}", model = "{glob}" }}
upstream = "{upstream_url}{suffix}"
protocol = "{target}"
"""
        )
    if plain_url is not None:
        # regular mode: an HTTPS (CONNECT) client request rerouted to another, plain-HTTP host
        out.append(
            f"""[[route]]
name = "to-plain-host"
match = {{ path = "/v1/messages", model = "via-plain*" }}
upstream = "{plain_url}/v1"
protocol = "openai_chat"
"""
        )
    return "\n".join(out)


@pytest.fixture(scope="session")
def tr_upstream() -> Iterator[Any]:
    from proxai.upstream import FakeUpstream

    with FakeUpstream(time_scale=TIME_SCALE) as up:
        yield up


@pytest.fixture(scope="session")
def tr_upstream_tls() -> Iterator[Any]:
    from proxai.upstream import FakeUpstream

    with FakeUpstream(tls=True, time_scale=TIME_SCALE) as up:
        yield up


def _start(
    upstream_url: str, mode: str, workdir: Path, plain_url: str | None = None
) -> AbstractContextManager[Mitmdump]:
    routes = workdir / "routes.toml"
    routes.write_text(routes_toml(upstream_url, plain_url))
    os.environ[ENV_KEY_VAR] = ENV_KEY_VALUE  # inherited by the mitmdump subprocess
    return running_mitmdump(upstream_url, mode=mode, workdir=workdir, options={"proxai_routes": str(routes)})


@pytest.fixture(scope="session")
def tr_mitm(tr_upstream: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    with _start(tr_upstream.url, "reverse", tmp_path_factory.mktemp("translate-reverse")) as md:
        yield md


@pytest.fixture(scope="session")
def tr_mitm_regular(
    tr_upstream_tls: Any, tr_upstream: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Mitmdump]:
    with _start(
        tr_upstream_tls.url, "regular", tmp_path_factory.mktemp("translate-regular"), tr_upstream.url
    ) as md:
        yield md
