"""End to end through a real mitmdump with the fake upstream: the real
``openai`` and ``anthropic`` SDKs, in every direction, get correct final objects from a
translated non-streamed call; a rejected request raises the SDK's ``BadRequestError`` with
our message and never reaches the upstream; upstream HTTP errors arrive in the client's shape.
"""

from __future__ import annotations

import json
import ssl
from typing import Any

import anthropic
import httpx
import openai
import pytest

from proxai.core.model import Protocol
from proxai.translate.response import parse_response
from proxai.upstream.scenarios import (
    ARGS_PARIS,
    ARGS_TOKYO,
    REFUSAL,
    TEXT,
    TEXT_BEFORE_TOOLS,
    TOOL_NAME,
    tokens,
)
from tests.e2e.harness import TEST_HEADER, Mitmdump, proxai_meta, tag

from .conftest import DIRECTIONS, ENV_KEY_VALUE

pytestmark = pytest.mark.e2e

CLIENT_KEY = "sk-client-key-not-a-secret"
A, C, R = "anthropic_messages", "openai_chat", "openai_responses"
MODEL = {A: "via-anthropic", C: "via-chat", R: "via-responses"}


def _http_client(md: Mitmdump) -> Any:
    import httpx2

    if md.mode == "regular":
        return httpx2.Client(proxy=md.proxy_url, verify=ssl.create_default_context(cafile=str(md.ca_path)))
    return httpx2.Client()


def anthropic_sdk(md: Mitmdump, t: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=md.base_url(),
        api_key=CLIENT_KEY,
        max_retries=0,
        default_headers={TEST_HEADER: t},
        http_client=_http_client(md),
    )


def openai_sdk(md: Mitmdump, t: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=md.base_url("/v1"),
        api_key=CLIENT_KEY,
        max_retries=0,
        default_headers={TEST_HEADER: t},
        http_client=_http_client(md),
    )


def call(md: Mitmdump, client: str, target: str, scenario: str, t: str) -> dict[str, Any]:
    """One non-streamed call; the SDK's final object reduced to what the tests compare."""
    headers = {"x-proxai-scenario": scenario}
    model = MODEL[target]
    if client == A:
        m = anthropic_sdk(md, t).messages.create(
            model=model, max_tokens=1024, messages=[{"role": "user", "content": "hi"}], extra_headers=headers
        )
        assert isinstance(m, anthropic.types.Message)
        return {
            "text": "".join(b.text for b in m.content if b.type == "text"),
            "calls": [(b.id, b.name, b.input) for b in m.content if b.type == "tool_use"],
            "stop": m.stop_reason,
            "usage": (
                m.usage.input_tokens
                + (m.usage.cache_read_input_tokens or 0)
                + (m.usage.cache_creation_input_tokens or 0),
                m.usage.output_tokens,
                m.usage.cache_read_input_tokens,
                m.usage.cache_creation_input_tokens,
            ),
        }
    if client == C:
        c = openai_sdk(md, t).chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}], extra_headers=headers
        )
        assert len(c.choices) == 1
        msg = c.choices[0].message
        u = c.usage
        assert u is not None
        return {
            "text": (msg.content or "") + (msg.refusal or ""),
            "calls": [
                (tc.id, tc.function.name, json.loads(tc.function.arguments))
                for tc in msg.tool_calls or []
                if tc.type == "function"
            ],
            "stop": c.choices[0].finish_reason,
            "usage": (
                u.prompt_tokens,
                u.completion_tokens,
                u.prompt_tokens_details.cached_tokens if u.prompt_tokens_details else None,
                _cache_write(u.prompt_tokens_details),
            ),
        }  # fmt: skip
    r = openai_sdk(md, t).responses.create(model=model, input="hi", extra_headers=headers)
    texts = []
    for item in r.output:
        if item.type == "message":
            for part in item.content:
                texts.append(part.text if part.type == "output_text" else part.refusal)
    ru = r.usage
    assert ru is not None
    return {
        "text": "".join(texts),
        "calls": [
            (i.call_id, i.name, json.loads(i.arguments)) for i in r.output if i.type == "function_call"
        ],
        "stop": (r.status, r.incomplete_details.reason if r.incomplete_details else None),
        "usage": (
            ru.input_tokens,
            ru.output_tokens,
            ru.input_tokens_details.cached_tokens,
            _cache_write(ru.input_tokens_details),
        ),
    }


def _cache_write(details: Any) -> int:
    """ProxAI carries a cache write in ``*_tokens_details.cache_write_tokens`` (OpenRouter's name)."""
    if details is None:
        return 0
    value = getattr(details, "cache_write_tokens", None)
    if value is None:
        value = (details.model_extra or {}).get("cache_write_tokens")
    return int(value or 0)


