"""Render a neutral ``ResponseIR`` as a non-streamed Anthropic ``Message`` (docs/translation.md,
"JSON responses").

Text and refusal parts become text blocks; a refusal sets ``stop_reason: "refusal"`` and
``stop_details`` with the visible refusal text as ``explanation`` and no category (Chat has
none, so none is invented). Tool calls become ``tool_use`` blocks whose ``input`` is the parsed
argument object: arguments that are not a JSON object fail the translation instead of
becoming ``{}``. Custom (freeform) tool calls cannot be expressed and are rejected. Usage:
Anthropic's ``input_tokens`` excludes cache reads and writes.
"""

from __future__ import annotations

from typing import Any

from proxai.core.errors import TranslationError
from proxai.core.model import StopClass
from proxai.stream import stop_reasons
from proxai.translate import ir


def render_response(resp: ir.ResponseIR, created: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    refusal: list[str] = []
    parts = [p for p in resp.parts if not (isinstance(p, ir.TextPart) and not p.text)] or resp.parts
    for p in parts:
        match p:
            case ir.TextPart():
                content.append({"type": "text", "text": p.text})
            case ir.RefusalPart():
                refusal.append(p.text)
                content.append({"type": "text", "text": p.text})
            case ir.ThinkingPart():
                content.append({"type": "thinking", "thinking": p.text, "signature": p.signature or ""})
            case ir.RedactedThinkingPart():
                content.append({"type": "redacted_thinking", "data": p.data})
            case ir.ToolCallPart():
                if p.kind == "custom":
                    raise TranslationError(
                        "Anthropic Messages cannot express a custom (freeform) tool call", p.at
                    )
                if not isinstance(p.input, dict):
                    raise TranslationError("tool call arguments are not a valid JSON object", p.at)
                content.append({"type": "tool_use", "id": p.id, "name": p.name, "input": p.input})
            case _:
                raise TranslationError("this part cannot appear in an Anthropic response", p.at)
    stop = StopClass.REFUSAL if refusal and resp.stop is not StopClass.TOOL_USE else resp.stop
    body: dict[str, Any] = {
        "id": resp.id,
        "type": "message",
        "role": "assistant",
        "model": resp.model,
        "content": content,
        "stop_reason": stop_reasons.to_anthropic(stop),
        "stop_sequence": resp.stop_sequence if stop is StopClass.STOP_SEQUENCE else None,
        "usage": _usage(resp.usage),
    }
    if refusal and stop is StopClass.REFUSAL:
        body["stop_details"] = {"type": "refusal", "category": None, "explanation": "".join(refusal)}
    return body


def _usage(u: ir.UsageIR | None) -> dict[str, Any]:
    if u is None:
        return {"input_tokens": 0, "output_tokens": 0}
    return {
        "input_tokens": max(u.input_tokens - u.cache_read - u.cache_write, 0),
        "output_tokens": u.output_tokens,
        "cache_creation_input_tokens": u.cache_write,
        "cache_read_input_tokens": u.cache_read,
    }
