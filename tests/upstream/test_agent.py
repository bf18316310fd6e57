# ruff: noqa: E501 - request bodies are kept on one line each
"""The fake upstream's agent mode and validation profiles (docs/upstream.md, "Agent mode",
"Validation profiles"), driven by the real ``anthropic`` and ``openai`` SDKs: a tool call of a
declared tool with schema-valid arguments, then after its result a final answer; the token
limit honoured; refusals in each real server's shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from proxai.upstream import FakeUpstream
from proxai.upstream.agent import AGENT_THINKING, Turn, choose_call, read_turn
from proxai.upstream.profiles import check

PROMPT = "Please run `cat notes.txt` and tell me what it says."
SHELL = {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
         "required": ["command"]}  # fmt: skip
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "f"]}},
           "required": ["city", "unit"]}  # fmt: skip


@pytest.fixture(scope="module")
def up() -> Iterator[FakeUpstream]:
    with FakeUpstream(time_scale=0, scenario="agent") as server:
        yield server


def test_choose_prefers_the_shell_tool_and_fills_required_fields() -> None:
    turn = Turn((("get_weather", WEATHER), ("Bash", SHELL)), PROMPT, None, False, None)
    assert choose_call(turn) == ("Bash", {"command": "cat notes.txt"})


def test_choose_takes_a_tool_named_in_backticks() -> None:
    turn = Turn(
        (("Bash", SHELL), ("get_weather", WEATHER)), "Use `get_weather` for `Paris`", None, False, None
    )
    assert choose_call(turn) == ("get_weather", {"city": "Paris", "unit": "celsius"})


def test_no_fitting_tool_is_no_call() -> None:
    assert choose_call(Turn((("noop", {"type": "object"}),), PROMPT, None, False, None)) is None


def test_read_turn_sees_the_tool_result_per_protocol() -> None:
    a = read_turn("anthropic_messages", {"messages": [
        {"role": "user", "content": PROMPT},
        {"role": "system", "content": "env"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "hi"}]}]},
    ], "thinking": {"type": "adaptive"}, "max_tokens": 9})  # fmt: skip
    assert (a.prompt, a.tool_result, a.reasoning, a.max_tokens) == (PROMPT, "hi", True, 9)
    c = read_turn("openai_chat", {"messages": [{"role": "user", "content": PROMPT}, {"role": "tool", "content": "x"}],
                                  "max_completion_tokens": 5})  # fmt: skip
    assert (c.tool_result, c.reasoning, c.max_tokens) == ("x", False, 5)
    r = read_turn("openai_responses", {"input": [{"role": "user", "content": [{"type": "input_text", "text": PROMPT}]},
                                                 {"type": "function_call_output", "call_id": "c", "output": "y"}],
                                       "reasoning": {"effort": "low"}})  # fmt: skip
    assert (r.prompt, r.tool_result, r.reasoning) == (PROMPT, "y", True)


def test_anthropic_round_trip(up: FakeUpstream) -> None:
    client = anthropic.Anthropic(base_url=up.url, api_key="x", max_retries=0)
    tools: list[Any] = [{"name": "Bash", "input_schema": SHELL}]
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    think: Any = {"type": "enabled", "budget_tokens": 1024}
    with client.messages.stream(
        model="claude-x", max_tokens=2000, tools=tools, messages=messages, thinking=think
    ) as s:
        first = s.get_final_message()
    assert first.stop_reason == "tool_use"
    assert [b.type for b in first.content] == ["thinking", "tool_use"]
    assert first.content[0].thinking == AGENT_THINKING  # type: ignore[union-attr]
    call = first.content[1]
    assert call.type == "tool_use" and call.name == "Bash" and call.input == {"command": "cat notes.txt"}
    messages += [
        {"role": "assistant", "content": first.content},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "line one\nmarker-7\n"}],
        },
    ]
    second = client.messages.create(model="claude-x", max_tokens=2000, tools=tools, messages=messages)
    assert second.stop_reason == "end_turn"
    assert [b.text for b in second.content if b.type == "text"] == ["The tool returned: marker-7"]


def test_chat_round_trip(up: FakeUpstream) -> None:
    client = openai.OpenAI(base_url=f"{up.url}/v1", api_key="x", max_retries=0)
    tools: list[Any] = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
    messages: list[Any] = [{"role": "user", "content": "Weather in `Oslo`?"}]
    with client.chat.completions.stream(model="gpt-x", messages=messages, tools=tools) as s:
        first = s.get_final_completion()
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = (choice.message.tool_calls or [])[0]
    assert call.function.name == "get_weather"  # type: ignore[union-attr]
    assert json.loads(call.function.arguments) == {"city": "Oslo", "unit": "celsius"}  # type: ignore[union-attr]
    messages += [
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "9 C"},
    ]
    second = client.chat.completions.create(model="gpt-x", messages=messages, tools=tools)
    assert second.choices[0].message.content == "The tool returned: 9 C"


def test_responses_round_trip_and_token_limit(up: FakeUpstream) -> None:
    client = openai.OpenAI(base_url=f"{up.url}/v1", api_key="x", max_retries=0)
    tools: list[Any] = [{"type": "function", "name": "exec_command", "parameters": {
        "type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}, "strict": False}]  # fmt: skip
    with client.responses.stream(model="gpt-x", input=PROMPT, tools=tools) as s:
        first = s.get_final_response()
    call = first.output[0]
    assert call.type == "function_call" and call.name == "exec_command"
    assert json.loads(call.arguments) == {"cmd": "cat notes.txt"}
    history: list[Any] = [{"role": "user", "content": PROMPT}, call.model_dump(exclude_none=True),
                          {"type": "function_call_output", "call_id": call.call_id, "output": "hello"}]  # fmt: skip
    done = client.responses.create(model="gpt-x", input=history, tools=tools)
    assert done.output_text == "The tool returned: hello"
    cut = client.responses.create(model="gpt-x", input=history, tools=tools, max_output_tokens=2)
    assert cut.status == "incomplete" and cut.output_text == "The tool"  # two tokens


def test_profiles_refuse_what_real_servers_refuse() -> None:
    assert check("openai", "openai_chat", {"model": "m", "messages": [], "thinking": {}}) == (400, {"error": {
        "message": "Unrecognized request argument supplied: thinking", "type": "invalid_request_error",
        "param": "thinking", "code": None}})  # fmt: skip
    assert check("openai", "openai_chat", {"model": "gpt-5", "messages": [], "verbosity": "low"}) is None
    refused = check("vllm", "openai_chat", {"model": "m", "messages": [], "verbosity": "low"})
    assert refused is not None and "verbosity" in refused[1]["message"]
    custom = check("vllm", "openai_chat", {"model": "m", "messages": [], "tools": [{"type": "custom"}]})
    assert custom is not None and "tools.0.type" in custom[1]["message"]
    big = check("vllm", "openai_chat", {"model": "m", "messages": [], "max_tokens": 128000})
    assert big is not None and "128000" in big[1]["message"]
    old = check(
        "openai", "openai_responses", {"model": "gpt-4o", "input": "x", "reasoning": {"effort": "low"}}
    )
    assert old is not None and old[1]["error"]["code"] == "unsupported_parameter"
    budget = check("openai", "anthropic_messages", {
        "model": "c", "messages": [], "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 4096}})  # fmt: skip
    assert budget is not None and "budget_tokens" in budget[1]["error"]["message"]
    extra = check("openai", "anthropic_messages", {"model": "c", "messages": [], "max_tokens": 9, "n": 2})
    assert extra == (400, {"type": "error", "error": {"type": "invalid_request_error",
                                                      "message": "n: Extra inputs are not permitted"}})  # fmt: skip


def test_a_profiled_server_answers_the_refusal_with_the_sdk_error() -> None:
    with FakeUpstream(time_scale=0, profile="vllm") as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="Extra inputs are not permitted"):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                           extra_body={"verbosity": "low"})  # fmt: skip
