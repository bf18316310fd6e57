"""The real requests of the agent CLIs translate on every route (docs/translation.md, "What the
agent CLIs send").

``tests/fixtures/clients/*.json`` are request bodies captured through ProxAI from pinned
versions of Claude Code and Codex (ids scrubbed; ``tests/fixtures/clients/README.md``). Each
must translate to both other protocols with every field accounted for: mapped, ignored as a
hint, or left out with a note; and nothing the user or the model wrote may be lost.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proxai.core.errors import TranslationError
from proxai.core.model import Protocol
from proxai.translate.ir import RequestOptions
from proxai.translate.request import translate_request

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clients"
A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES


def _client(path: Path) -> Protocol:
    return A if path.name.startswith("claude-code") else R


CASES = sorted(FIXTURES.glob("*.json"))


def _texts(value: Any) -> list[str]:
    """Every string that is a ``text`` / ``content`` / ``input_text`` value, recursively."""
    out: list[str] = []
    if isinstance(value, dict):
        if value.get("type") in ("thinking", "reasoning"):
            return out  # earlier turns' reasoning: an OpenAI target drops and counts it
        for k, v in value.items():
            if k in ("text", "content", "instructions", "system", "output") and isinstance(v, str):
                out.append(v)
            else:
                out.extend(_texts(v))
    elif isinstance(value, list):
        for v in value:
            out.extend(_texts(v))
    return out


def test_fixtures_are_present() -> None:
    names = {p.name for p in CASES}
    assert {
        "claude-code-2.1.332.turn1.json", "claude-code-2.1.332.turn2.json",
        "codex-0.171.0.turn1.json", "codex-0.171.0.turn2.json",
    } <= names  # fmt: skip


def test_claude_code_tool_round_trip_to_chat() -> None:
    body = json.loads((FIXTURES / "claude-code-2.1.332.turn2.json").read_text())
    out = translate_request(body, A, C)
    msgs = out.body["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "system", "assistant", "tool"]
    call = msgs[3]["tool_calls"][0]
    assert call["function"] == {"name": "Bash", "arguments": '{"command":"cat notes.txt"}'}
    assert msgs[4] == {"role": "tool", "tool_call_id": call["id"], "content": "proxai-marker-42"}
    assert out.dropped == {"thinking_blocks": 1, "thinking_chars": 71, "signature_chars": 46}


def test_codex_tool_round_trip_to_anthropic() -> None:
    body = json.loads((FIXTURES / "codex-0.171.0.turn2.json").read_text())
    out = translate_request(body, R, A)
    msgs = out.body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    thinking, call = msgs[1]["content"]
    assert (
        thinking["type"] == "thinking"
        and thinking["signature"] == "EqQBagentSignatureForProxaiUpstreamTestsOnly=="
    )
    assert call["type"] == "tool_use" and call["name"] == "exec_command"
    assert call["input"] == {"cmd": "cat notes.txt"}
    result = msgs[2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == call["id"]
    assert "proxai-marker-42" in result["content"]


PAIRS = [(p, t) for p in CASES for t in (A, C, R) if t is not _client(p)]


@pytest.mark.parametrize(("path", "target"), PAIRS, ids=[f"{p.name}->{t}" for p, t in PAIRS])
def test_every_text_reaches_the_target(path: Path, target: Protocol) -> None:
    client = _client(path)
    body = json.loads(path.read_text())
    out = translate_request(body, client, target)
    sent = "\n".join(_texts(out.body))
    for text in _texts(
        {k: v for k, v in body.items() if k in ("messages", "input", "system", "instructions")}
    ):
        assert text in sent, text[:80]


def test_claude_code_to_chat() -> None:
    body = json.loads((FIXTURES / "claude-code-2.1.332.turn1.json").read_text())
    out = translate_request(body, A, C)
    b = out.body
    assert b["reasoning_effort"] == "medium"  # output_config.effort
    assert b["max_tokens"] == 128000
    assert b["stream_options"] == {"include_usage": True}
    # the system message Claude Code puts after the first user turn stays at its position
    assert [m["role"] for m in b["messages"]] == ["system", "user", "system"]
    assert b["messages"][2]["content"].startswith("# Environment")
    names = [t["function"]["name"] for t in b["tools"]]
    assert names == [t["name"] for t in body["tools"]]  # every client tool, deferred ones too
    assert out.ignored == ("context_management",)
    assert out.notes == ()
    assert out.dropped == {}


def test_claude_code_to_responses() -> None:
    body = json.loads((FIXTURES / "claude-code-2.1.332.turn1.json").read_text())
    out = translate_request(body, A, R)
    b = out.body
    assert b["reasoning"] == {"effort": "medium"}
    assert b["max_output_tokens"] == 128000
    assert [i.get("role") for i in b["input"]] == ["system", "user", "system"]
    assert [t["name"] for t in b["tools"]] == [t["name"] for t in body["tools"]]
    assert all(t["type"] == "function" and t["strict"] is False for t in b["tools"])


def test_codex_to_anthropic() -> None:
    body = json.loads((FIXTURES / "codex-0.171.0.turn1.json").read_text())
    out = translate_request(body, R, A)
    b = out.body
    # no max_output_tokens from Codex: the answer keeps the default 4096 beside the budget
    assert b["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert b["max_tokens"] == 4096 + 8192
    # the developer messages are the instructions
    assert isinstance(b["system"], list)
    assert b["system"][0]["text"].startswith("You are Codex")
    tools = {t["name"]: t for t in b["tools"]}
    assert list(tools) == [
        "exec_command", "write_stdin", "request_user_input", "apply_patch", "view_image",
        "get_goal", "create_goal", "update_goal", "tool_search", "web_search",
    ]  # fmt: skip
    # the freeform apply_patch becomes a tool with one string argument, its grammar told
    assert tools["apply_patch"]["input_schema"]["required"] == ["input"]
    assert "*** Begin Patch" in tools["apply_patch"]["description"]
    assert tools["tool_search"]["input_schema"]["required"] == ["query"]
    # Codex's hosted web search is Anthropic's web search server tool
    assert tools["web_search"] == {"type": "web_search_20250305", "name": "web_search"}
    assert out.notes == ()
    assert out.ignored == ("client_metadata", "include", "prompt_cache_key", "store", "text.verbosity")


def test_codex_to_chat() -> None:
    body = json.loads((FIXTURES / "codex-0.171.0.turn1.json").read_text())
    out = translate_request(body, R, C)
    b = out.body
    assert b["reasoning_effort"] == "medium"
    assert b["parallel_tool_calls"] is True
    assert all(t["type"] == "function" for t in b["tools"])
    patch = next(t for t in b["tools"] if t["function"]["name"] == "apply_patch")
    assert patch["function"]["parameters"]["properties"]["input"]["type"] == "string"
    assert [m["role"] for m in b["messages"]] == ["system", "user", "user"]
    assert "max_tokens" not in b


def test_strict_translation_refuses_the_hosted_tool_codex_declares() -> None:
    """Strict translation: the offer Codex makes (its hosted web search) is refused up front,
    naming the field, where the default leaves it out with a note."""
    body = json.loads((FIXTURES / "codex-0.171.0.turn1.json").read_text())
    with pytest.raises(TranslationError) as err:
        translate_request(body, R, C, RequestOptions(strict=True))
    assert err.value.field == "tools[9]"
    assert err.value.reason == (
        "web search tool cannot be translated "
        "(Chat Completions has no server-side search; strict translation)"
    )
    assert translate_request(body, R, A, RequestOptions(strict=True)).notes == ()  # Anthropic searches


SERVER_CODE = {"type": "code_execution_20250522", "name": "code_execution"}


@pytest.mark.parametrize("target", [C, R])
def test_a_forced_server_tool_is_refused_up_front(target: Protocol) -> None:
    """A declared server tool is an offer, left out with a note; a tool_choice that forces it
    asks for what the target cannot do: refused before anything is sent."""
    body: dict[str, Any] = {
        "model": "claude-x",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "compute"}],
        "tools": [SERVER_CODE],
    }
    out = translate_request(body, A, target)
    assert out.notes == (
        "tools[0]: server tool 'code_execution_20250522' left out (OpenAI APIs cannot run it)",
    )
    assert "tools" not in out.body
    with pytest.raises(TranslationError) as err:
        translate_request({**body, "tool_choice": {"type": "tool", "name": "code_execution"}}, A, target)
    assert err.value.field == "tool_choice.name"
    assert err.value.reason == (
        "tool_choice forces 'code_execution', the server tool 'code_execution_20250522' of tools[0]: "
        "OpenAI APIs cannot run it"
    )


SERVER_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}


def test_the_web_search_is_offered_where_the_target_searches() -> None:
    """Anthropic's web search server tool and Responses' web_search tool are the same offer;
    Chat has no search (left out, noted), and forcing the search is refused up front."""
    body: dict[str, Any] = {
        "model": "claude-x",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "news?"}],
        "tools": [SERVER_SEARCH],
    }
    out = translate_request(body, A, R)
    assert out.body["tools"] == [{"type": "web_search"}]
    assert out.notes == ("tools[0].max_uses: the target's web search has no such setting; not sent",)
    back = translate_request(
        {"model": "m", "input": "news?", "tools": [{"type": "web_search_preview"}]}, R, A
    )
    assert back.body["tools"] == [{"type": "web_search_20250305", "name": "web_search"}] and back.notes == ()
    chat = translate_request(body, A, C)
    assert "tools" not in chat.body
    assert chat.notes == ("tools[0]: web search tool left out (Chat Completions has no server-side search)",)
    with pytest.raises(TranslationError) as err:
        translate_request({**body, "tool_choice": {"type": "tool", "name": "web_search"}}, A, R)
    assert err.value.field == "tool_choice.name"


def test_earlier_web_searches_in_the_history_are_left_out_with_a_note() -> None:
    """A client sends its earlier turns back: the search blocks or items of a web search ran at
    the provider; the target takes no other provider's search call, the cited answer stays."""
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    body: dict[str, Any] = {
        "model": "claude-x",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "news?"},
            {"role": "assistant", "content": [use, result]},
            {"role": "assistant", "content": [use, result, {"type": "text", "text": "Paris."}]},
            {"role": "user", "content": "more?"},
        ],
    }
    out = translate_request(body, A, R)
    assert [i.get("role") for i in out.body["input"]] == ["user", "assistant", "user"]
    assert out.body["input"][1]["content"] == [{"type": "output_text", "text": "Paris."}]
    assert out.notes == tuple(
        f"messages[{i}].content[{j}]: {kind} of an earlier turn left out (a web search)"
        for i in (1, 2)
        for j, kind in enumerate(("server_tool_use", "web_search_tool_result"))
    )
    codex = {
        "model": "m",
        "input": [
            {"role": "user", "content": "news?"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Paris."}]},
        ],
    }
    back = translate_request(codex, R, A)
    assert [m["role"] for m in back.body["messages"]] == ["user", "assistant"]
    assert back.notes == ("input[1]: web_search_call of an earlier turn left out (a web search)",)
