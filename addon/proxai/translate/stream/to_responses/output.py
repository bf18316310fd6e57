"""Pure builders of OpenAI Responses SSE events and items (no state).

docs/design/clients.md: ``response.created`` first; ``output_item.added`` and ``content_part.added`` before
any delta; dense unique ``output_index``; the same ids in added, done and the terminal snapshot;
the terminal event (``response.completed`` / ``response.incomplete`` / ``response.failed``)
carries the full output; no ``[DONE]``.
"""

from __future__ import annotations

from typing import Any

import orjson
from orjson import Fragment

from proxai.stream.sink import TokenUsage
from proxai.translate.call_shapes import call_item

from .state import Item


def event(etype: str, seq: int, fields: dict[str, Any]) -> bytes:
    payload = {"type": etype, "sequence_number": seq, **fields}
    return b"event: " + etype.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def delta_format(etype: str, item: Item) -> bytes:
    """An item's delta events as one ``bytes %`` format of ``(sequence_number, json(delta))``:
    everything else is constant within the item (the hot path serializes only those two; a
    ``%`` in the item id is escaped)."""
    e = etype.encode()
    mid = b',"item_id":' + orjson.dumps(item.item_id) + b',"output_index":%d' % item.output_index
    if item.summary:
        mid += b',"summary_index":0'
    elif item.kind != "tool":
        mid += b',"content_index":0'
    tail = b',"logprobs":[]}\n\n' if item.kind == "text" else b"}\n\n"
    head = b"event: " + e + b'\ndata: {"type":"' + e + b'","sequence_number":%d'
    return head + mid.replace(b"%", b"%%") + b',"delta":%b' + tail


def usage_out(usage: TokenUsage) -> dict[str, Any]:
    return {
        **(usage.extra or {}),
        "input_tokens": usage.input or 0,
        "input_tokens_details": {
            "cached_tokens": usage.cache_read or 0,
            "cache_write_tokens": usage.cache_write or 0,
        },
        "output_tokens": usage.output or 0,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning or 0},
        "total_tokens": usage.total or 0,
    }


def response(  # noqa: PLR0917
    id: str,
    model: str,
    created_at: int,
    status: str,
    output: list[dict[str, Any]],
    usage: TokenUsage | None = None,
    incomplete_reason: str | None = None,
) -> dict[str, Any]:
    return {
        "id": id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "error": None,
        "incomplete_details": None if incomplete_reason is None else {"reason": incomplete_reason},
        "instructions": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "metadata": {},
        "temperature": None,
        "top_p": None,
        "usage": None if usage is None else usage_out(usage),
    }


def part(item: Item, final: bool) -> dict[str, Any]:
    text = Fragment(item.json()) if final else ""
    if item.kind == "refusal":
        return {"type": "refusal", "refusal": text}
    if item.kind == "thinking":
        return {"type": "summary_text" if item.summary else "reasoning_text", "text": text}
    return {"type": "output_text", "text": text, "annotations": list(item.annotations), "logprobs": []}


def item_json(item: Item, final: bool) -> dict[str, Any]:
    status = "completed" if final else "in_progress"
    kind = item.kind
    if kind == "opaque":
        return dict(item.raw or {})
    if kind == "tool":
        assert item.call_id is not None and item.name is not None
        shape = item.shape
        if shape is not None and shape.item != "function_call":  # its input is read from the text
            return call_item(item.call_id, item.name, item.text(), shape, status=status, final=final)
        call = call_item(item.call_id, item.name, "", shape, status=status, final=final)
        if final:  # the arguments as they are (the key keeps its place)
            call["arguments"] = Fragment(item.json())
        return call
    if kind == "thinking":
        out: dict[str, Any] = {"id": item.item_id, "type": "reasoning", "summary": [], "status": status}
        if item.summary:
            out["summary"] = [part(item, True)] if final else []
        else:
            out["content"] = [part(item, True)] if final else []
        out["encrypted_content"] = item.signature if final else None
        return out
    if kind == "redacted_thinking":
        return {
            "id": item.item_id,
            "type": "reasoning",
            "summary": [],
            "encrypted_content": item.data,
            "status": status,
        }
    return {
        "id": item.item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [part(item, True)] if final else [],
    }