STOPS: dict[str, dict[str, object]] = {
    "text": {A: "end_turn", C: "stop", R: ("completed", None)},
    "parallel_tools": {A: "tool_use", C: "tool_calls", R: ("completed", None)},
    "max_tokens": {A: "max_tokens", C: "length", R: ("incomplete", "max_output_tokens")},
}

DIRECTION_IDS = [f"{c}-to-{t}" for c, t in DIRECTIONS]


@pytest.mark.parametrize(("client", "target"), list(DIRECTIONS), ids=DIRECTION_IDS)
@pytest.mark.parametrize("scenario", ["text", "parallel_tools", "max_tokens"])
def test_translated_final_objects(tr_mitm: Mitmdump, client: str, target: str, scenario: str) -> None:
    t = tag()
    got = call(tr_mitm, client, target, scenario, t)
    assert got["stop"] == STOPS[scenario][client]
    if scenario == "text":
        assert got["text"] == TEXT
        assert got["calls"] == []
    elif scenario == "max_tokens":
        assert got["text"] == "".join(tokens(TEXT)[:8])
    else:
        assert got["text"] == TEXT_BEFORE_TOOLS
        assert [(name, args) for _, name, args in got["calls"]] == [
            (TOOL_NAME, json.loads(ARGS_PARIS)),
            (TOOL_NAME, json.loads(ARGS_TOKYO)),
        ]
        ids = [i for i, _, _ in got["calls"]]
        assert len(set(ids)) == 2 and all(i.endswith("fakecall") or i.startswith("call_") for i in ids)
    flow = tr_mitm.wait_flow(t)
    meta = proxai_meta(flow)
    assert meta["route"]["name"] == f"{client}-to-{target}"
    assert meta["route"]["client_protocol"] == client
    assert meta["protocol"] == target  # the observed upstream protocol
    client_path = {A: "/v1/messages", C: "/v1/chat/completions", R: "/v1/responses"}[client]
    assert meta["route"]["original_url"] == tr_mitm.upstream_url + client_path  # reverse mode's target
    assert meta["route"]["target_url"].endswith({A: "/v1/messages", C: "/v1/chat/completions",
                                                 R: "/v1/responses"}[target])  # fmt: skip
    assert "sk-" not in json.dumps(meta)  # no key in the metadata
    assert meta["outcome"] == "completed"


