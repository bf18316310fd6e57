"""HTTP/2 on both legs (regular mode, CONNECT/TLS, ALPN h2 only): the carrier still passes every
byte through and the SDKs get their final objects."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from proxai.upstream.scenarios import TEXT

from .harness import TEST_HEADER, Mitmdump, proxai_meta, running_mitmdump, tag

pytestmark = pytest.mark.e2e

MESSAGES: Any = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def mitm_h2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Mitmdump, Any]]:
    from proxai.upstream import FakeUpstream

    with (
        FakeUpstream(tls=True, http2=True, time_scale=0.02) as up,
        running_mitmdump(up.url, mode="regular", workdir=tmp_path_factory.mktemp("mitm-h2")) as md,
    ):
        yield md, up


def _h2_client(md: Mitmdump) -> Any:
    import httpx2

    return httpx2.Client(
        http1=False,
        http2=True,
        proxy=md.proxy_url,
        verify=ssl.create_default_context(cafile=str(md.ca_path)),
        trust_env=False,
        timeout=60.0,
    )


def test_sdks_over_http2_both_legs(mitm_h2: tuple[Mitmdump, Any]) -> None:
    md, up = mitm_h2
    t1, t2 = tag(), tag()
    ac = anthropic.Anthropic(
        base_url=md.upstream_url,
        api_key="x",
        max_retries=0,
        http_client=_h2_client(md),
        default_headers={TEST_HEADER: t1},
    )
    with ac.messages.stream(model="parallel_tools", max_tokens=64, messages=MESSAGES) as s:
        msg = s.get_final_message()
    oc = openai.OpenAI(
        base_url=md.upstream_url + "/v1",
        api_key="x",
        max_retries=0,
        http_client=_h2_client(md),
        default_headers={TEST_HEADER: t2},
    )
    with oc.responses.stream(model="text", input="hi") as s2:
        resp = s2.get_final_response()
    assert resp.output_text == TEXT
    f1, f2 = md.wait_flow(t1), md.wait_flow(t2)
    assert f1.request.http_version == "HTTP/2.0" and f2.request.http_version == "HTTP/2.0"
    upstream_seen = {r.headers.get(TEST_HEADER): r.http_version for r in up.requests}
    assert upstream_seen[t1] == upstream_seen[t2] == "HTTP/2"
    m1, m2 = proxai_meta(f1), proxai_meta(f2)
    assert m1["outcome"] == "completed" and [c["id"] for c in m1["tool_calls"]] == [
        b.id for b in msg.content if b.type == "tool_use"
    ]
    assert m1["carrier"]["client_bytes"] == m1["carrier"]["upstream_bytes"] > 0
    assert m2["outcome"] == "completed" and m2["id"] == resp.id
    assert resp.usage is not None and m2["usage"]["total_tokens"] == resp.usage.total_tokens
