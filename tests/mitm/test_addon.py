"""The ProxAI addon under ``mitmproxy.test.taddons``: options, metadata, comment, markers, resilience."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import exceptions, http
from mitmproxy.test import taddons, tflow, tutils

from proxai.core.errors import UpstreamProtocolError
from proxai.core.model import Protocol
from proxai.core.sse import SseScanner
from proxai.mitm import addon as addon_mod
from proxai.mitm.addon import ProxAI
from proxai.mitm.carrier import Carrier
from proxai.pipeline import observe
from proxai.pipeline.flow import make_stream_translator


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    doc = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + orjson.dumps(doc) + b"\n\n"


USAGE_CHUNK = (
    b"data: "
    + orjson.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4o",
            "choices": [],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
        }
    )
    + b"\n\n"
)
CHAT_TEXT = (
    _chunk({"role": "assistant", "content": ""})
    + _chunk({"content": "Hello"})
    + _chunk({"content": " world"})
    + _chunk({}, "stop")
    + USAGE_CHUNK
    + b"data: [DONE]\n\n"
)
CHAT_UNFINISHED_TOOL = _chunk({"role": "assistant", "content": None}) + _chunk(
    {
        "tool_calls": [
            {
                "index": 0,
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Par'},
            }
        ]
    }
)
CHAT_JSON = orjson.dumps(
    {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5},
    }
)
ANTHROPIC_ERROR_MIDSTREAM = (
    b"event: message_start\n"
    b'data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
    b'"model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,'
    b'"usage":{"input_tokens":9,"output_tokens":1}}}\n\n'
    b"event: error\n"
    b'data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
)


def _flow(
    path: str = "/v1/chat/completions", body: bytes = b'{"stream":true}', method: str = "POST"
) -> http.HTTPFlow:
    req = tutils.treq(method=method.encode(), path=path.encode(), content=body)
    req.headers["authorization"] = "Bearer sk-secret-do-not-leak"
    return tflow.tflow(req=req)


def _sse_response(status: int = 200, encoding: str | None = None) -> http.Response:
    headers = [(b"content-type", b"text/event-stream")]
    if encoding:
        headers.append((b"content-encoding", encoding.encode()))
    return tutils.tresp(status_code=status, headers=http.Headers(headers), content=None)


def _stream(a: ProxAI, f: http.HTTPFlow, wire: bytes, sizes: int = 7, end: bool = True) -> bytes:
    """Drive the flow like mitmproxy's HTTP layer; returns what the client received."""
    a.responseheaders(f)
    assert f.response is not None
    stream = f.response.stream
    assert callable(stream)
    # mitmproxy calls the carrier's ``feed``; with proxai_keep_body (on by default) the carrier
    # keeps what it returns.
    carrier = getattr(stream, "__self__", None)
    assert isinstance(carrier, Carrier) and stream == carrier.feed
    assert (carrier.kept is not None) == a.keep_body
    got = b""
    for i in range(0, len(wire), sizes):
        out = stream(wire[i : i + sizes])
        assert out != b""
        got += out if isinstance(out, bytes) else b"".join(out)
    if end:
        out = stream(b"")
        got += out if isinstance(out, bytes) else b"".join(out)
        a.response(f)
        # The flow's body is exactly what the client received (kept), or not stored (keep off: the
        # visibility addon's empty placeholder, so the ProxAI view shows the summary).
        assert f.response.raw_content == (got if a.keep_body else b"")
    return got


@pytest.fixture
def tctx(tmp_path: Path) -> Any:
    a = ProxAI()
    with taddons.context(a) as ctx:
        ctx.configure(a, proxai_diagnostics_dir=str(tmp_path / "diag"))
        ctx.addon = a
        yield ctx


def test_options_registered_with_defaults(tctx: Any) -> None:
    o = tctx.options
    assert o.proxai_filter == "" and o.proxai_protocol == "" and o.proxai_capture is False
    limits = observe.Limits()
    for name in ("max_line", "max_event", "tail_bytes", "max_tool_args", "max_capture"):
        assert getattr(o, f"proxai_{name}") == getattr(limits, name)
    assert o.proxai_max_decoded > 0


