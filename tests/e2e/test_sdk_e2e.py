"""Real SDKs through a real mitmdump with the addon, in reverse mode and in regular mode (CONNECT/TLS).

The SDKs get their final objects; the saved flows (``-w`` + ``FlowReader``) hold metadata that
agrees exactly with what the SDK assembled.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from proxai.upstream.scenarios import TEXT

from .harness import Mitmdump, anthropic_client, openai_client, proxai_meta, tag

pytestmark = pytest.mark.e2e

PROMPT = "What's the weather in Paris and Tokyo?"
MESSAGES: Any = [{"role": "user", "content": PROMPT}]


def _common(m: dict[str, Any], protocol: str) -> None:
    assert m["schema"] == 1 and m["protocol"] == protocol and m["streaming"] is True
    assert m["outcome"] == "completed" and m["error"] is None
    assert m["status_code"] == 200
    t = m["timing"]
    assert all(t[k] is not None for k in ("headers_s", "first_event_s", "first_token_s", "total_s"))
    assert t["headers_s"] <= t["first_event_s"] <= t["total_s"]
    assert m["counts"]["events"] > 3 and m["counts"]["bytes"] > 0
    assert m["carrier"]["client_bytes"] == m["carrier"]["upstream_bytes"] > 0


def test_anthropic_text(mitm: Mitmdump) -> None:
    t = tag()
    with anthropic_client(mitm, t).messages.stream(model="text", max_tokens=256, messages=MESSAGES) as s:
        final = s.get_final_message()
    assert final.content[0].type == "text" and final.content[0].text == TEXT
    f = mitm.wait_flow(t)
    m = proxai_meta(f)
    _common(m, "anthropic_messages")
    assert m["id"] == final.id and m["model"] == final.model
    assert m["stop_reason"] == final.stop_reason == "end_turn" and m["stop_class"] == "end_turn"
    assert m["usage"]["input_tokens"] == final.usage.input_tokens
    assert m["usage"]["output_tokens"] == final.usage.output_tokens
    assert m["tool_calls"] == []
    assert m["text_bytes"] == len(TEXT.encode())
    assert f.marked == "" and f.comment.startswith("completed (end_turn) · anthropic ")
    if mitm.mode == "regular":  # intercepted inside a CONNECT tunnel, TLS on both legs
        assert f.request.scheme == "https" and f.client_conn.tls_established and f.server_conn.tls_established
    else:
        assert f.request.scheme == "http" and not f.client_conn.tls_established


def test_chat_text(mitm: Mitmdump) -> None:
    t = tag()
    client = openai_client(mitm, t)
    with client.chat.completions.stream(
        model="text", messages=MESSAGES, stream_options={"include_usage": True}
    ) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.content == TEXT
    m = proxai_meta(mitm.wait_flow(t))
    _common(m, "openai_chat")
    assert m["id"] == final.id and m["model"] == final.model
    assert m["stop_reason"] == final.choices[0].finish_reason == "stop" and m["stop_class"] == "end_turn"
    assert final.usage is not None
    assert m["usage"]["input_tokens"] == final.usage.prompt_tokens
    assert m["usage"]["output_tokens"] == final.usage.completion_tokens
    assert m["usage"]["total_tokens"] == final.usage.total_tokens
    assert m["text_bytes"] == len(TEXT.encode())


def test_responses_text(mitm: Mitmdump) -> None:
    t = tag()
    with openai_client(mitm, t).responses.stream(model="text", input=PROMPT) as s:
        final = s.get_final_response()
    assert final.output_text == TEXT
    m = proxai_meta(mitm.wait_flow(t))
    _common(m, "openai_responses")
    assert m["id"] == final.id and m["model"] == final.model
    assert m["stop_class"] == "end_turn" and m["sequence_gaps"] == 0
    assert final.usage is not None
    assert m["usage"]["input_tokens"] == final.usage.input_tokens
    assert m["usage"]["output_tokens"] == final.usage.output_tokens
    assert m["usage"]["total_tokens"] == final.usage.total_tokens


def _assert_tools(m: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert [(c["id"], c["name"]) for c in m["tool_calls"]] == expected
    assert len(expected) == 2
    assert all(c["arguments_complete"] and c["arguments_valid_json"] for c in m["tool_calls"])
    assert m["stop_class"] == "tool_use"


def test_parallel_tools_all_protocols(mitm: Mitmdump) -> None:
    t1, t2, t3 = tag(), tag(), tag()
    with anthropic_client(mitm, t1).messages.stream(
        model="parallel_tools", max_tokens=256, messages=MESSAGES
    ) as s:
        msg = s.get_final_message()
    with openai_client(mitm, t2).chat.completions.stream(
        model="parallel_tools", messages=MESSAGES, stream_options={"include_usage": True}
    ) as s2:
        chat = s2.get_final_completion()
    with openai_client(mitm, t3).responses.stream(model="parallel_tools", input=PROMPT) as s3:
        resp = s3.get_final_response()

    m = proxai_meta(mitm.wait_flow(t1))
    _assert_tools(m, [(b.id, b.name) for b in msg.content if b.type == "tool_use"])
    assert m["stop_reason"] == msg.stop_reason == "tool_use"

    m = proxai_meta(mitm.wait_flow(t2))
    calls = chat.choices[0].message.tool_calls or []
    _assert_tools(m, [(c.id, c.function.name) for c in calls if c.type == "function"])
    assert m["stop_reason"] == chat.choices[0].finish_reason == "tool_calls"

    m = proxai_meta(mitm.wait_flow(t3))
    _assert_tools(m, [(i.call_id, i.name) for i in resp.output if i.type == "function_call"])


def test_http_429_rate_limited(mitm: Mitmdump) -> None:
    t = tag()
    with pytest.raises(openai.RateLimitError):
        openai_client(mitm, t).chat.completions.create(model="rate_limit", messages=MESSAGES, stream=True)
    f = mitm.wait_flow(t)
    m = proxai_meta(f)
    assert m["outcome"] == "error" and m["status_code"] == 429 and m["streaming"] is False
    assert m["error"]["kind"] == "rate_limited" and m["error"]["status"] == 429
    assert f.marked == ":red_circle:" and "rate_limited" in f.comment


def test_non_streamed_json_all_protocols(mitm_reverse: Mitmdump) -> None:
    md = mitm_reverse
    t1, t2, t3 = tag(), tag(), tag()
    msg = anthropic_client(md, t1).messages.create(model="text", max_tokens=256, messages=MESSAGES)
    chat = openai_client(md, t2).chat.completions.create(model="text", messages=MESSAGES)
    resp = openai_client(md, t3).responses.create(model="text", input=PROMPT)
    for t, proto in ((t1, "anthropic_messages"), (t2, "openai_chat"), (t3, "openai_responses")):
        m = proxai_meta(md.wait_flow(t))
        assert m["protocol"] == proto and m["streaming"] is False and m["outcome"] == "completed"
        assert "carrier" not in m
        if proto == "anthropic_messages":
            assert (m["id"], m["usage"]["output_tokens"]) == (msg.id, msg.usage.output_tokens)
        elif proto == "openai_chat":
            assert chat.usage is not None
            assert (m["id"], m["usage"]["total_tokens"]) == (chat.id, chat.usage.total_tokens)
        else:
            assert resp.usage is not None
            assert (m["id"], m["usage"]["total_tokens"]) == (resp.id, resp.usage.total_tokens)


def test_error_midstream(mitm_reverse: Mitmdump) -> None:
    md = mitm_reverse
    t1, t2 = tag(), tag()
    with (
        pytest.raises(anthropic.APIStatusError, match="verloaded"),
        anthropic_client(md, t1).messages.stream(
            model="error_midstream", max_tokens=64, messages=MESSAGES
        ) as s,
    ):
        s.get_final_message()
    with pytest.raises(openai.APIError):
        for _ in openai_client(md, t2).chat.completions.create(
            model="error_midstream", messages=MESSAGES, stream=True
        ):
            pass
    for t in (t1, t2):
        f = md.wait_flow(t)
        m = proxai_meta(f)
        assert m["outcome"] == "error" and m["error"]["source"] == "event" and m["streaming"] is True
        assert f.marked == ":red_circle:"
    assert proxai_meta(md.wait_flow(t1))["error"]["kind"] == "overloaded"


def test_truncated_is_closed(mitm_reverse: Mitmdump) -> None:
    md = mitm_reverse
    t1, t2 = tag(), tag()
    for _ in openai_client(md, t1).chat.completions.create(model="truncated", messages=MESSAGES, stream=True):
        pass
    with (
        pytest.raises(RuntimeError, match=r"response\.completed"),
        openai_client(md, t2).responses.stream(model="truncated", input=PROMPT) as s,
    ):
        s.get_final_response()
    for t in (t1, t2):
        f = md.wait_flow(t)
        m = proxai_meta(f)
        assert m["outcome"] == "closed" and m["error"] is None and m["stop_reason"] is None
        assert f.marked == ":warning:"


def test_prompt_too_long(mitm_reverse: Mitmdump) -> None:
    t = tag()
    with pytest.raises(anthropic.BadRequestError):
        anthropic_client(mitm_reverse, t).messages.create(
            model="prompt_too_long", max_tokens=8, messages=MESSAGES
        )
    m = proxai_meta(mitm_reverse.wait_flow(t))
    assert m["outcome"] == "error" and m["error"]["kind"] == "prompt_too_long" and m["status_code"] == 400


def test_max_tokens_anthropic(mitm_reverse: Mitmdump) -> None:
    t = tag()
    with anthropic_client(mitm_reverse, t).messages.stream(
        model="max_tokens", max_tokens=8, messages=MESSAGES
    ) as s:
        final = s.get_final_message()
    m = proxai_meta(mitm_reverse.wait_flow(t))
    assert m["outcome"] == "completed" and m["stop_reason"] == final.stop_reason == "max_tokens"
    assert m["stop_class"] == "max_tokens" and m["usage"]["output_tokens"] == final.usage.output_tokens


def test_client_goes_away_midstream(mitm_reverse: Mitmdump) -> None:
    """The user cancels: the client closes the stream after two events; the flow records it."""
    t = tag()
    client = openai_client(mitm_reverse, t)
    stream = client.chat.completions.create(
        model="slow_tokens",
        messages=MESSAGES,
        stream=True,
        extra_headers={"x-proxai-time-scale": "1"},  # real speed: ~10 s of tokens, we leave early
    )
    got = [next(iter(stream)) for _ in range(2)]
    stream.close()
    assert got[0].id
    f = mitm_reverse.wait_flow(t)
    m = proxai_meta(f)
    assert m["outcome"] == "error" and m["error"]["kind"] == "connection"
    assert "disconnect" in m["error"]["message"].lower()
    assert m["counts"]["events"] >= 2 and f.marked == ":red_circle:"
