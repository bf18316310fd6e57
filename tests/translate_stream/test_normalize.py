"""Normalize mode (same protocol in and out, strict output): the quirks of compatible providers
are repaired (compatibility normalization and the empty tail, docs/design/translation.md), lifecycle-free
deltas are accepted only here (docs/design/translation.md)."""

from __future__ import annotations

import orjson
import pytest

from proxai.core.errors import ConfigError, UpstreamProtocolError
from proxai.core.model import ErrorKind, Protocol
from proxai.core.sse import SseScanner
from proxai.pipeline.flow import make_stream_translator

from . import build as b
from .harness import SDKS, A, C, R, chunks, sdk_anthropic, sdk_neutral, translate
from .validators import validate_anthropic, validate_chat


def norm(proto: Protocol, body: bytes, mode: str = "whole") -> bytes:
    t = make_stream_translator(proto, proto, normalize=True)
    sc = SseScanner()
    out = [t.feed(sc.feed(piece)) for piece in chunks(body, mode)]
    out.append(t.feed(sc.close()))
    out.append(t.finish())
    return b"".join(out)


NO_USAGE_DELTA = (
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"}}\n\n'
)


def text_block(index: int, text: str, *, event_line: bool = True) -> bytes:
    return (
        b.a(
            "content_block_start",
            index=index,
            content_block={"type": "text", "text": ""},
            event_line=event_line,
        )
        + b.a(
            "content_block_delta",
            index=index,
            delta={"type": "text_delta", "text": text},
            event_line=event_line,
        )
        + b.a("content_block_stop", index=index, event_line=event_line)
    )


