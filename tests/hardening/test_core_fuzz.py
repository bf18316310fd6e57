"""hypothesis over the sans-IO core: observers, stream translation pairs, request and response
translation. Arbitrary and mutated inputs raise nothing but our typed errors.

- ``StreamObserver.feed`` never raises at all (the contract in docs/design/core.md); ``finish`` / ``abort`` /
  ``summary`` always give a summary whose metadata survives ``-w``.
- ``observe_body`` never raises, whatever the body, status and content type.
- A stream translator raises only ``ProxaiError`` from ``feed`` / ``finish``; ``fail`` always
  returns bytes; whatever it emitted is well-formed SSE whose data payloads are JSON objects.
- ``translate_request`` / ``translate_response`` raise only ``ProxaiError`` on any JSON object.
"""

from __future__ import annotations

import functools
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.core.errors import ProxaiError
from proxai.core.model import ErrorKind, Outcome, Protocol, StreamSummary
from proxai.core.sse import SseEvent, SseScanner
from proxai.pipeline.flow import make_stream_translator
from proxai.pipeline.observe import Limits, StreamObserver, observe_body
from proxai.translate.request import translate_request
from proxai.translate.response import translate_response
from proxai.translate.stream import PAIRS

from .mutate import PROTOCOLS, chunked, fixture_streams, metadata_safe, mutated_stream

# Lean for CI (2 cores): many parametrized targets, a modest number of examples each.
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def stream_input(protocol: Protocol) -> st.SearchStrategy[bytes]:
    return st.one_of(mutated_stream(protocol), st.binary(max_size=400))


def check_summary(s: StreamSummary, protocol: Protocol) -> None:
    assert isinstance(s, StreamSummary)
    assert s.protocol is protocol
    assert isinstance(s.outcome, Outcome)
    meta = s.to_metadata()
    metadata_safe(meta)
    orjson.dumps(meta)


def run_observer(protocol: Protocol, chunks: list[bytes], limits: Limits | None = None) -> StreamObserver:
    obs = StreamObserver(protocol, start=0.0, limits=limits or Limits())
    obs.headers(200, 0.01)
    now = 0.01
    for i, c in enumerate(chunks):
        now += 0.001
        if i % 2:  # the payload path (observe-only flows) and the event path, interleaved
            assert obs.observe(c, now) >= 0
        else:
            events = obs.feed(c, now)
            assert all(isinstance(e, SseEvent) for e in events)
        assert obs.finished_tool_calls == sum(t.finished for t in obs.grammar.acc.tool_order)
        check_summary(obs.summary(), protocol)
    return obs


# -- observers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_every_fixture_protocol_has_streams(protocol: Protocol) -> None:
    assert fixture_streams(protocol), f"no fixture streams for {protocol}"


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
@FUZZ
@given(data=st.data())
def test_observer_never_raises(protocol: Protocol, data: st.DataObject) -> None:
    stream = data.draw(stream_input(protocol))
    chunks = data.draw(chunked(stream))
    obs = run_observer(protocol, chunks)
    s = obs.finish(1.0)
    check_summary(s, protocol)
    assert obs.finish(2.0) is s  # idempotent
    if obs.failed is not None:
        assert isinstance(obs.failed, ProxaiError)
        assert s.outcome is Outcome.ERROR or s.outcome is Outcome.UNFINISHED_TOOL


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
@FUZZ
@given(data=st.data())
def test_observer_abort_mid_stream(protocol: Protocol, data: st.DataObject) -> None:
    stream = data.draw(mutated_stream(protocol))
    cut = data.draw(st.integers(0, len(stream)))
    obs = run_observer(protocol, [stream[:cut]] if cut else [])
    s = obs.abort("upstream reset", 1.0)
    check_summary(s, protocol)
    assert s.outcome in (Outcome.ERROR, Outcome.COMPLETED, Outcome.UNFINISHED_TOOL)


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
@FUZZ
@given(data=st.data(), max_line=st.integers(1, 200), max_event=st.integers(1, 400))
def test_observer_limits_are_typed_stream_limit_errors(
    protocol: Protocol, data: st.DataObject, max_line: int, max_event: int
) -> None:
    stream = data.draw(mutated_stream(protocol))
    limits = Limits(max_line=max_line, max_event=max_event, tail_bytes=64, max_tool_args=32, max_capture=16)
    obs = run_observer(protocol, data.draw(chunked(stream)), limits)
    s = obs.finish(1.0)
    check_summary(s, protocol)
    assert len(obs.tail) <= 64
    if obs.failed is not None and "exceeds the limit" in str(obs.failed):
        assert s.error is not None
        # the first error recorded wins: an upstream error that arrived before the limit stays the
        # summary's error (source "event"/"http"); otherwise the limit is the error
        assert s.error.kind is ErrorKind.STREAM_LIMIT or s.error.source in ("event", "http", "body")
        assert s.outcome is Outcome.ERROR


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
@FUZZ
@given(
    body=st.one_of(
        st.binary(max_size=300), st.sampled_from([b"{}", b"[]", b"null", b'{"error":1}', b"<html>"])
    ),
    status=st.sampled_from([200, 201, 204, 400, 401, 429, 500, 502, 529]),
    content_type=st.sampled_from([None, "application/json", "text/event-stream", "text/html", ""]),
)
def test_observe_body_never_raises(
    protocol: Protocol, body: bytes, status: int, content_type: str | None
) -> None:
    s = observe_body(
        protocol, body, status_code=status, start=0.0, headers_at=0.1, end=0.2, content_type=content_type
    )
    check_summary(s, protocol)
    if status >= 400:
        assert s.outcome is Outcome.ERROR