@pytest.mark.parametrize(
    "opts",
    [
        {"proxai_filter": "~q ~~ bad("},
        {"proxai_protocol": "gemini"},
        {"proxai_max_line": 0},
        {"proxai_tail_bytes": -5},
        {"proxai_max_decoded": 0},
        {"proxai_diagnostics_dir": ""},
        {"proxai_max_line": 10_000, "proxai_max_event": 100},
    ],
)
def test_options_validated(tctx: Any, opts: dict[str, Any]) -> None:
    with pytest.raises(exceptions.OptionsError):
        tctx.configure(tctx.addon, **opts)


def test_limit_options_reach_the_observer(tctx: Any) -> None:
    tctx.configure(tctx.addon, proxai_max_line=1234, proxai_tail_bytes=99)
    assert tctx.addon.limits.max_line == 1234 and tctx.addon.limits.tail_bytes == 99


@pytest.mark.parametrize("chunk", [1, 7, 64, 100_000])
def test_streamed_chat_completed(tctx: Any, chunk: int) -> None:
    a: ProxAI = tctx.addon
    f = _flow()
    a.request(f)
    assert f.metadata["proxai"]["protocol"] == "openai_chat"
    f.response = _sse_response()
    got = _stream(a, f, CHAT_TEXT, chunk)
    assert got == CHAT_TEXT
    m = f.metadata["proxai"]
    assert m["schema"] == 1 and m["protocol"] == "openai_chat" and m["streaming"] is True
    assert m["outcome"] == "completed" and m["stop_reason"] == "stop"
    assert m["usage"]["input_tokens"] == 11 and m["usage"]["output_tokens"] == 3
    assert m["usage"]["total_tokens"] == 14
    assert m["id"] == "chatcmpl-1" and m["model"] == "gpt-4o"
    assert m["tool_calls"] == [] and m["error"] is None
    assert m["counts"]["events"] == 6 and m["counts"]["bytes"] == len(CHAT_TEXT)
    assert m["carrier"]["client_bytes"] == m["carrier"]["upstream_bytes"] == len(CHAT_TEXT)
    assert m["original_url"].endswith("/v1/chat/completions") and m["detected_by"] == "path"
    # gpt-4o at $2.50 / $10 per million tokens: 11 * 2.5e-6 + 3 * 1e-5
    assert f.comment == "completed (stop) · chat gpt-4o · 11 in/3 out · $0.0000575"
    assert f.marked == ""
    json.dumps(m)  # plain JSON types only: survives -w / FlowReader


