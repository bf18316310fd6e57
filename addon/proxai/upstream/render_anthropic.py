"""Render fake-upstream scenarios as Anthropic Messages (``/v1/messages``).

The wire shapes follow the real API (docs "Streaming Messages"): ``message_start`` carrying
the message with input-side usage (cache tokens included), a ``ping`` after it and as
keepalive, ``content_block_start`` / ``content_block_delta`` (``text_delta``,
``thinking_delta``, ``signature_delta``, ``input_json_delta``) / ``content_block_stop``
with dense indexes, ``message_delta`` with the stop reason and CUMULATIVE usage, and
``message_stop``. Errors are ``event: error`` with ``{"type":"error","error":{...}}``; HTTP
errors carry the same object (the real prompt-too-long wording included).

Rules: docs/design/upstream.md, "Wire rules each renderer keeps": Anthropic identifies blocks by
a dense per-stream ``index``; errors use the provider's own words (prompt too long).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from proxai.core.errors.providers import anthropic_error, auth_error, http_headers
from proxai.core.model import Protocol

from .ops import (
    Abort,
    Action,
    BlockDelta,
    BlockStart,
    BlockStop,
    ErrorName,
    Fail,
    Finish,
    HugeLine,
    Malformed,
    Op,
    Params,
    Reset,
    Respond,
    Start,
    Wait,
    echo_headers,
)
from .transcript import Block, Transcript
from .wire import delay, filler, sse

PING = sse({"type": "ping"}, "ping")


class AnthropicRenderer:
    def __init__(self, params: Params) -> None:
        self.params = params
        self.message_id = f"msg_01FakeUpstream{params.request_number:08d}"
        self.request_id = f"req_01FakeUpstream{params.request_number:08d}"

    # ---- shapes ----

    def tool_id(self, block: Block) -> str:
        return "toolu_01" + block.tool_id

    def _usage(self, t: Transcript, output_tokens: int) -> dict[str, Any]:
        s = t.start
        return {
            "input_tokens": s.input_tokens,
            "cache_creation_input_tokens": s.cache_write,
            "cache_read_input_tokens": s.cache_read,
            "output_tokens": output_tokens,
        }

    def _usage_start(self, t: Transcript) -> dict[str, Any]:
        return {**self._usage(t, 1), "service_tier": "standard"}

    def _usage_final(self, t: Transcript) -> dict[str, Any]:
        return self._usage(t, t.output_tokens)

    def _message(self, t: Transcript, content: list[dict[str, Any]], usage: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.params.model,
            "content": content,
            "stop_reason": t.stop,
            "stop_sequence": None,
            "usage": usage,
        }

    def _block_start(self, block: Block) -> dict[str, Any]:
        match block.kind:
            case "text" | "refusal":
                return {"type": "text", "text": ""}
            case "thinking":
                return {"type": "thinking", "thinking": "", "signature": ""}
            case "redacted_thinking":
                return {"type": "redacted_thinking", "data": block.data}
            case "tool":
                return {"type": "tool_use", "id": self.tool_id(block), "name": block.name, "input": {}}

    def _delta(self, block: Block, text: str) -> bytes:
        match block.kind:
            case "thinking":
                delta = {"type": "thinking_delta", "thinking": text}
            case "tool":
                delta = {"type": "input_json_delta", "partial_json": text}
            case _:
                delta = {"type": "text_delta", "text": text}
        return sse(
            {"type": "content_block_delta", "index": block.index, "delta": delta}, "content_block_delta"
        )

    def _final_block(self, block: Block) -> dict[str, Any]:
        match block.kind:
            case "text" | "refusal":
                return {"type": "text", "text": block.text}
            case "thinking":
                return {"type": "thinking", "thinking": block.text, "signature": block.signature}
            case "redacted_thinking":
                return {"type": "redacted_thinking", "data": block.data}
            case "tool":
                try:
                    args = orjson.loads(block.text or "{}")
                except orjson.JSONDecodeError:
                    args = {}
                return {"type": "tool_use", "id": self.tool_id(block), "name": block.name, "input": args}

    def _error(self, name: ErrorName) -> tuple[int, dict[str, Any]]:
        if name == "authentication":  # quotes the key the request carried
            return auth_error(
                Protocol.ANTHROPIC_MESSAGES, self.params.credential or "(none)", self.request_id
            )
        return anthropic_error(name, self.request_id)

    # ---- Renderer ----

    def stream(self, ops: Iterable[Op]) -> Iterator[Action]:
        t = Transcript(keep_text=False)
        for op in ops:
            block = t.apply(op)
            match op:
                case Start():
                    msg = self._message(t, [], self._usage_start(t))
                    yield sse({"type": "message_start", "message": msg}, "message_start")
                    yield PING
                case BlockStart():
                    assert block is not None
                    cb = self._block_start(block)
                    yield sse(
                        {"type": "content_block_start", "index": op.index, "content_block": cb},
                        "content_block_start",
                    )
                case BlockDelta():
                    assert block is not None
                    yield self._delta(block, op.text)
                case BlockStop():
                    assert block is not None
                    if op.tail:
                        yield self._delta(block, op.tail)
                    if block.kind == "thinking":
                        sig = {"type": "signature_delta", "signature": op.signature}
                        yield sse(
                            {"type": "content_block_delta", "index": op.index, "delta": sig},
                            "content_block_delta",
                        )
                    yield sse({"type": "content_block_stop", "index": op.index}, "content_block_stop")
                case Wait():
                    yield delay(op, PING)
                case Finish():
                    md = {
                        "type": "message_delta",
                        "delta": {"stop_reason": op.stop, "stop_sequence": None},
                        "usage": self._usage_final(t),
                    }
                    yield sse(md, "message_delta")
                    yield sse({"type": "message_stop"}, "message_stop")
                case Fail():
                    yield sse(self._error(op.error)[1], "error")
                case Reset():
                    yield Abort(op.drop)
                    return
                case Malformed():
                    yield b'event: content_block_delta\ndata: {"type":"content_block_delta","ind\n\n'
                case HugeLine():
                    yield (
                        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
                        b'"delta":{"type":"text_delta","text":"'
                    )
                    yield from filler(op.size)
                    return

    def body(self, t: Transcript) -> bytes:
        content = [self._final_block(b) for b in t.blocks.values()]
        return orjson.dumps(self._message(t, content, self._usage_final(t)))

    def error_response(self, name: ErrorName) -> Respond:
        status, obj = self._error(name)
        if name == "authentication":
            headers = echo_headers("request-id", self.request_id, self.params)
        else:
            headers = http_headers(Protocol.ANTHROPIC_MESSAGES, name, self.request_id)
        return Respond(status, orjson.dumps(obj), headers=headers)
