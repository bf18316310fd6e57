"""Known failures of other proxies, turned into regression tests."""

from __future__ import annotations

import orjson
import pytest

from proxai.core.errors import SemanticStreamError, SseLimitError, TranslationError, UpstreamProtocolError
from proxai.core.model import ErrorKind, Protocol, StopClass
from proxai.core.sse import SseScanner
from proxai.pipeline.flow import make_stream_translator

from . import build as b
from .harness import SDKS, A, C, R, render, sdk_neutral, translate, truth
from .validators import VALIDATORS, validate_anthropic, validate_chat, validate_responses, validate_typed


def run(up: Protocol, client: Protocol, body: bytes) -> bytes:
    t = make_stream_translator(up, client, normalize=up is client)
    sc = SseScanner()
    return t.feed(sc.feed(body) + sc.close()) + t.finish()


def run_raises(up: Protocol, client: Protocol, body: bytes, exc: type[Exception], match: str) -> bytes:
    """The typed error surfaces from feed(); fail() then gives a well-formed client error."""
    t = make_stream_translator(up, client, normalize=up is client)
    sc = SseScanner()
    with pytest.raises(exc, match=match):
        t.feed(sc.feed(body) + sc.close())
    out = t.fail(ErrorKind.UPSTREAM_PROTOCOL, "upstream protocol error")
    fin = VALIDATORS[client.value](out)
    validate_typed(client.value, out)
    assert fin.error is not None
    assert t.finish() == b"" and t.fail(ErrorKind.UNKNOWN, "again") == b""
    return out


@pytest.mark.parametrize("client", [C, R])
def test_interleaved_tool_deltas_land_in_their_own_call(client: Protocol) -> None:
    raw, _ = render(A, "parallel_tools")
    out, _ = translate(A, client, raw)
    fin = VALIDATORS[client.value](out)
    args = {tid: a for tid, _, a in fin.tools}
    assert args == {
        "toolu_01000101fakecall": {"city": "Paris", "unit": "celsius", "days": 2},
        "toolu_01000102fakecall": {"city": "Tokyo", "unit": "celsius", "days": 2},
    }


@pytest.mark.parametrize("client", [A, C])
def test_arguments_sent_only_in_done(client: Protocol) -> None:
    raw, _ = render(R, "args_in_done")
    assert b"function_call_arguments.delta" not in raw
    out, _ = translate(R, client, raw)
    fin = VALIDATORS[client.value](out)
    assert fin.tools[0][2] == {"city": "Paris", "unit": "celsius", "days": 2}


@pytest.mark.parametrize("up", [A, C, R])
@pytest.mark.parametrize("client", [A, C, R])
def test_empty_argument_delta_is_never_emitted(up: Protocol, client: Protocol) -> None:
    raw, _ = render(up, "empty_tool_delta")
    out, _ = translate(up, client, raw)
    VALIDATORS[client.value](out)
    assert b'"partial_json":""' not in out
    assert out.count(b'"arguments":""') <= (1 if client is C else 2)  # only the start (+ Responses added)


@pytest.mark.parametrize(("up", "client"), [(A, C), (A, R), (C, A), (C, R), (R, A), (R, C)])
def test_text_and_tool_calls_in_one_turn_both_kept(up: Protocol, client: Protocol) -> None:
    raw, _ = render(up, "parallel_tools")
    out, _ = translate(up, client, raw)
    fin = VALIDATORS[client.value](out)
    assert fin.text == "I'll look up the weather in both cities at once."
    assert [n for _, n, _ in fin.tools] == ["get_weather", "get_weather"]


@pytest.mark.parametrize("client", [A, R])
def test_last_argument_fragment_in_the_finish_chunk(client: Protocol) -> None:
    raw, _ = render(C, "last_fragment_in_finish")
    last = [line for line in raw.split(b"\n\n") if b'"finish_reason":"tool_calls"' in line]
    assert last and b"arguments" in last[0]
    out, _ = translate(C, client, raw)
    fin = VALIDATORS[client.value](out)
    assert fin.tools[0][2] == {"city": "Paris", "unit": "celsius", "days": 2}


