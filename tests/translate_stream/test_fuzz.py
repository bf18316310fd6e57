"""hypothesis: arbitrary and mutated event sequences raise nothing but our typed errors, and
whatever happens the client receives a well-formed stream of its own protocol."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.core.errors import ProxaiError
from proxai.core.model import ErrorKind, Protocol
from proxai.core.sse import SseEvent
from proxai.pipeline.flow import make_stream_translator
from tests.conformance import sdks

from .harness import A, C, R, carry, render, translate
from .validators import VALIDATORS, scan, validate_typed

ROUTES = [(A, C), (A, R), (C, A), (C, R), (R, A), (R, C), (A, A), (C, C), (R, R)]
SCENARIOS = [
    "text",
    "parallel_tools",
    "thinking",
    "redacted_thinking",
    "refusal",
    "args_in_done",
    "max_tokens",
]
_EVENTS = {p: {s: scan(render(p, s)[0]) for s in SCENARIOS} for p in (A, C, R)}

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 5), st.text(max_size=6))
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
NAMES = [
    "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
    "message_stop", "error", "ping", "message", "response.created", "response.output_item.added",
    "response.content_part.added", "response.output_text.delta", "response.function_call_arguments.delta",
    "response.output_item.done", "response.completed", "response.incomplete", "response.failed",
]  # fmt: skip


def run(up: Protocol, client: Protocol, events: list[SseEvent]) -> bytes:
    """Feed event by event like a carrier; the output must always be a valid client stream."""
    t = make_stream_translator(up, client, normalize=up is client)
    out: list[bytes] = []
    try:
        for ev in events:
            out.append(t.feed([ev]))
        out.append(t.finish())
    except ProxaiError as exc:  # the only thing allowed to escape
        out.append(t.fail(ErrorKind.UPSTREAM_PROTOCOL, str(exc)))
    return b"".join(out)


def mutated_payload(data: str, rnd: Any) -> str:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return data
    if isinstance(obj, dict) and obj:
        key = rnd.choice(sorted(obj))
        obj[key] = rnd.choice([None, 7, "x", [], {}, {"type": "text_delta"}])
    return orjson.dumps(obj).decode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    route=st.sampled_from(ROUTES),
    raw=st.lists(
        st.tuples(
            st.sampled_from(NAMES),
            st.one_of(json_value.map(lambda v: orjson.dumps(v).decode()), st.text(max_size=20)),
        ),
        max_size=12,
    ),
)
def test_arbitrary_events_only_typed_errors(
    route: tuple[Protocol, Protocol], raw: list[tuple[str, str]]
) -> None:
    up, client = route
    events = [SseEvent(name, data, "") for name, data in raw]
    out = run(up, client, events)
    VALIDATORS[client.value](out)
    validate_typed(client.value, out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(route=st.sampled_from(ROUTES), scenario=st.sampled_from(SCENARIOS), data=st.data())
def test_mutated_streams_only_typed_errors(
    route: tuple[Protocol, Protocol], scenario: str, data: st.DataObject
) -> None:
    up, client = route
    events = list(_EVENTS[up][scenario])
    rnd = data.draw(st.randoms(use_true_random=False))
    for _ in range(data.draw(st.integers(1, 4))):
        i = rnd.randrange(len(events))
        op = data.draw(st.sampled_from(["drop", "dup", "swap", "mutate", "truncate"]))
        if op == "drop":
            del events[i]
        elif op == "dup":
            events.insert(i, events[i])
        elif op == "swap" and i + 1 < len(events):
            events[i], events[i + 1] = events[i + 1], events[i]
        elif op == "mutate":
            ev = events[i]
            events[i] = SseEvent(ev.event, mutated_payload(ev.data, rnd), ev.id)
        elif op == "truncate":
            events = events[:i]
        if not events:
            break
    out = run(up, client, events)
    VALIDATORS[client.value](out)
    validate_typed(client.value, out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    route=st.sampled_from(ROUTES),
    scenario=st.sampled_from(SCENARIOS),
    cuts=st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=40),
)
def test_chunking_never_changes_the_output(
    route: tuple[Protocol, Protocol], scenario: str, cuts: list[int]
) -> None:
    up, client = route
    raw = render(up, scenario)[0]
    points = sorted({c % (len(raw) + 1) for c in cuts})
    pieces = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    whole, _ = translate(up, client, raw)
    t = make_stream_translator(up, client, normalize=up is client, created=1_767_225_600)
    assert carry(t, pieces) == whole


@pytest.mark.parametrize("scenario", ["parallel_tools", "args_in_done"])
def test_a_tool_block_started_twice_is_a_typed_error_for_a_responses_client(scenario: str) -> None:
    """Both Anthropic SDKs append a second block when a tool_use start comes again (same index,
    same id); a Responses client's SDK refuses two output items of one identity, so the client
    gets a typed error that names the call instead of a second item with the same id."""
    events = list(_EVENTS[Protocol.ANTHROPIC_MESSAGES][scenario])
    at = next(i for i, ev in enumerate(events) if '"tool_use"' in ev.data)
    call_id = orjson.loads(events[at].data)["content_block"]["id"]
    events.insert(at, events[at])
    out = run(Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_RESPONSES, events)
    VALIDATORS["openai_responses"](out)
    validate_typed("openai_responses", out)
    assert f"the upstream started the call {call_id!r} twice".encode() in out
    assert out.count(f'"call_id":"{call_id}"'.encode()) >= 1  # the first one was delivered


def _a(etype: str, **fields: Any) -> bytes:
    return f"event: {etype}\ndata: {orjson.dumps({'type': etype, **fields}).decode()}\n\n".encode()


_MSG = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": []}
_UNKNOWN_BLOCK = {"type": "gateway_card", "card": {"title": "t"}}  # a type no SDK models
_WITH_UNKNOWN = [
    _a("message_start", message={**_MSG, "usage": {"input_tokens": 3, "output_tokens": 1}}),
    _a("content_block_start", index=0, content_block=_UNKNOWN_BLOCK),
    _a("content_block_delta", index=0, delta={"type": "gateway_card_delta", "more": 1}),
    _a("content_block_stop", index=0),
    _a("content_block_start", index=1, content_block={"type": "text", "text": ""}),
    _a("content_block_delta", index=1, delta={"type": "gateway_card_delta", "more": 2}),
    _a("content_block_delta", index=1, delta={"type": "text_delta", "text": "Hi"}),
    _a("content_block_stop", index=1),
    _a("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 2}),
    _a("message_stop"),
]


def test_a_block_and_a_delta_of_unknown_types_are_carried_as_the_sdks_keep_them() -> None:
    """Normalize mode writes a ``content_block_start`` and a delta of a type no SDK models as they
    came: both Anthropic SDKs keep the block as it came and pass over the delta, so the stream is
    well formed and the validators take it (the block holds no text, tool or thinking)."""
    body = b"".join(_WITH_UNKNOWN)
    out, _ = translate(A, A, body)
    datas = [orjson.loads(ev.data) for ev in scan(out)]
    assert [d["type"] for d in datas] == [orjson.loads(ev.data)["type"] for ev in scan(body)]
    assert datas[1:4] == [orjson.loads(ev.data) for ev in scan(b"".join(_WITH_UNKNOWN[1:4]))]
    assert datas[5] == {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "gateway_card_delta", "more": 2},
    }
    fin = VALIDATORS["anthropic_messages"](out)
    validate_typed("anthropic_messages", out)
    assert (fin.text, fin.tools, fin.stop) == ("Hi", [], "end_turn")
    node = sdks.node([("anthropic", out)])[0]
    for got in (sdks.python("anthropic", out), node):
        assert got.ok, got
        assert [{k: b.get(k) for k in ("type", "card", "text")} for b in got.final["content"]] == [
            {"type": "gateway_card", "card": {"title": "t"}, "text": None},
            {"type": "text", "card": None, "text": "Hi"},
        ]


@pytest.mark.parametrize(
    ("event", "rule"),
    [
        (_a("content_block_start", index=0, content_block={"type": "server_tool_use"}), "block type"),
        (_a("content_block_delta", index=0, delta={"type": "text_delta", "text": "x"}), "inside a"),
    ],
)
def test_the_validator_still_refuses_what_the_writer_never_writes(event: bytes, rule: str) -> None:
    """An SDK-modelled block type the writers never emit, and a known delta in a block of an unknown
    type (the writer leaves it out: the SDKs pass over it) are still refused."""
    at = 1 if b"content_block_start" in event else 2
    body = b"".join([*_WITH_UNKNOWN[:at], event, *_WITH_UNKNOWN[at + (at == 1) :]])
    with pytest.raises(AssertionError, match=rule):
        VALIDATORS["anthropic_messages"](body)


def test_a_block_without_a_type_is_carried_and_its_text_deltas_left_out() -> None:
    """A ``content_block_start`` whose block has no ``type`` (the mutation ``content_block: {}``):
    both Anthropic SDKs append the block as it came and read none of its text deltas, so normalize
    mode writes the block as it came and leaves the deltas out (the observer names
    ``anthropic_messages.delta_type``); the validators take the stream (before, the validator broke
    on the missing key) and both real SDKs read it with the block as sent."""
    body = b"".join(
        [
            _WITH_UNKNOWN[0],
            _a("content_block_start", index=0, content_block={}),
            _a("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}),
            _a("content_block_stop", index=0),
            *_WITH_UNKNOWN[-2:],
        ]
    )
    out, _ = translate(A, A, body)
    assert [orjson.loads(ev.data) for ev in scan(out)][1:3] == [
        {"type": "content_block_start", "index": 0, "content_block": {}},
        {"type": "content_block_stop", "index": 0},
    ]
    fin = VALIDATORS["anthropic_messages"](out)
    validate_typed("anthropic_messages", out)
    assert (fin.text, fin.tools, fin.stop) == ("", [], "end_turn")
    node = sdks.node([("anthropic", out)])[0]
    for got in (sdks.python("anthropic", out), node):
        assert got.ok, got
        assert len(got.final["content"]) == 1
        assert got.final["content"][0].get("text") is None
