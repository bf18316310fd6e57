"""The mitm side of routing under ``mitmproxy.test.taddons``: the ``proxai_routes``
option, request rewrite, a rejection answered locally in the client's shape, JSON/error/SSE
replies translated back, and metadata without keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import exceptions, http
from mitmproxy.test import taddons, tflow, tutils

from proxai.mitm.addon import ProxAI
from proxai.mitm.routing import Routing
from tests.translate_stream import build
from tests.translate_stream.harness import sdk_anthropic

ROUTES = """
[[route]]
name = "claude-on-responses"
match = { path = "/v1/messages", model = "via-responses*" }
upstream = "http://127.0.0.1:9200/v1"
protocol = "openai_responses"

[[route]]
name = "claude-on-responses-strict"
match = { path = "/v1/messages", model = "strict*" }
upstream = "http://127.0.0.1:9200/v1"
protocol = "openai_responses"
strict_translation = true

[[route]]
name = "claude-on-responses-lenient"
match = { path = "/v1/messages", model = "lenient*" }
upstream = "http://127.0.0.1:9200/v1"
protocol = "openai_responses"
strict_translation = false

[[route]]
name = "claude-on-chat"
match = { path = "/v1/messages" }
upstream = "http://127.0.0.1:9000/v1"
protocol = "openai_chat"
model = "local-model"

[[route]]
name = "chat-on-claude"
match = { path = "/v1/chat/completions" }
upstream = "https://api.anthropic.com"
protocol = "anthropic_messages"
auth = { env = "PROXAI_TEST_MITM_KEY" }

