"""From one HTTP request to a played response: routing, scenario choice, timing, encoding.

Issue 2: the protocol comes from the path (``/v1/messages``, ``/v1/chat/completions``,
``/v1/responses``, under any prefix), the scenario from the ``x-proxai-scenario`` header or
the request's ``model`` (unknown -> ``text``), streaming from ``"stream": true``. The
transport (``http1.py``, ``http2.py``) hands a parsed request and a ``Sink``; ``serve`` plays
the renderer's actions into it with real, scaled delays, so a stall is a real stall.
Per-request headers: ``x-proxai-encoding``, ``x-proxai-stall`` (seconds, NOT scaled),
``x-proxai-time-scale``, ``x-proxai-size``, ``x-proxai-events``, ``x-proxai-content-type``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from . import render_anthropic, render_chat, render_responses
from .compress import ENCODINGS, Compressor, compress, make_compressor
from .ops import DEFAULT_EVENTS, DEFAULT_SIZE, Abort, Action, Delay, Params, Respond
from .scenarios import SCENARIOS, Scenario, get_scenario
from .wire import Renderer, json_actions

Headers = list[tuple[str, str]]
MIN_SLEEP = 0.001  # shorter per-byte delays only yield to the loop
COALESCE = 32 * 1024  # undelayed events are written together up to this many bytes

PATHS: tuple[tuple[str, Callable[[Params], Renderer]], ...] = (
    ("/messages", render_anthropic.AnthropicRenderer),
    ("/chat/completions", render_chat.ChatRenderer),
    ("/responses", render_responses.ResponsesRenderer),
)

HTML_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n"
    b"</body>\r\n</html>\r\n"
)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the upstream received it."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    body: Any  # parsed JSON, or None
    http_version: str

    @property
    def json(self) -> Any:
        return self.body


class Sink(Protocol):
    """One response on one connection (HTTP/1.1) or stream (HTTP/2)."""

    async def start(self, status: int, headers: Headers) -> None: ...

    async def write(self, data: bytes) -> None: ...

    async def end(self) -> None: ...

    async def abort(self, drop: bool = False) -> None: ...


@dataclass(slots=True)
class Stats:
    """Shared counters of one upstream (mutated on the server loop only)."""

    requests: list[RecordedRequest] = field(default_factory=list)
    closed_early: int = 0
    completed: int = 0
    counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))


def _header(headers: dict[str, str], name: str) -> str | None:
    value = headers.get(name)
    return value.strip() if value is not None else None


def _float(value: str | None, default: float) -> float:
    try:
        return max(0.0, float(value)) if value is not None else default
    except ValueError:
        return default


def _int(value: str | None, default: int) -> int:
    try:
        return max(0, int(value)) if value is not None else default
    except ValueError:
        return default


def _models() -> bytes:
    """``GET /v1/models``: every scenario as a model (OpenAI list shape, Anthropic fields too)."""
    data = [
        {
            "id": name,
            "object": "model",
            "type": "model",
            "created": 0,
            "owned_by": "proxai",
            "display_name": name,
        }
        for name in SCENARIOS
    ]
    return orjson.dumps({"object": "list", "data": data, "has_more": False})


def renderer_for(path: str) -> Callable[[Params], Renderer] | None:
    clean = path.split("?", 1)[0].rstrip("/")
    for suffix, renderer in PATHS:
        if clean.endswith(suffix):
            return renderer
    return None


async def serve(
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes,
    *,
    http_version: str,
    sink: Sink,
    stats: Stats,
    time_scale: float,
) -> None:
    """Answer one request completely (or abort it, as the scenario says).

    A bug in a scenario or renderer never hangs the client: before the headers it becomes an
    HTTP 500 naming the exception, after them a reset. Transport errors (the client left)
    propagate to the transport, which counts them.
    """
    tracked = _TrackedSink(sink)
    try:
        await _serve(method, path, headers, body, http_version, tracked, stats, time_scale)
    except (ConnectionError, OSError):
        raise
    except Exception as e:
        with contextlib.suppress(Exception):
            if tracked.started:
                await sink.abort()
            else:
                err = {"error": {"message": f"fake upstream bug: {e!r}", "type": "server_error"}}
                await _respond(sink, Respond(500, orjson.dumps(err)))


class _TrackedSink:
    """A Sink that remembers whether the response headers went out."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.started = False

    async def start(self, status: int, headers: Headers) -> None:
        self.started = True
        await self.sink.start(status, headers)

    async def write(self, data: bytes) -> None:
        await self.sink.write(data)

    async def end(self) -> None:
        await self.sink.end()

    async def abort(self, drop: bool = False) -> None:
        await self.sink.abort(drop)