def test_arguments_after_a_tool_blocks_stop_that_change_its_input_are_refused() -> None:
    """The SDKs append the fragment to the tool's input, but the call was finished for the client:
    one that changes the input ends the translation (one that does not is left out:
    tests/translate_stream/test_anthropic_quirks.py)."""
    body = (
        b.a_start()
        + b.a("content_block_start", index=0, content_block={"type": "tool_use", "id": "t", "name": "f"})
        + b.a("content_block_stop", index=0)
        + b.a_args(0, '{"a":1}')
    )
    run_raises(
        A, C, body, SemanticStreamError, "input_json_delta for tool block 0 after its content_block_stop"
    )


@pytest.mark.parametrize("client", [A, C, R])
def test_anthropic_message_stop_without_message_delta_is_carried(client: Protocol) -> None:
    """The SDKs accept a message that ends without ``message_delta`` (a programmatic tool call's
    continuation arrives whole in ``message_start``): the stop reason and usage are
    ``message_start``'s, and every client gets a complete stream."""
    start = b.a(
        "message_start",
        message={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "roll", "input": {"p": 2}}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 0},
        },
    )
    out, t = translate(A, client, start + b.a("message_stop"))
    assert t.error is None
    got = sdk_neutral(client, SDKS[client](out))
    assert got is not None
    assert got.tools == [("toolu_1", "roll", {"p": 2})]
    assert got.stop is StopClass.TOOL_USE


@pytest.mark.parametrize("client", [C, R, A])
def test_message_stop_without_message_delta_is_a_quirk(client: Protocol) -> None:
    """The SDKs accept a message that ends without ``message_delta`` (no stop reason, no final
    usage); the summary says ``completed`` with a note, and so the translation succeeds."""
    body = (
        b.a_start()
        + b.a("content_block_start", index=0, content_block={"type": "text", "text": ""})
        + b.a_text(0, "hi")
        + b.a("message_stop")
    )
    t = make_stream_translator(A, client, normalize=client is A)
    out = t.feed(SseScanner().feed(body)) + t.finish()
    fin = VALIDATORS[client.value](out)
    assert fin.error is None and fin.text == "hi"
    assert t.phase.value == "stopped"


@pytest.mark.parametrize(("up", "client"), [(A, C), (A, R), (C, A), (R, A), (R, C), (C, R)])
def test_cache_tokens_kept(up: Protocol, client: Protocol) -> None:
    raw, _ = render(up, "cache_usage")
    expect = truth(up, raw)
    assert expect.usage[2]  # the upstream reported cache reads
    out, _ = translate(up, client, raw)
    got = sdk_neutral(client, SDKS[client](out))
    assert got is not None and got.usage == expect.usage


def test_anthropic_cache_write_survives_to_anthropic() -> None:
    raw, _ = render(A, "cache_usage")
    out, _ = translate(A, A, raw)
    final = SDKS[A](out)
    assert final.usage.cache_creation_input_tokens == 512 and final.usage.cache_read_input_tokens == 2048


@pytest.mark.parametrize("up", [A, C, R])
@pytest.mark.parametrize("client", [A, C, R])
def test_reset_upstream_is_not_reported_as_success(up: Protocol, client: Protocol) -> None:
    raw, reset = render(up, "reset")
    assert reset
    t = make_stream_translator(up, client, normalize=up is client)
    sc = SseScanner()
    out = t.feed(sc.feed(raw))
    out += t.finish()  # a carrier that only sees EOF, without knowing about the reset
    fin = VALIDATORS[client.value](out)
    assert fin.error is not None and fin.stop is None
    assert (
        b"data: [DONE]" not in out
        and b"event: message_stop" not in out
        and b"event: response.completed" not in out
    )


@pytest.mark.parametrize("client", [A, C, R])
@pytest.mark.parametrize(
    "error_event",
    [
        b'event: error\ndata: {"message": "boom"}\n\n',
        b'event: error\ndata: {"type": "error", "error": "flat string"}\n\n',
        b'event: error\ndata: {"type": "error"}\n\n',
    ],
)
def test_malformed_upstream_error_event_still_gives_a_well_formed_client_error(
    client: Protocol, error_event: bytes
) -> None:
    out = run(A, client, b.a_start() + error_event)
    fin = VALIDATORS[client.value](out)
    assert fin.error is not None and isinstance(fin.error.get("message"), str) and fin.error["message"]


