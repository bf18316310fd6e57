"""Session fixtures of the guard e2e tests: fake upstreams and mitmdumps with small guard thresholds.

Thresholds are small (tool stall 1 s, idle 1.5 s) and every stall of the fake upstream is 40 s
(``x-proxai-stall``), so "the SDK raised with our message" also means "long before the upstream's
own stall ended". The mitmdumps come from ``tests/e2e/harness.py``.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from tests.e2e.harness import TEST_HEADER, Mitmdump, running_mitmdump

TOOL_STALL = 1.0
IDLE_TIMEOUT = 1.5
UPSTREAM_STALL = "40"  # seconds, absolute (not scaled)
TIME_SCALE = 0.05
GUARD_OPTIONS = {"proxai_tool_stall": str(TOOL_STALL), "proxai_idle_timeout": str(IDLE_TIMEOUT)}


@pytest.fixture(scope="session")
def g_upstream() -> Iterator[Any]:
    from proxai.upstream import FakeUpstream

    with FakeUpstream(time_scale=TIME_SCALE) as up:
        yield up


@pytest.fixture(scope="session")
def g_upstream_h2() -> Iterator[Any]:
    from proxai.upstream import FakeUpstream

    with FakeUpstream(tls=True, http2=True, time_scale=TIME_SCALE) as up:
        yield up


@pytest.fixture(scope="session")
def g_upstream_tls() -> Iterator[Any]:
    from proxai.upstream import FakeUpstream

    with FakeUpstream(tls=True, time_scale=TIME_SCALE) as up:
        yield up


def _start(
    tmp: pytest.TempPathFactory, name: str, url: str, mode: str, **extra: str
) -> AbstractContextManager[Mitmdump]:
    return running_mitmdump(url, mode=mode, workdir=tmp.mktemp(name), options={**GUARD_OPTIONS, **extra})


@pytest.fixture(scope="session")
def g_reverse(g_upstream: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    """Reverse mode, HTTP/1.1 plain upstream (the client may speak HTTP/1.1 or HTTP/2 over TLS)."""
    with _start(tmp_path_factory, "g-reverse", g_upstream.url, "reverse") as md:
        yield md


@pytest.fixture(scope="session")
def g_reverse_h2(g_upstream_h2: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    """Reverse mode to an HTTP/2 (TLS) upstream."""
    with _start(tmp_path_factory, "g-reverse-h2", g_upstream_h2.url, "reverse") as md:
        yield md


@pytest.fixture(scope="session")
def g_regular(g_upstream_tls: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    """Regular proxy mode: HTTPS through CONNECT, the client trusts mitmproxy's CA."""
    with _start(tmp_path_factory, "g-regular", g_upstream_tls.url, "regular") as md:
        yield md


@pytest.fixture(scope="session")
def g_data_only(g_upstream: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    """Reverse mode with the guard timer off: only upstream chunks trigger the checks."""
    with _start(tmp_path_factory, "g-data", g_upstream.url, "reverse", proxai_guard_timer="false") as md:
        yield md


def ca_context(md: Mitmdump, *, h2: bool = False) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(md.ca_path))
    if h2:
        ctx.set_alpn_protocols(["h2", "http/1.1"])
    return ctx


def sdk_http_client(md: Mitmdump, *, h2: bool = False, asynchronous: bool = False) -> Any:
    """An ``httpx2`` client (the SDKs reject httpx ones) wired for ``md``.

    ``h2``: the client talks HTTP/2 over TLS to mitmdump (reverse mode: TLS straight to mitmdump;
    ALPN offers only h2 so mitmproxy cannot pick HTTP/1.1).
    """
    import httpx2

    kw: dict[str, Any] = {"timeout": httpx2.Timeout(60.0, connect=10.0)}
    if md.mode == "regular":
        kw["proxy"] = md.proxy_url
        kw["verify"] = ca_context(md, h2=h2)
    elif h2:
        kw["verify"] = ca_context(md, h2=True)
    if h2:
        kw["http1"] = False
        kw["http2"] = True
    return httpx2.AsyncClient(**kw) if asynchronous else httpx2.Client(**kw)


def base_url(md: Mitmdump, *, h2: bool = False, prefix: str = "", upstream: str | None = None) -> str:
    """``upstream``: in regular mode, the origin the SDK talks to through the proxy."""
    if md.mode == "regular" and upstream is not None:
        return upstream + prefix
    if md.mode == "reverse" and h2:
        return f"https://127.0.0.1:{md.port}{prefix}"
    return md.base_url(prefix)


def headers(test_tag: str, **extra: str) -> dict[str, str]:
    return {TEST_HEADER: test_tag, "x-proxai-stall": UPSTREAM_STALL, **extra}


def anthropic_client(
    md: Mitmdump, test_tag: str, *, h2: bool = False, upstream: str | None = None, **extra: str
) -> Any:
    import anthropic

    return anthropic.Anthropic(
        base_url=base_url(md, h2=h2, upstream=upstream),
        api_key="sk-ant-proxai-test-not-a-secret",
        http_client=sdk_http_client(md, h2=h2),
        default_headers=headers(test_tag, **extra),
        max_retries=0,
    )


def openai_client(
    md: Mitmdump, test_tag: str, *, h2: bool = False, upstream: str | None = None, **extra: str
) -> Any:
    import openai

    return openai.OpenAI(
        base_url=base_url(md, h2=h2, prefix="/v1", upstream=upstream),
        api_key="sk-proxai-test-not-a-secret",
        http_client=sdk_http_client(md, h2=h2),
        default_headers=headers(test_tag, **extra),
        max_retries=0,
    )


def async_openai_client(md: Mitmdump, test_tag: str, http_client: Any, **extra: str) -> Any:
    import openai

    return openai.AsyncOpenAI(
        base_url=base_url(md, h2=True, prefix="/v1"),
        api_key="sk-proxai-test-not-a-secret",
        http_client=http_client,
        default_headers=headers(test_tag, **extra),
        max_retries=0,
    )


@pytest.fixture(scope="session")
def g_translating(g_upstream: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    """Reverse mode with routes: every client protocol is served by ANOTHER upstream protocol."""
    work = tmp_path_factory.mktemp("g-translate")
    routes = work / "routes.toml"
    routes.write_text(
        f"""
[[route]]
name = "anthropic-on-chat"
match = {{ path = "/v1/messages" }}
upstream = "{g_upstream.url}/v1"
protocol = "openai_chat"

[[route]]
name = "responses-on-anthropic"
match = {{ path = "/v1/responses" }}
upstream = "{g_upstream.url}"
protocol = "anthropic_messages"

[[route]]
name = "chat-on-responses"
match = {{ path = "/v1/chat/completions" }}
upstream = "{g_upstream.url}/v1"
protocol = "openai_responses"
"""
    )
    with running_mitmdump(
        g_upstream.url, mode="reverse", workdir=work, options={**GUARD_OPTIONS, "proxai_routes": str(routes)}
    ) as md:
        yield md


@pytest.fixture(scope="session")
def g_degraded(g_upstream: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    """Reverse mode where the start-up check finds a mitmproxy internal missing (degrade path)."""
    from pathlib import Path

    with running_mitmdump(
        g_upstream.url,
        mode="reverse",
        workdir=tmp_path_factory.mktemp("g-degraded"),
        options=GUARD_OPTIONS,
        script=Path(__file__).with_name("degraded_addon.py"),
    ) as md:
        yield md
