"""Matching by conversation (proxai.replay.match): the real agent CLIs' requests, changed only in
their volatile parts, match; a changed prompt, a new message, a changed tool result do not, and
the divergence names the client's field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from proxai.core.model import Protocol
from proxai.replay.match import MASK, conversation, divergence, mask_dates, system_text

CLIENTS = Path(__file__).resolve().parents[1] / "fixtures" / "clients"
A, R, C = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_RESPONSES, Protocol.OPENAI_CHAT


def load(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((CLIENTS / name).read_text())
    return body


def claude() -> dict[str, Any]:
    return load("claude-code-2.1.332.turn2.json")


def codex() -> dict[str, Any]:
    return load("codex-0.171.0.turn2.json")


def test_claude_code_volatile_parts_are_ignored() -> None:
    base = claude()
    other = copy.deepcopy(base)
    other["system"][0]["text"] = "x-anthropic-billing-header: cc_version=2.1.332.fff; cc_entrypoint=sdk-cli;"
    env = other["messages"][1]
    assert isinstance(env["content"], str) and "Today's date is 2026-12-01." in env["content"]
    env["content"] = env["content"].replace("2026-12-01", "2027-03-14")
    other["system"][1].pop("cache_control")
    other["system"][2]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    other["metadata"]["user_id"] = json.dumps({"device_id": "f" * 64, "session_id": "1234"})
    other["temperature"] = 0.3
    other["top_p"] = 0.9
    other["context_management"] = {"edits": []}
    a, b = conversation(A, base), conversation(A, other)
    assert a.read_as == b.read_as == "reader"
    assert a.key == b.key
    assert divergence(b, a) is None


def test_codex_volatile_parts_are_ignored() -> None:
    base = codex()
    other = copy.deepcopy(base)
    other["prompt_cache_key"] = "11111111-2222-3333-4444-555555555555"
    other["client_metadata"] = {"session_id": "another"}
    for item in other["input"]:
        if "id" in item:
            item["id"] = "msg_another"
    env = other["input"][2]["content"][0]
    assert "<current_date>2026-12-01</current_date>" in env["text"]
    env["text"] = env["text"].replace("2026-12-01", "2026-12-02")
    assert conversation(R, base).key == conversation(R, other).key


def test_a_changed_prompt_names_the_message() -> None:
    base = claude()
    other = copy.deepcopy(base)
    other["messages"][0]["content"][1]["text"] = "Run `cat other.txt` and tell me what it says"
    got, recorded = conversation(A, other), conversation(A, base)
    assert got.key != recorded.key
    d = divergence(got, recorded)
    assert d is not None
    assert (d.name, d.what) == ("messages[0].content[1]", "user text")
    assert d.recorded == '"Run `cat notes.txt` and tell me what it says"'
    assert d.got == '"Run `cat other.txt` and tell me what it says"'
    assert d.describe() == (
        f"messages[0].content[1] (user text) differs from the recording: recorded {d.recorded}, got {d.got}"
    )


def test_a_shell_tools_run_id_and_wall_time_are_ignored() -> None:
    base = codex()
    other = copy.deepcopy(base)
    output = other["input"][6]["output"]
    assert output.startswith("Chunk ID: 0e9483\nWall time: 0.0000 seconds\nProcess exited with code 0\n")
    other["input"][6]["output"] = output.replace("0e9483", "77ab01").replace("0.0000", "1.2500")
    assert conversation(R, base).key == conversation(R, other).key
    other["input"][6]["output"] = output.replace("code 0", "code 1")
    d = divergence(conversation(R, other), conversation(R, base))
    assert d is not None and (d.name, d.what) == ("input[6]", "tool result")
    assert (d.recorded, d.got) == (
        '"…ss exited with code 0\\nOriginal token count: 5\\nOutput:\\nproxai…"',
        '"…ss exited with code 1\\nOriginal token count: 5\\nOutput:\\nproxai…"',
    )


def test_a_changed_tool_result_and_a_new_message() -> None:
    base = codex()
    changed = copy.deepcopy(base)
    changed["input"][6]["output"] = "something else\n"
    d = divergence(conversation(R, changed), conversation(R, base))
    assert d is not None and (d.name, d.what) == ("input[6]", "tool result")
    longer = copy.deepcopy(base)
    longer["input"].append({"type": "message", "role": "user", "content": "and then?"})
    d = divergence(conversation(R, longer), conversation(R, base))
    assert d is not None
    assert (d.name, d.what, d.recorded) == ("input[7].content", "user text", None)
    assert d.describe().startswith("input[7].content (user text) is new: the recording ends before it; got ")
    d = divergence(conversation(R, base), conversation(R, longer))
    assert d is not None and (d.name, d.got) == ("input[7].content", None)
    assert d.describe().startswith("input[7].content (user text) is missing: the recording has ")


def test_dates_outside_system_text_count() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "what happened on 2024-01-01?"}]}
    other = copy.deepcopy(body)
    other["messages"][0]["content"] = "what happened on 2024-01-02?"
    assert conversation(C, body).key != conversation(C, other).key
    body["messages"].insert(0, {"role": "system", "content": "Now: 2024-01-01 10:00 UTC"})
    other["messages"] = [{"role": "system", "content": "Now: 2025-06-30 23:59 UTC"}, body["messages"][1]]
    assert conversation(C, body).key == conversation(C, other).key


def test_settings_that_change_the_answer_count() -> None:
    body: dict[str, Any] = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    for change, name in (
        ({"max_tokens": 200}, "max_tokens"),
        ({"model": "n"}, "model"),
        ({"stream": True}, "stream"),
        ({"thinking": {"type": "enabled", "budget_tokens": 2048}}, "thinking"),
        ({"tools": [{"name": "t", "input_schema": {"type": "object"}}]}, "tools[0]"),
    ):
        d = divergence(conversation(A, {**body, **change}), conversation(A, body))
        assert d is not None and d.name == name, (change, d)


def test_a_body_the_reader_refuses_is_compared_as_json() -> None:
    body: dict[str, Any] = {
        "model": "m",
        "max_tokens": 10,
        "top_k": 5,
        "system": [{"type": "text", "text": "Today is 2026-12-01.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {}}]}],
    }
    other = copy.deepcopy(body)
    other["top_k"] = 40  # a sampling setting: left out
    other["system"][0] = {"type": "text", "text": "Today is 2027-01-01."}
    other["messages"][0]["content"][0].pop("cache_control")
    a, b = conversation(A, body), conversation(A, other)
    assert a.read_as == "json" and a.refused == "top_k: top_k has no equivalent in OpenAI APIs"
    assert a.key == b.key
    other["messages"][0]["content"][0]["text"] = "hello"
    d = divergence(conversation(A, other), a)
    assert d is not None and (d.name, d.what) == ("messages[0]", "user message")


def test_secrets_are_masked_on_both_sides() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "my key is sk-ant-api03-" + "a" * 40}]}
    masked = copy.deepcopy(body)
    masked["messages"][0]["content"] = "my key is [REDACTED]"
    c = conversation(C, body)
    assert c.key == conversation(C, masked).key
    assert "sk-ant" not in "".join(p.value for p in c.pieces)


def test_date_and_time_shapes() -> None:
    for text in (
        "2026-12-01",
        "2026-12-01T08:15:00.123Z",
        "2026/12/01 08:15",
        "Monday, December 1, 2026",
        "Dec 1st 2026",
        "1 December 2026",
        "08:15",
        "8:15 pm",
        "23:59:59 UTC",
    ):
        assert mask_dates(f"at {text}.") == f"at {MASK}.", text
    assert mask_dates("version 2.1.332 and 10 items") == "version 2.1.332 and 10 items"
    assert system_text("x-anthropic-billing-header: cc_version=1; cch=2;\nYou are") == "You are"