# -- stream translation pairs -------------------------------------------------------------------

ALL_TRANSLATORS = [*PAIRS, *((p, p) for p in PROTOCOLS)]


def _check_client_bytes(out: bytes, client: Protocol) -> None:
    """What a translator emits is well-formed SSE with JSON-object payloads."""
    assert isinstance(out, bytes)
    if not out:
        return
    assert out.endswith(b"\n\n"), out[-80:]
    sc = SseScanner()
    events = sc.feed(out) + sc.close()
    for ev in events:
        if client is Protocol.OPENAI_CHAT and ev.data == "[DONE]":
            continue
        assert isinstance(orjson.loads(ev.data), dict), ev.data[:200]


def _events(stream: bytes, chunks: list[bytes]) -> list[list[SseEvent]]:
    sc = SseScanner()
    batches = [sc.feed(c) for c in chunks]
    batches.append(sc.close())
    return batches


@pytest.mark.parametrize(("upstream", "client"), ALL_TRANSLATORS, ids=str)
@FUZZ
@given(data=st.data())
def test_stream_translator_raises_only_typed_errors(
    upstream: Protocol, client: Protocol, data: st.DataObject
) -> None:
    stream = data.draw(stream_input(upstream))
    try:
        batches = _events(stream, data.draw(chunked(stream)))
    except ProxaiError:
        return
    tr = make_stream_translator(upstream, client, normalize=upstream is client)
    out: list[bytes] = []
    try:
        for b in batches:
            out.append(tr.feed(b))
        out.append(tr.finish())
    except ProxaiError as exc:
        failed = tr.fail(ErrorKind.UPSTREAM_PROTOCOL, str(exc))
        assert isinstance(failed, bytes)
        out.append(failed)
    _check_client_bytes(b"".join(out), client)


@pytest.mark.parametrize(("upstream", "client"), PAIRS, ids=str)
@FUZZ
@given(data=st.data())
def test_stream_translator_fail_mid_stream(upstream: Protocol, client: Protocol, data: st.DataObject) -> None:
    """The carrier calls ``fail`` when the upstream dies: always a well-formed client error."""
    stream = data.draw(mutated_stream(upstream))
    batches = _events(stream, data.draw(chunked(stream)))
    keep = data.draw(st.integers(0, len(batches)))
    tr = make_stream_translator(upstream, client)
    out: list[bytes] = []
    try:
        for b in batches[:keep]:
            out.append(tr.feed(b))
    except ProxaiError:
        pass
    kind = data.draw(st.sampled_from(list(ErrorKind)))
    out.append(tr.fail(kind, "upstream went away"))
    _check_client_bytes(b"".join(out), client)


