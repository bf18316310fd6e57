"""Render fake-upstream scenarios as OpenAI Responses (``/v1/responses``).

Wire shapes of the real API: ``response.created`` and ``response.in_progress`` first; one
output item per block with dense ``output_index`` in start order (``message`` with an
``output_text`` or ``refusal`` part, ``reasoning`` with a summary part and
``encrypted_content``, ``function_call`` with ``call_id``); ``output_item.added`` and
``content_part.added`` / ``reasoning_summary_part.added`` before deltas; ``*.delta`` /
``*.done`` events; ``output_item.done``; then ``response.completed`` (or
``response.incomplete`` for the token limit) carrying the full output and usage. Every
event has a ``sequence_number``. A mid-stream failure is an ``error`` event followed by
``response.failed``. There is no ``[DONE]``.

Rules: docs/design/upstream.md, "Wire rules each renderer keeps": an output item is identified
by ``item_id`` + ``output_index`` and every event by ``sequence_number``; Responses ends with its
terminal event, never ``[DONE]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

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
)
from .render_chat import openai_error, openai_error_response
from .transcript import Block, Transcript
from .wire import COMMENT_KEEPALIVE, delay, filler, sse

_PREFIX = {"text": "msg_", "refusal": "msg_", "thinking": "rs_", "redacted_thinking": "rs_", "tool": "fc_"}


class ResponsesRenderer:
    def __init__(self, params: Params) -> None:
        self.params = params
        self.id = f"resp_fakeupstream{params.request_number:08d}"
        self.seq = 0
        self.output_index: dict[int, int] = {}  # block index -> output_index

    # ---- shapes ----

    def item_id(self, block: Block) -> str:
        return f"{_PREFIX[block.kind]}{self.params.request_number:04d}{block.index:03d}fake"

    def usage(self, t: Transcript) -> dict[str, Any]:
        return {
            "input_tokens": t.input_total,
            "input_tokens_details": {
                "cached_tokens": t.start.cache_read,
                "cache_write_tokens": t.start.cache_write,
            },
            "output_tokens": t.output_tokens,
            "output_tokens_details": {"reasoning_tokens": t.reasoning_tokens},
            "total_tokens": t.input_total + t.output_tokens,
        }

    def response(self, t: Transcript, status: str, *, final: bool = False) -> dict[str, Any]:
        incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.params.created,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": incomplete,
            "instructions": None,
            "max_output_tokens": None,
            "model": self.params.model,
            "output": [self.item(b) for b in t.blocks.values()] if final else [],
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "store": True,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": self.usage(t) if final else None,
            "user": None,
            "metadata": {},
        }

    def part(self, block: Block, text: str) -> dict[str, Any]:
        if block.kind == "refusal":
            return {"type": "refusal", "refusal": text}
        return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}

    def item(self, block: Block, *, added: bool = False) -> dict[str, Any]:
        status = "in_progress" if added else ("completed" if block.closed else "incomplete")
        text = "" if added else block.text
        iid = self.item_id(block)
        match block.kind:
            case "text" | "refusal":
                content = [] if added else [self.part(block, text)]
                return {
                    "id": iid,
                    "type": "message",
                    "status": status,
                    "content": content,
                    "role": "assistant",
                }
            case "thinking":
                summary = [] if added else [{"type": "summary_text", "text": text}]
                enc = None if added else block.signature
                return {"id": iid, "type": "reasoning", "summary": summary, "encrypted_content": enc}
            case "redacted_thinking":
                return {"id": iid, "type": "reasoning", "summary": [], "encrypted_content": block.data}
            case "tool":
                return {
                    "id": iid,
                    "type": "function_call",
                    "status": status,
                    "arguments": text,
                    "call_id": "call_" + block.tool_id,
                    "name": block.name,
                }

    def ev(self, etype: str, **fields: Any) -> bytes:
        obj = {"type": etype, "sequence_number": self.seq, **fields}
        self.seq += 1
        return sse(obj, etype)

    def _loc(self, block: Block) -> dict[str, Any]:
        return {"item_id": self.item_id(block), "output_index": self.output_index[block.index]}

    # ---- events of one block ----

    def _start(self, block: Block) -> Iterator[bytes]:
        oi = self.output_index[block.index] = len(self.output_index)
        yield self.ev("response.output_item.added", output_index=oi, item=self.item(block, added=True))
        loc = self._loc(block)
        if block.kind in ("text", "refusal"):
            yield self.ev("response.content_part.added", **loc, content_index=0, part=self.part(block, ""))
        elif block.kind == "thinking":
            yield self.ev(
                "response.reasoning_summary_part.added",
                **loc,
                summary_index=0,
                part={"type": "summary_text", "text": ""},
            )

    def _delta(self, block: Block, text: str) -> Iterator[bytes]:
        loc = self._loc(block)
        match block.kind:
            case "text":
                yield self.ev("response.output_text.delta", **loc, content_index=0, delta=text, logprobs=[])
            case "refusal":
                yield self.ev("response.refusal.delta", **loc, content_index=0, delta=text)
            case "thinking":
                yield self.ev("response.reasoning_summary_text.delta", **loc, summary_index=0, delta=text)
            case "tool":
                yield self.ev("response.function_call_arguments.delta", **loc, delta=text)
            case "redacted_thinking":
                pass

    def _stop(self, block: Block) -> Iterator[bytes]:
        loc = self._loc(block)
        text = block.text
        match block.kind:
            case "text":
                yield self.ev("response.output_text.done", **loc, content_index=0, text=text, logprobs=[])
                yield self.ev(
                    "response.content_part.done", **loc, content_index=0, part=self.part(block, text)
                )
            case "refusal":
                yield self.ev("response.refusal.done", **loc, content_index=0, refusal=text)
                yield self.ev(
                    "response.content_part.done", **loc, content_index=0, part=self.part(block, text)
                )
            case "thinking":
                yield self.ev("response.reasoning_summary_text.done", **loc, summary_index=0, text=text)
                yield self.ev(
                    "response.reasoning_summary_part.done",
                    **loc,
                    summary_index=0,
                    part={"type": "summary_text", "text": text},
                )
            case "tool":
                yield self.ev("response.function_call_arguments.done", **loc, name=block.name, arguments=text)
            case "redacted_thinking":
                pass
        yield self.ev("response.output_item.done", output_index=loc["output_index"], item=self.item(block))

    # ---- Renderer ----

    def stream(self, ops: Iterable[Op]) -> Iterator[Action]:
        t = Transcript(keep_text=True)
        for op in ops:
            block = t.apply(op)
            match op:
                case Start():
                    yield self.ev("response.created", response=self.response(t, "in_progress"))
                    yield self.ev("response.in_progress", response=self.response(t, "in_progress"))
                case BlockStart():
                    assert block is not None
                    yield from self._start(block)
                case BlockDelta():
                    assert block is not None
                    if op.text or block.kind == "tool":
                        yield from self._delta(block, op.text)
                case BlockStop():
                    assert block is not None
                    yield from self._stop(block)  # a tail shows up only in the .done events
                case Wait():
                    yield delay(op, COMMENT_KEEPALIVE)
                case Finish():
                    if op.stop == "max_tokens":
                        yield self.ev(
                            "response.incomplete", response=self.response(t, "incomplete", final=True)
                        )
                    else:
                        yield self.ev(
                            "response.completed", response=self.response(t, "completed", final=True)
                        )
                case Fail():
                    err = openai_error(op.error, Protocol.OPENAI_RESPONSES, self.params)[1]
                    yield self.ev("error", code=err["code"], message=err["message"], param=None)
                    failed = self.response(t, "failed", final=True)
                    # response.error.code is a closed set (no invalid_api_key): a rejected key is a
                    # server_error there, while the error event keeps its own code
                    code = "server_error" if op.error == "authentication" else err["code"]
                    failed["error"] = {"code": code, "message": err["message"]}
                    yield self.ev("response.failed", response=failed)
                case Reset():
                    yield Abort(op.drop)
                    return
                case Malformed():
                    yield (
                        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
                        b'"sequence_number":' + str(self.seq).encode() + b',"delta":"bro\n\n'
                    )  # its sequence number is not consumed: the next event reuses it
                case HugeLine():
                    yield (
                        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
                        b'"sequence_number":' + str(self.seq).encode() + b',"delta":"'
                    )
                    yield from filler(op.size)
                    return

    def body(self, t: Transcript) -> bytes:
        status = "incomplete" if t.stop == "max_tokens" else "completed"
        for b in t.blocks.values():
            self.output_index.setdefault(b.index, len(self.output_index))
        return orjson.dumps(self.response(t, status, final=True))

    def error_response(self, name: ErrorName) -> Respond:
        return openai_error_response(name, Protocol.OPENAI_RESPONSES, self.params)
