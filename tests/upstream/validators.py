"""Strict stream validators: every invariant of docs/design/clients.md, per protocol.

Each ``check_*`` takes the raw SSE body, scans it with ``proxai.core.sse.SseScanner`` and raises
``AssertionError`` on the first broken invariant, including the ones the Python SDKs
tolerate silently (dense indexes, ``message_stop``, ``finish_reason``, usage only on the last
chunk, output_index dense, every item done, ids matching). ``end`` describes how the stream
is allowed to end: ``"complete"`` (the terminal event), ``"error"`` (an error event last),
``"open"`` (cut off: no terminal event).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from proxai.core.sse import SseEvent, SseScanner

End = Literal["complete", "error", "open"]


def scan(body: bytes) -> list[SseEvent]:
    scanner = SseScanner()
    return scanner.feed(body) + scanner.close()


@dataclass
class Seen:
    """What a validator learned from the stream (for content assertions)."""

    text: str = ""
    reasoning: str = ""
    tools: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, arguments)
    stop: str | None = None
    usage: dict[str, Any] | None = None
    pings: int = 0
    ended: str = "open"


# ---- Anthropic Messages ----

_A_DELTA_FOR = {
    "text": {"text_delta"},
    "thinking": {"thinking_delta", "signature_delta"},
    "tool_use": {"input_json_delta"},
    "redacted_thinking": set(),
}


def check_anthropic(body: bytes, end: End = "complete") -> Seen:
    events = scan(body)
    seen = Seen()
    assert events, "empty stream"
    started = False
    blocks: list[dict[str, Any]] = []  # by index, in start order
    open_blocks: set[int] = set()
    args: dict[int, str] = {}
    terminal = False
    for n, ev in enumerate(events):
        assert not terminal, f"event after message_stop / error: {ev.event}"
        assert ev.event != "message", f"data-only event #{n} (no event: line): {ev.data[:80]}"
        data = json.loads(ev.data)
        assert data["type"] == ev.event, (ev.event, data["type"])
        if n == 0:
            assert ev.event == "message_start", f"first event is {ev.event}"
        match ev.event:
            case "message_start":
                assert not started, "second message_start"
                started = True
                msg = data["message"]
                assert msg["id"].startswith("msg_") and msg["role"] == "assistant" and msg["content"] == []
                assert "input_tokens" in msg["usage"]
            case "ping":
                seen.pings += 1
            case "content_block_start":
                idx = data["index"]
                assert idx == len(blocks), f"block index {idx} not dense (expected {len(blocks)})"
                cb = data["content_block"]
                blocks.append(cb)
                open_blocks.add(idx)
                if cb["type"] == "tool_use":
                    assert cb["id"].startswith("toolu_") and cb["name"] and cb["input"] == {}
                    args[idx] = ""
            case "content_block_delta":
                idx = data["index"]
                assert idx in open_blocks, f"delta for block {idx} that is not open"
                btype = blocks[idx]["type"]
                dtype = data["delta"]["type"]
                assert dtype in _A_DELTA_FOR[btype], f"{dtype} inside a {btype} block"
                if dtype == "text_delta":
                    seen.text += data["delta"]["text"]
                elif dtype == "thinking_delta":
                    seen.reasoning += data["delta"]["thinking"]
                elif dtype == "input_json_delta":
                    args[idx] += data["delta"]["partial_json"]
            case "content_block_stop":
                idx = data["index"]
                assert idx in open_blocks, f"stop for block {idx} that is not open"
                open_blocks.discard(idx)
                if idx in args:
                    json.loads(args[idx])  # complete, valid JSON
                    seen.tools.append((blocks[idx]["id"], blocks[idx]["name"], args[idx]))
            case "message_delta":
                assert not open_blocks, f"message_delta with open blocks {open_blocks}"
                assert isinstance(data.get("usage"), dict), "message_delta without usage"
                assert "output_tokens" in data["usage"]
                seen.stop = data["delta"]["stop_reason"]
                seen.usage = data["usage"]
            case "message_stop":
                assert seen.usage is not None, "message_stop without message_delta"
                terminal = True
                seen.ended = "complete"
            case "error":
                assert set(data["error"]) >= {"type", "message"}
                terminal = True
                seen.ended = "error"
            case other:
                raise AssertionError(f"unknown event {other}")
    assert seen.ended == end, f"stream ended {seen.ended}, expected {end}"
    return seen


# ---- OpenAI Chat Completions ----


def check_chat(body: bytes, end: End = "complete", include_usage: bool = True) -> Seen:
    events = scan(body)
    seen = Seen()
    assert events, "empty stream"
    ident: tuple[str, str] | None = None
    first = True
    calls: dict[int, list[str]] = {}  # index -> [id, name, args]
    finished = False
    usage_seen = False
    for ev in events:
        assert ev.event == "message", f"Chat events carry no event: line ({ev.event})"
        assert ev.data, "an event with empty data"
        assert seen.ended == "open", "data after [DONE] / error"
        if ev.data == "[DONE]":
            assert finished, "[DONE] without finish_reason"
            assert usage_seen or not include_usage, "[DONE] without the usage chunk"
            seen.ended = "complete"
            continue
        data = json.loads(ev.data)
        if "error" in data:
            assert set(data["error"]) >= {"message", "type"}
            seen.ended = "error"
            continue
        assert data["object"] == "chat.completion.chunk"
        assert data["id"].startswith("chatcmpl-") and isinstance(data["created"], int)
        assert "system_fingerprint" in data
        if ident is None:
            ident = (data["id"], data["model"])
        assert (data["id"], data["model"]) == ident, "id/model changed between chunks"
        assert not usage_seen, "a chunk after the usage chunk"
        if include_usage:
            assert "usage" in data, "include_usage: every chunk carries usage"
        if not data["choices"]:
            assert finished, "usage-only chunk before finish_reason"
            assert include_usage and isinstance(data["usage"], dict)
            seen.usage = data["usage"]
            usage_seen = True
            continue
        if include_usage:
            assert data["usage"] is None, "usage on a non-final chunk"
        assert len(data["choices"]) == 1
        choice = data["choices"][0]
        assert choice["index"] == 0
        assert not finished, "a choice chunk after finish_reason"
        delta = choice["delta"]
        if first:
            assert delta.get("role") == "assistant", "role missing from the first delta"
            first = False
        else:
            assert "role" not in delta, "role repeated"
        if delta.get("content"):
            seen.text += delta["content"]
        for tc in delta.get("tool_calls") or []:
            idx = tc["index"]
            assert "function" in tc, "tool delta without function"
            if idx not in calls:
                assert idx == len(calls), f"tool index {idx} appears out of order"
                assert tc["id"].startswith("call_") and tc["type"] == "function" and tc["function"]["name"]
                calls[idx] = [tc["id"], tc["function"]["name"], tc["function"].get("arguments", "")]
            else:
                assert "id" not in tc and "type" not in tc, "id/type repeated in a later delta"
                assert "name" not in tc["function"], "function.name repeated"
                calls[idx][2] += tc["function"]["arguments"]
        if choice["finish_reason"] is not None:
            finished = True
            seen.stop = choice["finish_reason"]
    for cid, name, args in calls.values():
        if seen.ended == "complete":
            json.loads(args)
        seen.tools.append((cid, name, args))
    assert seen.ended == end, f"stream ended {seen.ended}, expected {end}"
    return seen


# ---- OpenAI Responses ----

_R_DELTA_ITEM = {
    "response.output_text.delta": "message",
    "response.refusal.delta": "message",
    "response.reasoning_summary_text.delta": "reasoning",
    "response.function_call_arguments.delta": "function_call",
}
_R_ITEM_EVENTS = {
    "response.output_text.done",
    "response.refusal.done",
    "response.content_part.done",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
    "response.function_call_arguments.done",
}
_R_TERMINAL = {
    "response.completed": "complete",
    "response.incomplete": "complete",
    "response.failed": "error",
}


def check_responses(body: bytes, end: End = "complete") -> Seen:
    events = scan(body)
    seen = Seen()
    assert events, "empty stream"
    resp_id: str | None = None
    items: dict[str, dict[str, Any]] = {}  # item id -> added item
    index_of: dict[str, int] = {}
    done: set[str] = set()
    parts: set[tuple[str, int]] = set()
    args: dict[str, str] = {}
    errored = False
    for n, ev in enumerate(events):
        assert seen.ended == "open", f"event after the terminal event: {ev.event}"
        assert ev.data != "[DONE]", "Responses streams have no [DONE]"
        data = json.loads(ev.data)
        assert ev.event == data["type"], (ev.event, data["type"])
        assert data["sequence_number"] == n, f"sequence_number {data['sequence_number']} at event {n}"
        etype = data["type"]
        if n == 0:
            assert etype == "response.created", f"first event is {etype}"
        if "response" in data:
            rid = data["response"]["id"]
            resp_id = resp_id or rid
            assert rid == resp_id, "response.id changed"
        match etype:
            case "response.created" | "response.in_progress":
                assert data["response"]["status"] == "in_progress"
            case "response.output_item.added":
                item = data["item"]
                assert item["id"] not in items, "item added twice"
                assert data["output_index"] == len(items), "output_index not dense/unique"
                items[item["id"]] = item
                index_of[item["id"]] = data["output_index"]
                if item["type"] == "function_call":
                    args[item["id"]] = ""
            case "response.content_part.added" | "response.reasoning_summary_part.added":
                iid = data["item_id"]
                assert iid in items and iid not in done
                parts.add((iid, data.get("content_index", data.get("summary_index", 0))))
            case "response.output_item.done":
                iid = data["item"]["id"]
                assert iid in items, "done for an item never added"
                assert index_of[iid] == data["output_index"]
                assert data["item"]["type"] == items[iid]["type"]
                done.add(iid)
                if items[iid]["type"] == "function_call":
                    final = data["item"]["arguments"]
                    json.loads(final)
                    assert final.startswith(args[iid]), "deltas disagree with the done arguments"
                    seen.tools.append((data["item"]["call_id"], data["item"]["name"], final))
            case "error":
                assert {"code", "message"} <= set(data)
                errored = True
            case t if t in _R_TERMINAL:
                if t == "response.failed":
                    assert errored or data["response"]["error"], "failed without error"
                else:
                    assert not errored
                if t != "response.failed":
                    assert set(items) <= done, f"items never done: {set(items) - done}"
                output = data["response"]["output"]
                assert [o["id"] for o in output] == list(items), "completed.output ids differ"
                seen.usage = data["response"]["usage"]
                seen.stop = data["response"]["status"]
                seen.ended = _R_TERMINAL[t]
            case t if t in _R_DELTA_ITEM:
                iid = data["item_id"]
                assert iid in items and iid not in done, f"{t} for an item not open"
                assert items[iid]["type"] == _R_DELTA_ITEM[t], f"{t} inside a {items[iid]['type']} item"
                assert data["output_index"] == index_of[iid]
                if t == "response.output_text.delta":
                    assert (iid, data["content_index"]) in parts, (
                        "output_text.delta before content_part.added"
                    )
                    seen.text += data["delta"]
                elif t == "response.reasoning_summary_text.delta":
                    assert (iid, data["summary_index"]) in parts
                    seen.reasoning += data["delta"]
                elif t == "response.function_call_arguments.delta":
                    args[iid] += data["delta"]
            case _:
                assert etype in _R_ITEM_EVENTS, f"unknown event type {etype} (the Node SDK raises)"
                iid = data["item_id"]
                assert iid in items and iid not in done, f"{etype} for an item not open"
    if seen.ended == "open" and errored:
        seen.ended = "error"
    assert seen.ended == end, f"stream ended {seen.ended}, expected {end}"
    return seen
