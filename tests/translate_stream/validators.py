"""STRICT validators of the streams we emit, one per client protocol.

Each implements every invariant of docs/design/clients.md - including those the Python
SDKs tolerate silently (data-only events, ``message_stop`` missing, repeated ``role``/``id``,
tool indexes out of order, output_index gaps, ids changing between added/done/completed,
``[DONE]`` on a Responses stream, usage on a non-final Chat chunk) - and returns what the stream
amounts to as a ``Final`` so tests can compare it with the source.

A violation raises ``Violation`` (an AssertionError) naming the event number and the rule.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import orjson

from proxai.core.sse import SseEvent, SseScanner


class Violation(AssertionError):
    pass


@dataclass
class Final:
    text: str = ""
    refusal: str = ""
    thinking: str = ""
    signature: str = ""
    redacted: list[str] = field(default_factory=list)
    tools: list[tuple[str, str, Any]] = field(default_factory=list)  # (id, name, parsed args)
    stop: str | None = None  # the protocol's own stop value (Responses: status[:reason])
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # the client-protocol error, when the stream ended in one
    id: str | None = None
    ids: list[str] = field(default_factory=list)  # Responses item ids in output order


def scan(body: bytes) -> list[SseEvent]:
    sc = SseScanner()
    return sc.feed(body) + sc.close()


def _check(cond: bool, n: int, rule: str) -> None:
    if not cond:
        raise Violation(f"event #{n}: {rule}")


def _json(ev: SseEvent, n: int) -> dict[str, Any]:
    _check(ev.data.strip() != "", n, "empty data payload (SDKs raise JSONDecodeError)")
    try:
        obj = orjson.loads(ev.data)
    except orjson.JSONDecodeError:
        raise Violation(f"event #{n}: payload is not JSON: {ev.data[:80]!r}") from None
    _check(isinstance(obj, dict), n, "payload is not an object")
    return obj  # type: ignore[no-any-return]


def _args(raw: str, n: int, errored: bool = False) -> Any:
    """Complete, valid argument JSON - unless the stream ended in an error (the client raises)."""
    if errored:
        return raw
    try:
        return orjson.loads(raw) if raw else {}
    except orjson.JSONDecodeError:
        raise Violation(f"event #{n}: tool arguments are not complete valid JSON: {raw!r}") from None


# -- Anthropic Messages --------------------------------------------------------------------------

_A_DELTA: dict[str, str] = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "thinking",
    "input_json_delta": "tool_use",
}

_A_FAMILIES = ("text", "thinking", "redacted_thinking", "tool_use")


@functools.cache
def _anthropic_sdk_types(slot: str) -> frozenset[str]:
    """The block (``slot`` ``content_block``) or delta (``delta``) types anthropic-python models.
    A ``content_block_start`` of another type is kept by both SDKs as it came (``accumulate_event``
    appends it, ``#accumulateMessage`` pushes it) and a delta of another type is passed over, so
    normalize mode carries them (docs/design/protocol-grammars.md, "Unknown delta and block
    types"): a stream with them is well formed, they are checked as the SDKs read them (not)."""
    import typing

    from anthropic.types import RawContentBlockDeltaEvent, RawContentBlockStartEvent

    event = RawContentBlockStartEvent if slot == "content_block" else RawContentBlockDeltaEvent
    members = typing.get_args(event.model_fields[slot].annotation)
    return frozenset(typing.get_args(m.model_fields["type"].annotation)[0] for m in members)


def validate_anthropic(body: bytes) -> Final:
    events = scan(body)
    fin = Final()
    blocks: list[dict[str, Any]] = []
    open_: set[int] = set()
    state = "start"  # start -> streaming -> delta -> stopped | error
    for n, ev in enumerate(events):
        _check(state not in ("stopped", "error"), n, f"event after {state}")
        _check(ev.event != "message", n, "data-only event (no event: line)")
        obj = _json(ev, n)
        _check(obj.get("type") == ev.event, n, f"payload type {obj.get('type')!r} != event {ev.event!r}")
        t = ev.event
        if t == "error":
            err = obj.get("error")
            _check(
                isinstance(err, dict)
                and isinstance(err.get("type"), str)
                and isinstance(err.get("message"), str),
                n,
                "malformed error event",
            )
            fin.error = err
            state = "error"
            continue
        if t == "ping":
            continue
        if state == "start":
            _check(t == "message_start", n, f"{t} before message_start")
            msg = obj["message"]
            _check(
                isinstance(msg.get("id"), str)
                and msg.get("role") == "assistant"
                and msg.get("content") == [],
                n,
                "bad message_start",
            )
            _check(
                isinstance(msg.get("usage", {}).get("input_tokens"), int),
                n,
                "message_start without usage.input_tokens",
            )
            fin.id = msg["id"]
            fin.usage = dict(msg["usage"])
            state = "streaming"
            continue
        _check(t != "message_start", n, "second message_start")
        if t == "content_block_start":
            _check(state == "streaming", n, "content_block_start after message_delta")
            idx = obj["index"]
            _check(
                idx == len(blocks), n, f"block index {idx} not dense in start order (expected {len(blocks)})"
            )
            cb = obj["content_block"]
            # A block without a type is carried as it came (both SDKs append it and read none of
            # its deltas): it is kept like a block no SDK models.
            ctype = cb.get("type")
            if ctype == "tool_use":
                _check(
                    cb.get("input") == {} and cb.get("id") and cb.get("name"),
                    n,
                    "tool_use start needs id, name, input {}",
                )
            _check(
                ctype in ("text", "thinking", "redacted_thinking", "tool_use")
                or (isinstance(ctype, str) and ctype not in _anthropic_sdk_types("content_block"))
                or "type" not in cb,
                n,
                f"block type {ctype}",
            )
            blocks.append(
                {
                    "type": ctype,
                    "text": cb.get("text", "") + cb.get("thinking", ""),
                    "sig": "",
                    "args": "",
                    "cb": cb,
                }
            )
            open_.add(idx)
        elif t == "content_block_delta":
            idx = obj["index"]
            _check(idx in open_, n, f"delta for block {idx} that is not open")
            d = obj["delta"]
            b = blocks[idx]
            _check("type" in d, n, "a delta without a type")
            if isinstance(d["type"], str) and d["type"] not in _A_DELTA.keys() | _anthropic_sdk_types(
                "delta"
            ):
                continue  # a delta no SDK models: both keep the event and read nothing of it
            _check(_A_DELTA.get(d["type"]) == b["type"], n, f"{d['type']} inside a {b['type']} block")
            if d["type"] == "text_delta":
                b["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                b["text"] += d["thinking"]
            elif d["type"] == "signature_delta":
                b["sig"] += d["signature"]
            else:
                b["args"] += d["partial_json"]
        elif t == "content_block_stop":
            idx = obj["index"]
            _check(idx in open_, n, f"stop for block {idx} that is not open")
            open_.discard(idx)
        elif t == "message_delta":
            _check(state == "streaming", n, "second message_delta")
            _check(not open_, n, f"message_delta with open blocks {sorted(open_)}")
            u = obj.get("usage")
            _check(
                isinstance(u, dict) and isinstance(u.get("output_tokens"), int),
                n,
                "message_delta without usage",
            )
            assert fin.usage is not None and isinstance(u, dict)
            fin.usage.update({k: v for k, v in u.items() if v is not None})
            fin.stop = obj["delta"].get("stop_reason")
            _check(isinstance(fin.stop, str), n, "message_delta without stop_reason")
            state = "delta"
        elif t == "message_stop":
            _check(state == "delta", n, "message_stop without message_delta")
            state = "stopped"
        else:
            raise Violation(f"event #{n}: unknown event {t!r}")
    if fin.error is None:
        _check(state == "stopped", len(events), "stream ended without message_stop")
    for b in blocks:
        if b["type"] not in _A_FAMILIES:
            continue  # a block no SDK models: both keep it as it came, it holds none of these
        if b["type"] == "text":
            fin.text += b["text"]
        elif b["type"] == "thinking":
            fin.thinking += b["text"]
            fin.signature += b["sig"]
        elif b["type"] == "redacted_thinking":
            fin.redacted.append(b["cb"].get("data", ""))
        else:
            fin.tools.append(
                (b["cb"]["id"], b["cb"]["name"], _args(b["args"], len(events), fin.error is not None))
            )
    return fin


# -- OpenAI Chat Completions ----------------------------------------------------------------------


def validate_chat(body: bytes) -> Final:
    events = scan(body)
    fin = Final()
    ident: tuple[Any, Any, Any] | None = None
    role_seen = False
    tools: dict[int, dict[str, Any]] = {}
    state = "streaming"  # streaming -> finished -> usage -> done | error
    for n, ev in enumerate(events):
        _check(state not in ("done", "error"), n, f"event after {state}")
        _check(ev.event == "message", n, f"Chat chunks are data-only, got event {ev.event!r}")
        if ev.data == "[DONE]":
            _check(state in ("finished", "usage"), n, "[DONE] before finish_reason")
            state = "done"
            continue
        obj = _json(ev, n)
        if "error" in obj:
            err = obj["error"]
            _check(
                isinstance(err, dict) and isinstance(err.get("message"), str), n, "malformed error payload"
            )
            fin.error = err
            state = "error"
            continue
        _check(obj.get("object") == "chat.completion.chunk", n, "chunk without object chat.completion.chunk")
        this = (obj.get("id"), obj.get("model"), obj.get("created"))
        _check(isinstance(this[0], str) and isinstance(this[2], int), n, "chunk without id/created")
        if ident is None:
            ident = this
            fin.id = this[0]
        _check(this == ident, n, f"chunk identity {this} != {ident}")
        choices = obj.get("choices")
        _check(isinstance(choices, list), n, "no choices")
        if not choices and obj.get("usage") is None and state == "streaming":
            # A chunk without choices or usage (normalize mode carries a provider's as
            # ``choices: []``): every SDK iterates no choice of it and reads nothing
            continue
        if not choices:
            _check(state == "finished", n, "usage-only chunk not right after the finish chunk")
            u = obj.get("usage")
            _check(
                isinstance(u, dict) and isinstance(u.get("prompt_tokens"), int),
                n,
                "usage-only chunk without usage",
            )
            fin.usage = u
            state = "usage"
            continue
        _check(state == "streaming", n, "chunk with choices after finish_reason")
        _check(obj.get("usage") is None, n, "usage on a non-final chunk")
        _check(len(choices) == 1 and choices[0].get("index") == 0, n, "exactly one choice with index 0")
        ch = choices[0]
        _check(ch.get("logprobs") is None, n, "logprobs")
        delta = ch.get("delta")
        _check(isinstance(delta, dict), n, "choice without delta")
        if "role" in delta:
            _check(not role_seen and delta["role"] == "assistant", n, "role repeated or not assistant")
            role_seen = True
        if delta.get("content") is not None:
            fin.text += delta["content"]
        if delta.get("refusal") is not None:
            fin.refusal += delta["refusal"]
        for slot in ("reasoning_content", "reasoning"):  # the compatible providers' reasoning
            if delta.get(slot) is not None:
                _check(isinstance(delta[slot], str), n, f"{slot} is not a string")
                fin.thinking += delta[slot]
        for tc in delta.get("tool_calls") or []:
            _check("function" in tc, n, "tool-call delta without function")
            i = tc.get("index")
            if i not in tools:
                _check(i == len(tools), n, f"tool index {i} not in first-appearance order")
                _check(
                    bool(tc.get("id")) and tc.get("type") == "function" and bool(tc["function"].get("name")),
                    n,
                    "first tool delta needs id, type, name",
                )
                tools[i] = {
                    "id": tc["id"],
                    "name": tc["function"]["name"],
                    "args": tc["function"].get("arguments") or "",
                }
            else:
                _check(
                    "id" not in tc and "type" not in tc and "name" not in tc["function"],
                    n,
                    "id/type/name repeated in a later tool delta",
                )
                tools[i]["args"] += tc["function"].get("arguments") or ""
        if ch.get("finish_reason") is not None:
            fin.stop = ch["finish_reason"]
            state = "finished"
    if fin.error is None:
        _check(state == "done", len(events), "stream ended without [DONE]")
        _check(role_seen, len(events), "no role in the first delta")
    fin.tools = [
        (t["id"], t["name"], _args(t["args"], len(events), fin.error is not None)) for t in tools.values()
    ]
    return fin


# -- OpenAI Responses -------------------------------------------------------------------------------

_R_DELTAS = {
    "response.output_text.delta": ("message", "output_text"),
    "response.refusal.delta": ("message", "refusal"),
    "response.reasoning_text.delta": ("reasoning", "reasoning_text"),
    "response.function_call_arguments.delta": ("function_call", None),
}
_R_TERMINAL = ("response.completed", "response.incomplete", "response.failed")
_R_SUMMARY = (
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
)


def validate_responses(body: bytes) -> Final:
    events = scan(body)
    fin = Final()
    items: dict[int, dict[str, Any]] = {}
    by_id: dict[str, int] = {}
    seq = 0
    state = "start"
    for n, ev in enumerate(events):
        _check(state not in ("terminal",), n, "event after the terminal event")
        _check(ev.data != "[DONE]", n, "[DONE] on a Responses stream")
        _check(ev.event != "message", n, "data-only event (no event: line)")
        obj = _json(ev, n)
        t = obj.get("type")
        _check(t == ev.event, n, f"payload type {t!r} != event {ev.event!r}")
        _check(obj.get("sequence_number") == seq, n, f"sequence_number {obj.get('sequence_number')} != {seq}")
        seq += 1
        if t == "error":
            _check(
                "error" in obj and isinstance(obj.get("message"), str),
                n,
                "error event needs a top-level error object (SDK raises)",
            )
            fin.error = obj["error"]
            state = "error"
            continue
        if state == "start":
            _check(t == "response.created", n, f"{t} before response.created")
            fin.id = obj["response"]["id"]
            state = "streaming"
            continue
        if t in ("response.created", "response.in_progress") or t in _R_TERMINAL:
            if fin.id is not None:  # (an error before response.created: the SDK raised already)
                _check(obj["response"]["id"] == fin.id, n, "response.id changed across lifecycle events")
            _check(t != "response.created", n, "second response.created")
        if state == "error":
            _check(t == "response.failed", n, "only response.failed may follow an error event")
        if t == "response.output_item.added":
            oi = obj["output_index"]
            _check(oi == len(items), n, f"output_index {oi} not dense/unique (expected {len(items)})")
            it = obj["item"]
            _check(it["id"] not in by_id, n, "duplicate item id")
            items[oi] = {"item": it, "parts": {}, "summary": {}, "done": None, "args": ""}
            by_id[it["id"]] = oi
        elif t == "response.content_part.added":
            rec = items.get(obj["output_index"])
            _check(
                rec is not None and rec["item"]["id"] == obj["item_id"],
                n,
                "content_part.added for unknown item",
            )
            assert rec is not None
            _check(rec["done"] is None, n, "content_part.added after output_item.done")
            _check(obj["content_index"] not in rec["parts"], n, "duplicate content part")
            rec["parts"][obj["content_index"]] = {"type": obj["part"]["type"], "text": "", "done": False}
        elif t in _R_SUMMARY:
            rec = items.get(obj["output_index"])
            _check(
                rec is not None
                and rec["item"]["id"] == obj["item_id"]
                and rec["item"]["type"] == "reasoning",
                n,
                f"{t} for an unknown or non-reasoning item",
            )
            assert rec is not None
            _check(rec["done"] is None, n, f"{t} after output_item.done")
            si = obj["summary_index"]
            summary = rec["summary"].get(si)
            if t == "response.reasoning_summary_part.added":
                _check(summary is None, n, "duplicate summary part")
                _check(obj["part"] == {"type": "summary_text", "text": ""}, n, "summary part added not empty")
                rec["summary"][si] = {"text": "", "done": False}
                continue
            _check(summary is not None and not summary["done"], n, f"{t} without an open summary part")
            assert summary is not None
            if t == "response.reasoning_summary_text.delta":
                summary["text"] += obj["delta"]
            elif t == "response.reasoning_summary_text.done":
                _check(obj["text"] == summary["text"], n, f"{t} text differs from the deltas")
            else:
                _check(
                    obj["part"] == {"type": "summary_text", "text": summary["text"]},
                    n,
                    "summary part done differs from the deltas",
                )
                summary["done"] = True
        elif t in _R_DELTAS:
            rec = items.get(obj["output_index"])
            _check(
                rec is not None and rec["item"]["id"] == obj["item_id"],
                n,
                f"{t} before its output_item.added / wrong item_id",
            )
            assert rec is not None
            _check(rec["done"] is None, n, f"{t} after output_item.done")
            itype, ptype = _R_DELTAS[t]
            _check(rec["item"]["type"] == itype, n, f"{t} on a {rec['item']['type']} item")
            if ptype is None:
                rec["args"] += obj["delta"]
            else:
                part = rec["parts"].get(obj["content_index"])
                _check(
                    part is not None and part["type"] == ptype and not part["done"],
                    n,
                    f"{t} without an open {ptype} part",
                )
                assert part is not None
                part["text"] += obj["delta"]
        elif t in ("response.output_text.done", "response.refusal.done", "response.reasoning_text.done"):
            rec = items[obj["output_index"]]
            part = rec["parts"].get(obj["content_index"])
            _check(part is not None, n, f"{t} for an unknown part")
            assert part is not None
            field_ = "refusal" if t == "response.refusal.done" else "text"
            _check(obj[field_] == part["text"], n, f"{t} text differs from the deltas")
        elif t == "response.content_part.done":
            rec = items[obj["output_index"]]
            part = rec["parts"].get(obj["content_index"])
            _check(part is not None and not part["done"], n, "content_part.done for unknown/closed part")
            assert part is not None
            part["done"] = True
        elif t in ("response.custom_tool_call_input.delta", "response.custom_tool_call_input.done"):
            rec = items.get(obj["output_index"])
            _check(
                rec is not None
                and rec["item"]["id"] == obj["item_id"]
                and rec["item"]["type"] == "custom_tool_call"
                and rec["done"] is None,
                n,
                f"{t} for an unknown, closed or non-custom item",
            )
            assert rec is not None
            if t.endswith(".delta"):
                rec["args"] += obj["delta"]
            else:
                _check(obj["input"] == rec["args"], n, "custom_tool_call_input.done differs from the deltas")
        elif t == "response.function_call_arguments.done":
            rec = items[obj["output_index"]]
            _check(
                rec["item"]["id"] == obj["item_id"] and obj["arguments"] == rec["args"],
                n,
                "arguments.done differs from deltas",
            )
        elif t == "response.output_item.done":
            oi = obj["output_index"]
            rec = items.get(oi)
            _check(rec is not None, n, "output_item.done for an unknown output_index")
            assert rec is not None
            it = obj["item"]
            _check(rec["done"] is None, n, "duplicate output_item.done")
            _check(
                it["id"] == rec["item"]["id"] and it["type"] == rec["item"]["type"],
                n,
                "item id/type at done != added",
            )
            _check(
                all(p["done"] for p in rec["parts"].values()), n, "output_item.done with open content parts"
            )
            _check(
                all(p["done"] for p in rec["summary"].values()), n, "output_item.done with open summary parts"
            )
            if it["type"] == "reasoning":
                _check(
                    [p["text"] for p in it.get("summary") or []]
                    == [p["text"] for _, p in sorted(rec["summary"].items())],
                    n,
                    "reasoning done summary differs from the deltas",
                )
            if it["type"] == "function_call":
                _check(
                    it["arguments"] == rec["args"] and it["call_id"] == rec["item"]["call_id"],
                    n,
                    "function_call done differs from the deltas / call_id",
                )
                _check(it.get("namespace") == rec["item"].get("namespace"), n, "namespace at done != added")
            elif it["type"] == "custom_tool_call":
                _check(
                    it["input"] == rec["args"] and it["call_id"] == rec["item"]["call_id"],
                    n,
                    "custom_tool_call done differs from its input events / call_id",
                )
            elif it["type"] == "tool_search_call":
                _check(
                    it["execution"] == "client" and it["call_id"] == rec["item"]["call_id"], n, "tool_search"
                )
            elif it["type"] == "message":
                texts = [p.get("text", p.get("refusal")) for p in it["content"]]
                _check(
                    texts == [p["text"] for _, p in sorted(rec["parts"].items())],
                    n,
                    "message done content differs from the deltas",
                )
            rec["done"] = it
        elif t in _R_TERMINAL:
            resp = obj["response"]
            status = resp["status"]
            _check(status == t.split(".", 1)[1], n, f"{t} with status {status}")
            if t != "response.failed":
                _check(
                    all(r["done"] is not None for r in items.values()),
                    n,
                    "terminal event with unfinished items",
                )
                out = resp.get("output")
                _check(isinstance(out, list), n, "terminal event without output")
                _check(
                    out == [items[i]["done"] for i in range(len(items))],
                    n,
                    "terminal output differs from the done items",
                )
                u = resp.get("usage")
                _check(
                    isinstance(u, dict) and isinstance(u.get("input_tokens"), int),
                    n,
                    "terminal event without usage",
                )
                fin.usage = u
                reason = (resp.get("incomplete_details") or {}).get("reason")
                _check(
                    (status == "incomplete") == (reason is not None),
                    n,
                    "incomplete_details inconsistent with status",
                )
                fin.stop = status if reason is None else f"{status}:{reason}"
            else:
                _check(isinstance(resp.get("error"), dict), n, "response.failed without error")
                if fin.error is None:
                    fin.error = resp["error"]
            state = "terminal"
        elif t == "response.in_progress":
            pass
        else:
            raise Violation(f"event #{n}: unexpected event {t!r}")
    _check(state == "terminal", len(events), "stream ended without response.completed/incomplete/failed")
    for i in range(len(items)):
        rec = items[i]
        it = rec["done"] or rec["item"]
        fin.ids.append(it["id"])
        if it["type"] == "message":
            for p in it.get("content") or []:
                if p["type"] == "output_text":
                    fin.text += p["text"]
                else:
                    fin.refusal += p["refusal"]
        elif it["type"] == "function_call":
            args = it.get("arguments", "") if rec["done"] else rec["args"]
            fin.tools.append((it["call_id"], it["name"], _args(args, len(events), fin.error is not None)))
        elif it["type"] == "custom_tool_call":
            fin.tools.append((it["call_id"], it["name"], it.get("input", "") if rec["done"] else rec["args"]))
        elif it["type"] == "tool_search_call":
            fin.tools.append((it["call_id"], "tool_search", it.get("arguments")))
        elif it["type"] == "reasoning":
            content = it.get("content") or it.get("summary") or []
            if content:
                fin.thinking += "".join(p["text"] for p in content)
                fin.signature += it.get("encrypted_content") or ""
            elif it.get("encrypted_content"):
                fin.redacted.append(it["encrypted_content"])
    return fin


VALIDATORS = {
    "anthropic_messages": validate_anthropic,
    "openai_chat": validate_chat,
    "openai_responses": validate_responses,
}


# -- the SDKs' own typed event models ------------------------------------------------------------


def _typed_adapters() -> dict[str, Any]:
    import typing

    import pydantic
    from anthropic.types import RawMessageStreamEvent
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseStreamEvent

    by_type: dict[str, Any] = {}
    for member in typing.get_args(typing.get_args(ResponseStreamEvent)[0]):
        by_type[typing.get_args(member.model_fields["type"].annotation)[0]] = member
    return {
        "anthropic_messages": pydantic.TypeAdapter(RawMessageStreamEvent).validate_python,
        "openai_chat": pydantic.TypeAdapter(ChatCompletionChunk).validate_python,
        "openai_responses": lambda o: by_type[o["type"]].model_validate(o),
    }


_TYPED: dict[str, Any] = {}


def validate_typed(protocol: str, body: bytes) -> None:
    """Every emitted event validates against the SDK's own pydantic model of that event (the
    accumulators use unchecked construction, so this catches missing required fields, closed
    literal sets, wrong types). Error events / payloads are checked by the validators above."""
    if not _TYPED:
        _TYPED.update(_typed_adapters())
    check = _TYPED[protocol]
    for n, ev in enumerate(scan(body)):
        if ev.data == "[DONE]":
            continue
        obj = orjson.loads(ev.data)
        if obj.get("type") == "error" or (protocol == "openai_chat" and "error" in obj):
            continue
        if protocol == "anthropic_messages":
            obj = _sdk_modelled(obj)
        try:
            check(obj)
        except Exception as exc:
            raise Violation(f"event #{n} ({obj.get('type')}): not a valid SDK event: {exc}") from None


def _sdk_modelled(obj: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic block or delta of a type anthropic-python does not model: the SDK reads the event
    unchecked (``construct_type``) and keeps the block or passes over the delta, so only its envelope
    is the SDK's model (checked with an empty text block or delta in its place). A block without a
    ``type`` is read so too (it is carried as it came)."""
    for etype, slot, stand_in in (
        ("content_block_start", "content_block", {"type": "text", "text": ""}),
        ("content_block_delta", "delta", {"type": "text_delta", "text": ""}),
    ):
        inner = obj.get(slot)
        if (
            obj.get("type") == etype
            and isinstance(inner, dict)
            and (
                (isinstance(inner.get("type"), str) and inner["type"] not in _anthropic_sdk_types(slot))
                or (slot == "content_block" and "type" not in inner)
            )
        ):
            return {**obj, slot: stand_in}
    return obj