def test_chat_error_payload_is_translated() -> None:
    body = (
        b.c({"role": "assistant", "content": "hi"})
        + b'data: {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}\n\n'
    )
    out = run(C, A, body)
    fin = validate_anthropic(out)
    assert fin.error == {"type": "rate_limit_error", "message": "Rate limit reached"}


STOPS = [
    # (Anthropic stop_reason, Chat finish_reason, Responses status[:reason])
    ("end_turn", "stop", "completed"),
    ("max_tokens", "length", "incomplete:max_output_tokens"),
    ("tool_use", "tool_calls", "completed"),
    ("stop_sequence", "stop", "completed"),
    ("refusal", "content_filter", "incomplete:content_filter"),
    ("pause_turn", "stop", "completed"),
]


@pytest.mark.parametrize(("anthropic_stop", "chat_finish", "responses_status"), STOPS)
def test_stop_reasons_from_anthropic(anthropic_stop: str, chat_finish: str, responses_status: str) -> None:
    tool = anthropic_stop == "tool_use"
    body = b.a_start()
    if tool:
        body += b.a(
            "content_block_start",
            index=0,
            content_block={"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
        )
        body += b.a_args(0, "{}") + b.a("content_block_stop", index=0)
    else:
        body += b.a("content_block_start", index=0, content_block={"type": "text", "text": ""}) + b.a_text(
            0, "hi"
        )
        body += b.a("content_block_stop", index=0)
    body += b.a_end(anthropic_stop)
    assert validate_chat(run(A, C, body)).stop == chat_finish
    assert validate_responses(run(A, R, body)).stop == responses_status
    assert validate_anthropic(run(A, A, body)).stop == anthropic_stop


@pytest.mark.parametrize(
    ("finish", "anthropic_stop", "responses_status"),
    [
        ("stop", "end_turn", "completed"),
        ("length", "max_tokens", "incomplete:max_output_tokens"),
        ("content_filter", "refusal", "incomplete:content_filter"),
    ],
)
def test_stop_reasons_from_chat(finish: str, anthropic_stop: str, responses_status: str) -> None:
    body = b.c({"role": "assistant", "content": "hi"}) + b.c(finish=finish) + b.c_usage() + b.DONE
    assert validate_anthropic(run(C, A, body)).stop == anthropic_stop
    assert validate_responses(run(C, R, body)).stop == responses_status


def test_chat_refusal_becomes_anthropic_refusal_and_responses_refusal_part() -> None:
    body = b.c({"role": "assistant", "refusal": "I can't"}) + b.c(finish="stop") + b.c_usage() + b.DONE
    fa = validate_anthropic(run(C, A, body))
    assert (fa.text, fa.stop) == ("I can't", "refusal")
    fr = validate_responses(run(C, R, body))
    assert (fr.refusal, fr.stop) == ("I can't", "completed")


# -- Chat source rules (docs/design/protocol-grammars.md) ----------------------------------------------------

MULTI_CHOICE = (
    b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{}},{"index":1,"delta":{}}]}\n\n'
)


@pytest.mark.parametrize(
    ("body", "exc", "match"),
    [
        (
            MULTI_CHOICE,
            TranslationError,
            "multi-choice",
        ),
        (
            b.c({"role": "assistant", "content": "a"}) + b.DONE,
            SemanticStreamError,
            r"\[DONE\] before any finish_reason",
        ),
        (b.c({"role": "user", "content": "a"}), TranslationError, "role"),
        (b.c(b.c_tool(0, args="{}")), SemanticStreamError, "lacks its id"),
    ],
)
def test_chat_source_rules(body: bytes, exc: type[Exception], match: str) -> None:
    run_raises(C, A, body, exc, match)


USAGE = {"prompt_tokens": 13, "completion_tokens": 400, "total_tokens": 413}
AZURE_FILTER = (
    b"data: "
    + orjson.dumps(
        {
            "choices": [],
            "created": 0,
            "id": "",
            "model": "",
            "object": "",
            "prompt_filter_results": [{"prompt_index": 0}],
        }
    )
    + b"\n\n"
)


FIRST = b.c({"role": "assistant", "content": "a"})