@pytest.mark.parametrize("mode", ["whole", "bytes", "random"])
def test_anthropic_compatible_quirks_repaired(mode: str) -> None:
    body = (
        b.a_start(usage={"input_tokens": 7, "output_tokens": 0}).replace(
            b"event: message_start\n", b""
        )  # data-only
        + text_block(0, "Hello", event_line=False)
        + text_block(2, " world")  # non-dense index
        + b.a(
            "content_block_start",
            index=5,
            content_block={"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        )
        + b.a_args(5, '{"x": 1}')
        + b.a("content_block_stop", index=5)
        + NO_USAGE_DELTA
        + b.a("message_stop")
        + b"data: \n\n"  # empty JSON tail
    )
    out = norm(A, body, mode)
    fin = validate_anthropic(out)
    assert fin.text == "Hello world"
    assert fin.tools == [("t1", "f", {"x": 1})]
    assert fin.stop == "tool_use"
    final = SDKS[A](out)
    assert [blk.type for blk in final.content] == ["text", "text", "tool_use"]
    assert final.usage.input_tokens == 7


def test_lifecycle_free_deltas_only_in_normalize_mode() -> None:
    body = b.a_start() + b.a_text(0, "no start") + b.a_end()
    fin = validate_anthropic(norm(A, body))
    assert fin.text == "no start"
    # a translation does not repair: the delta for a block that never started is dropped, as the
    # SDKs drop it (a conformance finding)
    fin = validate_chat(translate(A, C, body)[0])
    assert (fin.text, fin.stop) == ("", "stop")


def test_lifecycle_free_without_message_start() -> None:
    body = b.a_text(0, "bare") + b.a_end()
    fin = validate_anthropic(norm(A, body))
    assert fin.text == "bare"


@pytest.mark.parametrize("mode", ["whole", "bytes", "random"])
def test_openai_compatible_quirks_repaired(mode: str) -> None:
    usage = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}
    body = (
        b.c({"role": "assistant", "content": "Hi"}, usage=usage)
        + b.c({"role": "assistant", "content": " there"}, usage=usage)  # role repeated, usage on every chunk
        + b.c({"role": "assistant", **b.c_tool(0, "call_1", "f", "")})
        + b.c(b.c_tool(0, "call_1", "f", '{"a":'))  # id/name repeated
        + b.c(b.c_tool(0, args="1}"), finish="tool_calls", usage=usage)
        + b"data: \n\n"  # empty tail, and no usage-only chunk, no [DONE]
    )
    out = norm(C, body, mode)
    fin = validate_chat(out)
    assert fin.text == "Hi there"
    assert fin.tools == [("call_1", "f", {"a": 1})]
    assert fin.usage is not None and fin.usage["prompt_tokens"] == 9
    got = sdk_neutral(C, SDKS[C](out))
    assert got is not None and got.tools == [("call_1", "f", {"a": 1})] and got.usage == (9, 3, 0, 0)


def test_chat_eof_after_finish_ends_the_stream_outside_normalize_too() -> None:
    """EOF right after ``finish_reason`` (no ``[DONE]``): the SDK reads the answer, so does a
    translation."""
    body = b.c({"role": "assistant", "content": "Hi"}) + b.c(finish="stop")
    t = make_stream_translator(C, A)
    sc = SseScanner()
    out = t.feed(sc.feed(body)) + t.finish()
    fin = validate_anthropic(out)
    assert (fin.error, fin.text, fin.stop) == (None, "Hi", "end_turn")


def test_empty_payload_before_any_data_is_an_error() -> None:
    t = make_stream_translator(A, A, normalize=True)
    with pytest.raises(UpstreamProtocolError, match="empty payload"):
        t.feed(SseScanner().feed(b"event: message_start\ndata:  \n\n"))  # (spaces: the SDKs raise)
    assert validate_anthropic(t.fail(ErrorKind.UPSTREAM_PROTOCOL, "bad")).error is not None


def test_a_payload_the_sdks_skip_before_any_data_is_skipped() -> None:
    """An event without an ``event:`` line and a named one with empty data: both SDKs skip them, so
    does normalize mode; the stream that ends there has no message (the client is told)."""
    t = make_stream_translator(A, A, normalize=True)
    assert t.feed(SseScanner().feed(b"data: \n\nevent: message_start\ndata:\n\n")) == b""
    fin = validate_anthropic(t.finish())
    assert fin.error is not None and (fin.text, fin.tools) == ("", [])


def test_responses_normalize_passes_scenarios_through() -> None:
    from .harness import render, translate

    raw, _ = render(R, "parallel_tools")
    out, _ = translate(R, R, raw)
    assert SDKS[R](out).output[-1].type == "function_call"


@pytest.mark.parametrize(
    ("up", "client", "normalize"), [(A, A, False), (C, C, False), (A, C, True), (R, A, True)]
)
def test_factory_rejects_bad_combinations(up: Protocol, client: Protocol, normalize: bool) -> None:
    with pytest.raises(ConfigError):
        make_stream_translator(up, client, normalize=normalize)


def test_anthropic_cache_writes_by_lifetime_reach_the_client() -> None:
    """The ``cache_creation`` split (5-minute / 1-hour writes, billed at different rates) is carried
    to the client in ``message_start`` and ``message_delta``, so its own cost accounting stays right;
    the SDK reads it back."""
    split = {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 400}
    usage = {"input_tokens": 7, "cache_creation_input_tokens": 500, "cache_read_input_tokens": 20}
    body = (
        b.a_start(usage={**usage, "output_tokens": 1, "cache_creation": split})
        + text_block(0, "Hi")
        + b.a_end("end_turn", usage={**usage, "output_tokens": 3, "cache_creation": split})
    )
    events = [
        orjson.loads(e.data)
        for e in SseScanner().feed(norm(A, body, "bytes"))
        if e.event in {"message_start", "message_delta"}
    ]
    want = {**usage, "cache_creation": split}
    assert [e["message"]["usage"] if e["type"] == "message_start" else e["usage"] for e in events] == [
        {**want, "output_tokens": 0},
        {**want, "output_tokens": 3},
    ]
    final = sdk_anthropic(norm(A, body))
    assert final.usage.cache_creation is not None
    assert final.usage.cache_creation.model_dump() == split
    assert (final.usage.cache_creation_input_tokens, final.usage.output_tokens) == (500, 3)
