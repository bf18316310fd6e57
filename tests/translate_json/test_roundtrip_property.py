"""Property: translating A -> B -> A keeps the text, the tool calls (ids, names, argument
JSON), the stop-reason class and the usage, for responses and requests.

Replies are generated in protocol-neutral form, rendered in protocol A, translated to B and
back, and compared with the original A body parsed again.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.core.model import Protocol, StopClass
from proxai.stream import stop_reasons
from proxai.translate import ir
from proxai.translate.request import translate_request
from proxai.translate.response import parse_response, render_response, translate_response

PROTOCOLS = list(Protocol)
PAIRS = [(a, b) for a in PROTOCOLS for b in PROTOCOLS if a is not b]

json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(10**9), 10**9), st.text(max_size=20))
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
json_object = st.dictionaries(st.text(max_size=10), json_value, max_size=5)
text = st.text(min_size=1, max_size=40)
names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,15}", fullmatch=True)


@st.composite
def replies(draw: st.DrawFn) -> ir.ResponseIR:
    parts: list[ir.Part] = []
    if draw(st.booleans()):
        parts.append(ir.TextPart(draw(text), "t"))
    n_calls = draw(st.integers(0, 3))
    ids = draw(st.lists(st.from_regex(r"call_[a-z0-9]{1,10}", fullmatch=True), min_size=n_calls,
                        max_size=n_calls, unique=True))  # fmt: skip
    for call_id in ids:
        args = draw(json_object)
        parts.append(ir.ToolCallPart(call_id, draw(names), ir_dump(args), args, "c"))
    if n_calls:
        stop = StopClass.TOOL_USE
    elif draw(st.booleans()):
        parts.append(ir.RefusalPart(draw(text), "r"))
        stop = StopClass.REFUSAL
    else:
        if not parts:
            parts.append(ir.TextPart(draw(text), "t"))
        stop = draw(st.sampled_from([StopClass.END_TURN, StopClass.MAX_TOKENS, StopClass.STOP_SEQUENCE]))
    cache_read = draw(st.integers(0, 10_000))
    cache_write = draw(st.integers(0, 10_000))
    usage = ir.UsageIR(
        input_tokens=draw(st.integers(0, 10_000)) + cache_read + cache_write,
        output_tokens=draw(st.integers(0, 10_000)),
        cache_read=cache_read,
        cache_write=cache_write,
    )
    return ir.ResponseIR("resp_x1", "model-x", parts, stop, usage, stop_sequence="END")


def ir_dump(value: object) -> str:
    from proxai.translate.checks import dump_arguments

    return dump_arguments(value)


def essence(resp: ir.ResponseIR) -> dict[str, Any]:
    u = resp.usage
    assert u is not None
    return {
        "text": "".join(p.text for p in resp.parts if isinstance(p, ir.TextPart)),
        "refusal": "".join(p.text for p in resp.parts if isinstance(p, ir.RefusalPart)),
        "calls": [(p.id, p.name, p.input) for p in resp.parts if isinstance(p, ir.ToolCallPart)],
        "usage": (u.input_tokens, u.output_tokens, u.cache_read, u.cache_write),
    }


@settings(max_examples=60, deadline=None)
@given(reply=replies(), pair=st.sampled_from(PAIRS))
def test_response_round_trip(reply: ir.ResponseIR, pair: tuple[Protocol, Protocol]) -> None:
    a, b = pair
    original = render_response(reply, a, created=1).body
    there = translate_response(original, a, b, created=1).body
    back = translate_response(there, b, a, created=1).body
    before, after = parse_response(original, a), parse_response(back, a)
    assert essence(after) == essence(before)
    assert stop_reasons.same_class(after.stop, before.stop), (before.stop, after.stop)


@st.composite
def chat_conversations(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": draw(text)}]
    used: set[str] = set()
    for _ in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": draw(text)})
        ids = [i for i in draw(st.lists(st.from_regex(r"call_[a-z0-9]{1,10}", fullmatch=True), max_size=2,
                                        unique=True)) if i not in used]  # fmt: skip
        used.update(ids)
        assistant: dict[str, Any] = {"role": "assistant", "content": draw(text)}
        if ids:
            assistant["tool_calls"] = [
                {
                    "id": i,
                    "type": "function",
                    "function": {"name": draw(names), "arguments": ir_dump(draw(json_object))},
                }
                for i in ids
            ]
        messages.append(assistant)
        messages.extend({"role": "tool", "tool_call_id": i, "content": draw(text)} for i in ids)
    return {"model": "m", "messages": messages, "max_tokens": 100}


def chat_essence(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    from proxai.translate.checks import parse_arguments

    out: list[tuple[Any, ...]] = []
    for m in body["messages"]:
        calls = tuple(
            (c["id"], c["function"]["name"], parse_arguments(c["function"]["arguments"], "x"))
            for c in m.get("tool_calls") or []
        )
        out.append((m["role"], m.get("content"), m.get("tool_call_id"), calls))
    return out


@settings(max_examples=40, deadline=None)
@given(
    body=chat_conversations(),
    target=st.sampled_from([Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_RESPONSES]),
)
def test_chat_request_round_trip(body: dict[str, Any], target: Protocol) -> None:
    there = translate_request(body, Protocol.OPENAI_CHAT, target).body
    back = translate_request(there, target, Protocol.OPENAI_CHAT).body
    assert chat_essence(back) == chat_essence(body)


@st.composite
def anthropic_conversations(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    pending: list[str] = []
    n = 0
    for _ in range(draw(st.integers(1, 3))):
        user: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": i, "content": draw(text)} for i in pending
        ]
        user.append({"type": "text", "text": draw(text)})
        messages.append({"role": "user", "content": user})
        pending = []
        blocks: list[dict[str, Any]] = [{"type": "text", "text": draw(text)}]
        for _ in range(draw(st.integers(0, 2))):
            n += 1
            pending.append(f"toolu_{n}")
            blocks.append(
                {"type": "tool_use", "id": f"toolu_{n}", "name": draw(names), "input": draw(json_object)}
            )
        messages.append({"role": "assistant", "content": blocks})
    return {"model": "m", "max_tokens": 100, "system": draw(text), "messages": messages}


def anthropic_essence(body: dict[str, Any]) -> list[Any]:
    out: list[Any] = [body.get("system")]
    for m in body["messages"]:
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        out.append((m["role"], [{k: v for k, v in b.items() if k != "is_error"} for b in content]))
    return out


@settings(max_examples=40, deadline=None)
@given(
    body=anthropic_conversations(), target=st.sampled_from([Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES])
)
def test_anthropic_request_round_trip(body: dict[str, Any], target: Protocol) -> None:
    there = translate_request(body, Protocol.ANTHROPIC_MESSAGES, target).body
    back = translate_request(there, target, Protocol.ANTHROPIC_MESSAGES).body
    assert anthropic_essence(back) == anthropic_essence(body)
