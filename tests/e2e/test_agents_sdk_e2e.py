"""The OpenAI Agents SDK (Python, ``openai-agents``) with a real tool, through a real mitmdump
with ProxAI, against the fake upstream's agent mode (docs/recipes.md, "OpenAI Agents SDK").

The SDK runs its own loop: the model calls the ``read_note`` function tool, the SDK runs the
Python function, sends its result back, and the model answers. As a Chat Completions client
(``OpenAIChatCompletionsModel``) served by a Responses upstream, and as a Responses client
(``OpenAIResponsesModel``) served by a Chat upstream, and observed untranslated, each streamed
and not: each test asserts
the final output, the arguments the tool was called with, and the summary of every flow.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from mitmproxy import http
from openai import AsyncOpenAI

from proxai.upstream import FakeUpstream

from .harness import proxai_meta, running_mitmdump

MARKER = "proxai-agents-sdk-marker-31"
PROMPT = "Use `read_note` to read `notes.txt` and tell me what it says."
ANSWER = f"The tool returned: {MARKER}"


@pytest.fixture(scope="module")
def agent_upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(time_scale=0, scenario="agent", profile="openai") as up:
        yield up


def _summary(flow: http.HTTPFlow) -> tuple[Any, ...]:
    m = proxai_meta(flow)
    tools = [
        (t["name"], t["arguments_valid_json"], t["arguments_complete"]) for t in m.get("tool_calls") or []
    ]
    return (
        m.get("client_protocol") or m["protocol"],
        m["protocol"],
        m["outcome"],
        m["stop_class"],
        tools,
        m["text_bytes"],
    )


def _run(model_kind: str, base_url: str, tmp: Path, stream: bool) -> tuple[str, list[str]]:
    """One agent run; (final output, paths the tool was called with)."""
    (tmp / "notes.txt").write_text(MARKER + "\n")
    called: list[str] = []

    @function_tool
    def read_note(path: str) -> str:
        """Read a note file and return its text."""
        called.append(path)
        return (tmp / path).read_text()

    set_tracing_disabled(True)  # no trace upload: there is no internet
    client = AsyncOpenAI(base_url=base_url, api_key="sk-proxai-e2e-not-a-secret", max_retries=0)
    model: Any
    if model_kind == "chat":
        model = OpenAIChatCompletionsModel(model="gpt-5.5", openai_client=client)
    else:
        model = OpenAIResponsesModel(model="gpt-5.5", openai_client=client)
    agent = Agent(name="notes", instructions="Answer from the tool's output.", model=model, tools=[read_note])

    async def go() -> str:
        try:
            if stream:
                result = Runner.run_streamed(agent, PROMPT)
                async for _ in result.stream_events():
                    pass
                return str(result.final_output)
            return str((await Runner.run(agent, PROMPT)).final_output)
        finally:
            await client.close()

    return asyncio.run(go()), called


ROUTES = {  # case -> (model kind, client path, upstream protocol; None: observe only)
    "chat-on-responses": ("chat", "/v1/chat/completions", "openai_responses"),
    "responses-on-chat": ("responses", "/v1/responses", "openai_chat"),
    "responses-observed": ("responses", "/v1/responses", None),
}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("case", list(ROUTES))
def test_agents_sdk(case: str, stream: bool, agent_upstream: FakeUpstream, tmp_path: Path) -> None:
    client, client_path, routed = ROUTES[case]
    options: dict[str, str] = {}
    if routed is not None:
        routes = tmp_path / "routes.toml"
        routes.write_text(
            f'[[route]]\nname = "sdk"\nmatch = {{ path = "{client_path}" }}\n'
            f'upstream = "{agent_upstream.url}/v1"\nprotocol = "{routed}"\n'
        )
        options["proxai_routes"] = str(routes)
    with running_mitmdump(agent_upstream.url, workdir=tmp_path / "mitm", options=options) as md:
        output, called = _run(client, f"{md.url}/v1", tmp_path, stream)
        assert output == ANSWER
        assert called == ["notes.txt"]
        md.wait_flows_all(2)
        flows = md.read_flows()
    protocol = "openai_chat" if client == "chat" else "openai_responses"
    target = routed or protocol
    assert [_summary(f) for f in flows] == [
        (protocol, target, "completed", "tool_use", [("read_note", True, True)], 0),
        (protocol, target, "completed", "end_turn", [], len(ANSWER)),
    ]
    assert all((proxai_meta(f).get("route") or {}).get("name") == ("sdk" if routed else None) for f in flows)
