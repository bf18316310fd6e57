"""The guard end to end: a real mitmdump, the fake upstream's stall scenarios and the REAL SDKs.

The data-driven path (a stall in the second of two parallel tool calls while pings
continue), the timer path (total silence mid-arguments: reverse HTTP/1.1, a client on HTTP/2, an
upstream on HTTP/2, regular mode over CONNECT), an idle upstream before any tool call, the upstream
closed or reset, the metadata and diagnostics file, a concurrent HTTP/2 stream untouched, and healthy
slow streams left alone. Every stall of the upstream lasts 40 s; the thresholds are 1 s / 1.5 s, so an
SDK error with OUR message proves the guard acted long before the stall would have ended.

A stalled stream is played at time scale 0 (``AT_ONCE``): everything before the stall leaves the
upstream in one write, so the 40 s stall is its only pause. With a paced prefix (deltas
milliseconds apart) the figure depended on the machine: when the upstream's thread stops for a
second (a loaded machine, a garbage collection) between two deltas of the stalled call, the guard
sees a real stall there and reports it at 18 argument bytes instead of 30.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.e2e.harness import Mitmdump, proxai_meta, tag

from .conftest import (
    IDLE_TIMEOUT,
    TOOL_STALL,
    anthropic_client,
    async_openai_client,
    openai_client,
    sdk_http_client,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

PROTOCOLS = ["anthropic", "chat", "responses"]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris and Tokyo?"}]
STALL_RE = re.compile(
    r"ProxAI guard: tool call 'get_weather' \(id (?P<id>[A-Za-z0-9_]+)\) stalled: no argument delta for "
    r"(?P<s>\d+\.\d)s \(limit 1s, proxai_tool_stall\) after (?P<n>\d+) argument bytes; "
    r"the upstream stream was closed"
)
# The fake upstream's time scale for a stalled stream: no pause before the stall (keepalives
# during a stall then come every 2 s, the unscaled interval).
AT_ONCE = {"x-proxai-time-scale": "0"}
IDLE_RE = re.compile(
    r"ProxAI guard: upstream sent no bytes for (?P<s>\d+\.\d)s \(limit 1\.5s, proxai_idle_timeout\); "
    r"the upstream stream was closed"
)


def stream_with_sdk(
    protocol: str,
    md: Mitmdump,
    test_tag: str,
    scenario: str,
    *,
    h2: bool = False,
    upstream: str | None = None,
    **extra: str,
) -> Any:
    """Consume a whole stream with the SDK's stream helper; returns the final object."""
    if protocol == "anthropic":
        ac = anthropic_client(md, test_tag, h2=h2, upstream=upstream, **extra)
        with ac.messages.stream(model=scenario, max_tokens=256, messages=MESSAGES) as s:
            for _ in s:
                pass
            return s.get_final_message()
    oc = openai_client(md, test_tag, h2=h2, upstream=upstream, **extra)
    if protocol == "chat":
        with oc.chat.completions.stream(model=scenario, messages=MESSAGES) as cs:
            for _ in cs:
                pass
            return cs.get_final_completion()
    with oc.responses.stream(model=scenario, input="What is the weather in Paris?") as rs:
        for _ in rs:
            pass
        return rs.get_final_response()


def sdk_error(protocol: str, md: Mitmdump, test_tag: str, scenario: str, **kw: Any) -> Exception:
    """The exception the real SDK raised (``kw`` as for ``stream_with_sdk``); fails the test if the
    stream completed."""
    try:
        final = stream_with_sdk(protocol, md, test_tag, scenario, **kw)
    except (anthropic.APIError, openai.APIError) as exc:
        return exc
    raise AssertionError(f"the SDK did not raise; final object: {final!r}")


def error_message(protocol: str, exc: Exception) -> str:
    """Our message as each SDK exposes it, after checking the exception type."""
    if protocol == "anthropic":
        assert type(exc) is anthropic.APIStatusError, type(exc)
        body = exc.body
        assert isinstance(body, dict)
        assert body["type"] == "error"
        assert body["error"]["type"] == "timeout_error"
        message = body["error"]["message"]
        assert message in str(exc)
        return str(message)
    assert type(exc) is openai.APIError, type(exc)
    assert isinstance(exc.body, dict)
    assert exc.body["type"] == "timeout_error"
    assert exc.body["message"] == exc.message
    return exc.message


