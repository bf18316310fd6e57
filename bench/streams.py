"""Realistic large SSE streams for the benchmarks, one generator per wire protocol.

The shapes follow what the real APIs send (and docs/design/clients.md's invariants): Anthropic with a
thinking block, a text block and two tool_use blocks plus pings; Chat with text chunks, two
parallel tool calls with interleaved argument deltas, a finish chunk, a usage-only chunk and
``[DONE]``; Responses with a reasoning item, a message item, a function call item, increasing
``sequence_number`` and a ``response.completed`` that carries the whole output (so its one line
is as large as the whole text, as it is in production).

``events`` is the approximate number of SSE events; the token sizes vary (1-12 characters, some
non-ASCII) so no chunk boundary is systematically aligned with an event boundary.

The rules (docs/design/protocol-grammars.md): how each protocol identifies in-flight blocks
(Anthropic ``index``, Responses ``item_id`` + ``sequence_number``, Chat ``tool_calls[].index``);
the usage-only chunk and ``[DONE]`` of Chat vs the Responses
terminal event.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import orjson

PROTOCOLS = ("anthropic_messages", "openai_chat", "openai_responses")

_WORDS = (
    "the",
    "stream",
    "of",
    "tokens",
    "arrives",
    "in",
    "small",
    "pieces",
    " and",
    " a",
    " proxy",
    " must",
    " not",
    " slow",
    " it",
    " down",
    "é",
    "ü",
    "日本",
    "🙂",
    ".\n",
    ",",
    " def",
    " f(x):",
    " return",
    " x",
    " + ",
    "1",
    "\n\n",
    " `code`",
    " **bold**",
    " ->",
)


def _tokens(rng: random.Random, n: int) -> Iterator[str]:
    words = _WORDS
    for _ in range(n):
        yield words[rng.randrange(len(words))]


def _sse(event: str | None, payload: Any) -> bytes:
    head = b"" if event is None else b"event: " + event.encode() + b"\n"
    return head + b"data: " + orjson.dumps(payload) + b"\n\n"


def _args_pieces(rng: random.Random, n: int) -> tuple[list[str], str]:
    """A JSON arguments object split into ``n``-ish pieces (valid JSON when joined)."""
    body = orjson.dumps(
        {"path": "src/app/main.py", "content": " ".join(_tokens(rng, max(4, n * 2))), "line": 42}
    ).decode()
    cuts = sorted(rng.sample(range(1, len(body)), min(n - 1, len(body) - 1))) if n > 1 else []
    pieces, prev = [], 0
    for c in [*cuts, len(body)]:
        pieces.append(body[prev:c])
        prev = c
    return pieces, body


def anthropic_messages(events: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    out: list[bytes] = []
    mid = "msg_01XFDUDYJgAACzvnptvVoYEL"
    out.append(
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 1523,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 1200,
                        "output_tokens": 1,
                    },
                },
            },
        )
    )
    thinking_n = events // 5
    tool_n = events // 10
    text_n = max(1, events - thinking_n - 2 * tool_n - 16)
    idx = 0

    def ping_maybe(i: int) -> None:
        if i % 97 == 0:
            out.append(_sse("ping", {"type": "ping"}))

    # thinking block
    out.append(
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": idx,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        )
    )
    for i, t in enumerate(_tokens(rng, thinking_n)):
        out.append(
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": idx,
                    "delta": {"type": "thinking_delta", "thinking": t},
                },
            )
        )
        ping_maybe(i)
    out.append(
        _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": idx,
                "delta": {"type": "signature_delta", "signature": "EqQBCkYIBRgC" * 8},
            },
        )
    )
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": idx}))
    idx += 1
    # text block
    out.append(
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}},
        )
    )
    for i, t in enumerate(_tokens(rng, text_n)):
        out.append(
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": idx, "delta": {"type": "text_delta", "text": t}},
            )
        )
        ping_maybe(i)
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": idx}))
    idx += 1
    # two tool calls (Anthropic blocks are sequential, never interleaved)
    for k in range(2):
        out.append(
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": idx,
                    "content_block": {
                        "type": "tool_use",
                        "id": f"toolu_01A{k}",
                        "name": "write_file",
                        "input": {},
                    },
                },
            )
        )
        pieces, _ = _args_pieces(rng, tool_n)
        for p in pieces:
            out.append(
                _sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": idx,
                        "delta": {"type": "input_json_delta", "partial_json": p},
                    },
                )
            )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": idx}))
        idx += 1
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": events},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def openai_chat(events: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    out: list[bytes] = []
    base = {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741569952,
        "model": "gpt-4o-2024-08-06",
        "service_tier": "default",
        "system_fingerprint": "fp_eb9dce56a8",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            None,
            {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]},
        )

    tool_n = events // 8
    text_n = max(1, events - 2 * tool_n - 6)
    out.append(chunk({"role": "assistant", "content": "", "refusal": None}))
    for t in _tokens(rng, text_n):
        out.append(chunk({"content": t}))
    # two parallel calls with interleaved argument deltas
    p0, _ = _args_pieces(rng, tool_n)
    p1, _ = _args_pieces(rng, tool_n)
    for k in range(2):
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": k,
                            "id": f"call_{k}abc",
                            "type": "function",
                            "function": {"name": "write_file", "arguments": ""},
                        }
                    ]
                }
            )
        )
    for a, b in zip(p0, p1, strict=False):
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}))
        out.append(chunk({"tool_calls": [{"index": 1, "function": {"arguments": b}}]}))
    for rest, k in ((p0[len(p1) :], 0), (p1[len(p0) :], 1)):
        for a in rest:
            out.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": a}}]}))
    out.append(chunk({}, "tool_calls"))
    out.append(
        _sse(
            None,
            {
                **base,
                "choices": [],
                "usage": {
                    "prompt_tokens": 1523,
                    "completion_tokens": events,
                    "total_tokens": 1523 + events,
                    "prompt_tokens_details": {"cached_tokens": 1200, "audio_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 0},
                },
            },
        )
    )
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def openai_responses(events: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    out: list[bytes] = []
    seq = 0
    rid = "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b"
    resp = {
        "id": rid,
        "object": "response",
        "created_at": 1741476542,
        "status": "in_progress",
        "model": "gpt-4.1-2025-04-14",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": None,
        "error": None,
        "incomplete_details": None,
    }

    def ev(kind: str, **fields: Any) -> None:
        nonlocal seq
        out.append(_sse(kind, {"type": kind, "sequence_number": seq, **fields}))
        seq += 1

    ev("response.created", response=resp)
    ev("response.in_progress", response=resp)
    reasoning_n = events // 6
    tool_n = events // 10
    text_n = max(1, events - reasoning_n - tool_n - 20)
    output: list[dict[str, Any]] = []
    # reasoning summary
    rs_id = "rs_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b"
    ev("response.output_item.added", output_index=0, item={"id": rs_id, "type": "reasoning", "summary": []})
    ev(
        "response.reasoning_summary_part.added",
        item_id=rs_id,
        output_index=0,
        summary_index=0,
        part={"type": "summary_text", "text": ""},
    )
    rtext = []
    for t in _tokens(rng, reasoning_n):
        rtext.append(t)
        ev("response.reasoning_summary_text.delta", item_id=rs_id, output_index=0, summary_index=0, delta=t)
    rjoined = "".join(rtext)
    ev("response.reasoning_summary_text.done", item_id=rs_id, output_index=0, summary_index=0, text=rjoined)
    ev(
        "response.reasoning_summary_part.done",
        item_id=rs_id,
        output_index=0,
        summary_index=0,
        part={"type": "summary_text", "text": rjoined},
    )
    rs_item = {"id": rs_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": rjoined}]}
    ev("response.output_item.done", output_index=0, item=rs_item)
    output.append(rs_item)
    # message
    msg_id = "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795c"
    ev(
        "response.output_item.added",
        output_index=1,
        item={"id": msg_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []},
    )
    ev(
        "response.content_part.added",
        item_id=msg_id,
        output_index=1,
        content_index=0,
        part={"type": "output_text", "text": "", "annotations": []},
    )
    text = []
    for t in _tokens(rng, text_n):
        text.append(t)
        ev(
            "response.output_text.delta",
            item_id=msg_id,
            output_index=1,
            content_index=0,
            delta=t,
            logprobs=[],
        )
    joined = "".join(text)
    part = {"type": "output_text", "text": joined, "annotations": []}
    ev("response.output_text.done", item_id=msg_id, output_index=1, content_index=0, text=joined, logprobs=[])
    ev("response.content_part.done", item_id=msg_id, output_index=1, content_index=0, part=part)
    msg_item = {
        "id": msg_id,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [part],
    }
    ev("response.output_item.done", output_index=1, item=msg_item)
    output.append(msg_item)
    # function call
    fc_id = "fc_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795d"
    ev(
        "response.output_item.added",
        output_index=2,
        item={
            "id": fc_id,
            "type": "function_call",
            "status": "in_progress",
            "call_id": "call_X1",
            "name": "write_file",
            "arguments": "",
        },
    )
    pieces, args = _args_pieces(rng, tool_n)
    for p in pieces:
        ev("response.function_call_arguments.delta", item_id=fc_id, output_index=2, delta=p)
    ev("response.function_call_arguments.done", item_id=fc_id, output_index=2, arguments=args)
    fc_item = {
        "id": fc_id,
        "type": "function_call",
        "status": "completed",
        "call_id": "call_X1",
        "name": "write_file",
        "arguments": args,
    }
    ev("response.output_item.done", output_index=2, item=fc_item)
    output.append(fc_item)
    done = {
        **resp,
        "status": "completed",
        "output": output,
        "usage": {
            "input_tokens": 1523,
            "input_tokens_details": {"cached_tokens": 1200},
            "output_tokens": events,
            "output_tokens_details": {"reasoning_tokens": reasoning_n},
            "total_tokens": 1523 + events,
        },
    }
    ev("response.completed", response=done)
    return b"".join(out)


GENERATORS = {
    "anthropic_messages": anthropic_messages,
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
}


def generate(protocol: str, events: int, seed: int = 1) -> bytes:
    return GENERATORS[protocol](events, seed)


def chunks(data: bytes, size: int = 512) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]
