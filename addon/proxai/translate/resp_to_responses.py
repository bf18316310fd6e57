"""Render a neutral ``ResponseIR`` as a non-streamed Responses ``response`` (docs/translation.md).

Output positions: consecutive text and refusal parts form ONE assistant message item (text parts
first, the refusal inside the same message; Responses has no message-level refusal field); tool
calls are sibling ``function_call`` items after it, never inside ``message.content``; a reply with
only tool calls has only tool-call items. Thinking -> a ``reasoning`` item whose summary is the
text (the part Responses clients show by default) and whose ``encrypted_content`` is the
signature; redacted thinking -> a ``reasoning`` item with ``encrypted_content`` only. Item ids
follow the stream translator's allocator (``<prefix>_<response id stem>_<n>``); a tool call keeps
its source id as item id; a call of a tool the client declared in another shape (freeform,
namespaced, its tool search) goes back in that shape. ``status`` / ``incomplete_details`` come
from the shared stop table.
"""

from __future__ import annotations

from typing import Any

from proxai.stream import stop_reasons
from proxai.translate import ir
from proxai.translate.call_shapes import CallShapes, call_item


def render_response(resp: ir.ResponseIR, created: int, shapes: CallShapes | None = None) -> dict[str, Any]:
    """``shapes``: the client's tools offered in another shape; their calls go back as declared
    (proxai.translate.call_shapes)."""
    shapes = shapes or {}
    stem = resp.id.split("_", 1)[-1] or "proxai"
    n = 0

    def next_id(prefix: str) -> str:
        nonlocal n
        out = f"{prefix}_{stem}_{n}"
        n += 1
        return out

    has_refusal = any(isinstance(p, ir.RefusalPart) for p in resp.parts)
    status, reason = stop_reasons.to_responses(resp.stop, has_refusal=has_refusal)
    item_status = "completed" if status == "completed" else "incomplete"
    output: list[dict[str, Any]] = []
    message: dict[str, Any] | None = None
    parts = [p for p in resp.parts if not (isinstance(p, ir.TextPart) and not p.text)] or resp.parts
    for p in parts:
        if isinstance(p, ir.TextPart | ir.RefusalPart):
            if message is None:
                message = {
                    "id": next_id("msg"),
                    "type": "message",
                    "status": item_status,
                    "role": "assistant",
                    "content": [],
                }
                output.append(message)
            if isinstance(p, ir.TextPart):
                message["content"].append(
                    {"type": "output_text", "text": p.text, "annotations": [], "logprobs": []}
                )
            else:
                message["content"].append({"type": "refusal", "refusal": p.text})
            continue
        message = None
        match p:
            case ir.ToolCallPart():
                if p.kind == "custom":  # a Responses upstream's own freeform call
                    output.append(
                        {"id": p.id, "type": "custom_tool_call", "status": "completed", "call_id": p.id,
                         "name": p.name, "input": p.arguments}
                    )  # fmt: skip
                else:
                    output.append(
                        call_item(p.id, p.name, p.arguments, shapes.get(p.name), status="completed")
                    )
            case ir.ThinkingPart():
                output.append(
                    {"id": next_id("rs"), "type": "reasoning",
                     "summary": [{"type": "summary_text", "text": p.text}],
                     "encrypted_content": p.signature, "status": "completed"}
                )  # fmt: skip
            case ir.RedactedThinkingPart():
                output.append(
                    {"id": next_id("rs"), "type": "reasoning", "summary": [], "encrypted_content": p.data,
                     "status": "completed"}
                )  # fmt: skip
            case _:
                pass
    return {
        "id": resp.id,
        "object": "response",
        "created_at": resp.created if resp.created is not None else created,
        "status": status,
        "error": None,
        "incomplete_details": None if reason is None else {"reason": reason},
        "model": resp.model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "metadata": {},
        "temperature": None,
        "top_p": None,
        "usage": None if resp.usage is None else usage_json(resp.usage),
    }


def usage_json(u: ir.UsageIR) -> dict[str, Any]:
    details: dict[str, Any] = {"cached_tokens": u.cache_read}
    if u.cache_write:
        details["cache_write_tokens"] = u.cache_write
    return {
        "input_tokens": u.input_tokens,
        "input_tokens_details": details,
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens or 0},
        "total_tokens": u.input_tokens + u.output_tokens,
    }