def test_gzip_stream_observed_and_client_gets_compressed_bytes(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow()
    a.request(f)
    f.response = _sse_response(encoding="gzip")
    wire = gzip.compress(CHAT_TEXT)
    assert _stream(a, f, wire, 5) == wire
    m = f.metadata["proxai"]
    assert m["outcome"] == "completed" and m["usage"]["output_tokens"] == 3
    assert m["counts"]["bytes"] == len(CHAT_TEXT)  # the observer counted decoded bytes
    assert "observe_error" not in m


def test_unsupported_encoding_passes_through_and_is_recorded(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow()
    a.request(f)
    f.response = _sse_response(encoding="compress")
    assert _stream(a, f, b"\x00\x01\x02opaque") == b"\x00\x01\x02opaque"
    assert "compress" in f.metadata["proxai"]["observe_error"]


def test_unfinished_tool_marker_and_diagnostics(tctx: Any, tmp_path: Path) -> None:
    a: ProxAI = tctx.addon
    f = _flow()
    a.request(f)
    f.response = _sse_response()
    _stream(a, f, CHAT_UNFINISHED_TOOL)
    m = f.metadata["proxai"]
    assert m["outcome"] == "unfinished_tool"
    assert m["tool_calls"][0]["id"] == "call_1" and m["tool_calls"][0]["arguments_complete"] is False
    assert f.marked == ":hourglass:"
    path = Path(m["diagnostics"])
    assert path.parent == tmp_path / "diag"
    doc = json.loads(path.read_text())
    assert doc["summary"]["outcome"] == "unfinished_tool"
    assert '{\\"city\\": \\"Par' in doc["tail"] or '"city\\": \\"Par' in doc["tail"]
    assert doc["request"] == {"method": "POST", "path": "/v1/chat/completions"}
    text = path.read_text().lower()
    assert "sk-secret" not in text and "authorization" not in text


def test_the_report_without_a_view_is_the_flows_report_after_they_are_freed(
    tctx: Any, tmp_path: Path
) -> None:
    """mitmdump has no view: ``proxai.report`` reports the flows it saw from what it kept of them,
    the same rows as ``report_rows`` of the flows themselves, also once the flows are freed; an
    unfinished tool's diagnostics from the stored body's tail when their file is gone."""
    import gc
    import weakref

    from proxai.mitm.flowrows import report_rows
    from proxai.outputs.report import table_lines

    a: ProxAI = tctx.addon
    flows = []
    for wire in (CHAT_TEXT, CHAT_UNFINISHED_TOOL, CHAT_TEXT):
        f = _flow()
        a.request(f)
        f.response = _sse_response()
        _stream(a, f, wire)
        flows.append(f)
    diag = str(tmp_path / "diag")
    with_file = "\n".join(table_lines(report_rows(flows, base_dir=diag)))
    Path(flows[1].metadata["proxai"]["diagnostics"]).unlink()  # rebuilt from the body's tail now
    from_body = "\n".join(table_lines(report_rows(flows, base_dir=diag)))
    assert from_body != with_file and "Par" in from_body
    assert a.visibility.recent[1].body_tail == flows[1].response.raw_content
    refs = [weakref.ref(f) for f in flows]
    flows.clear()
    del f
    gc.collect()
    assert [r() for r in refs] == [None, None, None] and a.keep_budget.used == 0
    assert a.visibility.report() == from_body


def test_truncated_stream_is_closed_and_marked(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow()
    a.request(f)
    f.response = _sse_response()
    # cut inside the text, before the finish chunk (EOF after a finish_reason is a completed
    # stream: the openai SDK accepts it)
    _stream(a, f, CHAT_TEXT[: CHAT_TEXT.index(_chunk({}, "stop"))][:-20])
    assert f.metadata["proxai"]["outcome"] == "closed"
    assert f.marked == ":warning:"
    assert "closed" in f.comment


def test_anthropic_error_event_midstream(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow("/v1/messages")
    a.request(f)
    f.response = _sse_response()
    assert _stream(a, f, ANTHROPIC_ERROR_MIDSTREAM, 13) == ANTHROPIC_ERROR_MIDSTREAM
    m = f.metadata["proxai"]
    assert m["protocol"] == "anthropic_messages" and m["outcome"] == "error"
    assert m["error"]["kind"] == "overloaded" and m["error"]["message"] == "Overloaded"
    assert f.marked == ":red_circle:" and "overloaded" in f.comment


def test_non_streamed_json_observed(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow(body=b'{"stream":false}')
    a.request(f)
    f.response = tutils.tresp(
        status_code=200, headers=http.Headers(content_type="application/json"), content=CHAT_JSON
    )
    a.responseheaders(f)
    assert not f.response.stream
    a.response(f)
    m = f.metadata["proxai"]
    assert m["streaming"] is False and m["outcome"] == "completed" and m["stop_reason"] == "stop"
    assert m["usage"]["input_tokens"] == 4 and m["usage"]["output_tokens"] == 1


def test_server_replayed_flow_without_responseheaders(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow(body=b'{"stream":false}')
    a.request(f)
    f.response = tutils.tresp(
        status_code=200, headers=http.Headers(content_type="application/json"), content=CHAT_JSON
    )
    a.response(f)  # server replay: no responseheaders hook
    assert f.metadata["proxai"]["outcome"] == "completed"


def test_http_429_is_rate_limited(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow()
    a.request(f)
    body = (
        b'{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":"rate_limit_exceeded"}}'
    )
    f.response = tutils.tresp(
        status_code=429, headers=http.Headers(content_type="application/json"), content=body
    )
    a.responseheaders(f)
    a.response(f)
    m = f.metadata["proxai"]
    assert m["outcome"] == "error" and m["error"]["kind"] == "rate_limited" and m["status_code"] == 429
    assert f.marked == ":red_circle:"


def test_buffered_gzip_json_is_decoded(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow(body=b"{}")
    a.request(f)
    f.response = tutils.tresp(
        status_code=200,
        headers=http.Headers(content_type="application/json", content_encoding="gzip"),
        content=b"",
    )
    f.response.raw_content = gzip.compress(CHAT_JSON)
    a.response(f)
    assert f.metadata["proxai"]["usage"]["total_tokens"] == 5


def test_stream_died_error_hook(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow()
    a.request(f)
    f.response = _sse_response()
    _stream(a, f, CHAT_TEXT[:200], end=False)
    f.error = tflow.terr("Server disconnected")  # type: ignore[attr-defined]
    a.error(f)
    m = f.metadata["proxai"]
    assert m["outcome"] == "error" and m["error"]["kind"] == "connection"
    assert f.marked == ":red_circle:"


def test_connection_refused_before_headers(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow()
    a.request(f)
    f.error = tflow.terr("Connection refused")  # type: ignore[attr-defined]
    a.error(f)
    assert f.metadata["proxai"]["outcome"] == "error"


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/v1/models"), ("POST", "/v1/embeddings"), ("GET", "/v1/chat/completions")],
)
def test_other_flows_untouched(tctx: Any, method: str, path: str) -> None:
    a: ProxAI = tctx.addon
    f = _flow(path, method=method)
    a.request(f)
    f.response = _sse_response()
    a.responseheaders(f)
    a.response(f)
    assert "proxai" not in f.metadata and not f.response.stream and f.comment == "" and f.marked == ""


def test_azure_deployment_path(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow("/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21&api-key=sekrit")
    a.request(f)
    m = f.metadata["proxai"]
    assert m["protocol"] == "openai_chat"
    assert "sekrit" not in m["original_url"] and "api-version=2024-10-21" in m["original_url"]


def test_filter_option_with_protocol_hint(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    tctx.configure(a, proxai_filter="~u /generate", proxai_protocol="anthropic_messages")
    f = _flow("/api/generate")
    a.request(f)
    assert f.metadata["proxai"]["protocol"] == "anthropic_messages"
    assert f.metadata["proxai"]["detected_by"] == "filter"


def test_filter_option_sniffs_the_body(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    tctx.configure(a, proxai_filter="~u /llm")
    f = _flow("/llm/run", body=b'{"model":"m","input":"hi","stream":true}')
    a.request(f)
    assert f.metadata["proxai"]["protocol"] == "openai_responses"
    g = _flow("/other", body=b'{"model":"m","input":"hi"}')
    a.request(g)
    assert "proxai" not in g.metadata


class _BuggyObserver:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def headers(self, status_code: int, now: float) -> None:
        pass

    def feed(self, chunk: bytes, now: float) -> list[Any]:
        raise ZeroDivisionError("bug in feed")

    def finish(self, now: float) -> Any:
        raise KeyError("bug in finish")

    def abort(self, *args: Any, **kwargs: Any) -> Any:
        raise KeyError("bug in abort")


def test_observer_bug_never_breaks_the_flow(tctx: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a: ProxAI = tctx.addon
    monkeypatch.setattr(addon_mod.observe, "StreamObserver", _BuggyObserver)
    f = _flow()
    a.request(f)
    f.response = _sse_response()
    assert _stream(a, f, CHAT_TEXT, 9) == CHAT_TEXT  # the client still gets every byte
    g = _flow()
    a.request(g)
    g.error = tflow.terr("boom")  # type: ignore[attr-defined]
    a.error(g)  # no exception escapes


def test_observe_body_bug_never_breaks_the_flow(tctx: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a: ProxAI = tctx.addon

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setattr(addon_mod.observe, "observe_body", boom)
    f = _flow()
    a.request(f)
    f.response = tutils.tresp(content=CHAT_JSON)
    a.response(f)
    assert f.response.content == CHAT_JSON


def test_flow_state_is_released_when_the_flow_ends(tctx: Any) -> None:
    import gc
    import weakref

    a: ProxAI = tctx.addon
    f = _flow()
    a.request(f)
    f.response = _sse_response()
    _stream(a, f, CHAT_TEXT)
    g = _flow()
    a.request(g)
    g.error = tflow.terr("gone")  # type: ignore[attr-defined]
    a.error(g)
    assert len(a.flows) == 0
    # the visibility addon remembers the last LLM flows for proxai.report (mitmdump has no view),
    # what the report reads of them, not the flows: nothing holds a finished flow or its kept body
    assert [s.id for s in a.visibility.recent] == [f.id, g.id]
    assert f.response.raw_content == CHAT_TEXT and a.keep_budget.used == len(CHAT_TEXT)
    assert all(s.body_tail is None for s in a.visibility.recent)  # no unfinished tool: no tail
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None
    assert a.keep_budget.used == 0  # the freed flow gave its kept bytes back
    assert len(a.visibility.recent) == 2


def test_replayed_sse_body_is_observed_whole(tctx: Any) -> None:
    """Server replay: mitmproxy emulates responseheaders for a complete response, never streams it."""
    a: ProxAI = tctx.addon
    f = _flow()
    a.request(f)
    f.response = tutils.tresp(
        status_code=200, headers=http.Headers(content_type="text/event-stream"), content=CHAT_TEXT
    )
    a.responseheaders(f)
    assert not f.response.stream
    a.response(f)
    m = f.metadata["proxai"]
    assert m["outcome"] == "completed" and m["usage"]["total_tokens"] == 14 and "carrier" not in m


# -- limits that are options: proxai_max_body, proxai_max_translate_buffer, proxai_max_tool_args ------


@pytest.mark.parametrize("name", ["proxai_max_body", "proxai_max_translate_buffer"])
def test_new_limit_options_have_help_and_refuse_non_positive(tctx: Any, name: str) -> None:
    opt = tctx.options._options[name]
    assert opt.typespec is int and opt.default == 64 * 1024 * 1024 and opt.help.strip()
    with pytest.raises(exceptions.OptionsError):
        tctx.configure(tctx.addon, **{name: 0})


@pytest.mark.parametrize("encoding", [None, "gzip"])
def test_body_past_max_body_is_not_parsed_and_recorded_as_stream_limit(
    tctx: Any, encoding: str | None
) -> None:
    a: ProxAI = tctx.addon
    tctx.configure(a, proxai_max_body=len(CHAT_JSON) - 1)
    f = _flow(body=b'{"stream":false}')
    a.request(f)
    headers = {"content_type": "application/json"}
    if encoding:
        headers["content_encoding"] = encoding
    f.response = tutils.tresp(status_code=200, headers=http.Headers(**headers), content=b"")
    wire = gzip.compress(CHAT_JSON) if encoding else CHAT_JSON
    f.response.raw_content = wire
    a.responseheaders(f)
    a.response(f)
    m = f.metadata["proxai"]
    assert m["outcome"] == "error" and m["error"]["kind"] == "stream_limit"
    assert "proxai_max_body" in m["error"]["message"] and "not parsed" in m["error"]["message"]
    assert f.response.raw_content == wire  # passed through untouched


def test_body_within_max_body_is_parsed(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    tctx.configure(a, proxai_max_body=len(CHAT_JSON))
    f = _flow(body=b'{"stream":false}')
    a.request(f)
    f.response = tutils.tresp(
        status_code=200, headers=http.Headers(content_type="application/json"), content=CHAT_JSON
    )
    a.response(f)
    assert f.metadata["proxai"]["outcome"] == "completed"


def test_translation_limits_reach_the_translators(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    tctx.configure(a, proxai_max_translate_buffer=4096, proxai_max_tool_args=16)
    assert a.routing.max_buffer == 4096 and a.routing.max_tool_args == 16
    tr = make_stream_translator(
        Protocol.OPENAI_CHAT,
        Protocol.ANTHROPIC_MESSAGES,
        max_buffer=a.routing.max_buffer,
        max_tool_args=a.routing.max_tool_args,
    )
    start = _chunk({"role": "assistant", "content": ""})
    call = _chunk(
        {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                         "function": {"name": "f", "arguments": '{"path": "/a/long/path"}'}}]}
    )  # fmt: skip
    sc = SseScanner()
    tr.feed(sc.feed(start))
    with pytest.raises(UpstreamProtocolError, match="exceed the limit of 16 bytes"):
        tr.feed(sc.feed(call))


# -- proxai_guard (master switch) and proxai_guard_abnormal -------------------------------------------


def _ev(name: str, data: str) -> bytes:
    return f"event: {name}\ndata: {data}\n\n".encode()


ABNORMAL_ARGS = (
    _ev(
        "message_start",
        '{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],'
        '"model":"claude-x","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}',
    )
    + _ev(
        "content_block_start",
        '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1",'
        '"name":"write_file","input":{}}}',
    )
    + _ev(
        "content_block_delta",
        '{"type":"content_block_delta","index":0,'
        '"delta":{"type":"input_json_delta","partial_json":"{\\"p\\": "}}',
    )
    + _ev("content_block_stop", '{"type":"content_block_stop","index":0}')  # invalid JSON declared done
    + _ev("message_stop", '{"type":"message_stop"}')
)


@pytest.mark.parametrize(
    ("opts", "guarded"),
    [({}, True), ({"proxai_guard": False}, False), ({"proxai_guard_abnormal": False}, False)],
)
def test_guard_switches(tctx: Any, opts: dict[str, Any], guarded: bool) -> None:
    a: ProxAI = tctx.addon
    tctx.configure(a.guard, **opts)
    f = _flow(path="/v1/messages", body=b'{"stream":true}')
    f.request.headers["accept-encoding"] = "gzip, br"
    a.request(f)  # the guard's part too
    # The guard asks for identity only while it is on.
    assert f.request.headers["accept-encoding"] == (
        "gzip, br" if opts.get("proxai_guard") is False else "identity"
    )
    f.response = _sse_response()
    got = _stream(a, f, ABNORMAL_ARGS, sizes=50)
    m = f.metadata["proxai"]
    if guarded:
        assert got != ABNORMAL_ARGS and b"event: error" in got and "guard" in m["extra"]
    else:
        assert got == ABNORMAL_ARGS  # exactly the upstream bytes
        assert "guard" not in m.get("extra", {}) and m["outcome"] == "completed"
    carrier = a.flows.get(f)
    assert carrier is None  # forgotten after the response hook


def test_guard_off_installs_no_hooks(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    tctx.configure(a.guard, proxai_guard=False)
    f = _flow(path="/v1/messages")
    a.request(f)
    f.response = _sse_response()
    a.responseheaders(f)
    assert f.response is not None
    carrier = getattr(f.response.stream, "__self__", None)
    assert isinstance(carrier, Carrier) and carrier.kept is not None
    assert carrier.on_chunk == [] and not carrier.at_end_hooks


# -- proxai_keep_body: the streamed body as the client received it ----------------------------------


def test_keep_body_is_on_by_default_with_caps(tctx: Any) -> None:
    o = tctx.options
    assert o.proxai_keep_body is True
    assert o.proxai_keep_body_max == 8 * 1024 * 1024 and o.proxai_keep_body_total == 256 * 1024 * 1024
    for name in ("proxai_keep_body_max", "proxai_keep_body_total"):
        with pytest.raises(exceptions.OptionsError, match=name):
            tctx.configure(tctx.addon, **{name: 0})


def test_kept_body_survives_a_client_that_hangs_up_after_the_terminal_event(tctx: Any) -> None:
    """An SDK closes its connection once it has read ``[DONE]``; mitmproxy then runs the error hook
    and stores no streamed body (not even with store_streamed_bodies). The kept body is the flow's."""
    a: ProxAI = tctx.addon
    f = _flow()
    a.request(f)
    f.response = _sse_response()
    got = _stream(a, f, CHAT_TEXT, 11, end=False)
    assert got == CHAT_TEXT
    f.error = tflow.terr("Client disconnected.")  # type: ignore[attr-defined]
    a.error(f)
    assert f.response.raw_content == CHAT_TEXT
    m = f.metadata["proxai"]
    assert m["outcome"] == "completed" and "body_not_kept" not in m


def test_body_past_the_per_flow_cap_is_dropped_with_a_note(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    tctx.configure(a, proxai_keep_body_max=len(CHAT_TEXT) - 1)
    f = _flow()
    a.request(f)
    f.response = _sse_response()
    a.responseheaders(f)
    stream = f.response.stream
    assert callable(stream)
    got = b"".join(bytes(b) for b in [*stream(CHAT_TEXT), *stream(b"")])
    assert got == CHAT_TEXT  # the client's bytes never change
    a.response(f)
    assert f.response.raw_content == b""  # not kept: the visibility addon's empty placeholder
    m = f.metadata["proxai"]
    assert m["outcome"] == "completed" and m["usage"]["total_tokens"] == 14
    assert m["body_not_kept"] == (
        f"the response body was not kept: it passed proxai_keep_body_max ({len(CHAT_TEXT) - 1} bytes)"
    )
    assert a.keep_budget.used == 0


def test_a_flow_file_holds_the_read_marks_as_plain_lists(tctx: Any) -> None:
    """The metadata's ``reads``: each read's end in the body and its seconds since the request,
    unrounded, in two plain lists; a saved flow (mitmproxy's ``get_state`` and tnetstring, as ``-w``
    and the save command write it) holds them the same, ``json.dumps`` takes them, and a replay
    reads them back as the pairs."""
    from mitmproxy.io import tnetstring

    from proxai.mitm.replay_load import _reads

    a: ProxAI = tctx.addon
    a.clock = lambda: 100.0  # the request's time (every other hook's too)
    f = _flow()
    a.request(f)
    f.response = _sse_response()
    a.responseheaders(f)
    assert f.response is not None and callable(f.response.stream)
    feed = f.response.stream
    ends, seconds, size = [], [], 0
    for i in range(0, len(CHAT_TEXT), 40):
        at = 0.125 * (i // 40 + 1)  # exact in binary: the seconds below are these
        out = feed(CHAT_TEXT[i : i + 40], 100.0 + at)  # type: ignore[call-arg]
        n = sum(map(len, out))
        if n:
            size += n
            ends.append(size)
            seconds.append(at)
    feed(b"", 200.0)  # type: ignore[call-arg]
    a.response(f)
    assert f.response.raw_content == CHAT_TEXT and size == len(CHAT_TEXT) and len(ends) > 1
    reads = f.metadata["proxai"]["reads"]
    assert reads == {"offsets": ends, "seconds": seconds}
    assert all(type(o) is int for o in reads["offsets"]) and all(type(t) is float for t in reads["seconds"])
    saved = tnetstring.loads(tnetstring.dumps(f.get_state()))
    assert saved["metadata"]["proxai"]["reads"] == reads
    assert json.loads(json.dumps(f.metadata))["proxai"]["reads"] == reads
    assert _reads(saved["metadata"]["proxai"]["reads"]) == tuple(zip(ends, seconds, strict=True))


def test_total_cap_counts_live_bodies_and_frees_them_with_their_flows(tctx: Any) -> None:
    import gc

    a: ProxAI = tctx.addon
    tctx.configure(a, proxai_keep_body_total=len(CHAT_TEXT) * 2)
    flows = []
    for _ in range(3):
        f = _flow()
        a.request(f)
        f.response = _sse_response()
        _stream(a, f, CHAT_TEXT, end=False)
        f.response.stream(b"")
        a.response(f)
        flows.append(f)
    assert [f.response.raw_content == CHAT_TEXT for f in flows] == [True, True, False]
    assert flows[2].metadata["proxai"]["body_not_kept"] == (
        "the response body was not kept: the kept bodies passed proxai_keep_body_total "
        f"({len(CHAT_TEXT) * 2} bytes)"
    )
    assert a.keep_budget.used == len(CHAT_TEXT) * 2
    del flows[0]
    gc.collect()
    assert a.keep_budget.used == len(CHAT_TEXT)  # the freed flow gave its bytes back


def test_keep_body_off_leaves_the_carrier_alone(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    tctx.configure(a, proxai_keep_body=False)
    f = _flow()
    a.request(f)
    f.response = _sse_response()
    assert _stream(a, f, CHAT_TEXT) == CHAT_TEXT
    assert f.metadata["proxai"]["outcome"] == "completed"


def test_closed_stream_records_its_last_event_names(tctx: Any) -> None:
    """EOF before the finish chunk: the metadata says what came last, by name only (no
    content). (EOF after a finish_reason is a completed stream: the openai SDK accepts it.)"""
    a: ProxAI = tctx.addon
    f = _flow()
    a.request(f)
    f.response = _sse_response()
    wire = CHAT_TEXT[: CHAT_TEXT.index(_chunk({}, "stop"))] + b'data: {"id": "chatcmpl-1", "cho'
    _stream(a, f, wire)
    m = f.metadata["proxai"]
    assert m["outcome"] == "closed"
    assert m["last_events"] == [
        "chunk (delta.role)",
        "chunk (delta.content)",
        "chunk (delta.content)",
        "(unfinished)",
    ]
    assert "world" not in str(m)  # names only: the answer's text is not in the metadata