[[route]]
name = "reroute"
match = { path = "/v1/responses", host = "reroute.test" }
upstream = "http://127.0.0.1:9100/v1"
protocol = "openai_responses"
"""

CHAT_REPLY = {
    "id": "chatcmpl-9",
    "object": "chat.completion",
    "created": 5,
    "model": "local-model",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hi!"}}],
    "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
}


@pytest.fixture
def tctx(tmp_path: Path) -> Any:
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    a = ProxAI()
    with taddons.context(a) as ctx:  # type: ignore[no-untyped-call]
        ctx.configure(a, proxai_diagnostics_dir=str(tmp_path / "diag"), proxai_routes=str(routes))
        ctx.addon = a
        yield ctx


def _flow(path: str, body: dict[str, Any], **headers: str) -> http.HTTPFlow:
    req = tutils.treq(method=b"POST", path=path.encode(), content=orjson.dumps(body))
    req.headers["content-type"] = "application/json"
    for k, v in headers.items():
        req.headers[k.replace("_", "-")] = v
    return tflow.tflow(req=req)


def test_bad_routes_file_is_an_options_error(tctx: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[route]]\nupstream = "http://x/v1"\nprotocol = "chat"\n')
    with pytest.raises(exceptions.OptionsError, match=r"line 3, field route\[0\]\.protocol"):
        tctx.configure(tctx.addon, proxai_routes=str(bad))


def test_anthropic_request_rewritten_and_reply_translated(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow(
        "/v1/messages",
        {
            "model": "claude-x",
            "max_tokens": 50,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": "hi"}],
        },
        x_api_key="sk-client-secret",
        anthropic_version="2023-06-01",
        anthropic_beta="x",
        host="api.anthropic.com",
    )
    original = f.request.pretty_url
    client_body = f.request.content
    a.request(f)
    assert f.response is None
    assert f.request.url == "http://127.0.0.1:9000/v1/chat/completions"
    assert f.request.host_header == "127.0.0.1:9000"
    assert f.request.headers["authorization"] == "Bearer sk-client-secret"
    for gone in ("x-api-key", "anthropic-version", "anthropic-beta"):
        assert gone not in f.request.headers
    sent = json.loads(f.request.content or b"")
    assert sent == {
        "model": "local-model",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "max_tokens": 50,
    }
    f.response = tutils.tresp(
        status_code=200,
        headers=http.Headers(content_type="application/json"),
        content=orjson.dumps(CHAT_REPLY),
    )
    a.responseheaders(f)
    a.response(f)
    got = json.loads(f.response.content or b"")
    assert got["type"] == "message" and got["content"] == [{"type": "text", "text": "Hi!"}]
    assert got["stop_reason"] == "end_turn"
    assert got["usage"]["input_tokens"] == 7 and got["usage"]["output_tokens"] == 2
    meta = f.metadata["proxai"]
    assert meta["route"]["name"] == "claude-on-chat"
    assert meta["route"]["original_url"] == original.split("?")[0]
    assert meta["route"]["model"] == {"client": "claude-x", "upstream": "local-model"}
    assert meta["protocol"] == "openai_chat" and meta["client_protocol"] == "anthropic_messages"
    assert meta["outcome"] == "completed"
    # the client's own request stays beside the translated one
    assert meta["client_request"]["url"] == original.split("?")[0]
    assert json.loads(meta["client_request"]["body"]) == json.loads(client_body or b"")
    assert "sk-client-secret" not in json.dumps(meta)


def test_rejection_answered_locally_in_client_shape(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow(
        "/v1/messages",
        {"model": "m", "max_tokens": 5, "top_k": 3, "messages": [{"role": "user", "content": "hi"}]},
    )
    url = f.request.url
    a.request(f)
    assert f.response is not None and f.response.status_code == 400
    assert f.request.url == url  # not rewritten: nothing goes upstream
    body = json.loads(f.response.content or b"")
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "top_k" in body["error"]["message"]
    a.responseheaders(f)
    a.response(f)
    assert json.loads(f.response.content or b"") == body  # not translated a second time
    assert f.metadata["proxai"]["route"]["rejected"]["field"] == "top_k"


def test_env_key_missing_is_answered_as_authentication(tctx: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROXAI_TEST_MITM_KEY", raising=False)
    a: ProxAI = tctx.addon
    f = _flow("/v1/chat/completions", {"model": "gpt", "messages": [{"role": "user", "content": "hi"}]})
    a.request(f)
    assert f.response is not None and f.response.status_code == 401
    err = json.loads(f.response.content or b"")["error"]
    assert "PROXAI_TEST_MITM_KEY" in err["message"] and err["type"] == "authentication_error"


def test_env_key_and_upstream_error_translated(tctx: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROXAI_TEST_MITM_KEY", "sk-ant-from-env")
    a: ProxAI = tctx.addon
    f = _flow(
        "/v1/chat/completions",
        {"model": "gpt", "messages": [{"role": "user", "content": "hi"}]},
        authorization="Bearer sk-client",
        OpenAI_Organization="org-1",
    )
    a.request(f)
    assert f.request.url == "https://api.anthropic.com/v1/messages"
    assert f.request.headers["x-api-key"] == "sk-ant-from-env"
    assert "authorization" not in f.request.headers and "openai-organization" not in f.request.headers
    assert f.request.headers["anthropic-version"] == "2023-06-01"
    err = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    f.response = tutils.tresp(
        status_code=529, headers=http.Headers(content_type="application/json"), content=orjson.dumps(err)
    )
    a.responseheaders(f)
    a.response(f)
    assert f.response.status_code == 503
    assert json.loads(f.response.content or b"")["error"]["message"] == "Overloaded"
    meta = f.metadata["proxai"]
    assert meta["route"]["upstream_error"]["kind"] == "overloaded"
    assert "sk-ant-from-env" not in json.dumps(meta)


def test_multi_choice_reply_is_a_clear_502(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow(
        "/v1/messages", {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    )
    a.request(f)
    choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "A"}}
    reply = {**CHAT_REPLY, "choices": [choice, {**choice, "index": 1}]}
    f.response = tutils.tresp(
        status_code=200, headers=http.Headers(content_type="application/json"), content=orjson.dumps(reply)
    )
    a.responseheaders(f)
    a.response(f)
    assert f.response.status_code == 502
    body = json.loads(f.response.content or b"")
    assert body["type"] == "error" and "2 choices" in body["error"]["message"]


def test_unmatched_flow_untouched(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow("/v1/responses", {"model": "m", "input": "hi"}, authorization="Bearer k")
    url, content = f.request.url, f.request.content
    a.request(f)
    assert f.request.url == url and f.request.content == content
    assert "route" not in f.metadata["proxai"]


def test_routing_without_table_is_inert() -> None:
    r = Routing()
    r.configure("")
    assert r.table is None


def test_plain_reroute_keeps_the_body_bytes(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow(
        "/v1/responses?x=1", {"model": "m", "input": "hi"}, host="reroute.test", authorization="Bearer k"
    )
    f.request.host = "reroute.test"
    f.request.content = b'{ "model" : "m", "input": "hi" }'
    a.request(f)
    assert f.request.url == "http://127.0.0.1:9100/v1/responses?x=1"  # same protocol: the query stays
    assert f.request.content == b'{ "model" : "m", "input": "hi" }'
    assert f.request.headers["content-length"] == str(len(f.request.content))
    assert f.request.headers["authorization"] == "Bearer k"
    assert f.metadata["proxai"]["route"]["name"] == "reroute"


def test_error_object_with_status_200(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow(
        "/v1/messages", {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    )
    a.request(f)
    err = {
        "error": {"message": "Rate limit exceeded", "type": "rate_limit_error", "code": "rate_limit_exceeded"}
    }
    f.response = tutils.tresp(
        status_code=200, headers=http.Headers(content_type="application/json"), content=orjson.dumps(err)
    )
    a.responseheaders(f)
    a.response(f)
    assert f.response.status_code == 429
    body = json.loads(f.response.content or b"")
    assert body == {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limit exceeded"}}


# -- what has no counterpart: left out with a note, or refused under strict translation -----------


def _streamed(a: ProxAI, model: str, wire: bytes, tools: list[dict[str, Any]] | None = None) -> http.HTTPFlow:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": 50,
        "stream": True,
        "messages": [{"role": "user", "content": "capital of France?"}],
    }
    if tools:
        body["tools"] = tools
    f = _flow("/v1/messages", body)
    a.request(f)
    if f.response is not None:  # refused up front
        return f
    assert f.request.url == "http://127.0.0.1:9200/v1/responses"
    f.response = tutils.tresp(
        status_code=200, headers=http.Headers(content_type="text/event-stream"), content=None
    )
    a.responseheaders(f)
    stream = f.response.stream
    assert callable(stream)
    got = b""
    for i in range(0, len(wire), 97):
        out = stream(wire[i : i + 97])
        got += out if isinstance(out, bytes) else b"".join(out)
    out = stream(b"")
    got += out if isinstance(out, bytes) else b"".join(out)
    f.metadata["test_client_bytes"] = got
    a.response(f)
    return f


@pytest.mark.parametrize("model", ["via-responses-1", "lenient-1"])
def test_content_without_counterpart_is_left_out_with_a_note_in_extra(tctx: Any, model: str) -> None:
    a: ProxAI = tctx.addon
    if model.startswith("lenient"):
        tctx.configure(a, proxai_strict_translation=True)  # the route's own false wins
    f = _streamed(a, model, build.r_searched_answer("code_interpreter_call"))
    final = sdk_anthropic(f.metadata["test_client_bytes"])
    assert [(blk.type, blk.text) for blk in final.content] == [("text", "Paris.")]
    assert final.stop_reason == "end_turn"
    extra = f.metadata["proxai"]["extra"]
    assert extra["left_out"] == {"code_interpreter_call": 1}
    assert [n for n in extra["notes"] if n.startswith("left out")] == [
        "left out (no counterpart in the client protocol): code_interpreter_call x1"
    ]
    assert f.metadata["proxai"]["outcome"] == "completed"


@pytest.mark.parametrize("how", ["route", "option"])
def test_strict_translation_refuses_the_offer_and_errors_on_content(tctx: Any, how: str) -> None:
    a: ProxAI = tctx.addon
    model = "strict-1"
    if how == "option":
        tctx.configure(a, proxai_strict_translation=True)
        model = "via-responses-1"
    code = {"type": "code_execution_20250522", "name": "code_execution"}
    f = _streamed(a, model, b"", tools=[code])
    assert f.response is not None and f.response.status_code == 400
    err = json.loads(f.response.content or b"")
    assert err["type"] == "error" and err["error"]["type"] == "invalid_request_error"
    assert "tools[0]: server tool 'code_execution_20250522' cannot be translated" in err["error"]["message"]
    assert f.metadata["proxai"]["route"]["rejected"]["field"] == "tools[0]"

    f = _streamed(a, model, build.r_searched_answer("code_interpreter_call"))
    events = [blk.split(b"\n") for blk in f.metadata["test_client_bytes"].split(b"\n\n") if blk]
    assert [e[0] for e in events] == [b"event: message_start", b"event: error"]
    assert json.loads(events[1][1].removeprefix(b"data: "))["error"] == {
        "type": "invalid_request_error",
        "message": "the upstream sent 'code_interpreter_call', which the client's protocol has no "
        "counterpart for (strict translation)",
    }
    assert f.metadata["proxai"]["translation"]["phase"] == "errored"
    assert "left_out" not in f.metadata["proxai"].get("extra", {})


def test_strict_translation_option_is_off_by_default(tctx: Any) -> None:
    assert tctx.options.proxai_strict_translation is False


HOSTED_ANSWER: dict[str, Any] = {
    "id": "resp_9",
    "object": "response",
    "created_at": 1,
    "status": "completed",
    "model": "gpt-5",
    "output": [
        {"id": "ci_1", "type": "code_interpreter_call", "status": "completed", "code": "1+1"},
        {
            "id": "msg_1",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Paris.", "annotations": []}],
        },
    ],
    "usage": {"input_tokens": 9, "output_tokens": 2, "total_tokens": 11},
}


@pytest.mark.parametrize(("model", "strict"), [("via-responses-1", False), ("strict-1", True)])
def test_json_reply_carries_the_rest_and_counts_what_has_no_counterpart(
    tctx: Any, model: str, strict: bool
) -> None:
    """A buffered Responses answer with a hosted tool's item: the client gets the rest of the
    answer and the flow says what was left out; strict translation makes it an error instead."""
    a: ProxAI = tctx.addon
    f = _flow(
        "/v1/messages", {"model": model, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
    )
    a.request(f)
    f.response = tutils.tresp(
        status_code=200,
        headers=http.Headers(content_type="application/json"),
        content=orjson.dumps(HOSTED_ANSWER),
    )
    a.response(f)
    body = json.loads(f.response.content or b"")
    if strict:
        assert f.response.status_code == 502
        assert body["error"]["message"] == (
            "proxai strict translation: the upstream's answer holds code_interpreter_call x1, which "
            "anthropic_messages cannot carry"
        )
        assert "left_out" not in f.metadata["proxai"].get("extra", {})
        return
    assert f.response.status_code == 200
    assert [(b["type"], b["text"]) for b in body["content"]] == [("text", "Paris.")]
    assert body["stop_reason"] == "end_turn"
    extra = f.metadata["proxai"]["extra"]
    assert extra["left_out"] == {"code_interpreter_call": 1}
    assert "left out (no counterpart in the client protocol): code_interpreter_call x1" in extra["notes"]


def test_a_pause_turn_reaching_an_openai_client_says_so(tctx: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Anthropic's pause_turn has no counterpart in Chat: the client gets a normal end, and the flow
    notes that (never silently)."""
    monkeypatch.setenv("PROXAI_TEST_MITM_KEY", "sk-ant-from-env")
    a: ProxAI = tctx.addon
    f = _flow("/v1/chat/completions", {"model": "gpt", "messages": [{"role": "user", "content": "hi"}]})
    a.request(f)
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Searching..."}],
        "stop_reason": "pause_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 2},
    }
    f.response = tutils.tresp(
        status_code=200, headers=http.Headers(content_type="application/json"), content=orjson.dumps(reply)
    )
    a.responseheaders(f)
    a.response(f)
    body = json.loads(f.response.content or b"")
    assert body["choices"][0]["finish_reason"] == "stop"
    assert f.metadata["proxai"]["extra"]["notes"] == [
        "stop pause_turn has no counterpart in openai_chat: the client got a normal end of the turn"
    ]
