"""Render a neutral ``RequestIR`` as an Anthropic Messages request body (docs/translation.md, "Requests").

- instructions -> top-level ``system``: a string for one part, text blocks for several;
- consecutive turns of one role are merged into one message, and in a user message the
  ``tool_result`` blocks come first (Anthropic's rule for answering ``tool_use``);
- tool calls -> ``tool_use`` blocks with the parsed argument object;
- tool results -> ``tool_result`` blocks; ``is_error`` is never synthesized from OpenAI
  input (OpenAI clients have no common way of marking a failed call);
- freeform (custom) tools -> tools with one string argument (``input``), their calls ->
  ``tool_use`` with ``{"input": text}``;
- ``system`` turns between other turns -> appended to the top-level ``system``;
- reasoning without a client ``max_tokens``: ``max_tokens`` is the route's default PLUS the
  thinking budget, so the answer keeps the default's room (the thinking counts against it);
- rejected: OpenAI file ids, structured output formats, temperature above 1, reasoning
  without a usable budget.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from proxai.core.errors import TranslationError
from proxai.translate import ir
from proxai.translate.reasoning import effort_to_budget


def render_request(req: ir.RequestIR, opts: ir.RequestOptions, dropped: dict[str, int]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    model = opts.model if opts.model is not None else req.model
    if model is not None:
        body["model"] = model
    thinking = _thinking(req, opts)
    if req.max_tokens is not None:
        max_tokens = req.max_tokens
    else:
        max_tokens = opts.default_max_tokens + thinking.get("budget_tokens", 0)
    body["max_tokens"] = max_tokens
    turns = [p for m in req.messages if m.role == "system" for p in m.parts if isinstance(p, ir.TextPart)]
    system = [p for p in (*req.system, *turns) if p.text]
    if len(system) == 1:
        body["system"] = system[0].text
    elif system:
        body["system"] = [{"type": "text", "text": p.text} for p in system]
    body["messages"] = _messages(tuple(m for m in req.messages if m.role != "system"), dropped)
    if req.temperature is not None:
        if req.temperature > 1:
            raise TranslationError("Anthropic accepts a temperature between 0 and 1", req.temperature_at)
        body["temperature"] = req.temperature
    if req.top_p is not None:
        body["top_p"] = req.top_p
    if req.stop:
        body["stop_sequences"] = list(req.stop)
    if req.stream:
        body["stream"] = True
    if req.json_schema is not None or req.json_object:
        raise TranslationError("Anthropic Messages has no structured output format", req.json_schema_at)
    if req.tools or req.web_search is not None:
        body["tools"] = [_tool(t) for t in req.tools] + _web_search(req.web_search)
    choice = _tool_choice(req.tool_choice, req.parallel_tool_calls)
    if choice is not None:
        body["tool_choice"] = choice
    if thinking:
        body["thinking"] = thinking
    if req.user:
        body["metadata"] = {"user_id": req.user}
    return body


def _thinking(req: ir.RequestIR, opts: ir.RequestOptions) -> dict[str, Any]:
    """The ``thinking`` setting ({} for none): an OpenAI effort becomes a budget that stays
    below the client's ``max_tokens``, or, without one, is added to the default."""
    r = req.reasoning
    if r is None:
        return {}
    if not r.enabled:
        return {"type": "disabled"}
    if r.budget is not None:
        return {"type": "enabled", "budget_tokens": r.budget}
    cap = req.max_tokens if req.max_tokens is not None else None
    return {"type": "enabled", "budget_tokens": effort_to_budget(r.effort, cap, r.at)}


def _messages(messages: tuple[ir.Message, ...], dropped: dict[str, int]) -> list[dict[str, Any]]:
    merged: list[tuple[str, list[ir.Part]]] = []
    for m in messages:
        if merged and merged[-1][0] == m.role:
            merged[-1][1].extend(m.parts)
        else:
            merged.append((m.role, list(m.parts)))
    out: list[dict[str, Any]] = []
    for role, raw_parts in merged:
        parts = raw_parts
        if role == "user":
            parts = [p for p in raw_parts if isinstance(p, ir.ToolResultPart)] + [
                p for p in raw_parts if not isinstance(p, ir.ToolResultPart)
            ]
        blocks = [b for p in parts if (b := _block(p, dropped)) is not None]
        if not blocks:
            continue
        if len(blocks) == 1 and blocks[0]["type"] == "text":
            out.append({"role": role, "content": blocks[0]["text"]})
        else:
            out.append({"role": role, "content": blocks})
    return out


