"""mitmweb in Debian's headless chromium, with default options: the flow list shows each LLM flow's
marker and its comment column (ProxAI adds it), and the Response tab shows the ProxAI view of a
streamed flow and of a translated one (both sides)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from .test_mitm_tools import TOKEN, addon_mitmweb, web_flows
from .ui import Chromium, chromium, poll

pytestmark = pytest.mark.e2e

ROUTES = """
[[route]]
name = "claude-on-chat"
match = {{ path = "/v1/messages" }}
upstream = "{upstream}/v1"
protocol = "openai_chat"
"""


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], int]]:
    from proxai.upstream import FakeUpstream

    workdir = tmp_path_factory.mktemp("web-ui")
    with (
        FakeUpstream(time_scale=0.02) as up,
        addon_mitmweb(workdir, up.url, ROUTES.format(upstream=up.url)) as server,
    ):
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    with chromium(width=1600, height=1000) as c:
        yield c


def _flow(web: tuple[str, dict[str, str], int], comment: str) -> dict[str, Any]:
    """The finished flow whose comment starts with ``comment``."""
    base, headers, _ = web
    return poll(
        f"a finished flow with the comment {comment!r}",
        lambda: next((f for f in web_flows((base, headers)) if f["comment"].startswith(comment)), None),
        last=lambda: repr([f["comment"] for f in web_flows((base, headers))]),
    )


def _open(browser: Chromium, web: tuple[str, dict[str, str], int], flow_id: str, tab: str) -> str:
    base, _, _ = web
    browser.goto(f"{base}/?token={TOKEN}#/flows/{flow_id}/{tab}")
    return browser.wait_text(".contentview pre", "ProxAI ")


def test_streamed_flow_in_the_web_ui(web: tuple[str, dict[str, str], int], browser: Chromium) -> None:
    _, _, port = web
    with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test-web", max_retries=0) as c:
        chunks = list(
            c.chat.completions.create(
                model="parallel_tools",
                messages=[{"role": "user", "content": "Weather in Paris and Tokyo?"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    assert chunks[-1].usage is not None
    flow = _flow(web, "completed (tool_calls) · chat parallel_tools")
    text = _open(browser, web, flow["id"], "response")
    lines = text.splitlines()
    assert lines[0] == "ProxAI · completed (tool_calls) · openai_chat parallel_tools · streamed"
    assert lines[1:3] == ["── answer ──", "I'll look up the weather in both cities at once."]
    assert "── tool call 2: get_weather · id call_000102fakecall · complete · 47 bytes ──" in lines
    assert browser.text(".contentview h5") == "ProxAI"  # the view mitmweb chose (auto)
    # The flow list: the comment column (added by ProxAI) starts with the verdict.
    comments = browser.wait_text(".flow-table", "completed (tool_calls) · chat parallel_tools")
    assert "25 in/26 out · 2 tool calls" in comments
    headers = browser.text(".flow-table thead")
    assert headers is not None and "Comment" in headers
    # proxai.report through the call mitmweb's command bar makes (from the logged-in page, with its
    # XSRF cookie): the returned value is what the bar shows.
    reply = browser.js(
        "(async () => { const x = document.cookie.match(/_mitmproxy_xsrf=([^;]+)/)[1];"
        " const r = await fetch('/commands/proxai.report', {method: 'POST', headers:"
        " {'Content-Type': 'application/json', 'X-XSRFToken': decodeURIComponent(x)},"
        " body: JSON.stringify({arguments: []})}); return [r.status, await r.text()]; })()"
    )
    assert reply[0] == 200, reply
    value = json.loads(reply[1])["value"].splitlines()
    assert value[0].split()[:3] == ["#", "protocol", "model"]
    assert any("chat" in row and "tool_calls" in row for row in value[2:])
    assert any(row.startswith("total: ") for row in value)


def test_translated_flow_shows_both_sides_in_the_web_ui(
    web: tuple[str, dict[str, str], int], browser: Chromium
) -> None:
    _, _, port = web
    with (
        anthropic.Anthropic(
            base_url=f"http://127.0.0.1:{port}",
            api_key="sk-ant-test-web",
            max_retries=0,
            http_client=anthropic.DefaultHttpxClient(trust_env=False),
        ) as c,
        c.messages.stream(
            model="max_tokens",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Weather in Paris?"}],
        ) as stream,
    ):
        final = stream.get_final_message()
    assert final.stop_reason == "max_tokens"
    # What the client received: Anthropic's max_tokens (the upstream said length), marked truncated.
    # (the comment names the upstream stream's SDK reaction: openai-python refuses its length)
    sdk = "SDK: openai-python raises LengthFinishReasonError (openai_chat.finish_length)"
    flow = _flow(web, f"truncated (max_tokens) · {sdk} · anthropic<-chat max_tokens")
    assert flow["marked"] == "✂"
    text = _open(browser, web, flow["id"], "response")
    lines = text.splitlines()
    assert lines[:2] == [
        "ProxAI · translated flow: the client speaks anthropic_messages, the upstream speaks openai_chat",
        "══ as the client received it (anthropic_messages) ══",
    ]
    assert lines[2] == "client · truncated (max_tokens) · anthropic_messages max_tokens · streamed"
    assert "Paris is sunny today with a high of" in lines
    up = lines.index("══ as the upstream sent it (openai_chat) ══")
    assert lines[up + 1] == "upstream · truncated (length) · openai_chat max_tokens · streamed"
    # The request tab: the client's own request (kept by the routing) and the one sent upstream.
    req = _open(browser, web, flow["id"], "request").splitlines()
    assert req[0] == (
        "ProxAI · translated flow: the client speaks anthropic_messages, the upstream speaks openai_chat"
    )
    client = req.index("══ as the client sent it (anthropic_messages) ══")
    assert req[client + 1 : client + 4] == [
        "ProxAI request · anthropic_messages",
        "model: max_tokens · stream: true",
        "params: max_tokens 1024",
    ]
    assert req[client + 4 : client + 7] == ["── messages (1) ──", "[1] user:", "  Weather in Paris?"]
    upstream = req.index("══ as sent upstream (openai_chat) ══")
    assert req[upstream + 1] == "ProxAI request · openai_chat" and upstream > client