def wait_closed_early(upstream: Any, before: int, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if upstream.closed_early > before:
            return int(upstream.closed_early)
        time.sleep(0.05)
    raise AssertionError(f"the upstream was not closed early (closed_early stayed {before})")


def guard_meta(md: Mitmdump, test_tag: str) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    flow = md.wait_flow(test_tag)
    meta = proxai_meta(flow)
    guard = meta["extra"]["guard"]
    return flow, meta, guard


def no_tracebacks(md: Mitmdump) -> None:
    log = md.log_path.read_text(errors="replace")
    assert "Traceback" not in log, log[-4000:]
    assert "AssertionError" not in log, log[-4000:]


def check_tool_stall(
    protocol: str,
    md: Mitmdump,
    test_tag: str,
    exc: Exception,
    *,
    path: str | tuple[str, ...],
    call: int,
    arg_bytes: int,
) -> None:
    """``path``: the guard path that must have decided, or the paths any of which may have (when the
    scheduler decides which of two correct paths notices the deadline first)."""
    message = error_message(protocol, exc)
    m = STALL_RE.fullmatch(message)
    assert m is not None, message
    assert int(m["n"]) == arg_bytes
    assert TOOL_STALL <= float(m["s"]) < 30
    flow, meta, guard = guard_meta(md, test_tag)
    # the stalled call is the call-th observed call, unfinished, with exactly these argument bytes
    stalled_call = meta["tool_calls"][call - 1]
    assert len(meta["tool_calls"]) == call
    expected_id = stalled_call["id"]
    assert re.fullmatch(
        {"anthropic": r"toolu_\w+", "chat": r"call_\w+", "responses": r"call_\w+"}[protocol], expected_id
    )
    assert stalled_call == {
        "id": expected_id,
        "name": "get_weather",
        "kind": "function",
        "arguments_complete": False,
        "arguments_valid_json": False,
        "arguments_bytes": arg_bytes,
    }
    assert m["id"] == expected_id
    assert meta["outcome"] == "unfinished_tool"
    assert meta["error"] == {
        "kind": "tool_stall",
        "message": message,
        "source": "proxy",
        "status": None,
        "type": None,
    }
    assert TOOL_STALL <= guard["since_last_delta_s"] < 30
    assert 0 <= guard["idle_s"] < 30
    assert guard == {
        "kind": "tool_stall",
        "message": message,
        "tool_id": expected_id,
        "tool_name": "get_weather",
        "since_last_delta_s": guard["since_last_delta_s"],
        "idle_s": guard["idle_s"],
        "arguments_bytes": arg_bytes,
        "threshold_s": TOOL_STALL,
        "injected": True,
        "path": guard["path"],
    }
    assert guard["path"] in ((path,) if isinstance(path, str) else path), guard["path"]
    # the diagnostics JSON: the recent tail + state, named in the metadata
    report = json.loads(Path(meta["diagnostics"]).read_text())
    assert report["kind"] == "proxai.unfinished_tool"
    assert report["flow_id"] == flow.id
    assert report["summary"]["outcome"] == "unfinished_tool"
    assert report["summary"]["extra"]["guard"] == guard
    stalled = [c for c in report["open_tool_calls"] if c["id"] == expected_id]
    assert len(stalled) == 1 and stalled[0]["arguments_bytes"] == arg_bytes
    upstream_bytes = meta["carrier"]["upstream_bytes"]
    # the tail stops where observing stopped (bytes dropped after the verdict are not in it)
    assert 0 < report["tail_bytes"] == len(report["tail"].encode()) <= min(upstream_bytes, 16 * 1024)
    assert expected_id in report["tail"]


def stalled_stream(
    protocol: str,
    md: Mitmdump,
    upstream: Any,
    scenario: str,
    *,
    path: str | tuple[str, ...],
    call: int,
    arg_bytes: int,
    h2: bool = False,
    origin: str | None = None,
) -> str:
    """A stream the guard ends: the SDK raises our tool-stall message (``check_tool_stall``), the
    upstream is closed early, mitmproxy logs no traceback. Returns the test tag of the flow.

    Played ``AT_ONCE``: the upstream sends everything before the stall in one write, so
    ``arg_bytes`` is where the scenario stalls, whatever the machine's load."""
    t = tag()
    before = upstream.closed_early
    exc = sdk_error(protocol, md, t, scenario, h2=h2, upstream=origin, **AT_ONCE)
    check_tool_stall(protocol, md, t, exc, path=path, call=call, arg_bytes=arg_bytes)
    wait_closed_early(upstream, before)
    no_tracebacks(md)
    return t


def completed_without_verdict(md: Mitmdump, test_tag: str) -> dict[str, Any]:
    """The flow's metadata, after checking it completed with no guard verdict."""
    meta = proxai_meta(md.wait_flow(test_tag))
    assert meta["outcome"] == "completed"
    assert "guard" not in meta.get("extra", {})
    return meta


def untouched_after_the_stall_limits(md: Mitmdump, test_tag: str) -> None:
    """The client left a stalling stream: past both limits the flow is not completed, no verdict."""
    flow = md.wait_flow(test_tag)
    time.sleep(IDLE_TIMEOUT + 0.5)
    meta = proxai_meta(flow)
    assert meta["outcome"] != "completed"
    assert "guard" not in meta.get("extra", {})
    no_tracebacks(md)


# -- data-driven: the second of two parallel calls stalls, pings continue --------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_data_path_stall_in_second_parallel_call(
    protocol: str, g_data_only: Mitmdump, g_upstream: Any
) -> None:
    # the stall hits 30 argument bytes into the second call; the first call is named nowhere
    stalled_stream(protocol, g_data_only, g_upstream, "tool_stall", path="data", call=2, arg_bytes=30)


