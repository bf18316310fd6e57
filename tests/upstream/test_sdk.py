"""The real ``anthropic`` and ``openai`` SDKs pointed straight at the fake upstream (no proxy).

For every scenario x protocol, streamed through the SDK's accumulator and non-streamed
through ``create()``: the SDK's final object carries the scenario's content, or the SDK
raises the exact error a real upstream in that situation makes it raise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from proxai.upstream import FakeUpstream
from proxai.upstream.scenarios import (
    REDACTED,
    REFUSAL,
    SHORT_TEXT,
    SIGNATURE,
    TEXT,
    TEXT_BEFORE_TOOLS,
    THINKING,
    tokens,
)

from .test_wire import PARIS, TOKYO, verify

HEADERS = {"x-proxai-size": "200000", "x-proxai-events": "300"}
FIRST6 = "".join(tokens(TEXT)[:6])
FIRST8 = "".join(tokens(TEXT)[:8])
BIG_TEXT = "".join(tokens(" " + TEXT)[i % len(tokens(" " + TEXT))] for i in range(300))

# scenario -> (text, tools, neutral stop) for scenarios that complete
COMPLETE: dict[str, tuple[str, list[dict[str, Any]], str]] = {
    "text": (TEXT, [], "end"),
    "parallel_tools": (TEXT_BEFORE_TOOLS, [PARIS, TOKYO], "tool"),
    "thinking": (TEXT, [], "end"),
    "redacted_thinking": (TEXT, [], "end"),
    "slow_tokens": (TEXT, [], "end"),
    "long_reasoning": (TEXT, [], "end"),
    "tool_stall": (TEXT_BEFORE_TOOLS, [PARIS, TOKYO], "tool"),
    "total_stall": (TEXT_BEFORE_TOOLS, [PARIS], "tool"),
    "idle_stall": (TEXT_BEFORE_TOOLS, [PARIS], "tool"),
    "body_stall": (TEXT_BEFORE_TOOLS, [], "end"),
    "empty_tool_delta": ("", [PARIS], "tool"),
    "args_in_done": (TEXT_BEFORE_TOOLS, [PARIS], "tool"),
    "last_fragment_in_finish": ("", [PARIS], "tool"),
    "cache_usage": (TEXT, [], "end"),
    "wrong_content_type": (TEXT, [], "end"),
    "slowloris": (SHORT_TEXT, [], "end"),
    "big_stream": (BIG_TEXT, [PARIS], "tool"),
    "gzip": (TEXT, [], "end"),
}
A_STOP = {"end": "end_turn", "tool": "tool_use"}
C_STOP = {"end": "stop", "tool": "tool_calls"}
CONNECTION_ERRORS = (
    httpx.TransportError,
    httpx2.TransportError,
    anthropic.APIConnectionError,
    openai.APIConnectionError,
)


@pytest.fixture(scope="module")
def a_client(upstream: FakeUpstream) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=upstream.url, api_key="sk-test", max_retries=0, timeout=20, default_headers=HEADERS
    ) as client:
        yield client


@pytest.fixture(scope="module")
def o_client(upstream: FakeUpstream) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=upstream.url + "/v1", api_key="sk-test", max_retries=0, timeout=20, default_headers=HEADERS
    ) as client:
        yield client


def broken_bodies_raise(call: Callable[[Any, str], Any], client: Any) -> None:
    """Broken JSON in the body fails to parse; a reset or dropped connection is a transport error."""
    with pytest.raises(json.JSONDecodeError):
        call(client, "malformed_json")
    with pytest.raises(CONNECTION_ERRORS):
        call(client, "reset")
    with pytest.raises(CONNECTION_ERRORS):
        call(client, "dropped")


# ---- Anthropic ----


def a_stream(client: anthropic.Anthropic, model: str) -> anthropic.types.Message:
    with client.messages.stream(
        model=model, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as s:
        return s.get_final_message()


def a_create(client: anthropic.Anthropic, model: str) -> anthropic.types.Message:
    return client.messages.create(model=model, max_tokens=100, messages=[{"role": "user", "content": "hi"}])


def a_content(msg: anthropic.types.Message) -> tuple[str, list[Any]]:
    text = "".join(b.text for b in msg.content if b.type == "text")
    tools = [b.input for b in msg.content if b.type == "tool_use"]
    return text, tools


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("scenario", sorted(COMPLETE))
def test_anthropic_complete(a_client: anthropic.Anthropic, scenario: str, stream: bool) -> None:
    msg = a_stream(a_client, scenario) if stream else a_create(a_client, scenario)
    text, tools, stop = COMPLETE[scenario]
    assert a_content(msg) == (text, tools)
    assert msg.stop_reason == A_STOP[stop]
    assert msg.model == scenario
    assert msg.usage.output_tokens > 1
    ids = [b.id for b in msg.content if b.type == "tool_use"]
    assert len(set(ids)) == len(ids) and all(i.startswith("toolu_") for i in ids)
    if scenario in ("thinking", "long_reasoning"):
        first = msg.content[0]
        assert first.type == "thinking" and first.thinking == THINKING and first.signature == SIGNATURE
    if scenario == "redacted_thinking":
        first = msg.content[0]
        assert first.type == "redacted_thinking" and first.data == REDACTED
    if scenario == "cache_usage":
        u = msg.usage
        assert (u.input_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens) == (12, 2048, 512)
        assert u.output_tokens == len(tokens(TEXT))


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_anthropic_stops(a_client: anthropic.Anthropic, stream: bool) -> None:
    call = a_stream if stream else a_create
    msg = call(a_client, "max_tokens")
    assert (msg.stop_reason, a_content(msg)) == ("max_tokens", (FIRST8, []))
    msg = call(a_client, "refusal")
    assert (msg.stop_reason, a_content(msg)) == ("refusal", (REFUSAL, []))


def test_anthropic_errors(a_client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.APIStatusError) as info:
        a_stream(a_client, "error_midstream")  # the SSE error event, on a 200 stream
    assert info.value.status_code == 200
    assert info.value.body["error"] == {"type": "overloaded_error", "message": "Overloaded"}  # type: ignore[index]
    with pytest.raises(anthropic.OverloadedError):
        a_create(a_client, "error_midstream")  # non-streamed: HTTP 529
    for call in (a_stream, a_create):
        with pytest.raises(anthropic.RateLimitError) as rl:
            call(a_client, "rate_limit")
        assert rl.value.response.headers["retry-after"] == "2"
        with pytest.raises(anthropic.BadRequestError, match=r"prompt is too long: \d+ tokens > \d+ maximum"):
            call(a_client, "prompt_too_long")
        with pytest.raises(anthropic.InternalServerError) as ise:
            call(a_client, "html_500")
        assert ise.value.status_code == 502
        broken_bodies_raise(call, a_client)
    # truncated: the SDK tolerates a missing message_stop (docs/design/clients.md): no stop reason
    msg = a_stream(a_client, "truncated")
    assert (msg.stop_reason, a_content(msg)) == (None, (FIRST6, []))
    msg = a_stream(a_client, "huge_line")  # the unfinished line is never dispatched
    assert msg.stop_reason is None
    with pytest.raises(anthropic.APIConnectionError):
        a_create(a_client, "truncated")  # non-streamed: body shorter than content-length


# ---- OpenAI Chat Completions ----


def c_stream(client: openai.OpenAI, model: str) -> Any:
    with client.chat.completions.stream(
        model=model, messages=[{"role": "user", "content": "hi"}], stream_options={"include_usage": True}
    ) as s:
        return s.get_final_completion()


def c_create(client: openai.OpenAI, model: str) -> Any:
    return client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])


def c_content(completion: Any) -> tuple[str, list[Any]]:
    message = completion.choices[0].message
    tools = [json.loads(t.function.arguments) for t in message.tool_calls or []]
    return message.content or "", tools


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("scenario", sorted(COMPLETE))
def test_chat_complete(o_client: openai.OpenAI, scenario: str, stream: bool) -> None:
    completion = c_stream(o_client, scenario) if stream else c_create(o_client, scenario)
    text, tools, stop = COMPLETE[scenario]
    assert c_content(completion) == (text, tools)
    assert completion.choices[0].finish_reason == C_STOP[stop]
    assert completion.model == scenario
    calls = completion.choices[0].message.tool_calls or []
    assert len({c.id for c in calls}) == len(calls) and all(c.id.startswith("call_") for c in calls)
    assert all(c.function.name == "get_weather" and c.type == "function" for c in calls)
    usage = completion.usage
    assert usage is not None and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    if scenario == "cache_usage":
        assert usage.prompt_tokens == 12 + 2048 + 512
        assert usage.prompt_tokens_details is not None and usage.prompt_tokens_details.cached_tokens == 2048
    if scenario == "thinking":
        assert usage.completion_tokens_details is not None
        assert usage.completion_tokens_details.reasoning_tokens == len(tokens(THINKING))


def test_chat_stops(o_client: openai.OpenAI) -> None:
    with pytest.raises(openai.LengthFinishReasonError):
        c_stream(o_client, "max_tokens")
    completion = c_create(o_client, "max_tokens")
    assert completion.choices[0].finish_reason == "length"
    assert c_content(completion) == (FIRST8, [])
    for call in (c_stream, c_create):
        completion = call(o_client, "refusal")
        assert completion.choices[0].message.refusal == REFUSAL
        assert not completion.choices[0].message.content  # "" when streamed, null when not
        assert completion.choices[0].finish_reason == "stop"


def test_chat_errors(o_client: openai.OpenAI) -> None:
    with pytest.raises(openai.APIError, match=r"The server is overloaded or not ready yet\."):
        c_stream(o_client, "error_midstream")
    with pytest.raises(openai.InternalServerError) as ise:
        c_create(o_client, "error_midstream")
    assert ise.value.status_code == 503
    for call in (c_stream, c_create):
        with pytest.raises(openai.RateLimitError) as rl:
            call(o_client, "rate_limit")
        assert rl.value.code == "rate_limit_exceeded"
        with pytest.raises(openai.BadRequestError, match="maximum context length") as bad:
            call(o_client, "prompt_too_long")
        assert bad.value.code == "context_length_exceeded"
        with pytest.raises(openai.InternalServerError) as ise:
            call(o_client, "html_500")
        assert ise.value.status_code == 502
        broken_bodies_raise(call, o_client)
    completion = c_stream(o_client, "truncated")  # tolerated: no finish_reason
    assert completion.choices[0].finish_reason is None
    assert c_content(completion) == (FIRST6, [])
    with pytest.raises(openai.APIConnectionError):
        c_create(o_client, "truncated")


# ---- OpenAI Responses ----


def r_stream(client: openai.OpenAI, model: str) -> Any:
    with client.responses.stream(model=model, input="hi") as s:
        return s.get_final_response()


def r_create(client: openai.OpenAI, model: str) -> Any:
    return client.responses.create(model=model, input="hi")


def r_content(response: Any) -> tuple[str, list[Any]]:
    tools = [json.loads(i.arguments) for i in response.output if i.type == "function_call"]
    return response.output_text, tools


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("scenario", sorted(COMPLETE))
def test_responses_complete(o_client: openai.OpenAI, scenario: str, stream: bool) -> None:
    response = r_stream(o_client, scenario) if stream else r_create(o_client, scenario)
    text, tools, _ = COMPLETE[scenario]
    assert r_content(response) == (text, tools)
    assert response.status == "completed"
    assert response.model == scenario
    ids = [i.id for i in response.output]
    assert len(set(ids)) == len(ids)
    calls = [i for i in response.output if i.type == "function_call"]
    assert all(c.call_id.startswith("call_") and c.name == "get_weather" for c in calls)
    usage = response.usage
    assert usage is not None and usage.total_tokens == usage.input_tokens + usage.output_tokens
    if scenario in ("thinking", "long_reasoning"):
        reasoning = response.output[0]
        assert reasoning.type == "reasoning"
        assert [s.text for s in reasoning.summary] == [THINKING]
        assert reasoning.encrypted_content == SIGNATURE
        assert usage.output_tokens_details.reasoning_tokens == len(tokens(THINKING))
    if scenario == "redacted_thinking":
        reasoning = response.output[0]
        assert reasoning.type == "reasoning" and reasoning.encrypted_content == REDACTED
    if scenario == "cache_usage":
        assert usage.input_tokens == 12 + 2048 + 512 and usage.input_tokens_details.cached_tokens == 2048


def test_responses_stops(o_client: openai.OpenAI) -> None:
    # the Python SDK's accumulator wants response.completed (docs/design/clients.md): incomplete raises
    with pytest.raises(RuntimeError, match=r"response\.completed"):
        r_stream(o_client, "max_tokens")
    response = r_create(o_client, "max_tokens")
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert r_content(response) == (FIRST8, [])
    for call in (r_stream, r_create):
        response = call(o_client, "refusal")
        part = response.output[0].content[0]
        assert (part.type, part.refusal) == ("refusal", REFUSAL)


def test_responses_errors(o_client: openai.OpenAI) -> None:
    # a real upstream's error + response.failed: the Python SDK fails for lack of completed
    with pytest.raises(RuntimeError, match=r"response\.completed"):
        r_stream(o_client, "error_midstream")
    with pytest.raises(openai.InternalServerError) as ise:
        r_create(o_client, "error_midstream")
    assert ise.value.status_code == 503
    for call in (r_stream, r_create):
        with pytest.raises(openai.RateLimitError):
            call(o_client, "rate_limit")
        with pytest.raises(openai.BadRequestError, match="exceeds the context window") as bad:
            call(o_client, "prompt_too_long")
        assert bad.value.code == "context_length_exceeded"
        with pytest.raises(openai.InternalServerError):
            call(o_client, "html_500")
        broken_bodies_raise(call, o_client)
    with pytest.raises(RuntimeError, match=r"response\.completed"):
        r_stream(o_client, "truncated")
    with pytest.raises(RuntimeError, match=r"response\.completed"):
        r_stream(o_client, "huge_line")


# ---- HTTP/2 over TLS ----


def test_sdks_over_http2_tls(upstream_h2: FakeUpstream) -> None:
    assert upstream_h2.ca_path is not None
    with (
        httpx2.Client(http2=True, verify=verify(upstream_h2)) as http,
        anthropic.Anthropic(base_url=upstream_h2.url, api_key="k", max_retries=0, http_client=http) as a,
        openai.OpenAI(base_url=upstream_h2.url + "/v1", api_key="k", max_retries=0, http_client=http) as o,
    ):
        before = len(upstream_h2.requests)
        assert a_content(a_stream(a, "parallel_tools")) == (TEXT_BEFORE_TOOLS, [PARIS, TOKYO])
        assert c_content(c_stream(o, "tool_stall")) == (TEXT_BEFORE_TOOLS, [PARIS, TOKYO])
        assert r_content(r_stream(o, "thinking")) == (TEXT, [])
        with pytest.raises(CONNECTION_ERRORS):
            c_stream(o, "reset")
        assert all(r.http_version == "HTTP/2" for r in upstream_h2.requests[before:])
