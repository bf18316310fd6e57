"""Text rendering of a request's conversation, for the "ProxAI" view (``proxai.outputs.view_text``):
the model and its parameters, the instructions, each turn and the tools offered, as the protocol's
one request reader read them (docs/design/request-reading.md).

Rules in docs/design/visibility.md ("The view"). Pure: parsed JSON in, lines of text out.
``view_text.flow_request_lines`` imports this module with the first request it shows, so the
request reader (``proxai.translate``, pydantic) stays out of a proxy whose requests nobody views
(docs/design/footprint.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from proxai.core.model import Protocol
from proxai.outputs.verdict import client_protocol
from proxai.outputs.view_text import MAX_INLINE, _compact, _dash, _section
from proxai.translate import ir
from proxai.translate.request import read_request

#: each protocol's names of the parts the view labels by their wire type
_WIRE = {
    "anthropic_messages": {
        "image": "image",
        "document": "document",
        "thinking": "thinking",
        "call": "tool_use",
    },
    "openai_chat": {"image": "image_url", "document": "file", "thinking": "reasoning", "call": "tool_call"},
    "openai_responses": {
        "image": "input_image",
        "document": "input_file",
        "thinking": "reasoning",
        "call": "function_call",
    },
}


def _indent(lines: list[str], by: str = "  ") -> list[str]:
    return [by + line for line in lines]


def _unread_line(p: ir.UnreadPart) -> str:
    kind = p.raw.get("type") if isinstance(p.raw, Mapping) else None
    return f"[{kind if isinstance(kind, str) else 'unread'}] {_compact(p.raw)}"


def _part_lines(p: ir.Part, wire: Mapping[str, str]) -> list[str]:
    """Lines for one part of a turn (the protocol's one reader read it: docs/design/request-reading.md)."""
    match p:
        case ir.TextPart():
            return p.text.splitlines() or [""]
        case ir.RefusalPart():
            return [f"[refusal] {p.text}"]
        case ir.ThinkingPart():
            return [f"[{wire['thinking']}]", *p.text.splitlines()]
        case ir.RedactedThinkingPart():
            return ["[redacted_thinking]"]
        case ir.ImagePart():
            return [f"[{wire['image']}]"]
        case ir.DocumentPart():
            return [f"[{wire['document']}]"]
        case ir.ToolCallPart():
            args = _compact(p.input) if wire["call"] == "tool_use" else p.arguments
            return [f"[{wire['call']} {p.name} id={p.id}] {args}"]
        case ir.ToolResultPart():
            head = f"[tool_result id={p.call_id}{' error' if p.is_error else ''}]"
            return [head, *_indent([line for c in p.content for line in _part_lines(c, wire)])]
        case ir.UnreadPart():
            return [_unread_line(p)]


def _item_lines(p: ir.Part, protocol: str, wire: Mapping[str, str]) -> list[str] | None:
    """A part that is a message of its own (a Chat ``role: tool`` message, a Responses item)."""
    inner = (
        [line for c in p.content for line in _part_lines(c, wire)] if isinstance(p, ir.ToolResultPart) else []
    )
    match p:
        case ir.ToolResultPart() if protocol == "openai_chat":
            return [f"tool (tool_call_id={p.call_id}):", *_indent(inner)]
        case ir.ToolResultPart():
            return [f"[function_call_output call_id={p.call_id}]", *_indent(inner)]
        case ir.ToolCallPart():
            kind = "custom_tool_call" if p.kind == "custom" else "function_call"
            return [f"[{kind} {p.name} call_id={p.id}] {p.arguments}"]
        case ir.ThinkingPart():
            return ["[reasoning]", *_indent(p.text.splitlines())]
        case ir.RedactedThinkingPart():
            return ["[reasoning]"]
        case ir.UnreadPart():
            return [_unread_line(p)]
    return None


def _position(at: str) -> int:
    """The index of the turn a field stands in (``messages[3].content`` -> 3)."""
    head, _, rest = at.partition("[")
    number = rest.partition("]")[0]
    return int(number) if head in ("messages", "input") and number.isdigit() else -1


def _turn_lines(req: ir.RequestIR, protocol: str) -> tuple[list[str], list[list[str]]]:
    """(the instructions' lines, each turn's lines): instructions that stood among the turns (a
    Chat or Responses system/developer message) are shown at their place."""
    wire = _WIRE[protocol]
    system: list[str] = []
    turns: list[tuple[int, list[str]]] = []
    inline: dict[int, list[str]] = {}
    for t in req.system:
        where = _position(t.at)
        if where < 0:
            system.extend(t.text.splitlines() or [""])
        else:
            inline.setdefault(where, []).extend(t.text.splitlines() or [""])
    turns.extend((where, ["system:", *_indent(lines)]) for where, lines in inline.items())
    for m in req.messages:
        item = _item_lines(m.item, protocol, wire) if m.item is not None else None
        if item is None:
            item = [f"{m.role}:", *_indent([line for p in m.parts for line in _part_lines(p, wire)])]
        turns.append((_position(m.at), item))
    turns.sort(key=lambda t: t[0])
    return system, [lines for _, lines in turns]


def _tool_lines(req: ir.RequestIR) -> list[str]:
    """One line per tool offered, in the body's order: name, kind, the description's first line."""
    lines: list[tuple[str, str]] = []
    for t in req.tools:
        line = t.name + (f" ({t.kind})" if t.kind != "function" else "")
        if t.description:
            line += f": {t.description.splitlines()[0][:MAX_INLINE]}"
        lines.append((t.at, line))
    if req.web_search is not None:
        lines.append((req.web_search.at, f"{req.web_search.name} (web_search)"))
    lines.extend(
        (x.at, f"{x.name or x.what} ({x.what}, left out when translated: {x.why})") for x in req.left_out
    )
    return [line for _, line in sorted(lines, key=lambda x: _tool_position(x[0]))]


def _tool_position(at: str) -> tuple[int, ...]:
    numbers = [int(n) for n in re.findall(r"\[(\d+)\]", at)]
    return (0 if at.startswith("tools[") else 1, *numbers)


def request_lines(protocol: str | None, body: Any, meta: Mapping[str, Any] | None = None) -> list[str]:
    """The conversation summary of a request body (parsed JSON) in one of the three protocols."""
    if not isinstance(body, Mapping):
        return [f"ProxAI request · {protocol or '?'}", "(the body is not a JSON object)"]
    head = [f"ProxAI request · {protocol or '?'}"]
    head.append(f"model: {_dash(body.get('model'))} · stream: {'true' if body.get('stream') else 'false'}")
    params = [
        f"{k} {body[k]}"
        for k in (
            "max_tokens",
            "max_completion_tokens",
            "max_output_tokens",
            "temperature",
            "top_p",
            "previous_response_id",
        )
        if body.get(k) is not None
    ]
    if isinstance(body.get("tool_choice"), (str, Mapping)):
        params.append(f"tool_choice {_compact(body['tool_choice'])}")
    if isinstance(body.get("reasoning"), Mapping):
        params.append(f"reasoning {_compact(body['reasoning'])}")
    if isinstance(body.get("thinking"), Mapping):
        params.append(f"thinking {_compact(body['thinking'])}")
    if params:
        head.append("params: " + " · ".join(params))
    if meta:
        client = client_protocol(meta)
        if client and client != protocol:
            head.append(f"translated: client speaks {client}, upstream speaks {protocol}")
    lines = head
    if protocol not in _WIRE:
        return [*lines, "(the protocol is not known: the body is not read)"]
    req = read_request(body, Protocol(protocol), strict=False)
    system, messages = _turn_lines(req, protocol)
    if system:
        lines += [_section("system"), *system]
    lines.append(_section(f"messages ({len(messages)})"))
    for i, msg in enumerate(messages, 1):
        first, *rest = msg or [""]
        lines.append(f"[{i}] {first}")
        lines.extend(rest)
    tools = _tool_lines(req)
    if tools:
        lines.append(_section(f"tools ({len(tools)})"))
        lines.extend(tools)
    return lines