# -- timer-driven: total silence mid-arguments -------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timer_path_reverse_http1(protocol: str, g_reverse: Mitmdump, g_upstream: Any) -> None:
    t = stalled_stream(protocol, g_reverse, g_upstream, "total_stall", path="timer", call=1, arg_bytes=18)
    # guarded flows ask for an uncompressed body (an error cannot be injected into gzip bytes)
    seen = [r for r in g_upstream.requests if r.headers.get("x-proxai-test") == t]
    assert len(seen) == 1 and seen[0].headers["accept-encoding"] == "identity"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timer_path_client_http2(protocol: str, g_reverse: Mitmdump, g_upstream: Any) -> None:
    t = stalled_stream(
        protocol, g_reverse, g_upstream, "total_stall", path="timer", call=1, arg_bytes=18, h2=True
    )
    flow = g_reverse.wait_flow(t)
    assert flow.request.http_version == "HTTP/2.0"
    assert flow.server_conn.alpn in (None, b"", b"http/1.1")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timer_path_upstream_http2(protocol: str, g_reverse_h2: Mitmdump, g_upstream_h2: Any) -> None:
    # mitmproxy offers the upstream the client's ALPN: HTTP/2 upstream needs an HTTP/2 client
    t = stalled_stream(
        protocol, g_reverse_h2, g_upstream_h2, "total_stall", path="timer", call=1, arg_bytes=18, h2=True
    )
    flow = g_reverse_h2.wait_flow(t)
    assert flow.server_conn.alpn == b"h2"
    assert flow.response is not None and flow.response.http_version == "HTTP/2.0"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timer_path_regular_mode_connect(protocol: str, g_regular: Mitmdump, g_upstream_tls: Any) -> None:
    stalled_stream(protocol, g_regular, g_upstream_tls, "total_stall", path="timer", call=1, arg_bytes=18)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timer_path_regular_mode_connect_http2_both_legs(
    protocol: str, g_regular: Mitmdump, g_upstream_h2: Any
) -> None:
    """CONNECT tunnel, then HTTP/2 inside it to mitmproxy and from mitmproxy to the upstream."""
    t = stalled_stream(
        protocol,
        g_regular,
        g_upstream_h2,
        "total_stall",
        path="timer",
        call=1,
        arg_bytes=18,
        h2=True,
        origin=g_upstream_h2.url,
    )
    flow = g_regular.wait_flow(t)
    assert flow.request.http_version == "HTTP/2.0"
    assert flow.server_conn.alpn == b"h2"


