"""Agent runs recorded and replayed (docs/replay.md): the real Claude Code, Codex and OpenAI Agents
SDK complete a tool round trip against the fake upstream's agent mode through a recording mitmdump
(``-w``); the upstream is stopped; the same run against a replaying mitmdump
(``proxai_replay``) finishes with the same answer and the same tool calls, and every flow's
summary says it was replayed, and from which recorded flow. One more run is recorded on a
translated route (Claude Code served by a Chat upstream) and replayed from its client side.

Each CLI run gets a fresh HOME, so the replayed run starts as the recorded one did; the
working directory is the same (its path is part of the CLIs' system prompts).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import http

from proxai.mitm.flowrows import read_flows
from proxai.upstream import FakeUpstream

from .agents import (
    ANSWER,
    MARKER,
    claude_result,
    claude_tool_inputs,
    codex_commands,
    codex_messages,
    run_claude,
    run_codex,
)
from .harness import Mitmdump, proxai_meta, running_mitmdump
from .test_agents_sdk_e2e import ANSWER as SDK_ANSWER
from .test_agents_sdk_e2e import _run as run_agents_sdk

pytestmark = pytest.mark.e2e


def _upstream() -> FakeUpstream:
    return FakeUpstream(time_scale=0, scenario="agent", profile="openai")


def _routes(tmp: Path, upstream: str) -> str:
    routes = tmp / "routes.toml"
    routes.write_text(
        '[[route]]\nname = "e2e"\nmatch = { path = "/v1/messages" }\n'
        f'upstream = "{upstream}/v1"\nprotocol = "openai_chat"\n'
    )
    return str(routes)


def _fresh_home(tmp: Path) -> None:
    shutil.rmtree(tmp / "home", ignore_errors=True)


def _claude(md: Mitmdump, tmp: Path, upstream_url: str) -> list[tuple[str, Any]]:
    _fresh_home(tmp)
    run = run_claude(md, tmp, upstream_url)
    assert run.returncode == 0, run.describe() + md.log_tail()
    assert claude_result(run) == ANSWER, run.describe() + md.log_tail()
    return claude_tool_inputs(run)


def _codex(md: Mitmdump, tmp: Path, upstream_url: str) -> list[tuple[str, str, int | None]]:
    _fresh_home(tmp)
    run = run_codex(md, tmp, upstream_url)
    assert run.returncode == 0, run.describe() + md.log_tail()
    assert codex_messages(run) == [ANSWER], run.describe() + md.log_tail()
    return codex_commands(run)


def _sdk(md: Mitmdump, tmp: Path, upstream_url: str) -> list[str]:
    output, called = run_agents_sdk("responses", f"{md.url}/v1", tmp, True)
    assert output == SDK_ANSWER
    return called


AGENTS = {"claude-code": _claude, "codex": _codex, "agents-sdk": _sdk}
EXPECTED: dict[str, Any] = {
    "claude-code": [("Bash", {"command": "cat notes.txt"})],
    "codex": [("/bin/bash -lc 'cat notes.txt'", f"{MARKER}\n", 0)],
    "agents-sdk": ["notes.txt"],
}


def _saved(md: Mitmdump, n: int) -> list[http.HTTPFlow]:
    md.wait_flows_all(n)
    flows = [f for f in read_flows(str(md.flow_path)) if isinstance(f, http.HTTPFlow)]
    assert len(flows) == n, [f.request.pretty_url for f in flows]
    return flows


@pytest.mark.parametrize("case", [*AGENTS, "claude-code-translated"])
def test_an_agent_run_replays_with_the_upstream_stopped(case: str, tmp_path: Path) -> None:
    agent = AGENTS[case.removesuffix("-translated")]
    expected = EXPECTED[case.removesuffix("-translated")]
    up = _upstream().start()
    try:
        options = {"proxai_routes": _routes(tmp_path, up.url)} if case.endswith("-translated") else {}
        with running_mitmdump(up.url, workdir=tmp_path / "record", options=options) as md:
            assert agent(md, tmp_path, up.url) == expected
            recorded = _saved(md, 2)
        url = up.url
    finally:
        up.stop()
    served = len(up.requests)
    assert served == 2
    flows = tmp_path / "record" / "flows.flow"
    with running_mitmdump(url, workdir=tmp_path / "replay", options={"proxai_replay": str(flows)}) as md:
        assert agent(md, tmp_path, url) == expected
        replayed = _saved(md, 2)
    assert len(up.requests) == served  # the stopped upstream was never asked
    metas = [proxai_meta(f) for f in replayed]
    assert [m["replay"] for m in metas] == [
        {
            "replayed": True,
            "file": str(flows),
            "flow_index": i,
            "flow_id": recorded[i - 1].id,
            "speed": 1.0,
            "timed_by": "reads",
            "waits_s": metas[i - 1]["replay"]["waits_s"],
        }
        for i in (1, 2)
    ]
    before = [proxai_meta(f) for f in recorded]
    client = [m.get("client_protocol") or m["protocol"] for m in before]
    assert [m["protocol"] for m in metas] == client  # replayed on the client's side
    assert [(m["outcome"], m["stop_class"], [t["name"] for t in m["tool_calls"]]) for m in metas] == [
        ("completed", "tool_use", [_tool_name(expected)]),
        ("completed", "end_turn", []),
    ]
    assert [m["text_bytes"] for m in metas] == [m["text_bytes"] for m in before]


def _tool_name(expected: list[Any]) -> str:
    first = expected[0]
    if isinstance(first, str):
        return "read_note"  # the Agents SDK's function tool
    return "Bash" if first[0] == "Bash" else "exec_command"