@pytest.mark.parametrize(
    ("name", "body", "usage"),
    [
        # DeepSeek, Groq: usage on the finish_reason chunk, no usage-only chunk
        ("finish chunk", FIRST + b.c(finish="length", usage=USAGE) + b.DONE, (13, 400)),
        # OpenRouter: a trailing chunk that still carries a choice (empty delta) with the usage
        ("choice after finish", FIRST + b.c({"content": ""}, finish="length")
         + b.c({"role": "assistant", "content": ""}, usage=USAGE) + b.DONE, (13, 400)),
        # Azure: a first chunk with choices [] (prompt_filter_results, empty id) before the answer
        ("azure filter first", AZURE_FILTER + FIRST + b.c(finish="length") + b.c_usage(13, 400) + b.DONE,
         (13, 400)),
        # a usage-only chunk before finish_reason, then none: the last usage reported
        ("usage before finish", FIRST + b.c_usage(13, 400) + b.c(finish="length") + b.DONE, (13, 400)),
        # two usage-only chunks: the SDK keeps the last
        ("two usage chunks", FIRST + b.c(finish="length") + b.c_usage(1, 1) + b.c_usage(13, 400) + b.DONE,
         (13, 400)),
        # Groq web search: a chunk id that changes mid-answer (the first identity stays)
        ("id change", FIRST + b.c({"content": "b"}, id="chatcmpl-OTHER") + b.c(finish="length", usage=USAGE)
         + b.DONE, (13, 400)),
        # Snowflake: chunks with "id": "" (a Chat client gets a made-up one)
        ("no id", (FIRST + b.c(finish="length", usage=USAGE)).replace(b'"chatcmpl-1"', b'""') + b.DONE,
         (13, 400)),
    ],
)  # fmt: skip
@pytest.mark.parametrize("client", [A, R, C])
def test_chat_streams_the_sdk_reads_are_carried_with_their_usage(
    name: str, body: bytes, usage: tuple[int, int], client: Protocol
) -> None:
    """Real providers' Chat streams that the official SDK reads: translated and normalized with
    the text, the stop and the usage the upstream reported (never 0)."""
    ref = SDKS[C](body)
    ref = getattr(ref, "completion", ref)  # the helper raises for length, with the completion
    if ref.usage is not None:  # (the SDK keeps the last chunk's usage, even when that is none)
        assert (ref.usage.prompt_tokens, ref.usage.completion_tokens) == usage
    out, t = translate(C, client, body)
    assert t.error is None, name
    final = SDKS[client](out)
    if client is A:
        assert "".join(blk.text for blk in final.content) == ref.choices[0].message.content
        assert final.stop_reason == "max_tokens"
        assert (final.usage.input_tokens, final.usage.output_tokens) == usage
    elif client is R:
        assert isinstance(final, RuntimeError)  # incomplete: the Python helper raises; read the events
        fin = validate_responses(out)
        assert fin.text == ref.choices[0].message.content and fin.usage is not None
        assert (fin.usage["input_tokens"], fin.usage["output_tokens"]) == usage
    else:
        final = getattr(final, "completion", final)
        assert final.choices[0].message.content == ref.choices[0].message.content
        assert final.choices[0].finish_reason == "length"
        assert (final.usage.prompt_tokens, final.usage.completion_tokens) == usage
        assert final.id == ("chatcmpl-unnamed" if name == "no id" else "chatcmpl-1")


@pytest.mark.parametrize("client", [A, R, C])
def test_chat_usage_then_done_without_finish_reason_ends_the_answer(client: Protocol) -> None:
    """Snowflake never sends a finish_reason: its usage chunk and ``[DONE]`` end the answer (the
    SDK reads it with finish_reason none); without the usage, ``[DONE]`` alone stays a truncation."""
    body = FIRST + b.c({"content": "b"}) + b.c_usage(13, 400) + b.DONE
    assert SDKS[C](body).choices[0].message.content == "ab"
    out, t = translate(C, client, body)
    assert t.error is None
    if client is A:
        final = SDKS[A](out)
        assert (final.content[0].text, final.stop_reason, final.usage.output_tokens) == (
            "ab",
            "end_turn",
            400,
        )
    elif client is R:
        final = SDKS[R](out)
        assert (final.output_text, final.status, final.usage.output_tokens) == ("ab", "completed", 400)
    else:
        final = SDKS[C](out)
        assert (final.choices[0].message.content, final.choices[0].finish_reason) == ("ab", "stop")
    run_raises(C, client, FIRST + b.DONE, SemanticStreamError, r"\[DONE\] before any finish_reason")


