"""Calls back to a Responses client in the shape it declared its tools (proxai.translate.call_shapes).

Codex declares a freeform ``apply_patch`` tool and its own ``tool_search``; MCP tools come in a
``namespace``. On a route to Anthropic or Chat these are offered as plain functions; the model's
calls must come back as a ``custom_tool_call`` with the patch text, a ``tool_search_call``, and a
``function_call`` with the tool's own name and ``namespace``. Checked on the stream (every
chunking, our validator, the real openai SDK's final response) and on the JSON path, which must
agree with it, and from the captured Codex request onward.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from proxai.core.model import Protocol
from proxai.pipeline.flow import make_stream_translator
from proxai.translate.call_shapes import freeform_input
from proxai.translate.ir import CallShape
from proxai.translate.request import translate_request
from proxai.translate.response import translate_response

from .harness import carry, chunks, sdk_responses
from .validators import validate_responses, validate_typed

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clients"

PATCH = '*** Begin Patch\n*** Add File: hello.txt\n+hello "world"\n*** End Patch\n'
SHAPES = {
    "apply_patch": CallShape("custom_tool_call", "apply_patch"),
    "tool_search": CallShape("tool_search_call", "tool_search"),
    "mcp__docs__search": CallShape("function_call", "search", "mcp__docs__"),
}
CALLS = [  # (id, name the upstream saw, arguments)
    ("toolu_01patch", "apply_patch", {"input": PATCH}),
    ("toolu_02search", "tool_search", {"query": "calendar tools", "limit": 3}),
    ("toolu_03docs", "mcp__docs__search", {"q": "sse"}),
    ("toolu_04exec", "exec_command", {"cmd": "ls"}),
]


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_stream() -> bytes:
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_01shapes",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        )
    ]
    for i, (cid, name, args) in enumerate(CALLS):
        start = {"type": "tool_use", "id": cid, "name": name, "input": {}}
        out.append(
            _sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": start})
        )
        text = json.dumps(args)
        for j in range(0, len(text), 7):  # the arguments in small pieces, as models stream them
            delta = {"type": "input_json_delta", "partial_json": text[j : j + 7]}
            out.append(
                _sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
            )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 40},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def anthropic_message() -> dict[str, Any]:
    return {
        "id": "msg_01shapes",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {"type": "tool_use", "id": cid, "name": name, "input": args} for cid, name, args in CALLS
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 40},
    }


def shaped(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The calls as the client reads them: (type, call_id, name, namespace, payload)."""
    out: list[tuple[Any, ...]] = []
    for it in items:
        if it["type"] == "custom_tool_call":
            out.append(("custom_tool_call", it["call_id"], it["name"], it.get("namespace"), it["input"]))
        elif it["type"] == "tool_search_call":
            out.append(("tool_search_call", it["call_id"], it["execution"], None, it["arguments"]))
        else:
            args = orjson.loads(it["arguments"])
            out.append((it["type"], it["call_id"], it["name"], it.get("namespace"), args))
    return out


EXPECTED = [
    ("custom_tool_call", "toolu_01patch", "apply_patch", None, PATCH),
    ("tool_search_call", "toolu_02search", "client", None, {"query": "calendar tools", "limit": 3}),
    ("function_call", "toolu_03docs", "search", "mcp__docs__", {"q": "sse"}),
    ("function_call", "toolu_04exec", "exec_command", None, {"cmd": "ls"}),
]


@pytest.mark.parametrize("mode", ["whole", "bytes", "random"])
def test_stream_calls_go_back_in_the_declared_shape(mode: str) -> None:
    t = make_stream_translator(A, R, created=1_767_225_600, call_shapes=SHAPES)
    body = carry(t, chunks(anthropic_stream(), mode, 3))
    fin = validate_responses(body)  # every event in order, deltas == done == terminal snapshot
    validate_typed(R.value, body)  # and each event parses as the SDK's own typed model
    assert fin.error is None and fin.stop == "completed"
    terminal = [orjson.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")][-1]
    assert shaped(terminal["response"]["output"]) == EXPECTED
    # the custom call's input events carry the patch text itself, once, at the block's stop
    events = [orjson.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]
    custom = [
        (e["type"], e.get("delta", e.get("input"))) for e in events if "custom_tool_call_input" in e["type"]
    ]
    assert custom == [
        ("response.custom_tool_call_input.delta", PATCH),
        ("response.custom_tool_call_input.done", PATCH),
    ]
    # the real openai SDK's accumulated response holds the same calls
    final = sdk_responses(body)
    assert shaped([o.model_dump(exclude_none=True) for o in final.output]) == EXPECTED


def test_json_calls_go_back_in_the_declared_shape() -> None:
    out = translate_response(anthropic_message(), A, R, created=1_767_225_600, call_shapes=SHAPES)
    assert shaped(out.body["output"]) == EXPECTED


def test_chat_upstream_calls_go_back_in_the_declared_shape() -> None:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
    }
    lines = [{**chunk, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}]
    for i, (cid, name, args) in enumerate(CALLS):
        call = {
            "index": i,
            "id": cid,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        lines.append(
            {**chunk, "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
        )
    lines.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    lines.append(
        {**chunk, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}}
    )
    raw = b"".join(b"data: " + orjson.dumps(x) + b"\n\n" for x in lines) + b"data: [DONE]\n\n"
    t = make_stream_translator(C, R, created=1_767_225_600, call_shapes=SHAPES)
    body = carry(t, chunks(raw, "random", 1))
    validate_responses(body)
    final = sdk_responses(body)
    assert shaped([o.model_dump(exclude_none=True) for o in final.output]) == EXPECTED


@pytest.mark.parametrize("target", [A, C], ids=["anthropic", "chat"])
def test_codex_request_records_the_shapes_of_its_tools(target: Protocol) -> None:
    body = json.loads((FIXTURES / "codex-0.171.0.turn1.json").read_text())
    body = body.get("body", body)
    translated = translate_request(body, R, target)
    assert translated.call_shapes == {
        "apply_patch": CallShape("custom_tool_call", "apply_patch"),
        "tool_search": CallShape("tool_search_call", "tool_search"),
    }


def test_namespaced_tools_record_their_namespace() -> None:
    body = {
        "model": "gpt-5",
        "input": "hi",
        "tools": [
            {
                "type": "namespace",
                "name": "mcp__docs__",
                "description": "docs server",
                "tools": [{"type": "function", "name": "search", "parameters": {"type": "object"}}],
            },
            {"type": "function", "name": "plain", "parameters": {"type": "object"}},
        ],
    }
    translated = translate_request(body, R, A)
    assert [t["name"] for t in translated.body["tools"]] == ["mcp__docs__search", "plain"]
    assert translated.call_shapes == {
        "mcp__docs__search": CallShape("function_call", "search", "mcp__docs__")
    }


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"input": "a\\nb"}', "a\nb"),
        ('{"input": ""}', ""),
        ('{"input": "x", "other": 1}', '{"input": "x", "other": 1}'),  # not the schema: kept whole
        ("not json", "not json"),
        ('{"input": 3}', '{"input": 3}'),
    ],
)
def test_freeform_input_never_loses_the_model_s_words(arguments: str, expected: str) -> None:
    assert freeform_input(arguments) == expected