# -- idle upstream before any tool call --------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_idle_upstream_before_any_tool_call(protocol: str, g_reverse: Mitmdump, g_upstream: Any) -> None:
    t = tag()
    before = g_upstream.closed_early
    exc = sdk_error(protocol, g_reverse, t, "idle_stall")
    message = error_message(protocol, exc)
    assert IDLE_RE.fullmatch(message), message
    flow, meta, guard = guard_meta(g_reverse, t)
    assert meta["outcome"] == "error"
    assert meta["error"]["kind"] == "idle_timeout"
    assert meta["error"]["message"] == message
    assert IDLE_TIMEOUT <= guard["idle_s"] < 30
    assert guard == {
        "kind": "idle_timeout",
        "message": message,
        "tool_id": None,
        "tool_name": None,
        "since_last_delta_s": None,
        "idle_s": guard["idle_s"],
        "arguments_bytes": None,
        "threshold_s": IDLE_TIMEOUT,
        "injected": True,
        "path": "timer",
    }
    assert meta["tool_calls"] == []
    report = json.loads(Path(meta["diagnostics"]).read_text())
    assert report["flow_id"] == flow.id
    assert report["summary"]["extra"]["guard"] == guard
    assert report["open_tool_calls"] == []
    assert report["tail_bytes"] == meta["carrier"]["upstream_bytes"] == len(report["tail"].encode())
    wait_closed_early(g_upstream, before)
    no_tracebacks(g_reverse)


# -- HTTP/2 on both legs: only the stalled stream is touched ------------------------------------------


def test_concurrent_http2_stream_completes_untouched(g_reverse_h2: Mitmdump, g_upstream_h2: Any) -> None:
    t_stall, t_ok = tag(), tag()
    before = g_upstream_h2.closed_early

    async def main() -> tuple[Any, Any]:
        async with sdk_http_client(g_reverse_h2, h2=True, asynchronous=True) as hc:
            stalled = async_openai_client(g_reverse_h2, t_stall, hc, **AT_ONCE)
            healthy = async_openai_client(g_reverse_h2, t_ok, hc, **{"x-proxai-time-scale": "0.5"})

            async def run_stalled() -> Any:
                try:
                    async with stalled.chat.completions.stream(model="total_stall", messages=MESSAGES) as s:
                        async for _ in s:
                            pass
                except openai.APIError as exc:
                    return exc
                raise AssertionError("the stalled stream did not raise")

            async def run_healthy() -> Any:
                async with healthy.chat.completions.stream(model="text", messages=MESSAGES) as s:
                    async for _ in s:
                        pass
                    return await s.get_final_completion()

            return await asyncio.gather(run_stalled(), run_healthy())

    exc, final = asyncio.run(main())
    assert STALL_RE.fullmatch(error_message("chat", exc))
    text = final.choices[0].message.content
    assert text.startswith("Paris is sunny today") and text.endswith("clearing by the afternoon.")
    assert final.choices[0].finish_reason == "stop"
    f_stall = g_reverse_h2.wait_flow(t_stall)
    f_ok = g_reverse_h2.wait_flow(t_ok)
    assert f_stall.client_conn.id == f_ok.client_conn.id  # one HTTP/2 connection, two streams
    assert f_stall.request.http_version == f_ok.request.http_version == "HTTP/2.0"
    assert f_stall.server_conn.alpn == b"h2"
    completed_without_verdict(g_reverse_h2, t_ok)
    assert proxai_meta(f_stall)["outcome"] == "unfinished_tool"
    wait_closed_early(g_upstream_h2, before)
    no_tracebacks(g_reverse_h2)


