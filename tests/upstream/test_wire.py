"""The fake upstream on the wire (httpx, HTTP/1.1 and HTTP/2 over TLS): every scenario x protocol.

Each streamed body must pass the strict validator (docs/design/clients.md) of its protocol and carry the
scenario's content; HTTP-level scenarios must carry the protocol's error shape.
"""

from __future__ import annotations

import functools
import json
import ssl
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from proxai.upstream import FakeUpstream, list_scenarios
from proxai.upstream.agent import NO_TOOL_ANSWER
from proxai.upstream.scenarios import REFUSAL, SHORT_TEXT, TEXT, TEXT_BEFORE_TOOLS, THINKING, tokens

from .validators import End, Seen, check_anthropic, check_chat, check_responses, scan

PATHS = {"anthropic": "/v1/messages", "chat": "/v1/chat/completions", "responses": "/v1/responses"}
PARIS = {"city": "Paris", "unit": "celsius", "days": 2}
TOKYO = {"city": "Tokyo", "unit": "celsius", "days": 2}


def request_body(protocol: str, model: str, stream: bool = True) -> dict[str, Any]:
    if protocol == "anthropic":
        return {
            "model": model,
            "max_tokens": 100,
            "stream": stream,
            "messages": [{"role": "user", "content": "hi"}],
        }
    if protocol == "chat":
        body: dict[str, Any] = {
            "model": model,
            "stream": stream,
            "messages": [{"role": "user", "content": "hi"}],
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        return body
    return {"model": model, "stream": stream, "input": "hi"}


def check(protocol: str, body: bytes, end: End) -> Seen:
    if protocol == "anthropic":
        return check_anthropic(body, end)
    if protocol == "chat":
        return check_chat(body, end)
    return check_responses(body, end)


@dataclass(frozen=True)
class Expect:
    end: End = "complete"
    text: str = TEXT
    tools: list[dict[str, Any]] = field(default_factory=list)
    stop: tuple[str, str, str] = ("end_turn", "stop", "completed")
    reasoning: bool = False  # thinking text visible (Anthropic, Responses)
    keepalive: bool = False


TOOLS_STOP = ("tool_use", "tool_calls", "completed")
FIRST6 = "".join(tokens(TEXT)[:6])
STREAMED: dict[str, Expect] = {
    "text": Expect(),
    "parallel_tools": Expect(text=TEXT_BEFORE_TOOLS, tools=[PARIS, TOKYO], stop=TOOLS_STOP),
    "thinking": Expect(reasoning=True),
    "redacted_thinking": Expect(),
    "max_tokens": Expect(text="".join(tokens(TEXT)[:8]), stop=("max_tokens", "length", "incomplete")),
    "refusal": Expect(text="", stop=("refusal", "stop", "completed")),
    "error_midstream": Expect(end="error", text=FIRST6, stop=("", "", "failed")),
    "truncated": Expect(end="open", text=FIRST6, stop=("", "", "")),
    "slow_tokens": Expect(),
    "long_reasoning": Expect(reasoning=True, keepalive=True),
    "tool_stall": Expect(text=TEXT_BEFORE_TOOLS, tools=[PARIS, TOKYO], stop=TOOLS_STOP, keepalive=True),
    "total_stall": Expect(text=TEXT_BEFORE_TOOLS, tools=[PARIS], stop=TOOLS_STOP),
    "idle_stall": Expect(text=TEXT_BEFORE_TOOLS, tools=[PARIS], stop=TOOLS_STOP),
    "body_stall": Expect(text=TEXT_BEFORE_TOOLS),
    "empty_tool_delta": Expect(text="", tools=[PARIS], stop=TOOLS_STOP),
    "args_in_done": Expect(text=TEXT_BEFORE_TOOLS, tools=[PARIS], stop=TOOLS_STOP),
    "last_fragment_in_finish": Expect(text="", tools=[PARIS], stop=TOOLS_STOP),
    "cache_usage": Expect(),
    "wrong_content_type": Expect(),
    "slowloris": Expect(text=SHORT_TEXT),
    "gzip": Expect(),
    "agent": Expect(text=NO_TOOL_ANSWER),  # no tool declared: a direct answer
    # no key sent: the echo quotes "(none)" (test_the_echo_scenarios_quote_the_key_they_received)
    "auth_error_midstream": Expect(end="error", text=FIRST6, stop=("", "", "failed")),
    "key_echo": Expect(end="error", text="Your key is (none).", stop=("", "", "failed")),
}
HTTP_ERRORS = {"rate_limit": 429, "prompt_too_long": 400, "html_500": 502, "auth_echo": 401}
SPECIAL = {"reset", "dropped", "malformed_json", "huge_line", "big_stream"}
PROTOCOLS = ["anthropic", "chat", "responses"]


def test_every_scenario_is_covered() -> None:
    names = {name for name, _ in list_scenarios()}
    assert names == set(STREAMED) | set(HTTP_ERRORS) | SPECIAL


PLAIN = ssl.create_default_context()  # built once: httpx builds one per client otherwise (~0.1 s)


@functools.cache
def _trusting(ca_path: str) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=ca_path)


