"""Pure builders of Anthropic Messages SSE events. Every event has its ``event:`` line (data-only
events are dropped by the SDKs, docs/design/clients.md) and its payload's ``type`` equals it."""

from __future__ import annotations

from typing import Any

import orjson

from proxai.stream.sink import BlockKind, TokenUsage


def _event(name: bytes, payload: bytes) -> bytes:
    return b"event: " + name + b"\ndata: " + payload + b"\n\n"


def raw_event(payload: dict[str, Any]) -> bytes:
    """An event of no block as the upstream sent it (normalize mode: a type not modelled)."""
    return _event(str(payload.get("type")).encode(), orjson.dumps(payload))


def usage_out(usage: TokenUsage) -> dict[str, Any]:
    """Neutral usage -> Anthropic usage (``input_tokens`` excludes cache reads and writes; the
    writes' split by lifetime, when the upstream gave one, in ``cache_creation``)."""
    cr = usage.cache_read or 0
    cw = usage.cache_write or 0
    out: dict[str, Any] = {
        "input_tokens": max((usage.input or 0) - cr - cw, 0),
        "output_tokens": usage.output or 0,
    }
    if usage.cache_read is not None or usage.cache_write is not None:
        out["cache_creation_input_tokens"] = cw
        out["cache_read_input_tokens"] = cr
    if usage.cache_write_5m is not None or usage.cache_write_1h is not None:
        out["cache_creation"] = {
            "ephemeral_5m_input_tokens": usage.cache_write_5m or 0,
            "ephemeral_1h_input_tokens": usage.cache_write_1h or 0,
        }
    return out


def message_start(id: str, model: str, usage: TokenUsage | None) -> bytes:
    msg: dict[str, Any] = {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage_out(usage or TokenUsage()),
    }
    return _event(b"message_start", orjson.dumps({"type": "message_start", "message": msg}))


def block_start(index: int, kind: BlockKind, id: str | None, name: str | None, data: str | None) -> bytes:
    block: dict[str, Any]
    if kind == "tool":
        block = {"type": "tool_use", "id": id, "name": name, "input": {}}
    elif kind == "thinking":
        block = {"type": "thinking", "thinking": "", "signature": ""}
    elif kind == "redacted_thinking":
        block = {"type": "redacted_thinking", "data": data or ""}
    else:  # text and refusal text: visible refusal words are kept as a text block
        block = {"type": "text", "text": ""}
    return _event(
        b"content_block_start",
        orjson.dumps({"type": "content_block_start", "index": index, "content_block": block}),
    )


def raw_block_start(index: int, block: dict[str, Any]) -> bytes:
    """An opaque block's start as the upstream sent it, under the target index."""
    return _event(
        b"content_block_start",
        orjson.dumps({"type": "content_block_start", "index": index, "content_block": block}),
    )


def raw_block_delta(index: int, delta: dict[str, Any]) -> bytes:
    """An opaque delta as the upstream sent it, under the target index."""
    return _event(
        b"content_block_delta", orjson.dumps({"type": "content_block_delta", "index": index, "delta": delta})
    )


_DELTA_FIELDS = {
    "text": ("text_delta", "text"),
    "thinking": ("thinking_delta", "thinking"),
    "signature": ("signature_delta", "signature"),
    "args": ("input_json_delta", "partial_json"),
}


_DELTA_HEADS = {
    kind: (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":',
        b',"delta":{"type":"' + dtype.encode() + b'","' + field.encode() + b'":',
    )
    for kind, (dtype, field) in _DELTA_FIELDS.items()
}


DELTA_TAIL = b"}}\n\n"


def delta_frames(index: int) -> dict[str, bytes]:
    """Block ``index``'s delta events per delta kind, each one ``bytes %`` format of
    ``json(text)`` (the hot path serializes only the text; one format costs less than two
    concatenations)."""
    return {
        kind: (b"%b%d%b" % (head, index, mid)).replace(b"%", b"%%") + b"%b" + DELTA_TAIL
        for kind, (head, mid) in _DELTA_HEADS.items()
    }


def block_stop(index: int) -> bytes:
    return _event(b"content_block_stop", b'{"type":"content_block_stop","index":%d}' % index)


def message_delta(stop_reason: str, usage: TokenUsage) -> bytes:
    payload = {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": usage_out(usage),
    }
    return _event(b"message_delta", orjson.dumps(payload))


MESSAGE_STOP = _event(b"message_stop", b'{"type":"message_stop"}')