# -- healthy slow streams are left alone ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "scenario", "scale"),
    [
        ("anthropic", "slow_tokens", "1"),
        ("responses", "long_reasoning", "0.15"),
        ("anthropic", "long_reasoning", "0.15"),
    ],
)
def test_healthy_slow_streams_are_not_touched(
    protocol: str, scenario: str, scale: str, g_reverse: Mitmdump
) -> None:
    """slow_tokens: 0.3 s between tokens; long_reasoning: a 3 s pause (> the 1.5 s idle limit) with
    keepalives every 0.3 s. Keepalives are bytes, so the idle rule does not trip."""
    t = tag()
    final = stream_with_sdk(protocol, g_reverse, t, scenario, **{"x-proxai-time-scale": scale})
    if protocol == "anthropic":
        assert final.stop_reason == "end_turn"
        assert final.content[-1].text.endswith("clearing by the afternoon.")
    else:
        assert final.status == "completed"
        assert final.output_text.endswith("clearing by the afternoon.")
    meta = completed_without_verdict(g_reverse, t)
    assert meta["timing"]["largest_gap_s"] < IDLE_TIMEOUT
    no_tracebacks(g_reverse)


# -- races and vanished clients: no traceback in mitmproxy's log ------------------------------------


@pytest.mark.parametrize("stall", ["0.96", "0.98", "0.99", "1.0", "1.005", "1.01", "1.02", "1.04"])
def test_timer_racing_the_upstreams_own_end_of_stream(stall: str, g_reverse: Mitmdump) -> None:
    """The upstream resumes and ENDS its stream (the rest takes ~1 ms at time scale 0.001) right when
    the 1 s timer fires: either the stream completes untouched or the SDK raises our message; mitmproxy
    logs no traceback either way."""
    t = tag()
    oc = openai_client(g_reverse, t, **{"x-proxai-stall": stall, "x-proxai-time-scale": "0.001"})
    try:
        with oc.chat.completions.stream(model="total_stall", messages=MESSAGES) as s:
            for _ in s:
                pass
            final = s.get_final_completion()
    except openai.APIError as exc:
        assert STALL_RE.fullmatch(error_message("chat", exc))
        _flow, meta, guard = guard_meta(g_reverse, t)
        assert meta["outcome"] == "unfinished_tool" and guard["injected"] is True
    else:
        calls = final.choices[0].message.tool_calls
        assert (
            calls is not None
            and calls[0].function.arguments == '{"city": "Paris", "unit": "celsius", "days": 2}'
        )
        completed_without_verdict(g_reverse, t)
    no_tracebacks(g_reverse)


def test_client_gone_before_the_stall_trips(g_reverse: Mitmdump, g_upstream: Any) -> None:
    """The client reads a few events of a stalling stream and leaves; the stall would trip later."""
    import httpx2

    t = tag()
    body = {"model": "total_stall", "max_tokens": 64, "stream": True, "messages": MESSAGES}
    with (
        httpx2.Client(timeout=30) as hc,
        hc.stream(
            "POST",
            g_reverse.base_url("/v1/messages"),
            json=body,
            headers={**_raw_headers(t), "anthropic-version": "2023-06-01"},
        ) as resp,
    ):
        assert resp.status_code == 200
        first = next(resp.iter_raw())
        assert b"message_start" in first
    # the client is gone; wait past the tool-stall threshold and the idle limit
    untouched_after_the_stall_limits(g_reverse, t)


def test_http2_client_cancels_its_stream_before_the_stall_trips(g_reverse_h2: Mitmdump) -> None:
    t = tag()

    async def main() -> None:
        async with sdk_http_client(g_reverse_h2, h2=True, asynchronous=True) as hc:
            client = async_openai_client(g_reverse_h2, t, hc)
            async with client.chat.completions.stream(model="total_stall", messages=MESSAGES) as s:
                async for _ in s:
                    break  # leave after the first event: the SDK closes (resets) the stream

    asyncio.run(main())
    untouched_after_the_stall_limits(g_reverse_h2, t)


def _raw_headers(test_tag: str) -> dict[str, str]:
    from .conftest import headers

    return {**headers(test_tag), "x-api-key": "sk-ant-proxai-test-not-a-secret"}