def verify(up: FakeUpstream) -> ssl.SSLContext:
    return _trusting(up.ca_path) if up.ca_path else PLAIN


def post(up: FakeUpstream, protocol: str, model: str, stream: bool = True, **headers: str) -> httpx.Response:
    hdrs = {k.replace("_", "-"): v for k, v in headers.items()}
    with httpx.Client(http2=up.http2, verify=verify(up), timeout=30) as client:
        return client.post(up.url + PATHS[protocol], json=request_body(protocol, model, stream), headers=hdrs)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("scenario", sorted(STREAMED))
def test_streamed_scenario(upstream: FakeUpstream, scenario: str, protocol: str) -> None:
    exp = STREAMED[scenario]
    r = post(upstream, protocol, scenario)
    assert r.status_code == 200
    seen = check(protocol, r.content, exp.end)
    p = PROTOCOLS.index(protocol)
    if protocol == "anthropic" and scenario == "refusal":
        assert seen.text == REFUSAL
    else:
        assert seen.text == exp.text
    assert [json.loads(args) for _, _, args in seen.tools] == exp.tools
    assert all(name == "get_weather" for _, name, _ in seen.tools)
    assert len({cid for cid, _, _ in seen.tools}) == len(seen.tools)
    if exp.end == "complete" or protocol == "responses":
        assert (seen.stop or "") == exp.stop[p]
    if exp.reasoning and protocol != "chat":
        assert seen.reasoning == THINKING
    if exp.end == "complete":
        assert seen.usage is not None
    if exp.keepalive:
        assert seen.pings > 1 if protocol == "anthropic" else b"\n: keepalive\n\n" in r.content
    elif protocol != "anthropic":
        assert b": keepalive" not in r.content


def test_stream_headers(upstream: FakeUpstream) -> None:
    r = post(upstream, "anthropic", "text")
    assert r.headers["content-type"] == "text/event-stream"
    assert r.headers["transfer-encoding"] == "chunked"
    r = post(upstream, "chat", "wrong_content_type")
    assert r.headers["content-type"] == "application/json"
    check_chat(r.content, "complete")
    r = post(upstream, "chat", "wrong_content_type", x_proxai_content_type="none")
    assert "content-type" not in r.headers
    check_chat(r.content, "complete")


def test_gzip_scenario_is_gzipped(upstream: FakeUpstream) -> None:
    r = post(upstream, "responses", "gzip")
    assert r.headers["content-encoding"] == "gzip"
    check_responses(r.content)  # httpx decoded it