def _block(p: ir.Part, dropped: dict[str, int]) -> dict[str, Any] | None:
    match p:
        case ir.TextPart():
            return {"type": "text", "text": p.text} if p.text else None
        case ir.RefusalPart():
            return {"type": "text", "text": p.text} if p.text else None
        case ir.ImagePart() | ir.DocumentPart():
            return _media(p)
        case ir.ToolCallPart():
            if p.kind == "custom":
                return {
                    "type": "tool_use",
                    "id": p.id,
                    "name": p.name,
                    "input": {ir.FREEFORM_ARGUMENT: p.arguments},
                }
            return {"type": "tool_use", "id": p.id, "name": p.name, "input": p.input}
        case ir.ToolResultPart():
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": p.call_id}
            content = [
                _media(c) if not isinstance(c, ir.TextPart) else {"type": "text", "text": c.text}
                for c in p.content
            ]
            if len(content) == 1 and content[0]["type"] == "text":
                block["content"] = content[0]["text"]
            elif content:
                block["content"] = [c for c in content if c["type"] != "text" or c["text"]]
            if p.is_error is not None:
                block["is_error"] = p.is_error
            return block
        case ir.ThinkingPart():
            if not p.signature:
                ir.count_dropped(dropped, p)
                return None
            return {"type": "thinking", "thinking": p.text, "signature": p.signature}
        case ir.RedactedThinkingPart():
            return {"type": "redacted_thinking", "data": p.data}
        case ir.UnreadPart():  # a strict reading raised instead
            raise TranslationError(p.reason, p.at)


def _media(p: ir.ImagePart | ir.DocumentPart) -> dict[str, Any]:
    if p.file_id is not None:
        if p.file_provider != "anthropic":
            raise TranslationError("an OpenAI file id cannot be used with Anthropic", p.at)
        kind = "image" if isinstance(p, ir.ImagePart) else "document"
        return {"type": kind, "source": {"type": "file", "file_id": p.file_id}}
    if isinstance(p, ir.ImagePart):
        if p.data is not None and p.media_type:
            return {"type": "image", "source": {"type": "base64", "media_type": p.media_type, "data": p.data}}
        if p.url:
            return {"type": "image", "source": {"type": "url", "url": p.url}}
        raise TranslationError("an image needs a URL or base64 data", p.at)
    doc: dict[str, Any]
    if p.text is not None:
        doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": p.text}}
    elif p.data is not None and p.media_type == "application/pdf":
        doc = {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": p.data},
        }
    elif p.data is not None and p.media_type is not None and p.media_type.startswith("text/"):
        try:
            text = base64.b64decode(p.data, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise TranslationError("a text file must be base64 of UTF-8 text", p.at) from None
        doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}
    elif p.url:
        doc = {"type": "document", "source": {"type": "url", "url": p.url}}
    else:
        raise TranslationError(
            f"Anthropic documents are PDF or text; {p.media_type or 'this file'} cannot be sent", p.at
        )
    if p.filename:
        doc["title"] = p.filename
    return doc


def _tool(t: ir.ToolDef) -> dict[str, Any]:
    if t.kind == "custom":
        return {
            "name": t.name,
            "description": ir.freeform_description(t),
            "input_schema": ir.freeform_parameters(),
        }
    out: dict[str, Any] = {"name": t.name}
    if t.description:
        out["description"] = t.description
    out["input_schema"] = t.parameters if t.parameters is not None else {"type": "object", "properties": {}}
    return out


def _web_search(ws: ir.WebSearch | None) -> list[dict[str, Any]]:
    """The client's web search as Anthropic's ``web_search_20250305`` server tool."""
    if ws is None:
        return []
    out: dict[str, Any] = {"type": "web_search_20250305", "name": "web_search"}
    if ws.allowed_domains:
        out["allowed_domains"] = list(ws.allowed_domains)
    if ws.blocked_domains:
        out["blocked_domains"] = list(ws.blocked_domains)
    if ws.user_location is not None:
        out["user_location"] = ws.user_location
    if ws.max_uses is not None:
        out["max_uses"] = ws.max_uses
    return [out]


def _tool_choice(tc: ir.ToolChoice | None, parallel: bool | None) -> dict[str, Any] | None:
    out: dict[str, Any]
    if tc is None:
        if parallel is False:
            return {"type": "auto", "disable_parallel_tool_use": True}
        return None
    if tc.mode == "none":
        return {"type": "none"}
    if tc.mode == "tool":
        out = {"type": "tool", "name": tc.name}
    elif tc.mode == "required":
        out = {"type": "any"}
    else:
        out = {"type": "auto"}
    if parallel is False:
        out["disable_parallel_tool_use"] = True
    return out
