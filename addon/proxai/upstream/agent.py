"""The fake upstream's agent mode: a model that runs one tool round trip per conversation.

Agent CLIs (Claude Code, Codex) and agent SDKs loop until the model stops calling tools, so a
scenario that answers every turn the same way never ends. The ``agent`` scenario reads the
conversation the client sent, the way a real model does (the state lives in the history, as
on the real APIs), and plays the next step:

1. the conversation does not end with a tool result: call ONE tool the client declared, with
   arguments valid for that tool's schema. The tool is the client's shell tool (a required
   string property ``command`` or ``cmd``: Claude Code's ``Bash``, Codex's ``exec_command``),
   or, when the last user message names a declared tool in backticks, that tool; the value of
   its first required string property is the last fenced code block of the last user message
   if it has one (a patch for Codex's ``apply_patch``), else its LAST backticked span
   (``Run `cat notes.txt` and tell me what it says``);
2. the conversation ends with a tool result: a final text answer quoting the result's last
   non-empty line (``The tool returned: hello``), stop reason ``end_turn``.

When the request asks for reasoning (Anthropic ``thinking`` enabled or adaptive, Chat
``reasoning_effort``, Responses ``reasoning.effort`` other than ``none``) a short thinking
block comes first. The output is cut at the request's token limit (``max_tokens``,
``max_completion_tokens``, ``max_output_tokens``): one non-empty fragment is one token, as
everywhere in the fake upstream, and a cut ends the message with stop reason ``max_tokens``.
docs/upstream.md, "Agent mode", describes it for users.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from .ops import BlockDelta, BlockStart, BlockStop, Finish, Op, Params, Start, Wait

SHELL_PROPERTIES = ("command", "cmd")
AGENT_THINKING = "The user wants me to run a tool first and then report what it returned."
ANSWER_PREFIX = "The tool returned: "
NO_TOOL_ANSWER = "I have no tool to run here, so I answer directly."
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_FENCED = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_GAP = 0.01


@dataclass(frozen=True, slots=True)
class Turn:
    """What the conversation asks of the model now."""

    tools: tuple[tuple[str, dict[str, Any]], ...]  # (name, JSON schema) as declared
    prompt: str  # the text of the last user message
    tool_result: str | None  # the result the conversation ends with, if any
    reasoning: bool
    max_tokens: int | None


# ---- reading the request, per protocol ------------------------------------------------------


def _text_of(content: object) -> str:
    """The text of a content value: a string, or the text of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    out.append(part["text"])
                elif "content" in part:
                    out.append(_text_of(part["content"]))
                elif isinstance(part.get("output"), str):
                    out.append(part["output"])
        return "\n".join(out)
    return ""


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _schema(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _only_results(content: object) -> bool:
    """An Anthropic user message that only carries tool results (not a new instruction)."""
    return isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _anthropic(body: dict[str, Any]) -> Turn:
    tools = tuple(
        (t["name"], _schema(t.get("input_schema")))
        for t in body.get("tools") or []
        if isinstance(t, dict) and isinstance(t.get("name"), str) and t.get("type") in (None, "custom")
    )
    turns = [
        m
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") in ("user", "assistant")
    ]
    result = None
    if turns and turns[-1].get("role") == "user" and isinstance(turns[-1].get("content"), list):
        results = [b for b in turns[-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            result = _text_of(results[-1].get("content"))
    users = [m for m in turns if m.get("role") == "user" and not _only_results(m.get("content"))]
    prompt = _text_of(users[-1].get("content")) if users else ""
    thinking = body.get("thinking")
    reasoning = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
    return Turn(tools, prompt, result, reasoning, _int(body.get("max_tokens")))


def _chat(body: dict[str, Any]) -> Turn:
    tools = tuple(
        (t["function"]["name"], _schema(t["function"].get("parameters")))
        for t in body.get("tools") or []
        if isinstance(t, dict)
        and isinstance(t.get("function"), dict)
        and isinstance(t["function"].get("name"), str)
    )
    turns = [
        m
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") not in ("system", "developer")
    ]
    result = _text_of(turns[-1].get("content")) if turns and turns[-1].get("role") == "tool" else None
    users = [m for m in turns if m.get("role") == "user"]
    prompt = _text_of(users[-1].get("content")) if users else ""
    effort = body.get("reasoning_effort")
    limit = _int(body.get("max_completion_tokens")) or _int(body.get("max_tokens"))
    return Turn(tools, prompt, result, isinstance(effort, str) and effort != "none", limit)


def _responses(body: dict[str, Any]) -> Turn:
    tools = tuple(
        (t["name"], _schema(t.get("parameters")))
        for t in body.get("tools") or []
        if isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("name"), str)
    )
    raw = body.get("input")
    items = (
        [{"role": "user", "content": raw}]
        if isinstance(raw, str)
        else [i for i in raw or [] if isinstance(i, dict)]
    )
    turns = [i for i in items if i.get("role") not in ("system", "developer")]
    result = None
    if turns and turns[-1].get("type") in ("function_call_output", "custom_tool_call_output"):
        result = _text_of(turns[-1].get("output"))
    users = [i for i in turns if i.get("role") == "user"]
    prompt = _text_of(users[-1].get("content")) if users else ""
    reasoning = body.get("reasoning")
    thinks = isinstance(reasoning, dict) and reasoning.get("effort") not in (None, "none")
    return Turn(tools, prompt, result, thinks, _int(body.get("max_output_tokens")))


_READERS = {"anthropic_messages": _anthropic, "openai_chat": _chat, "openai_responses": _responses}


def read_turn(protocol: str, body: dict[str, Any]) -> Turn:
    """The agent's view of a request body of ``protocol``."""
    return _READERS[protocol](body)


# ---- deciding --------------------------------------------------------------------------------


def _required_strings(schema: dict[str, Any]) -> list[str]:
    props = _schema(schema.get("properties"))
    required = schema.get("required")
    names = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    return [n for n in names if _schema(props.get(n)).get("type") == "string"]


def _value(schema: dict[str, Any]) -> object:
    """A value valid for a (simple) property schema: the first enum value, or a plain one."""
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    defaults: dict[object, object] = {"integer": 1, "number": 1, "boolean": False, "array": [], "object": {}}
    return defaults.get(kind, "x")


def choose_call(turn: Turn) -> tuple[str, dict[str, Any]] | None:
    """(tool name, arguments) for the first turn, or ``None`` when no declared tool fits."""
    spans = _BACKTICKED.findall(turn.prompt)
    fenced = _FENCED.findall(turn.prompt)
    value = fenced[-1] if fenced else spans[-1] if spans else turn.prompt.strip()
    declared = dict(turn.tools)
    named = [s for s in spans if s in declared]
    candidates = [(n, declared[n]) for n in named]
    candidates += [(n, s) for n, s in turn.tools if any(p in _required_strings(s) for p in SHELL_PROPERTIES)]
    candidates += [(n, s) for n, s in turn.tools if _required_strings(s)]
    for name, schema in candidates:
        strings = _required_strings(schema)
        if not strings:
            continue
        first = next((p for p in strings if p in SHELL_PROPERTIES), strings[0])
        props = _schema(schema.get("properties"))
        args: dict[str, Any] = {}
        for prop in schema.get("required") or []:
            if isinstance(prop, str):
                args[prop] = value if prop == first else _value(_schema(props.get(prop)))
        return name, args
    return None


def answer_for(result: str) -> str:
    lines = [line.strip() for line in result.splitlines() if line.strip()]
    return ANSWER_PREFIX + (lines[-1][:200] if lines else "(nothing)")


# ---- the script ------------------------------------------------------------------------------


def _pieces(text: str) -> list[str]:
    return re.findall(r"\s*\S+", text) or [text]


def _script(turn: Turn, params: Params) -> Iterator[Op]:
    yield Start()
    index = 0
    if turn.reasoning:
        yield BlockStart(index, "thinking")
        for piece in _pieces(AGENT_THINKING):
            yield BlockDelta(index, piece)
            yield Wait(_GAP)
        yield BlockStop(index, signature="EqQBagentSignatureForProxaiUpstreamTestsOnly==")
        index += 1
    call = choose_call(turn) if turn.tool_result is None else None
    if call is None:
        text = answer_for(turn.tool_result) if turn.tool_result is not None else NO_TOOL_ANSWER
        yield BlockStart(index, "text")
        for piece in _pieces(text):
            yield BlockDelta(index, piece)
            yield Wait(_GAP)
        yield BlockStop(index)
        yield Finish("end_turn")
        return
    name, args = call
    yield BlockStart(index, "tool", tool_id=f"{params.request_number:04d}00agentcall", name=name)
    arguments = orjson.dumps(args).decode()
    for i in range(0, len(arguments), 12):
        yield BlockDelta(index, arguments[i : i + 12])
        yield Wait(_GAP)
    yield BlockStop(index)
    yield Finish("tool_use")


def limited(ops: Iterator[Op], limit: int | None) -> Iterator[Op]:
    """``ops`` cut at ``limit`` output tokens (one non-empty fragment each): the open blocks
    close and the message ends with stop reason ``max_tokens``."""
    if limit is None:
        yield from ops
        return
    used = 0
    open_blocks: list[int] = []
    for op in ops:
        if isinstance(op, BlockDelta) and op.text:
            if used >= limit:
                for index in open_blocks:
                    yield BlockStop(index)
                yield Finish("max_tokens")
                return
            used += 1
        if isinstance(op, BlockStart):
            open_blocks.append(op.index)
        elif isinstance(op, BlockStop) and op.index in open_blocks:
            open_blocks.remove(op.index)
        yield op


def s_agent(params: Params) -> Iterator[Op]:
    """The scenario: read the request, play the next step of the round trip."""
    body = params.body if isinstance(params.body, dict) else {}
    turn = read_turn(params.protocol or "openai_chat", body)
    yield from limited(_script(turn, params), turn.max_tokens)
