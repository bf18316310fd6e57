"""hypothesis: arbitrary bytes and mutated fixtures never raise out of the observers, and
chunking never changes a summary (timing and the chunk count aside)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.core.errors import ProxaiError
from proxai.core.model import Protocol
from proxai.pipeline.observe import Limits, StreamObserver, observe_body
from proxai.protocols.anthropic import AnthropicGrammar
from proxai.protocols.chat import ChatGrammar
from proxai.protocols.responses import ResponsesGrammar
from tests.observe.harness import FIXTURES, fixture_cases, normalize
from tests.splits import cut_pieces

PROTOCOLS = list(Protocol)
STREAMS = [p for p in fixture_cases() if p.suffix == ".sse"]
BODIES = [p for p in fixture_cases() if p.suffix == ".json"]
SMALL = Limits(max_line=2048, max_event=4096, tail_bytes=256, max_tool_args=64, max_capture=64)


def observe(
    protocol: Protocol, pieces: list[bytes], limits: Limits, status: int = 200, *, events: bool = True
) -> dict[str, object]:
    """``events``: ``StreamObserver.feed``, else ``.observe`` (the payload path)."""
    obs = StreamObserver(protocol, start=0.0, limits=limits, capture=True)
    obs.headers(status, 0.0)
    feed = obs.feed if events else obs.observe
    for i, piece in enumerate(pieces):
        feed(piece, float(i))
        # The count the guard reads:
        assert obs.finished_tool_calls == sum(t.finished for t in obs.grammar.acc.tool_order)
        obs.summary()
        assert obs.failed is None or isinstance(obs.failed, ProxaiError)
    s = obs.finish(float(len(pieces)))
    assert len(obs.tail) <= limits.tail_bytes
    return normalize(s, obs.failed)


def cut(data: bytes) -> st.SearchStrategy[list[bytes]]:
    return cut_pieces(data, max_cuts=20, keep_empty=False)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[Protocol, bytes]:
    path: Path = draw(st.sampled_from(STREAMS))
    data = bytearray(path.read_bytes())
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "delete", "insert", "truncate", "dup"]))
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        if op == "flip":
            data[i] = draw(st.integers(0, 255))
        elif op == "delete":
            del data[i : i + draw(st.integers(1, 40))]
        elif op == "insert":
            data[i:i] = draw(
                st.sampled_from([b"\n\n", b'"', b"{", b"}", b"null", b"[]", b"0", b"\r", b"data: x\n\n"])
            )
        elif op == "truncate":
            del data[i:]
        else:
            j = draw(st.integers(i, min(len(data), i + 400)))
            data[j:j] = data[i:j]
    return Protocol(path.parent.name), bytes(data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(protocol=st.sampled_from(PROTOCOLS), raw=st.binary(max_size=3000), data=st.data())
def test_arbitrary_bytes_never_raise(protocol: Protocol, raw: bytes, data: st.DataObject) -> None:
    pieces = data.draw(cut(raw))
    whole = observe(protocol, [raw] if raw else [], SMALL)
    assert observe(protocol, pieces, SMALL) == whole
    assert observe(protocol, pieces, SMALL, events=False) == whole


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated(), data=st.data(), status=st.sampled_from([200, 200, 200, 429, 500]))
def test_mutated_fixtures_never_raise_and_chunking_never_matters(
    case: tuple[Protocol, bytes], data: st.DataObject, status: int
) -> None:
    protocol, raw = case
    pieces = data.draw(cut(raw))
    limits = data.draw(st.sampled_from([Limits(), SMALL]))
    whole = observe(protocol, [raw] if raw else [], limits, status)
    assert observe(protocol, pieces, limits, status) == whole
    assert observe(protocol, pieces, limits, status, events=False) == whole
    assert observe(protocol, [raw[i : i + 1] for i in range(len(raw))], limits, status) == whole
    assert observe(protocol, [raw[i : i + 1] for i in range(len(raw))], limits, status, events=False) == whole


@settings(max_examples=200, deadline=None)
@given(
    protocol=st.sampled_from(PROTOCOLS),
    path=st.sampled_from(BODIES),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    status=st.sampled_from([200, 400, 503]),
)
def test_mutated_bodies_never_raise(
    protocol: Protocol, path: Path, flips: list[tuple[int, int]], status: int
) -> None:
    body = bytearray(path.read_bytes())
    for pos, val in flips:
        if body:
            body[pos % len(body)] = val
    s = observe_body(protocol, bytes(body), status_code=status, start=0, headers_at=0, end=0, capture=True)
    s.to_metadata()


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_KEYS = [
    "type",
    "index",
    "delta",
    "content_block",
    "message",
    "usage",
    "choices",
    "item",
    "item_id",
    "response",
    "error",
    "sequence_number",
    "id",
    "model",
    "tool_calls",
    "finish_reason",
    "output",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    protocol=st.sampled_from(PROTOCOLS),
    path=st.sampled_from(STREAMS),
    key=st.sampled_from(_KEYS),
    value=_JSON_VALUES,
    which=st.integers(0, 50),
)
def test_wrong_shaped_payloads_are_protocol_errors_not_crashes(
    protocol: Protocol, path: Path, key: str, value: object, which: int
) -> None:
    """Valid JSON of the wrong shape (a string where an object belongs...) in one event."""

    blocks = path.read_bytes().split(b"\n\n")
    i = which % len(blocks)
    lines = blocks[i].split(b"\n")
    for j, line in enumerate(lines):
        if line.startswith(b"data: {"):
            try:
                obj = orjson.loads(line[6:])
            except orjson.JSONDecodeError:
                return
            obj[key] = value
            lines[j] = b"data: " + orjson.dumps(obj)
    blocks[i] = b"\n".join(lines)
    raw = b"\n\n".join(blocks)
    observe(Protocol(path.parent.name), [raw], Limits())
    observe(protocol, [raw], Limits())


def test_fixture_dir_exists() -> None:
    assert FIXTURES.is_dir()


def _without_fast_paths(protocol: Protocol, raw: bytes, pieces: list[bytes]) -> dict[str, object]:
    from proxai.protocols.common import GrammarBase

    classes = [AnthropicGrammar, ChatGrammar, ResponsesGrammar]
    saved = [c.__dict__["_fast"] for c in classes]
    try:
        for c in classes:
            c._fast = GrammarBase._fast  # type: ignore[method-assign]
        return observe(protocol, pieces, Limits())
    finally:
        for c, f in zip(classes, saved, strict=True):
            c._fast = f  # type: ignore[method-assign]


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fast_paths_change_nothing_on_fixtures(path: Path) -> None:
    raw = path.read_bytes()
    protocol = Protocol(path.parent.name)
    assert observe(protocol, [raw], Limits()) == _without_fast_paths(protocol, raw, [raw])


def _chat_chunk(choices: object, **top: object) -> bytes:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", **top}
    if "id" in top and top["id"] is None:
        del chunk["id"]
    return b"data: " + orjson.dumps({**chunk, "choices": choices}) + b"\n\n"


def _chat_delta(delta: object, **choice: object) -> list[dict[str, object]]:
    return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None, **choice}]


_CHAT_OPEN = _chat_chunk(_chat_delta({"role": "assistant", "content": ""})) + _chat_chunk(
    _chat_delta({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}]})
)


@pytest.mark.parametrize(
    "odd",
    [
        _chat_chunk("x"),  # a one-character string where the choices list belongs
        _chat_chunk({"x": 1}),  # a one-key object there
        _chat_chunk(_chat_delta("x")),  # a one-character string as the delta
        _chat_chunk(_chat_delta(["content"])),  # a one-element list as the delta
        _chat_chunk(_chat_delta({"content": ["x"]})),
        _chat_chunk(_chat_delta({"content": "x"}), id=None),  # no id
        _chat_chunk(_chat_delta({"content": "x"}), usage=None),  # a null usage: still the hot shape
        _chat_chunk(_chat_delta({"content": "x"}), error={"message": "boom"}),
        _chat_chunk(_chat_delta({"content": "x"}, index=False)),
        _chat_chunk(_chat_delta({"reasoning": "x"})),
        _chat_chunk(_chat_delta({"tool_calls": "x"})),
        _chat_chunk(_chat_delta({"tool_calls": {"index": 0}})),
        _chat_chunk(_chat_delta({"tool_calls": [{"index": 0, "function": ["x"]}]})),
        _chat_chunk(_chat_delta({"tool_calls": [{"index": [0], "function": {"arguments": "{"}}]})),
        _chat_chunk(_chat_delta({"tool_calls": [{"index": 0, "function": {"arguments": 1}}]})),
        _chat_chunk(_chat_delta({"tool_calls": [{"index": 0, "function": {"arguments": "{"}, "id": "x"}]})),
    ],
)
def test_chat_fast_path_leaves_every_other_shape_to_the_general_path(odd: bytes) -> None:
    """The Chat fast path reads a chunk's shape by subscripts and unpacking: a value of another
    type or length, or a missing key, is read as the general path reads it."""
    raw = _CHAT_OPEN + odd + _chat_chunk(_chat_delta({"content": "y"})) + b"data: [DONE]\n\n"
    summary = observe(Protocol.OPENAI_CHAT, [raw], Limits())
    assert summary == _without_fast_paths(Protocol.OPENAI_CHAT, raw, [raw])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated())
def test_fast_paths_change_nothing_on_mutated_fixtures(case: tuple[Protocol, bytes]) -> None:
    protocol, raw = case
    assert observe(protocol, [raw], Limits()) == _without_fast_paths(protocol, raw, [raw])


@settings(max_examples=200, deadline=None)
@given(
    chunks=st.lists(st.binary(min_size=1, max_size=300), max_size=40),
    cap=st.sampled_from([0, 1, 7, 100, 256, 1000]),
)
def test_tail_is_the_last_bytes(chunks: list[bytes], cap: int) -> None:
    obs = StreamObserver(Protocol.OPENAI_CHAT, start=0.0, limits=Limits(tail_bytes=cap))
    seen = b""
    for c in chunks:
        obs.feed(c, 0.0)
        seen += c
        assert obs.tail == (seen[-cap:] if cap else b"")