def test_chat_tool_calls_without_index_are_told_apart_by_id() -> None:
    """Mistral sends each call whole, without ``index`` (the openai SDK itself cannot merge that):
    each new id is the next call."""
    call = {"id": "t1", "function": {"name": "f", "arguments": '{"a":1}'}}
    body = (
        FIRST
        + b.c({"tool_calls": [call, {**call, "id": "t2", "function": {"name": "g", "arguments": "{}"}}]})
        + b.c(finish="tool_calls", usage=USAGE)
        + b.DONE
    )
    final = SDKS[A](run(C, A, body))
    assert [(blk.id, blk.name, blk.input) for blk in final.content if blk.type == "tool_use"] == [
        ("t1", "f", {"a": 1}),
        ("t2", "g", {}),
    ]
    assert final.stop_reason == "tool_use"


LOGPROBS = {"content": [{"token": "a", "logprob": -0.5, "bytes": [97], "top_logprobs": []}], "refusal": None}


def test_chat_logprobs_reach_a_chat_client_and_are_counted_for_the_others() -> None:
    body = (
        b.c({"role": "assistant", "content": "a"}).replace(
            b'"logprobs":null', b'"logprobs":' + orjson.dumps(LOGPROBS)
        )
        + b.c({"content": "b"}).replace(b'"logprobs":null', b'"logprobs":{"content":null,"refusal":null}')
        + b.c(finish="stop")
        + b.c_usage()
        + b.DONE
    )
    ref = SDKS[C](body)
    out, t = translate(C, C, body)
    final = SDKS[C](out)
    assert final.choices[0].message.content == "ab"
    assert final.choices[0].logprobs.model_dump() == ref.choices[0].logprobs.model_dump()
    assert [lp.token for lp in final.choices[0].logprobs.content] == ["a"]
    for client in (A, R):
        out, t = translate(C, client, body)
        assert t.error is None
        assert t.metadata()["left_out"] == {"logprobs": 1}


def test_chat_content_as_a_list_of_parts_is_text_and_reasoning() -> None:
    """Mistral's reasoning models send ``content`` as typed parts."""
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "Let me think."}]}
    body = (
        b.c({"role": "assistant", "content": [thinking]})
        + b.c({"content": [{"type": "text", "text": "Four."}]})
        + b.c(finish="stop")
        + b.c_usage()
        + b.DONE
    )
    final = SDKS[A](run(C, A, body))
    assert [
        (blk.type, getattr(blk, "thinking", None) or getattr(blk, "text", None)) for blk in final.content
    ] == [
        ("thinking", "Let me think."),
        ("text", "Four."),
    ]


def test_chat_intermediate_usage_is_ignored_and_final_usage_wins() -> None:
    body = (
        b.c(
            {"role": "assistant", "content": "a"},
            usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        )
        + b.c(finish="stop")
        + b.c_usage(10, 5, cached=4)
        + b.DONE
    )
    fin = validate_anthropic(run(C, A, body))
    assert (
        fin.usage is not None and fin.usage["input_tokens"] == 6 and fin.usage["cache_read_input_tokens"] == 4
    )


def test_chat_without_done_ends_after_its_usage() -> None:
    """No ``[DONE]`` after the finish and usage chunks: the answer as it stands, as the SDK
    reads it."""
    body = b.c({"role": "assistant", "content": "a"}) + b.c(finish="stop") + b.c_usage()
    fin = validate_anthropic(run(C, A, body))
    assert (fin.error, fin.text, fin.stop) == (None, "a", "end_turn")


# -- Responses source --------------------------------------------------------------------------------