@pytest.mark.parametrize(("client", "target"), list(DIRECTIONS), ids=DIRECTION_IDS)
def test_usage_with_cache(tr_mitm: Mitmdump, tr_upstream: Any, client: str, target: str) -> None:
    got = call(tr_mitm, client, target, "cache_usage", tag())
    # what the upstream itself reports, asked directly, in neutral terms
    path = {A: "/v1/messages", C: "/v1/chat/completions", R: "/v1/responses"}[target]
    direct = httpx.post(
        tr_upstream.url + path,
        json={"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "input": "hi"},
        headers={"x-proxai-scenario": "cache_usage"},
    ).json()
    u = parse_response(direct, Protocol(target)).usage
    assert u is not None and u.cache_read > 0
    assert got["usage"] == (u.input_tokens, u.output_tokens, u.cache_read, u.cache_write)


@pytest.mark.parametrize(("client", "target"), list(DIRECTIONS), ids=DIRECTION_IDS)
def test_refusal_keeps_visible_text(tr_mitm: Mitmdump, client: str, target: str) -> None:
    got = call(tr_mitm, client, target, "refusal", tag())
    assert got["text"] == REFUSAL
    if client == A:
        assert got["stop"] == "refusal"
    elif client == C:
        # a refusal slot (stop + message.refusal) or Anthropic's classifier stop (content_filter)
        assert got["stop"] == ("content_filter" if target == A else "stop")
    else:
        assert got["stop"] == (("incomplete", "content_filter") if target == A else ("completed", None))


def test_rejected_requests_raise_bad_request_and_send_nothing(tr_mitm: Mitmdump, tr_upstream: Any) -> None:
    before = len(tr_upstream.requests)
    t = tag()
    with pytest.raises(anthropic.BadRequestError) as ai:
        anthropic_sdk(tr_mitm, t).messages.create(
            model="via-chat",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            extra_body={"top_k": 3},
        )
    assert "top_k: top_k has no equivalent in OpenAI APIs" in str(ai.value)
    with pytest.raises(openai.BadRequestError) as oi:
        openai_sdk(tr_mitm, t).chat.completions.create(
            model="via-anthropic",
            messages=[{"role": "user", "content": "hi"}, {"role": "function", "name": "f", "content": "x"}],
        )
    assert "messages[1].role" in str(oi.value)
    assert oi.value.param == "messages[1].role"
    with pytest.raises(openai.BadRequestError) as ri:
        openai_sdk(tr_mitm, t).responses.create(model="via-chat", input="hi", previous_response_id="resp_1")
    assert "previous_response_id" in str(ri.value)
    with pytest.raises(openai.BadRequestError) as bad_args:
        openai_sdk(tr_mitm, t).chat.completions.create(
            model="via-anthropic",
            messages=[
                {"role": "user", "content": "hi"},
                {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                                      "function": {"name": "f", "arguments": "{oops"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
            ],
        )  # fmt: skip
    assert "messages[1].tool_calls[0].function.arguments: tool call arguments are not valid JSON" in str(
        bad_args.value
    )
    flows = tr_mitm.wait_flows(t, 4)
    assert len(tr_upstream.requests) == before  # nothing went upstream
    rejected = [proxai_meta(f)["route"]["rejected"]["field"] for f in flows]
    assert sorted(rejected) == sorted(
        ["top_k", "messages[1].role", "previous_response_id", "messages[1].tool_calls[0].function.arguments"]
    )


@pytest.mark.parametrize(("client", "target"), [(A, C), (C, A), (R, A), (C, R)], ids=lambda v: v)
def test_upstream_errors_in_client_shape(tr_mitm: Mitmdump, client: str, target: str) -> None:
    rate: type[anthropic.APIStatusError] | type[openai.APIStatusError]
    bad: type[anthropic.APIStatusError] | type[openai.APIStatusError]
    rate, bad = (
        (anthropic.RateLimitError, anthropic.BadRequestError)
        if client == A
        else (openai.RateLimitError, openai.BadRequestError)
    )
    with pytest.raises(rate) as rl:
        call(tr_mitm, client, target, "rate_limit", tag())
    assert isinstance(rl.value, anthropic.APIStatusError | openai.APIStatusError)
    assert rl.value.status_code == 429
    with pytest.raises(bad) as ptl:
        call(tr_mitm, client, target, "prompt_too_long", tag())
    assert isinstance(ptl.value, anthropic.APIStatusError | openai.APIStatusError)
    assert ptl.value.status_code == 400
    if client != A:
        assert isinstance(ptl.value, openai.BadRequestError) and ptl.value.code == "context_length_exceeded"


def test_env_auth_and_model_mapping(tr_mitm: Mitmdump, tr_upstream: Any) -> None:
    t = tag()
    c = openai_sdk(tr_mitm, t).chat.completions.create(
        model="envkey-gpt",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
    )
    assert c.choices[0].message.content == TEXT
    rec = next(r for r in reversed(tr_upstream.requests) if r.headers.get(TEST_HEADER) == t)
    assert rec.path == "/v1/messages"
    assert rec.headers["x-api-key"] == ENV_KEY_VALUE
    assert "authorization" not in rec.headers
    assert rec.headers["anthropic-version"] == "2023-06-01"
    assert rec.body["model"] == "mapped-model"
    assert rec.body["system"] == "Be brief."
    assert rec.body["max_tokens"] == 4096
    meta = proxai_meta(tr_mitm.wait_flow(t))
    assert meta["route"]["model"] == {"client": "envkey-gpt", "upstream": "mapped-model"}
    assert ENV_KEY_VALUE not in json.dumps(meta)


def test_pass_auth_translates_the_header(tr_mitm: Mitmdump, tr_upstream: Any) -> None:
    t = tag()
    call(tr_mitm, A, C, "text", t)
    rec = next(r for r in reversed(tr_upstream.requests) if r.headers.get(TEST_HEADER) == t)
    assert rec.path == "/v1/chat/completions"
    assert rec.headers["authorization"] == f"Bearer {CLIENT_KEY}"
    assert "x-api-key" not in rec.headers and "anthropic-version" not in rec.headers


def test_unrouted_flow_passes_untouched(tr_mitm: Mitmdump, tr_upstream: Any) -> None:
    t = tag()
    m = anthropic_sdk(tr_mitm, t).messages.create(
        model="claude-direct", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert m.content[0].type == "text" and m.content[0].text == TEXT
    rec = next(r for r in reversed(tr_upstream.requests) if r.headers.get(TEST_HEADER) == t)
    assert rec.path == "/v1/messages", rec
    assert rec.headers.get("authorization") == f"Bearer {CLIENT_KEY}", rec  # as the SDK sent it
    assert "route" not in proxai_meta(tr_mitm.wait_flow(t))


@pytest.mark.parametrize(("client", "target"), [(A, C), (R, A)], ids=lambda v: v)
def test_regular_mode(tr_mitm_regular: Mitmdump, client: str, target: str) -> None:
    t = tag()
    got = call(tr_mitm_regular, client, target, "parallel_tools", t)
    assert got["stop"] == STOPS["parallel_tools"][client]
    assert [name for _, name, _ in got["calls"]] == [TOOL_NAME, TOOL_NAME]
    meta = proxai_meta(tr_mitm_regular.wait_flow(t))
    assert meta["route"]["name"] == f"{client}-to-{target}"
    assert meta["route"]["original_url"].startswith("https://127.0.0.1:")


def test_regular_mode_reroute_to_another_host(tr_mitm_regular: Mitmdump, tr_upstream: Any) -> None:
    """The client talks HTTPS through CONNECT to one host; the route sends it to a plain-HTTP one."""
    t = tag()
    m = anthropic_sdk(tr_mitm_regular, t).messages.create(
        model="via-plain", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert m.content[0].type == "text" and m.content[0].text == TEXT
    rec = next(r for r in reversed(tr_upstream.requests) if r.headers.get(TEST_HEADER) == t)
    assert rec.path == "/v1/chat/completions"
    meta = proxai_meta(tr_mitm_regular.wait_flow(t))
    assert meta["route"]["name"] == "to-plain-host"
    assert meta["route"]["original_url"] == tr_mitm_regular.upstream_url + "/v1/messages"
    assert meta["route"]["target_url"] == tr_upstream.url + "/v1/chat/completions"


def test_thinking_maps_between_anthropic_and_responses(tr_mitm: Mitmdump) -> None:
    from proxai.upstream.scenarios import REDACTED, SIGNATURE, THINKING

    t = tag()
    r = openai_sdk(tr_mitm, t).responses.create(
        model="via-anthropic", input="hi", extra_headers={"x-proxai-scenario": "thinking"}
    )
    reasoning = [i for i in r.output if i.type == "reasoning"]
    assert len(reasoning) == 1 and reasoning[0].encrypted_content == SIGNATURE
    # the thinking is the reasoning item's summary (what Responses clients show), not reasoning_text
    assert [c.text for c in reasoning[0].summary] == [THINKING] and not reasoning[0].content
    assert r.output_text == TEXT
    m = anthropic_sdk(tr_mitm, t).messages.create(
        model="via-responses",
        max_tokens=10,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"x-proxai-scenario": "thinking"},
    )
    assert m.content[0].type == "thinking"
    assert m.content[0].thinking == THINKING and m.content[0].signature == SIGNATURE
    m = anthropic_sdk(tr_mitm, t).messages.create(
        model="via-responses",
        max_tokens=10,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"x-proxai-scenario": "redacted_thinking"},
    )
    assert m.content[0].type == "redacted_thinking" and m.content[0].data == REDACTED


def test_thinking_reaches_chat_clients_and_the_signature_is_counted(tr_mitm: Mitmdump) -> None:
    from proxai.upstream.scenarios import SIGNATURE, THINKING

    t = tag()
    c = openai_sdk(tr_mitm, t).chat.completions.create(
        model="via-anthropic",
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"x-proxai-scenario": "thinking"},
    )
    assert c.choices[0].message.content == TEXT
    assert c.choices[0].message.model_extra == {"reasoning_content": THINKING}
    meta = proxai_meta(tr_mitm.wait_flow(t))
    assert meta["route"]["response_dropped"] == {"signature_chars": len(SIGNATURE)}


def test_routed_streams_reach_the_stream_translator(tr_mitm: Mitmdump) -> None:
    """The routing hands streamed replies to the stream translator:
    each SDK's stream helper assembles the right final object through a translated route."""
    t = tag()
    headers = {"x-proxai-scenario": "parallel_tools"}
    with anthropic_sdk(tr_mitm, t).messages.stream(
        model="via-chat", max_tokens=100, messages=[{"role": "user", "content": "hi"}], extra_headers=headers
    ) as s:
        m = s.get_final_message()
    assert m.stop_reason == "tool_use"
    assert [b.type for b in m.content] == ["text", "tool_use", "tool_use"]
    with openai_sdk(tr_mitm, t).chat.completions.stream(
        model="via-anthropic",
        messages=[{"role": "user", "content": "hi"}],
        stream_options={"include_usage": True},
        extra_headers=headers,
    ) as cs:
        c = cs.get_final_completion()
    assert c.choices[0].finish_reason == "tool_calls"
    assert [tc.function.name for tc in c.choices[0].message.tool_calls or []] == [TOOL_NAME, TOOL_NAME]
    assert c.usage is not None and c.usage.completion_tokens > 0
    with openai_sdk(tr_mitm, t).responses.stream(model="via-chat", input="hi", extra_headers=headers) as rs:
        r = rs.get_final_response()
    assert r.status == "completed"
    assert [i.type for i in r.output] == ["message", "function_call", "function_call"]
    flows = tr_mitm.wait_flows(t, 3)
    assert {proxai_meta(f)["route"]["name"] for f in flows} == {
        "anthropic_messages-to-openai_chat",
        "openai_chat-to-anthropic_messages",
        "openai_responses-to-openai_chat",
    }
    assert all(proxai_meta(f)["route"]["stream"] is True for f in flows)
