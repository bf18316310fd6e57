"""The real agent CLIs through a real mitmdump with ProxAI, against the fake upstream's agent
mode (docs/recipes.md; docs/upstream.md, "Agent mode").

Claude Code (``claude -p``) and Codex (``codex exec``), at the versions ``.ci/install-agents``
pins, with their default settings, each complete one turn with a tool round trip
(``cat notes.txt``): in observe mode (reverse and regular mode) and on both translated routes
of each (Claude Code to Chat and to Responses; Codex to Anthropic and to Chat). Each test
asserts the CLI's final answer, that the tool it ran got the right arguments (from the CLI's
own event stream), and ProxAI's summary of every flow of the run. The upstream validates
requests like the real servers (``openai`` profile: unknown fields, token limits, thinking
budgets are refused), so a translated request a real server would refuse fails here too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import http

from proxai.upstream import FakeUpstream
from proxai.upstream.agent import AGENT_THINKING

from .agents import (
    ANSWER,
    MARKER,
    Run,
    claude_result,
    claude_tool_inputs,
    codex_commands,
    codex_messages,
    run_claude,
    run_codex,
)
from .harness import Mitmdump, proxai_meta, running_mitmdump

A, C, R = "anthropic_messages", "openai_chat", "openai_responses"
CLAUDE_MAX_TOKENS = 128000  # what Claude Code 2.1.332 asks for (tests/fixtures/clients)


@pytest.fixture(scope="module")
def agent_upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(time_scale=0, scenario="agent", profile="openai") as up:
        yield up


@pytest.fixture(scope="module")
def agent_upstream_tls() -> Iterator[FakeUpstream]:
    with FakeUpstream(tls=True, time_scale=0, scenario="agent", profile="openai") as up:
        yield up


def _routes(tmp: Path, path: str, protocol: str, upstream: str) -> str:
    routes = tmp / "routes.toml"
    routes.write_text(
        f'[[route]]\nname = "e2e"\nmatch = {{ path = "{path}" }}\n'
        f'upstream = "{upstream}"\nprotocol = "{protocol}"\n'
    )
    return str(routes)


def _summary(flow: http.HTTPFlow) -> tuple[Any, ...]:
    """What ProxAI recorded of one flow, in the terms a test compares."""
    m = proxai_meta(flow)
    tools = [
        (t["name"], t["arguments_valid_json"], t["arguments_complete"]) for t in m.get("tool_calls") or []
    ]
    route = m.get("route") or {}
    return (
        m.get("client_protocol") or m["protocol"],
        m["protocol"],
        route.get("name"),
        m["outcome"],
        m["stop_class"],
        tools,
        m["text_bytes"],
    )


def _flows(md: Mitmdump, count: int) -> list[http.HTTPFlow]:
    md.wait_flows_all(count)
    flows = md.read_flows()
    assert len(flows) == count, [f.request.pretty_url for f in flows]
    return flows


def _expect(
    client: str, upstream: str, route: str | None, tool: str, answer: str = ANSWER
) -> list[tuple[Any, ...]]:
    return [
        (client, upstream, route, "completed", "tool_use", [(tool, True, True)], 0),
        (client, upstream, route, "completed", "end_turn", [], len(answer.encode())),
    ]


def _claude(md: Mitmdump, tmp: Path, upstream: FakeUpstream) -> None:
    run = run_claude(md, tmp, upstream.url)
    assert run.returncode == 0, run.describe()
    assert claude_result(run) == ANSWER, run.describe()
    assert claude_tool_inputs(run) == [("Bash", {"command": "cat notes.txt"})]


def _codex(md: Mitmdump, tmp: Path, upstream: FakeUpstream) -> Run:
    run = run_codex(md, tmp, upstream.url)
    assert run.returncode == 0, run.describe()
    assert codex_messages(run) == [ANSWER], run.describe()
    assert codex_commands(run) == [("/bin/bash -lc 'cat notes.txt'", f"{MARKER}\n", 0)]
    return run


@pytest.mark.parametrize("mode", ["reverse", "regular"])
def test_claude_code_observed(
    mode: str, agent_upstream: FakeUpstream, agent_upstream_tls: FakeUpstream, tmp_path: Path
) -> None:
    up = agent_upstream if mode == "reverse" else agent_upstream_tls
    with running_mitmdump(up.url, mode=mode, workdir=tmp_path / "mitm") as md:
        _claude(md, tmp_path, up)
        assert [_summary(f) for f in _flows(md, 2)] == _expect(A, A, None, "Bash")
        assert all(proxai_meta(f)["reasoning_bytes"] == len(AGENT_THINKING) for f in md.read_flows())


@pytest.mark.parametrize("mode", ["reverse", "regular"])
def test_codex_observed(
    mode: str, agent_upstream: FakeUpstream, agent_upstream_tls: FakeUpstream, tmp_path: Path
) -> None:
    up = agent_upstream if mode == "reverse" else agent_upstream_tls
    with running_mitmdump(up.url, mode=mode, workdir=tmp_path / "mitm") as md:
        _codex(md, tmp_path, up)
        assert [_summary(f) for f in _flows(md, 2)] == _expect(R, R, None, "exec_command")


@pytest.mark.parametrize(("target", "base"), [(C, "/v1"), (R, "/v1")], ids=["chat", "responses"])
def test_claude_code_translated(target: str, base: str, agent_upstream: FakeUpstream, tmp_path: Path) -> None:
    routes = _routes(tmp_path, "/v1/messages", target, agent_upstream.url + base)
    seen = len(agent_upstream.requests)
    with running_mitmdump(
        agent_upstream.url, workdir=tmp_path / "mitm", options={"proxai_routes": routes}
    ) as md:
        _claude(md, tmp_path, agent_upstream)
        flows = _flows(md, 2)
        assert [_summary(f) for f in flows] == _expect(A, target, "e2e", "Bash")
        for f in flows:
            route = proxai_meta(f)["route"]
            assert route["ignored"] == ["context_management"] and "rejected" not in route
    sent = [r.body for r in agent_upstream.requests[seen:]]
    assert len(sent) == 2
    effort = [b.get("reasoning_effort") or b.get("reasoning", {}).get("effort") for b in sent]
    assert effort == ["medium", "medium"]  # Claude Code's output_config.effort


@pytest.mark.parametrize(("target", "base"), [(A, ""), (C, "/v1")], ids=["anthropic", "chat"])
def test_codex_translated(target: str, base: str, agent_upstream: FakeUpstream, tmp_path: Path) -> None:
    routes = _routes(tmp_path, "/v1/responses", target, agent_upstream.url + base)
    seen = len(agent_upstream.requests)
    with running_mitmdump(
        agent_upstream.url, workdir=tmp_path / "mitm", options={"proxai_routes": routes}
    ) as md:
        run = _codex(md, tmp_path, agent_upstream)
        # Claude's thinking reaches Codex as a reasoning summary, the part Codex shows by default (an
        # OpenAI-like Chat server streams no reasoning text, only its token count)
        thought = [AGENT_THINKING] * 2 if target == A else []
        assert codex_messages(run, "reasoning") == thought, run.describe()
        flows = _flows(md, 2)
        assert [_summary(f) for f in flows] == _expect(R, target, "e2e", "exec_command")
        for f in flows:
            notes = proxai_meta(f)["route"].get("notes")
            if target == A:  # Codex's hosted web search is Anthropic's web search server tool
                assert notes is None
            else:
                assert notes == [f"tools[9]: web search tool left out ({NO_SEARCH})"]
    sent = [r.body for r in agent_upstream.requests[seen:]]
    if target == A:
        assert all({"type": "web_search_20250305", "name": "web_search"} in b["tools"] for b in sent)
    if target == A:
        assert [(b["max_tokens"], b["thinking"]) for b in sent] == [
            (4096 + 8192, {"type": "enabled", "budget_tokens": 8192})
        ] * 2


NO_SEARCH = "Chat Completions has no server-side search"
PATCH = f"*** Begin Patch\n*** Add File: hello.txt\n+{MARKER}\n*** End Patch\n"
PATCH_PROMPT = f"Use `apply_patch` to add hello.txt:\n```\n{PATCH}```"
PATCH_ANSWER = "The tool returned: A hello.txt"


@pytest.mark.parametrize(("target", "base"), [(A, ""), (C, "/v1")], ids=["anthropic", "chat"])
def test_codex_applies_a_patch_translated(
    target: str, base: str, agent_upstream: FakeUpstream, tmp_path: Path
) -> None:
    """Codex's freeform apply_patch, offered to the target as a function with one string
    argument, comes back to Codex as a custom_tool_call: Codex applies the patch itself."""
    routes = _routes(tmp_path, "/v1/responses", target, agent_upstream.url + base)
    seen = len(agent_upstream.requests)
    with running_mitmdump(
        agent_upstream.url, workdir=tmp_path / "mitm", options={"proxai_routes": routes}
    ) as md:
        run = run_codex(md, tmp_path, agent_upstream.url, PATCH_PROMPT, "--sandbox", "workspace-write")
        assert run.returncode == 0, run.describe()
        assert (tmp_path / "work" / "hello.txt").exists(), run.describe()
        assert (tmp_path / "work" / "hello.txt").read_text() == MARKER + "\n", run.describe()
        changes = [
            [(c["path"].rsplit("/", 1)[-1], c["kind"]) for c in ev["item"]["changes"]]
            for ev in run.events()
            if ev.get("type") == "item.completed" and ev.get("item", {}).get("type") == "file_change"
        ]
        assert changes == [[("hello.txt", "add")]], run.describe()
        # the model quotes the last line of what Codex's apply_patch returned
        assert codex_messages(run) == [PATCH_ANSWER], run.describe()
        flows = _flows(md, 2)
        assert [_summary(f) for f in flows] == _expect(R, target, "e2e", "apply_patch", PATCH_ANSWER)
    sent = [r.body for r in agent_upstream.requests[seen:]]
    # the upstream got apply_patch as a function with one string argument, the patch as its input,
    # and on the next turn the call and Codex's own result for it
    if target == A:
        calls = [
            b
            for m in sent[1]["messages"]
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
    else:
        calls = [
            {"name": c["function"]["name"], "input": json.loads(c["function"]["arguments"])}
            for m in sent[1]["messages"]
            for c in m.get("tool_calls") or []
        ]
    assert [(c["name"], c["input"]) for c in calls] == [("apply_patch", {"input": PATCH})]


@pytest.fixture(scope="module")
def vllm_upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(time_scale=0, scenario="agent", profile="vllm") as up:
        yield up


def test_claude_code_on_a_vllm_server_with_the_routes_token_limit(
    vllm_upstream: FakeUpstream, tmp_path: Path
) -> None:
    """Claude Code asks for more output tokens than a vLLM server's model serves (it refuses such
    a request with 400); the route's max_tokens_limit lowers the request to what the server serves."""
    routes = tmp_path / "routes.toml"
    routes.write_text(
        '[[route]]\nname = "e2e"\nmatch = { path = "/v1/messages" }\n'
        f'upstream = "{vllm_upstream.url}/v1"\nprotocol = "openai_chat"\nmax_tokens_limit = 32768\n'
    )
    seen = len(vllm_upstream.requests)
    with running_mitmdump(
        vllm_upstream.url, workdir=tmp_path / "mitm", options={"proxai_routes": str(routes)}
    ) as md:
        run = run_claude(md, tmp_path, vllm_upstream.url)
        asked = [r.body.get("max_tokens") for r in vllm_upstream.requests[seen:]]
        assert run.returncode == 0, (asked, run.describe())
        assert claude_result(run) == ANSWER, run.describe()
        flows = _flows(md, 2)
        assert [_summary(f) for f in flows] == _expect(A, C, "e2e", "Bash")
        notes = [proxai_meta(f)["route"]["notes"] for f in flows]
    assert asked == [32768, 32768]
    assert notes == [[f"max_tokens: {CLAUDE_MAX_TOKENS} lowered to the route's max_tokens_limit 32768"]] * 2