def test_responses_done_contradicting_deltas_is_semantic() -> None:
    r = b.R()
    item = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f", "arguments": ""}
    body = r.created() + r.ev("response.output_item.added", output_index=0, item=item)
    body += r.ev("response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta='{"a":')
    body += r.ev("response.function_call_arguments.done", item_id="fc_1", output_index=0, arguments='{"b":2}')
    run_raises(R, A, body, SemanticStreamError, "contradicts")


def test_responses_hosted_tool_items_are_left_out_and_counted() -> None:
    """A hosted-tool item has no counterpart in Chat: the rest of the answer reaches the client,
    and the translator's metadata counts what it left out."""
    body = b.r_searched_answer()
    out, t = translate(R, C, body)
    assert t.error is None
    final = SDKS[C](out)
    assert final.choices[0].message.content == "Paris."
    assert t.metadata()["left_out"] == {"web_search": 1}  # Chat has no search call (its citations come)


def test_responses_redacted_reasoning_roundtrips_to_anthropic() -> None:
    raw, _ = render(R, "redacted_thinking")
    out, _ = translate(R, A, raw)
    final = SDKS[A](out)
    assert [blk.type for blk in final.content] == ["redacted_thinking", "text"]
    back, _ = translate(A, R, out)
    fin = validate_responses(back)
    assert fin.redacted == [final.content[0].data]


def test_invalid_json_payload_is_upstream_protocol_error() -> None:
    """A payload that is not JSON, followed by another event, is a violation (named at that event)."""
    run_raises(
        A,
        C,
        b.a_start() + b"event: content_block_delta\ndata: {not json\n\n" + b.a("message_stop"),
        UpstreamProtocolError,
        "Anthropic event payload is not JSON",
    )


def test_invalid_json_tail_is_tolerated_then_the_stream_is_truncated() -> None:
    """The same payload as the stream's last event is the tolerated tail: the stream then simply
    ended before ``message_stop``, a truncation (the client's error has kind ``connection``)."""
    t = make_stream_translator(A, C)
    out = t.feed(SseScanner().feed(b.a_start() + b"event: content_block_delta\ndata: {not json\n\n"))
    out += t.finish()
    fin = VALIDATORS["openai_chat"](out)
    assert fin.error is not None and "before message_stop" in str(fin.error)
    assert b'"code":"connection"' in out


def test_ids_agree_between_delta_done_and_terminal_snapshot() -> None:
    raw, _ = render(A, "thinking")
    out, _ = translate(A, R, raw)
    ids_in_deltas = set()
    for line in out.split(b"\n"):
        if line.startswith(b"data: ") and b'.delta"' in line:
            ids_in_deltas.add(orjson.loads(line[6:])["item_id"])
    fin = validate_responses(out)  # checks added == done == completed ids
    assert ids_in_deltas == set(fin.ids)
    final = SDKS[R](out)
    assert [it.id for it in final.output] == fin.ids


@pytest.mark.parametrize("up", [A, C, R])
@pytest.mark.parametrize("client", [A, C, R])
def test_lost_argument_fragment_is_never_a_successful_tool_call(up: Protocol, client: Protocol) -> None:
    """Found by hypothesis: an upstream that drops one argument fragment must not hand the client
    a 'complete' call with broken JSON (invalid argument JSON is rejected)."""
    raw, _ = render(up, "parallel_tools")
    frag = {A: b'"partial_json":"\\": \\"Pa"', C: b'"arguments":"\\": \\"Pa"', R: b'"delta":"\\": \\"Pa"'}[up]
    blocks = raw.split(b"\n\n")
    kept = b"\n\n".join(blk for blk in blocks if frag not in blk)
    assert len(kept) < len(raw)
    out, t = translate(up, client, kept)
    fin = VALIDATORS[client.value](out)
    assert fin.error is not None
    # Responses repeats the whole arguments in .done: the gap shows as a contradiction first
    assert "not valid JSON" in fin.error["message"] or (up is R and "contradicts" in fin.error["message"])
    assert t.error is not None


def test_responses_failed_carries_the_output_so_far() -> None:
    raw, _ = render(A, "error_midstream")
    out, _ = translate(A, R, raw)
    failed = [ln for ln in out.split(b"\n") if ln.startswith(b'data: {"type":"response.failed"')]
    assert len(failed) == 1
    resp = orjson.loads(failed[0][6:])["response"]
    assert resp["status"] == "failed" and resp["error"]["message"]
    assert resp["output"] and resp["output"][0]["type"] == "message"
    assert resp["output"][0]["content"][0]["text"]  # the text streamed before the error


def test_chat_target_without_include_usage_has_no_usage_chunk() -> None:
    raw, _ = render(A, "text")
    t = make_stream_translator(A, C, include_usage=False)
    sc = SseScanner()
    out = t.feed(sc.feed(raw) + sc.close()) + t.finish()
    fin = validate_chat(out)
    assert fin.usage is None and fin.stop == "stop" and b'"choices":[]' not in out


@pytest.mark.parametrize(("up", "client"), [(A, R), (C, R), (R, A), (R, C), (R, R)])
def test_responses_buffers_are_bounded(up: Protocol, client: Protocol) -> None:
    """A Responses source / target keeps content (for .done checks and the terminal snapshot):
    past ``max_buffer`` the translation ends with a typed error, never unbounded memory."""
    raw, _ = render(up, "text")
    t = make_stream_translator(up, client, normalize=up is client, max_buffer=40)
    sc = SseScanner()
    with pytest.raises(SseLimitError):
        t.feed(sc.feed(raw) + sc.close())
    fin = VALIDATORS[client.value](t.fail(ErrorKind.STREAM_LIMIT, "limit"))
    assert fin.error is not None


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_compatible_chat_reasoning_reaches_every_client(field: str) -> None:
    """DeepSeek, vLLM, xAI stream ``reasoning_content``, Groq and OpenRouter ``reasoning``:
    thinking for Anthropic and Responses clients, the same field for a Chat client."""
    body = (
        b.c({"role": "assistant", field: "think "})
        + b.c({field: "hard"})
        + b.c({"content": "answer"})
        + b.c(finish="stop")
        + b.c_usage()
        + b.DONE
    )
    fa = validate_anthropic(run(C, A, body))
    assert (fa.thinking, fa.text) == ("think hard", "answer")
    fr = validate_responses(run(C, R, body))
    assert (fr.thinking, fr.text) == ("think hard", "answer")
    t = make_stream_translator(C, C, normalize=True)
    out = t.feed(SseScanner().feed(body)) + t.finish()
    final = SDKS[C](out)
    assert final.choices[0].message.content == "answer"
    assert final.choices[0].message.model_extra == {field: "think hard"}
    assert "dropped" not in t.metadata()


def test_openrouter_reasoning_details_are_kept_for_chat_and_mapped_for_the_others() -> None:
    """OpenRouter streams ``reasoning`` and the same text in ``reasoning_details``, with an
    Anthropic signature or OpenAI's encrypted reasoning there."""
    text = {"type": "reasoning.text", "text": "think", "index": 0, "format": "anthropic-claude-v1"}
    sig = {"type": "reasoning.text", "text": "", "signature": "c2ln", "index": 0}
    enc = {"type": "reasoning.encrypted", "data": "ZW5j", "index": 1}
    body = (
        b.c({"role": "assistant", "reasoning": "think", "reasoning_details": [text]})
        + b.c({"reasoning_details": [sig]})
        + b.c({"reasoning_details": [enc]})
        + b.c({"content": "answer"})
        + b.c(finish="stop")
        + b.c_usage()
        + b.DONE
    )
    ref = SDKS[C](body).choices[0].message.model_extra
    t = make_stream_translator(C, C, normalize=True)
    out = t.feed(SseScanner().feed(body)) + t.finish()
    assert SDKS[C](out).choices[0].message.model_extra == ref
    assert ref["reasoning"] == "think" and len(ref["reasoning_details"]) == 2
    final = SDKS[A](run(C, A, body))
    assert [(x.type, getattr(x, "thinking", None), getattr(x, "signature", None), getattr(x, "data", None))
            for x in final.content] == [
        ("thinking", "think", "c2ln", None),
        ("redacted_thinking", None, None, "ZW5j"),
        ("text", None, None, None),
    ]  # fmt: skip
    fr = validate_responses(run(C, R, body))
    assert (fr.thinking, fr.signature, fr.redacted, fr.text) == ("think", "c2ln", ["ZW5j"], "answer")


def _a_cited(text: str, url: str) -> bytes:
    cite = {
        "type": "web_search_result_location",
        "url": url,
        "title": "T",
        "cited_text": text,
        "encrypted_index": "x",
    }
    return b.a("content_block_delta", index=1, delta={"type": "citations_delta", "citation": cite})


def test_web_citations_reach_every_client_with_their_spans() -> None:
    """Anthropic cites a whole text block: a Chat client gets a ``url_citation`` over that block's
    span of ``content``, a Responses client one over its part."""
    body = (
        b.a_start()
        + b.a("content_block_start", index=0, content_block={"type": "text", "text": ""})
        + b.a_text(0, "Weather: ")
        + b.a("content_block_stop", index=0)
        + b.a("content_block_start", index=1, content_block={"type": "text", "text": "", "citations": []})
        + _a_cited("sunny", "https://w.example/sf")
        + b.a_text(1, "sunny")
        + b.a("content_block_stop", index=1)
        + b.a_end()
    )
    chat = SDKS[C](run(A, C, body)).choices[0].message
    assert chat.content == "Weather: sunny"
    assert [a.model_dump() for a in chat.annotations] == [
        {
            "type": "url_citation",
            "url_citation": {"url": "https://w.example/sf", "title": "T", "start_index": 9, "end_index": 14},
        }
    ]
    resp = SDKS[R](run(A, R, body))
    notes = [(p.text, [a.model_dump() for a in p.annotations]) for it in resp.output for p in it.content]
    assert notes == [
        ("Weather: ", []),
        ("sunny", [{"type": "url_citation", "url": "https://w.example/sf", "title": "T", "start_index": 0,
                    "end_index": 5}]),
    ]  # fmt: skip
    again = SDKS[A](run(A, A, body))
    assert again.content[1].citations[0].encrypted_index == "x"  # normalize keeps Anthropic's own


def test_responses_url_citation_reaches_anthropic_with_its_cited_text() -> None:
    r = b.R()
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    note = {
        "type": "url_citation",
        "url": "https://w.example/a",
        "title": "A",
        "start_index": 4,
        "end_index": 9,
    }
    done = {**part, "text": "See paris.", "annotations": [note]}
    loc = {"output_index": 0, "item_id": "msg_1", "content_index": 0}
    closed = {**msg, "status": "completed", "content": [done]}
    body = (
        r.created()
        + r.ev("response.output_item.added", output_index=0, item=msg)
        + r.ev("response.content_part.added", **loc, part=part)
        + r.ev("response.output_text.delta", **loc, delta="See paris.")
        + r.ev("response.output_text.annotation.added", **loc, annotation_index=0, annotation=note)
        + r.ev("response.content_part.done", **loc, part=done)
        + r.ev("response.output_item.done", output_index=0, item=closed)
        + r.completed([closed])
    )
    final = SDKS[A](run(R, A, body))
    cites = [c.model_dump() for c in final.content[0].citations]
    want = {"type": "web_search_result_location", "url": "https://w.example/a", "title": "A"}
    assert cites == [{**want, "cited_text": "paris", "encrypted_index": ""}]
    chat = SDKS[C](run(R, C, body)).choices[0].message
    assert [
        (a.url_citation.url, a.url_citation.start_index, a.url_citation.end_index) for a in chat.annotations
    ] == [("https://w.example/a", 4, 9)]


REAL = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures" / "real"


def test_a_web_search_is_carried_between_anthropic_and_responses() -> None:
    """Anthropic's server_tool_use + web_search_tool_result and Responses' web_search_call are
    the same search: each reaches the other protocol's client with its query and the pages it
    found (recorded streams); nothing is left out."""
    claude = (
        REAL / "anthropic" / "anthropic--pydantic-ai--anthropic-web-search-tool-stream.sse"
    ).read_bytes()
    ref = SDKS[A](claude)
    searches = [blk.input["query"] for blk in ref.content if blk.type == "server_tool_use"]
    found = [[r.url for r in blk.content] for blk in ref.content if blk.type == "web_search_tool_result"]
    out, t = translate(A, R, claude)
    assert "left_out" not in t.metadata()
    calls = [it for it in SDKS[R](out).output if it.type == "web_search_call"]
    assert [c.action.query for c in calls] == searches and searches
    assert [[s.url for s in c.action.sources] for c in calls] == found

    openai_ = (REAL / "responses" / "openai--vercel-ai--openai-web-search-tool-1.rebuilt.sse").read_bytes()
    ref_r = SDKS[R](openai_)
    # (an open_page or find action has no query: the search block's query is then empty)
    queries = [getattr(it.action, "query", None) or "" for it in ref_r.output if it.type == "web_search_call"]
    back, t = translate(R, A, openai_)
    assert "left_out" not in t.metadata()
    final = SDKS[A](back)
    assert [blk.input["query"] for blk in final.content if blk.type == "server_tool_use"] == queries
    uses = [blk.id for blk in final.content if blk.type == "server_tool_use"]
    assert [blk.tool_use_id for blk in final.content if blk.type == "web_search_tool_result"] == uses