async def _serve(  # noqa: PLR0917 - internal, called once
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes,
    http_version: str,
    sink: Sink,
    stats: Stats,
    time_scale: float,
) -> None:
    parsed: Any = None
    try:
        parsed = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        parsed = None
    stats.requests.append(RecordedRequest(method, path, headers, parsed, http_version))

    clean = path.split("?", 1)[0].rstrip("/")
    if method == "GET" and clean in ("", "/healthz"):
        await _respond(sink, Respond(200, b'{"status":"ok"}'))
        return
    if method == "GET" and clean.endswith("/models"):
        await _respond(sink, Respond(200, _models()))
        return
    if method == "POST" and clean.endswith("/messages/count_tokens"):
        await _respond(sink, Respond(200, b'{"input_tokens":25}'))
        return
    renderer_cls = renderer_for(path)
    if renderer_cls is None:
        err = {"error": {"message": f"Unknown path {path}", "type": "not_found_error", "code": None}}
        await _respond(sink, Respond(404, orjson.dumps(err)))
        return
    if method != "POST":
        err = {"error": {"message": f"Method {method} not allowed", "type": "invalid_request_error"}}
        await _respond(sink, Respond(405, orjson.dumps(err)))
        return
    if not isinstance(parsed, dict):
        err = {"error": {"message": "The request body is not valid JSON.", "type": "invalid_request_error"}}
        await _respond(sink, Respond(400, orjson.dumps(err)))
        return

    model = parsed.get("model")
    model = model if isinstance(model, str) and model else "fake-model"
    scenario = get_scenario(_header(headers, "x-proxai-scenario") or model)
    stream = parsed.get("stream") is True
    options = parsed.get("stream_options")
    params = Params(
        model=model,
        stream=stream,
        include_usage=isinstance(options, dict) and options.get("include_usage") is True,
        size=_int(_header(headers, "x-proxai-size"), DEFAULT_SIZE),
        events=_int(_header(headers, "x-proxai-events"), DEFAULT_EVENTS),
        request_number=next(stats.counter),
        created=int(time.time()),
    )
    scale = _float(_header(headers, "x-proxai-time-scale"), time_scale)
    stall = _header(headers, "x-proxai-stall")
    stall_seconds = _float(stall, 0.0) if stall is not None else None
    encoding = _header(headers, "x-proxai-encoding") or scenario.encoding
    if encoding not in ENCODINGS:
        encoding = None
    renderer = renderer_cls(params)

    if scenario.http_error is not None:
        if scenario.http_error == "html_500":
            resp = Respond(502, HTML_502, content_type="text/html")
        else:
            resp = renderer.error_response(scenario.http_error)
        await _respond(sink, resp)
        return

    timing = _Timing(scale, stall_seconds)
    ops = scenario.script(params)
    if stream:
        await _play_stream(
            renderer.stream(ops), sink, scenario, req_headers=headers, encoding=encoding, timing=timing
        )
    else:
        await _play_json(json_actions(renderer, ops), sink, encoding, timing)


@dataclass(frozen=True, slots=True)
class _Timing:
    scale: float
    stall: float | None  # x-proxai-stall: absolute seconds for stall waits

    def seconds(self, d: Delay) -> float:
        if d.stall and self.stall is not None:
            return self.stall
        return d.seconds * self.scale

    async def sleep(self, d: Delay, write: Callable[[bytes], Any] | None = None) -> None:
        total = self.seconds(d)
        if total <= 0:
            return
        every = d.every * self.scale if self.scale > 0 else total
        if not d.keepalive or write is None or every <= 0:
            await asyncio.sleep(total)
            return
        left = total
        while left > 0:
            step = min(every, left)
            await asyncio.sleep(step)
            left -= step
            if left > 1e-9:
                await write(d.keepalive)


async def _respond(sink: Sink, resp: Respond, encoding: str | None = None) -> None:
    body = compress(encoding, resp.body) if encoding else resp.body
    headers: Headers = [("content-type", resp.content_type), ("content-length", str(len(body)))]
    if encoding:
        headers.append(("content-encoding", encoding))
    headers.extend(resp.headers)
    await sink.start(resp.status, headers)
    if resp.cut:
        await sink.write(body[: resp.cut])
        await sink.abort(drop=True)
        return
    if body:
        await sink.write(body)
    await sink.end()


async def _play_json(actions: Iterator[Action], sink: Sink, encoding: str | None, timing: _Timing) -> None:
    for action in actions:
        match action:
            case Delay():
                await timing.sleep(action)
            case Abort():
                await sink.abort(action.drop)
                return
            case Respond():
                await _respond(sink, action, encoding)
                return
            case bytes():
                pass


async def _play_stream(
    actions: Iterator[Action],
    sink: Sink,
    scenario: Scenario,
    *,
    req_headers: dict[str, str],
    encoding: str | None,
    timing: _Timing,
) -> None:
    headers: Headers = []
    content_type = _header(req_headers, "x-proxai-content-type") or scenario.content_type
    if content_type and content_type != "none":
        headers.append(("content-type", content_type))
    headers.append(("cache-control", "no-cache"))
    compressor: Compressor | None = None
    if encoding:
        headers.append(("content-encoding", encoding))
        compressor = make_compressor(encoding)
    await sink.start(200, headers)
    byte_delay = scenario.byte_delay * timing.scale

    async def write(data: bytes) -> None:
        if compressor is not None:
            data = compressor.feed(data)
        if byte_delay > 0:
            for i in range(len(data)):
                await sink.write(data[i : i + 1])
                await asyncio.sleep(byte_delay if byte_delay >= MIN_SLEEP else 0)
        elif data:
            await sink.write(data)

    # Events with no delay between them leave in one write (as a real server's buffer would),
    # up to COALESCE bytes; any real delay flushes first, so paced events stay separate writes.
    pending: list[bytes] = []
    pending_size = 0

    async def flush() -> None:
        nonlocal pending_size
        if pending:
            data = b"".join(pending)
            pending.clear()
            pending_size = 0
            await write(data)

    for action in actions:
        match action:
            case bytes():
                if byte_delay > 0:
                    await write(action)
                    continue
                pending.append(action)
                pending_size += len(action)
                if pending_size >= COALESCE:
                    await flush()
            case Delay():
                if timing.seconds(action) > 0:
                    await flush()
                    await timing.sleep(action, write)
            case Abort():
                await flush()
                await sink.abort(action.drop)
                return
            case Respond():
                pass
    await flush()
    if compressor is not None:
        tail = compressor.finish()
        if tail:
            await sink.write(tail)
    await sink.end()
