"""A real agent run saved as a flow file: the real ``anthropic`` and ``openai`` SDKs through a real
mitmdump (with the ProxAI addon) against the fake upstream.

The run has what a run report must show: two multi-turn agent loops (a tool call, its result, the
final answer; Anthropic with thinking, Chat streamed), a Chat client translated to the Anthropic
upstream (both sides kept), a rate-limited call (HTTP 429), a reply cut by its token limit, and a
tool call the guard ended after it stalled. The prompts carry hostile text: HTML that must stay
text, and the client's own API key, which the report must redact (its echo of the header).

Model names are real ones (priced by genai-prices); the ``x-proxai-scenario`` header picks what
the fake upstream plays.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from proxai.upstream import FakeUpstream
from tests.e2e.harness import Mitmdump, anthropic_client, openai_client, running_mitmdump, tag

SCENARIO = "x-proxai-scenario"
HOSTILE = '<script>window.__pwned = 1</script><img src="http://127.0.0.1:9/x.png" onerror="window.__pwned=2">'
# the Anthropic client's key as the harness sends it in x-api-key: learned there, removed everywhere
ANTHROPIC_KEY = "sk-ant-proxai-test-not-a-secret"
NOTES = "hello from notes.txt"
SHELL_TOOL: dict[str, Any] = {
    "name": "bash",
    "description": "Run a shell command",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}
CHAT_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command",
        "parameters": SHELL_TOOL["input_schema"],
    },
}
TOOL_STALL = 1.0
USAGE: dict[str, Any] = {"stream_options": {"include_usage": True}}  # a streamed Chat reply with usage
ROUTES = """
[[route]]
name = "chat-on-anthropic"
match = {{ path = "/v1/chat/completions", model = "xlate-*" }}
upstream = "{upstream}"
protocol = "anthropic_messages"
model = "claude-haiku-4-5"
"""


@dataclass(frozen=True)
class MadeRun:
    flow_file: Path
    tag: str
    final_answers: dict[str, str]  # what each agent loop's SDK returned last


def anthropic_loop(md: Mitmdump, t: str, command: str = "cat notes.txt") -> str:
    """Two turns: the model calls ``bash`` with ``command``, the client answers with the tool's output."""
    client = anthropic_client(md, t, default_headers={SCENARIO: "agent"})
    prompt = f"My key is {ANTHROPIC_KEY}. {HOSTILE} Run `{command}` and tell me what it says"
    messages: list[Any] = [{"role": "user", "content": prompt}]
    kw: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 2048,
        "tools": [SHELL_TOOL],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    with client.messages.stream(messages=messages, **kw) as s:
        first = s.get_final_message()
    call = next(b for b in first.content if b.type == "tool_use")
    assert call.name == "bash" and call.input == {"command": command}
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": NOTES + "\n" + HOSTILE}],
        },
    ]
    with client.messages.stream(messages=messages, **kw) as s:
        final = s.get_final_message()
    text = "".join(b.text for b in final.content if b.type == "text")
    return text


def _chat_loop(md: Mitmdump, t: str, model: str, folder: str) -> str:
    """The same loop as a streamed Chat client (``model`` xlate-* goes through the translation)."""
    client = openai_client(md, t, default_headers={SCENARIO: "agent"})
    messages: list[Any] = [{"role": "user", "content": f"Run `ls {folder}` and tell me what is there"}]
    with client.chat.completions.stream(model=model, messages=messages, tools=[CHAT_TOOL], **USAGE) as s:
        first = s.get_final_completion()
    msg = first.choices[0].message
    assert msg.tool_calls, first
    call = msg.tool_calls[0]
    messages += [
        {
            "role": "assistant",
            "content": msg.content,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "content": "a.txt\nb.txt"},
    ]
    with client.chat.completions.stream(model=model, messages=messages, tools=[CHAT_TOOL], **USAGE) as s:
        final = s.get_final_completion()
    return final.choices[0].message.content or ""


def make_run(workdir: Path) -> MadeRun:
    """Play the run through a fresh mitmdump; returns its flow file once every flow is saved."""
    with FakeUpstream(time_scale=0.05) as up:
        routes = workdir / "routes.toml"
        routes.write_text(ROUTES.format(upstream=up.url))
        options = {"proxai_routes": str(routes), "proxai_tool_stall": str(TOOL_STALL)}
        with running_mitmdump(up.url, workdir=workdir / "mitm", options=options) as md:
            t = tag()
            answers = {
                "anthropic": anthropic_loop(md, t),
                "chat": _chat_loop(md, t, "gpt-4o", "/tmp"),
                "translated": _chat_loop(md, t, "xlate-agent", "/srv"),
            }
            chat = openai_client(md, t, default_headers={SCENARIO: "rate_limit"})
            with pytest.raises(openai.RateLimitError):
                chat.chat.completions.create(
                    model="gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True
                )
            client = anthropic_client(md, t, default_headers={SCENARIO: "max_tokens"})
            cut = client.messages.create(
                model="claude-sonnet-4-6", max_tokens=256, messages=[{"role": "user", "content": "hi"}]
            )
            assert cut.stop_reason == "max_tokens"
            stall = anthropic_client(md, t, default_headers={SCENARIO: "tool_stall", "x-proxai-stall": "40"})
            stream = stall.messages.stream(
                model="claude-sonnet-4-6",
                max_tokens=256,
                tools=[SHELL_TOOL],
                messages=[{"role": "user", "content": "weather?"}],
            )
            with pytest.raises(anthropic.APIError), stream as s:  # the guard's error event ends it
                s.get_final_message()
            md.wait_flows(t, 9)
    return MadeRun(md.flow_path, t, answers)
