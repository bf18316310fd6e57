"""From one HTTP request to a played response: routing, scenario choice, per-request knobs.

The protocol comes from the path (``/v1/messages``, ``/v1/chat/completions``,
``/v1/responses``, under any prefix), the scenario from the ``x-proxai-scenario`` header or
the request's ``model`` (unknown -> ``text``), streaming from ``"stream": true``. The
transport (``http1.py``, ``http2.py``) hands a parsed request and a ``Sink``; ``serve`` picks
the renderer and scenario and hands the actions to ``playback.py``.
Per-request headers: ``x-proxai-encoding``, ``x-proxai-stall`` (seconds, NOT scaled),
``x-proxai-time-scale``, ``x-proxai-size``, ``x-proxai-events``, ``x-proxai-content-type``.

Rule: docs/design/upstream.md, "Wire rules each renderer keeps" (end of message:
``message_stop``, ``[DONE]``, the Responses terminal event): the path picks the protocol whose
renderer provides it.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import orjson

from . import render_anthropic, render_chat, render_responses
from .compress import ENCODINGS
from .ops import DEFAULT_EVENTS, DEFAULT_SIZE, Params, Respond
from .playback import Headers, Sink, Timing, play_json, play_stream, respond
from .profiles import PROFILES, ProfileName, check
from .scenarios import SCENARIOS, get_scenario, names_scenario
from .wire import Renderer, json_actions

PATHS: tuple[tuple[str, Callable[[Params], Renderer]], ...] = (
    ("/messages", render_anthropic.AnthropicRenderer),
    ("/chat/completions", render_chat.ChatRenderer),
    ("/responses", render_responses.ResponsesRenderer),
)
PROTOCOLS = {
    "/messages": "anthropic_messages",
    "/chat/completions": "openai_chat",
    "/responses": "openai_responses",
}

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


@dataclass(slots=True)
class Stats:
    """Shared counters of one upstream (mutated on the server loop only), and its settings:
    the scenario a model name that names none plays, and the validation profile."""

    requests: list[RecordedRequest] = field(default_factory=list)
    closed_early: int = 0
    completed: int = 0
    counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    default_scenario: str | None = None
    profile: ProfileName | None = None


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


def received_key(headers: dict[str, str], path: str) -> str:
    """The key a request carried, in any provider's header or the ``key`` / ``api-key`` query
    parameter (what an "invalid API key" error of a compatible server quotes)."""
    for name in ("x-api-key", "api-key", "x-goog-api-key"):
        if headers.get(name):
            return headers[name].strip()
    scheme, _, token = (headers.get("authorization") or "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    for name, value in parse_qsl(path.partition("?")[2]):
        if name.lower() in ("key", "api-key", "api_key") and value:
            return value
    return ""


def renderer_for(path: str) -> Callable[[Params], Renderer] | None:
    clean = path.split("?", 1)[0].rstrip("/")
    for suffix, renderer in PATHS:
        if clean.endswith(suffix):
            return renderer
    return None


def protocol_for(path: str) -> str:
    clean = path.split("?", 1)[0].rstrip("/")
    return next((p for suffix, p in PROTOCOLS.items() if clean.endswith(suffix)), "")


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
                await respond(sink, Respond(500, orjson.dumps(err)))


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
        await respond(sink, Respond(200, b'{"status":"ok"}'))
        return
    if method == "GET" and clean.endswith("/models"):
        await respond(sink, Respond(200, _models()))
        return
    if method == "POST" and clean.endswith("/messages/count_tokens"):
        await respond(sink, Respond(200, b'{"input_tokens":25}'))
        return
    renderer_cls = renderer_for(path)
    if renderer_cls is None:
        err = {"error": {"message": f"Unknown path {path}", "type": "not_found_error", "code": None}}
        await respond(sink, Respond(404, orjson.dumps(err)))
        return
    if method != "POST":
        err = {"error": {"message": f"Method {method} not allowed", "type": "invalid_request_error"}}
        await respond(sink, Respond(405, orjson.dumps(err)))
        return
    if not isinstance(parsed, dict):
        err = {"error": {"message": "The request body is not valid JSON.", "type": "invalid_request_error"}}
        await respond(sink, Respond(400, orjson.dumps(err)))
        return

    model = parsed.get("model")
    model = model if isinstance(model, str) and model else "fake-model"
    protocol = protocol_for(path)
    profile = _header(headers, "x-proxai-profile") or stats.profile
    if profile in PROFILES:
        refusal = check(profile, protocol, parsed)
        if refusal is not None:
            await respond(sink, Respond(refusal[0], orjson.dumps(refusal[1])))
            return
    named = _header(headers, "x-proxai-scenario") or model
    if stats.default_scenario is not None and not names_scenario(named):
        named = stats.default_scenario
    scenario = get_scenario(named)
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
        protocol=protocol,
        body=parsed,
        credential=received_key(headers, path),
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
        await respond(sink, resp)
        return

    timing = Timing(scale, stall_seconds)
    ops = scenario.script(params)
    if stream:
        await play_stream(
            renderer.stream(ops),
            sink,
            byte_delay=scenario.byte_delay,
            content_type=_header(headers, "x-proxai-content-type") or scenario.content_type,
            encoding=encoding,
            timing=timing,
        )
    else:
        await play_json(json_actions(renderer, ops), sink, encoding, timing)