# -- request / response translation -------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=25,
)
_KEYS = [
    "model", "messages", "input", "system", "instructions", "tools", "tool_choice", "stream", "max_tokens",
    "max_output_tokens", "max_completion_tokens", "temperature", "stop", "stop_sequences", "thinking",
    "reasoning", "role", "content", "type", "text", "tool_calls", "tool_call_id", "tool_use_id", "id", "name",
    "input_schema", "parameters", "function", "arguments", "call_id", "output", "is_error", "image_url",
    "source", "metadata", "user", "n", "response_format", "choices", "message", "finish_reason", "usage",
    "stop_reason", "status", "output_text", "summary", "parallel_tool_calls",
]  # fmt: skip
shaped = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(_KEYS), inner, max_size=6)
    ),
    max_leaves=40,
)
bodies = st.one_of(
    st.dictionaries(st.sampled_from(_KEYS), shaped, max_size=8),
    st.dictionaries(st.text(max_size=10), json_values, max_size=5),
)


@functools.cache
def _valid_requests() -> list[dict[str, Any]]:
    from .mutate import FIXTURES

    out = []
    for p in sorted((FIXTURES / "translate").glob("*/req_*.in.json")):
        out.append(orjson.loads(p.read_bytes()))
    return out


def _mutate(body: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    from .mutate import _ODD_VALUES, _replace_value

    body = orjson.loads(orjson.dumps(body))
    for _ in range(data.draw(st.integers(1, 3))):
        body = _replace_value(body, data.draw(st.integers(0, 500)), data.draw(st.sampled_from(_ODD_VALUES)))
        if not isinstance(body, dict):
            return {"model": "x"}
    return body


TRANSLATED = [(c, t) for c in PROTOCOLS for t in PROTOCOLS]


@pytest.mark.parametrize(("client", "target"), TRANSLATED, ids=str)
@FUZZ
@given(data=st.data())
def test_request_translation_raises_only_typed_errors(
    client: Protocol, target: Protocol, data: st.DataObject
) -> None:
    valid = _valid_requests()
    pick_valid: bool = data.draw(st.booleans())
    if valid and pick_valid:
        body = _mutate(data.draw(st.sampled_from(valid)), data)
    else:
        body = data.draw(bodies)
    try:
        out = translate_request(body, client, target)
    except ProxaiError:
        return
    orjson.dumps(out.body)  # what goes upstream serializes


@pytest.mark.parametrize(("upstream", "client"), TRANSLATED, ids=str)
@FUZZ
@given(body=bodies)
def test_response_translation_raises_only_typed_errors(
    upstream: Protocol, client: Protocol, body: Any
) -> None:
    try:
        out = translate_response(body, upstream, client)
    except ProxaiError:
        return
    orjson.dumps(out.body)


_NON_STRING_TYPES: list[tuple[str, Protocol, dict[str, Any]]] = [
    # a tool or block type that is not a string (found by the fuzz test above)
    (
        "responses-tool-type-list",
        Protocol.OPENAI_RESPONSES,
        {"model": "m", "input": "hi", "tools": [{"type": ["web_search"]}]},
    ),
    (
        "anthropic-block-type-list",
        Protocol.ANTHROPIC_MESSAGES,
        {
            "model": "m",
            "max_tokens": 5,
            "messages": [{"role": "assistant", "content": [{"type": ["server_tool_use"]}]}],
        },
    ),
    (
        "anthropic-message-not-object",
        Protocol.ANTHROPIC_MESSAGES,
        {"model": "m", "max_tokens": 5, "messages": ["not a message"]},
    ),
]


@pytest.mark.parametrize(
    ("client", "target", "body"),
    [(c, t, b) for _, c, b in _NON_STRING_TYPES for t in Protocol if t is not c],
    ids=[f"{n}-to-{t}" for n, c, _ in _NON_STRING_TYPES for t in Protocol if t is not c],
)
def test_non_string_types_are_typed_errors(client: Protocol, target: Protocol, body: dict[str, Any]) -> None:
    with pytest.raises(ProxaiError):
        translate_request(body, client, target)
