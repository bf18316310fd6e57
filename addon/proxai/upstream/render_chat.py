"""Render fake-upstream scenarios as OpenAI Chat Completions (``/v1/chat/completions``).

Wire shapes of the real API: every chunk has ``id``, ``object: "chat.completion.chunk"``,
``created``, ``model``, ``system_fingerprint``; ``role`` only in the first delta; a tool
call's ``id``/``type``/``function.name`` only in its first delta, ``function.arguments`` on
every delta, indexes in first-appearance order; a chunk with ``finish_reason``; with
``stream_options.include_usage`` every chunk carries ``"usage": null`` and a last
``choices: []`` chunk carries the usage; then ``data: [DONE]``. Chat has no slot
for thinking, so thinking blocks are not sent (their tokens still count as reasoning tokens).
A mid-stream error is a data payload with a top-level ``"error"`` object.

Rules: docs/design/upstream.md, "Wire rules each renderer keeps": Chat identifies a tool call by
``tool_calls[].index``; the usage-only chunk, then ``[DONE]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from proxai.core.errors.providers import auth_error, http_headers, openai_errors
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
    StopReason,
    Wait,
    echo_headers,
)
from .transcript import Block, Transcript
from .wire import COMMENT_KEEPALIVE, delay, filler, sse

FINISH: dict[StopReason, str] = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "stop",
}


def openai_error(name: ErrorName, protocol: Protocol, params: Params) -> tuple[int, dict[str, Any]]:
    """``(status, error object)`` (shared by Chat and Responses); an authentication error quotes
    the key the request carried, as compatible servers do."""
    if name == "authentication":
        return auth_error(protocol, params.credential or "(none)")
    return openai_errors(protocol)[name]


def openai_error_response(name: ErrorName, protocol: Protocol, params: Params) -> Respond:
    """An OpenAI-style HTTP error (shared by Chat and Responses)."""
    status, err = openai_error(name, protocol, params)
    if name == "authentication":
        headers = echo_headers("x-request-id", "req_fakeupstream", params)
    else:
        headers = http_headers(protocol, name, "req_fakeupstream")
    return Respond(status, orjson.dumps({"error": err}), headers=headers)


class ChatRenderer:
    def __init__(self, params: Params) -> None:
        self.params = params
        self.id = f"chatcmpl-FakeUpstream{params.request_number:08d}"
        self.fingerprint = "fp_fakeupstream"

    def call_id(self, block: Block) -> str:
        return "call_" + block.tool_id

    def usage(self, t: Transcript) -> dict[str, Any]:
        return {
            "prompt_tokens": t.input_total,
            "completion_tokens": t.output_tokens,
            "total_tokens": t.input_total + t.output_tokens,
            "prompt_tokens_details": {
                "cached_tokens": t.start.cache_read,
                "cache_write_tokens": t.start.cache_write,
                "audio_tokens": 0,
            },
            "completion_tokens_details": {
                "reasoning_tokens": t.reasoning_tokens,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    def _chunk(self, choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> bytes:
        obj: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.params.created,
            "model": self.params.model,
            "service_tier": "default",
            "system_fingerprint": self.fingerprint,
            "choices": choices,
        }
        if self.params.include_usage:
            obj["usage"] = usage
        return sse(obj)

    def _delta(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        return self._chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])

    def stream(self, ops: Iterable[Op]) -> Iterator[Action]:
        t = Transcript(keep_text=False)
        tool_index: dict[int, int] = {}  # block index -> tool call index
        tails: list[dict[str, Any]] = []  # argument fragments that arrive with the finish chunk
        for op in ops:
            block = t.apply(op)
            match op:
                case Start():
                    yield self._delta({"role": "assistant", "content": "", "refusal": None})
                case BlockStart():
                    assert block is not None
                    if block.kind == "tool":
                        i = tool_index[op.index] = len(tool_index)
                        call = {
                            "index": i,
                            "id": self.call_id(block),
                            "type": "function",
                            "function": {"name": block.name, "arguments": ""},
                        }
                        yield self._delta({"tool_calls": [call]})
                case BlockDelta():
                    assert block is not None
                    match block.kind:
                        case "text":
                            yield self._delta({"content": op.text})
                        case "refusal":
                            yield self._delta({"refusal": op.text})
                        case "tool":
                            frag = {"index": tool_index[op.index], "function": {"arguments": op.text}}
                            yield self._delta({"tool_calls": [frag]})
                        case _:
                            pass  # no slot for thinking in Chat
                case BlockStop():
                    assert block is not None
                    if op.tail and block.kind == "tool":
                        tails.append({"index": tool_index[op.index], "function": {"arguments": op.tail}})
                    elif op.tail and block.kind == "text":
                        yield self._delta({"content": op.tail})
                case Wait():
                    yield delay(op, COMMENT_KEEPALIVE)
                case Finish():
                    delta: dict[str, Any] = {"tool_calls": tails} if tails else {}
                    yield self._delta(delta, FINISH[op.stop])
                    if self.params.include_usage:
                        yield self._chunk([], self.usage(t))
                    yield b"data: [DONE]\n\n"
                case Fail():
                    yield sse({"error": openai_error(op.error, Protocol.OPENAI_CHAT, self.params)[1]})
                case Reset():
                    yield Abort(op.drop)
                    return
                case Malformed():
                    yield (
                        b'data: {"id":"'
                        + self.id.encode()
                        + b'","object":"chat.completion.chunk","choices":[{"ind\n\n'
                    )
                case HugeLine():
                    yield (
                        b'data: {"id":"'
                        + self.id.encode()
                        + b'","object":"chat.completion.chunk","created":'
                        + str(self.params.created).encode()
                        + b',"choices":[{"index":0,"delta":{"content":"'
                    )
                    yield from filler(op.size)
                    return

    def body(self, t: Transcript) -> bytes:
        text = "".join(b.text for b in t.blocks.values() if b.kind == "text")
        refusal = "".join(b.text for b in t.blocks.values() if b.kind == "refusal")
        calls = [
            {"id": self.call_id(b), "type": "function", "function": {"name": b.name, "arguments": b.text}}
            for b in t.blocks.values()
            if b.kind == "tool"
        ]
        message: dict[str, Any] = {
            "role": "assistant",
            "content": text or None,
            "refusal": refusal or None,
            "annotations": [],
        }
        if calls:
            message["tool_calls"] = calls
        obj = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.params.created,
            "model": self.params.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": FINISH[t.stop] if t.stop else None,
                }
            ],
            "usage": self.usage(t),
            "service_tier": "default",
            "system_fingerprint": self.fingerprint,
        }
        return orjson.dumps(obj)

    def error_response(self, name: ErrorName) -> Respond:
        return openai_error_response(name, Protocol.OPENAI_CHAT, self.params)
