"""Small builders of hand-written upstream streams for regression and normalize tests."""

from __future__ import annotations

from typing import Any

import orjson


def a(etype: str, *, event_line: bool = True, **fields: Any) -> bytes:
    payload = orjson.dumps({"type": etype, **fields})
    return (b"event: " + etype.encode() + b"\n" if event_line else b"") + b"data: " + payload + b"\n\n"


def a_start(id: str = "msg_1", usage: dict[str, int] | None = None) -> bytes:
    msg: dict[str, Any] = {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 10, "output_tokens": 1},
    }
    return a("message_start", message=msg)


def a_text(index: int, text: str) -> bytes:
    return a("content_block_delta", index=index, delta={"type": "text_delta", "text": text})


def a_args(index: int, part: str) -> bytes:
    return a("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": part})


def a_end(stop: str = "end_turn", usage: dict[str, int] | None = None) -> bytes:
    return a(
        "message_delta",
        delta={"stop_reason": stop, "stop_sequence": None},
        usage=usage or {"output_tokens": 5},
    ) + a("message_stop")


def c(
    delta: dict[str, Any] | None = None, finish: str | None = None, *, id: str = "chatcmpl-1", **extra: Any
) -> bytes:
    body: dict[str, Any] = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-x",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish, "logprobs": None}],
        **extra,
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


def c_usage(
    prompt: int = 10, completion: int = 5, cached: int | None = None, *, id: str = "chatcmpl-1"
) -> bytes:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    body = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-x",
        "choices": [],
        "usage": usage,
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


DONE = b"data: [DONE]\n\n"


def c_tool(
    index: int, id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    call["function"] = fn
    return {"tool_calls": [call]}


class R:
    """Responses events with increasing sequence numbers."""

    def __init__(self, rid: str = "resp_1") -> None:
        self.seq = 0
        self.rid = rid

    def ev(self, etype: str, **fields: Any) -> bytes:
        payload = orjson.dumps({"type": etype, "sequence_number": self.seq, **fields})
        self.seq += 1
        return b"event: " + etype.encode() + b"\ndata: " + payload + b"\n\n"

    def resp(self, status: str, output: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
        return {
            "id": self.rid,
            "object": "response",
            "status": status,
            "model": "gpt-x",
            "output": output or [],
            **extra,
        }

    def created(self) -> bytes:
        return self.ev("response.created", response=self.resp("in_progress"))

    def completed(self, output: list[Any], usage: dict[str, Any] | None = None) -> bytes:
        u = usage or {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        return self.ev("response.completed", response=self.resp("completed", output, usage=u))


def r_searched_answer(hosted: str = "web_search_call") -> bytes:
    """A Responses stream with a hosted tool's item (a web search by default) before the answer
    "Paris." (the done events repeat the whole part, as OpenAI sends it)."""
    r = R()
    ws = {"id": "ws_1", "type": hosted, "status": "completed"}
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed"}
    part = {"type": "output_text", "text": "", "annotations": []}
    done = {**part, "text": "Paris."}
    return (
        r.created()
        + r.ev("response.output_item.added", output_index=0, item=ws)
        + r.ev(f"response.{hosted}.searching", output_index=0, item_id="ws_1")
        + r.ev("response.output_item.done", output_index=0, item=ws)
        + r.ev("response.output_item.added", output_index=1, item={**msg, "content": []})
        + r.ev("response.content_part.added", output_index=1, item_id="msg_1", content_index=0, part=part)
        + r.ev("response.output_text.delta", output_index=1, item_id="msg_1", content_index=0, delta="Paris.")
        + r.ev("response.content_part.done", output_index=1, item_id="msg_1", content_index=0, part=done)
        + r.ev("response.output_item.done", output_index=1, item={**msg, "content": [done]})
        + r.completed([ws, {**msg, "content": [done]}])
    )