# -- translated flows: the error is in the CLIENT's protocol ------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "upstream_protocol"),
    [("anthropic", "openai_chat"), ("responses", "anthropic_messages"), ("chat", "openai_responses")],
)
def test_translated_flow_gets_the_error_in_the_client_protocol(
    protocol: str, upstream_protocol: str, g_translating: Mitmdump, g_upstream: Any
) -> None:
    t = tag()
    before = g_upstream.closed_early
    exc = sdk_error(protocol, g_translating, t, "total_stall", **AT_ONCE)
    message = error_message(protocol, exc)  # the client SDK's own error type and shape
    m = STALL_RE.fullmatch(message)
    assert m is not None, message
    assert int(m["n"]) == 18
    flow, meta, guard = guard_meta(g_translating, t)
    assert meta["protocol"] == upstream_protocol
    assert (
        meta["client_protocol"]
        == {"anthropic": "anthropic_messages", "chat": "openai_chat", "responses": "openai_responses"}[
            protocol
        ]
    )
    assert meta["outcome"] == "unfinished_tool"
    assert guard["kind"] == "tool_stall" and guard["injected"] is True and guard["path"] == "timer"
    assert guard["tool_id"] == m["id"] == meta["tool_calls"][0]["id"]
    assert Path(meta["diagnostics"]).exists()
    assert flow.request.headers["accept-encoding"] == "identity"
    wait_closed_early(g_upstream, before)
    no_tracebacks(g_translating)


# -- no false positives: every fake-upstream scenario, pauses below the thresholds -------------------


def test_no_verdict_on_any_scenario_whose_pauses_stay_below_the_thresholds(g_reverse: Mitmdump) -> None:
    """At time scale 0.01 every pause of the fake upstream (stalls 0.6 s, reasoning 0.2 s) stays under
    the 1 s / 1.5 s limits: no scenario, broken ones included, may get a guard verdict."""
    import httpx2

    from proxai.upstream import list_scenarios

    paths = {"anthropic": "/v1/messages", "chat": "/v1/chat/completions", "responses": "/v1/responses"}
    tags: dict[str, tuple[str, str]] = {}
    with httpx2.Client(timeout=30) as hc:
        for name, _ in list_scenarios():
            if name in ("big_stream", "slowloris", "huge_line"):
                continue  # transport stress, covered by the hardening tests
            for protocol, path in paths.items():
                t = tag()
                tags[t] = (name, protocol)
                body: dict[str, Any] = {"model": name, "stream": True, "max_tokens": 64}
                if protocol == "responses":
                    body["input"] = "hi"
                else:
                    body["messages"] = MESSAGES
                hdrs = {"x-proxai-test": t, "x-proxai-time-scale": "0.01", "anthropic-version": "2023-06-01"}
                try:
                    with hc.stream("POST", g_reverse.url + path, json=body, headers=hdrs) as resp:
                        resp.read()
                except httpx2.HTTPError:
                    pass  # the reset scenario
    deadline = time.monotonic() + 30
    while True:  # read the flow file once per round, not once per tag
        flows = {f.request.headers.get("x-proxai-test"): f for f in g_reverse.read_flows()}
        if all(t in flows for t in tags) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert sorted(t for t in tags if t not in flows) == []
    verdicts = {
        what: proxai_meta(flows[t])["extra"]["guard"]["message"]
        for t, what in tags.items()
        if "guard" in proxai_meta(flows[t]).get("extra", {})
    }
    assert verdicts == {}
    no_tracebacks(g_reverse)


# -- the degrade path: internals missing, one warning, data-driven injection --------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_degraded_without_internals_still_injects_on_the_next_chunk(
    protocol: str, g_degraded: Mitmdump, g_upstream: Any
) -> None:
    """The timer still decides at the deadline; the error goes out with the next upstream byte (a
    keepalive of the tool_stall scenario). The SDK raises with our message, and its disconnect closes
    the upstream. Which notices the deadline first, the timer or that byte's own check (path
    ``data``), is the event loop's order when both are due at once (a loaded machine): either is
    right, and the injection is the same."""
    stalled_stream(
        protocol, g_degraded, g_upstream, "tool_stall", path=("timer", "data"), call=2, arg_bytes=30
    )
    log = g_degraded.log_path.read_text(errors="replace")
    warnings = [
        line for line in log.splitlines() if "mitmproxy internals needed to end a silent stream" in line
    ]
    assert len(warnings) == 1, warnings
    assert (
        "missing (HttpStream.response_body_buf); the guard falls back to the data-driven path" in warnings[0]
    )
    no_tracebacks(g_degraded)