KEY_HEADERS = {"anthropic": "x-api-key", "chat": "authorization", "responses": "authorization"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_echo_scenarios_quote_the_key_they_received(upstream: FakeUpstream, protocol: str) -> None:
    key = "sk-test-ReceivedKey0123456789"
    value = key if protocol == "anthropic" else f"Bearer {key}"
    headers = {KEY_HEADERS[protocol]: value}
    r = post(upstream, protocol, "auth_echo", False, **headers)
    assert r.status_code == 401
    assert r.headers["x-proxai-received-key"] == key
    assert f"{key}" in r.json()["error"]["message"]
    for scenario, text in (("auth_error_midstream", FIRST6), ("key_echo", f"Your key is {key}.")):
        r = post(upstream, protocol, scenario, **headers)
        seen = check(protocol, r.content, "error")
        assert seen.text == text
        # the error event quotes the key; key_echo's deltas split it in 5-character pieces
        errors = [ev.data for ev in scan(r.content) if key in ev.data and "error" in ev.data]
        assert errors  # Responses: the error event and response.failed
        assert all("Incorrect API key provided" in e or "invalid x-api-key" in e for e in errors)
    pieces = [key[i : i + 5] for i in range(0, len(key), 5)]
    assert all(json.dumps(p) in r.text for p in pieces)
    assert key not in r.text.split("error")[0]  # never whole in a delta


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("scenario", sorted(HTTP_ERRORS))
def test_http_error_scenario(upstream: FakeUpstream, scenario: str, protocol: str) -> None:
    for stream in (True, False):
        r = post(upstream, protocol, scenario, stream)
        assert r.status_code == HTTP_ERRORS[scenario]
        if scenario == "html_500":
            assert r.headers["content-type"] == "text/html"
            assert b"<html>" in r.content
            continue
        body = r.json()
        err = body["error"]
        if protocol == "anthropic":
            assert body["type"] == "error"
            etype = {
                "rate_limit": "rate_limit_error",
                "prompt_too_long": "invalid_request_error",
                "auth_echo": "authentication_error",
            }[scenario]
            assert err["type"] == etype
        else:
            code = {
                "rate_limit": "rate_limit_exceeded",
                "prompt_too_long": "context_length_exceeded",
                "auth_echo": "invalid_api_key",
            }[scenario]
            assert err["code"] == code
        if scenario == "rate_limit":
            assert r.headers["retry-after"] == "2"
        elif scenario == "auth_echo":
            assert "(none)" in err["message"]  # no key sent
        else:
            assert "prompt is too long" in err["message"] or "context" in err["message"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_reset_mid_stream(upstream: FakeUpstream, protocol: str) -> None:
    chunks: list[bytes] = []
    url = upstream.url + PATHS[protocol]
    with (
        pytest.raises(httpx.TransportError),
        httpx.Client(verify=PLAIN) as client,
        client.stream("POST", url, json=request_body(protocol, "reset")) as r,
    ):
        assert r.status_code == 200
        chunks.extend(r.iter_raw())
    body = b"".join(chunks)
    assert scan(body)  # some events arrived before the reset


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2"])
def test_dropped_mid_body(
    upstream: FakeUpstream, upstream_h2: FakeUpstream, protocol: str, http2: bool
) -> None:
    up = upstream_h2 if http2 else upstream
    chunks: list[bytes] = []
    with (
        pytest.raises(httpx.RemoteProtocolError) as info,
        httpx.Client(http2=http2, verify=verify(up)) as client,
        client.stream("POST", up.url + PATHS[protocol], json=request_body(protocol, "dropped")) as r,
    ):
        chunks.extend(r.iter_raw())
    if http2:
        assert "error_code:8" in str(info.value)  # RST_STREAM CANCEL
    else:
        assert "incomplete chunked read" in str(info.value) or "peer closed" in str(info.value)
    seen_text = "".join(
        json.loads(e.data).get("delta", {}).get("text", "") if protocol == "anthropic" else ""
        for e in scan(b"".join(chunks))
    )
    assert protocol != "anthropic" or seen_text == FIRST6


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_malformed_json(upstream: FakeUpstream, protocol: str) -> None:
    r = post(upstream, protocol, "malformed_json")
    events = scan(r.content)
    broken = []
    for ev in events:
        if ev.data == "[DONE]":
            continue
        try:
            json.loads(ev.data)
        except json.JSONDecodeError:
            broken.append(ev)
    assert len(broken) == 1
    rest = r.content.replace(broken[0].raw, b"")
    seen = check(protocol, rest, "complete")
    assert seen.text == TEXT


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_huge_line(upstream: FakeUpstream, protocol: str) -> None:
    size = 3 * 1024 * 1024 + 17
    r = post(upstream, protocol, "huge_line", x_proxai_size=str(size))
    assert r.status_code == 200
    last = r.content.rsplit(b"\n", 1)[1]
    assert last.startswith(b"data: {")
    assert len(last) > size
    assert last.endswith(b"x")
    assert len(r.content) < size + 64 * 1024


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_big_stream(upstream: FakeUpstream, protocol: str) -> None:
    r = post(upstream, protocol, "big_stream", x_proxai_events="3000")
    seen = check(protocol, r.content, "complete")
    assert seen.text.count(" ") == 3000
    assert [json.loads(a) for _, _, a in seen.tools] == [PARIS]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_http2_tls(upstream_h2: FakeUpstream, protocol: str) -> None:
    for scenario in ("text", "parallel_tools", "tool_stall"):
        r = post(upstream_h2, protocol, scenario)
        assert r.http_version == "HTTP/2"
        exp = STREAMED[scenario]
        seen = check(protocol, r.content, exp.end)
        assert [json.loads(a) for _, _, a in seen.tools] == exp.tools


KEEPALIVE = {"anthropic": b"event: ping\n", "chat": b": keepalive\n", "responses": b": keepalive\n"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tool_stall_is_inside_the_second_call(upstream: FakeUpstream, protocol: str) -> None:
    """Keepalives flow only while the SECOND call is open, after the first call's arguments finished."""
    body = post(upstream, protocol, "tool_stall").content
    start = body.index(KEEPALIVE[protocol], body.index(b"get_weather"))  # a keepalive after the calls began
    before, after = body[:start], body[body.rindex(KEEPALIVE[protocol]) :]
    first, second = check(protocol, body, "complete").tools
    if protocol == "anthropic":
        assert b'"type":"content_block_stop","index":1' in before  # first call closed
        assert b'"type":"content_block_stop","index":2' in after
        assert b'"index":2,"delta":{"type":"input_json_delta"' in after
    elif protocol == "chat":
        assert b'"index":1,"function":{"arguments"' in after
        assert b'"finish_reason":"tool_calls"' in after
    else:
        first_done = b'"type":"response.function_call_arguments.done","sequence_number"'
        assert before.count(first_done) == 1 and after.count(first_done) == 1
    assert json.loads(first[2]) == PARIS and json.loads(second[2]) == TOKYO
