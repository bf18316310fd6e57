"""Ending a streamed response while the upstream is silent: ALL mitmproxy-internal knowledge of ProxAI.

docs/design/guard.md, "Acting on a verdict" (inject-and-close): when the guard gives up on a stream, an
SSE error goes to the client and the stream is closed. While upstream bytes flow, the carrier does that
inside ``flow.response.stream``. When the upstream is totally silent no chunk will ever call our code, so
this module reaches into mitmproxy's HTTP layer (docs/guard.md, "mitmproxy internals used, and the degrade
path"):

1. ``end_stream(flow)`` hands ``proxyserver.inject_event`` a ``ProxaiEndStream`` event (a
   ``MessageInjected`` subclass, so the stock layers pass it down to the ``HttpLayer``).
2. A small, idempotent wrapper around ``HttpLayer._handle_event`` picks it up, finds the ``HttpStream``
   whose ``.flow`` is the target flow and delivers a plain ``ResponseEndOfMessage`` to it, but ONLY while
   that stream is in ``state_stream_response_body`` and not paused (otherwise the event is dropped: the
   upstream's own end of stream won the race). The stream then calls ``flow.response.stream(b"")``: the
   carrier returns its pending error bytes, mitmproxy runs the ``response`` hook and ends the client
   stream (chunked terminator / HTTP/2 END_STREAM). The wrapper forwards the event through CONNECT
   tunnels (regular proxy mode) into the inner ``HttpLayer``.
3. Once the stream was dropped from the layer (the client stream has ended), the same wrapper sends
   ``RequestProtocolError(..., CANCEL)`` to the server-side connection layer: HTTP/1 closes that
   connection, HTTP/2 resets only that stream. The upstream stops spending tokens.
4. The stream we ended gets its own ``_handle_event`` (an instance attribute, as mitmproxy does for
   ``passthrough``) that swallows upstream events still arriving for it (they would otherwise hit
   ``state_done`` and raise). Other streams' events reach mitmproxy's method directly.
5. ``answer_now(flow, response)`` does the same for a response that is NOT streamed: while the stream
   still waits for the upstream's headers (``state_wait_for_response_headers``) it is handed the
   response's headers, body and end as if the upstream had sent them; while it buffers the body
   (``state_consume_response_body``) the flow's response is replaced and its end delivered. mitmproxy
   then runs the ``responseheaders`` / ``response`` hooks and sends the whole response; the upstream
   is cancelled as in 3.

The fault injector (``proxai.mitm.faults``) uses the same wrapper for three more events:

6. ``attach_hold(flow, hold)`` (sent at request time, long before the response): the flow's
   ``HttpStream`` gets an instance ``_handle_event`` that DEFERS the upstream's end of message,
   trailers and protocol errors while ``hold.holding()`` (bytes of a stall or a slow-down still wait),
   so the client's stream cannot end under held bytes. Data events pass.
7. ``release(flow)`` (a timer): delivers a ``ResponseData`` holding the ``RELEASE`` marker to the stream
   while it streams its body; the stream calls ``flow.response.stream(RELEASE)`` and the injector
   answers with the bytes whose time has come, which mitmproxy sends as any other chunk (HTTP/1
   chunk, HTTP/2 DATA). Once nothing waits, the deferred upstream events are replayed in order.
8. ``reset_stream(flow)``: delivers a ``ResponseProtocolError`` (``KILL``) to the stream as if the
   upstream had died: mitmproxy runs the error hook and kills the client side (HTTP/1: the client
   connection is closed mid-body; HTTP/2: that stream is reset), and the upstream is cancelled as in 3.

``install()`` checks at start-up that every internal used here exists; when one does not, it logs ONE
warning and ProxAI keeps the data-driven path only (errors injected on the next upstream chunk).
``GuardTimer`` is the per-flow asyncio timer the guard arms.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

_ENDED = "_proxai_ended"  # HttpStream attribute: we ended this stream
_PENDING = "_proxai_pending_cancel"  # HttpLayer attribute: {stream_id: (server_conn, message)}
_WRAPPED = "_proxai_wrapped"  # marker on our wrapper functions (idempotent install)
CANCEL_MESSAGE = "proxai guard closed the stream"


@dataclass(frozen=True, slots=True)
class InternalsReport:
    ok: bool
    missing: tuple[str, ...]


def check_internals() -> InternalsReport:
    """Which of the mitmproxy internals this module relies on are missing."""
    missing: list[str] = []
    try:
        from mitmproxy.addons import proxyserver
        from mitmproxy.proxy import events, layer
        from mitmproxy.proxy.layers import http as mhttp
        from mitmproxy.proxy.layers.http import _events as hev
    except Exception as exc:  # pragma: no cover - depends on the installed mitmproxy
        return InternalsReport(False, (f"import: {exc}",))
    checks: list[tuple[str, bool]] = [
        ("events.MessageInjected", hasattr(events, "MessageInjected")),
        ("proxyserver.Proxyserver.inject_event", hasattr(proxyserver.Proxyserver, "inject_event")),
        ("proxyserver.Proxyserver.connections", "connections" in _annotations(proxyserver.Proxyserver)),
        ("HttpLayer._handle_event", callable(getattr(mhttp.HttpLayer, "_handle_event", None))),
        ("HttpLayer.event_to_child", callable(getattr(mhttp.HttpLayer, "event_to_child", None))),
        ("HttpLayer.streams", "streams" in _annotations(mhttp.HttpLayer)),
        ("HttpLayer.connections", "connections" in _annotations(mhttp.HttpLayer)),
        ("HttpStream", isinstance(getattr(mhttp, "HttpStream", None), type)),
        ("HttpStream._handle_event", callable(getattr(mhttp.HttpStream, "_handle_event", None))),
        (
            "HttpStream.state_stream_response_body",
            callable(getattr(mhttp.HttpStream, "state_stream_response_body", None)),
        ),
        ("HttpStream.passthrough", callable(getattr(mhttp.HttpStream, "passthrough", None))),
        (
            "HttpStream.state_wait_for_response_headers",
            callable(getattr(mhttp.HttpStream, "state_wait_for_response_headers", None)),
        ),
        (
            "HttpStream.state_consume_response_body",
            callable(getattr(mhttp.HttpStream, "state_consume_response_body", None)),
        ),
        ("HttpStream.response_body_buf", "response_body_buf" in _annotations(mhttp.HttpStream)),
        ("ResponseHeaders", hasattr(hev, "ResponseHeaders")),
        ("HttpStream.flow", "flow" in _annotations(mhttp.HttpStream)),
        ("Layer._paused", "_paused" in _annotations(layer.Layer)),
        ("ResponseEndOfMessage", hasattr(hev, "ResponseEndOfMessage")),
        ("ResponseData", hasattr(hev, "ResponseData")),
        ("ResponseTrailers", hasattr(hev, "ResponseTrailers")),
        ("ResponseProtocolError", hasattr(hev, "ResponseProtocolError")),
        ("RequestProtocolError", hasattr(hev, "RequestProtocolError")),
        ("ErrorCode.CANCEL", hasattr(getattr(hev, "ErrorCode", None), "CANCEL")),
    ]
    missing = [name for name, ok in checks if not ok]
    return InternalsReport(not missing, tuple(missing))


def _annotations(cls: type) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        out.update(getattr(klass, "__annotations__", {}))
    return out


# The data of a ``ResponseData`` the release event delivers: the injector recognises it by identity.
RELEASE = b"\x00proxai-release\x00"
_HOLD = "_proxai_hold"  # HttpStream attribute: its StreamHold


class StreamHold:
    """What a faulted flow's ``HttpStream`` defers: its upstream's end events while ``holding()``,
    and every upstream event once ``blocking`` (a reset is on its way: nothing may reach the
    client before it)."""

    def __init__(self, holding: Callable[[], bool]) -> None:
        self.holding = holding
        self.deferred: list[Any] = []
        self.attached = False
        self.blocking = False
        self.off = False  # the stream is being ended by us: nothing is deferred any more


class _State:
    installed = False
    available = False
    warned = False
    end_event_type: type | None = None
    answer_event_type: type | None = None
    hold_event_type: type | None = None
    release_event_type: type | None = None
    reset_event_type: type | None = None


def install() -> bool:
    """Check the internals and install the wrappers (idempotent). False: data-driven path only."""
    if _State.installed:
        return _State.available
    _State.installed = True
    report = check_internals()
    if not report.ok:
        _warn_once(
            "proxai: mitmproxy internals needed to end a silent stream are missing "
            f"({', '.join(report.missing)}); the guard falls back to the data-driven path: errors are "
            "injected on the next upstream chunk only"
        )
        return False
    try:
        _patch()
    except Exception as exc:  # pragma: no cover - depends on the installed mitmproxy
        _warn_once(f"proxai: cannot hook mitmproxy's HTTP layer ({exc}); the guard is data-driven only")
        return False
    _State.available = True
    return True


def available() -> bool:
    return _State.available


def _warn_once(message: str) -> None:
    if not _State.warned:
        _State.warned = True
        logger.warning(message)


def _patch() -> None:
    from mitmproxy.proxy import events
    from mitmproxy.proxy.layers import http as mhttp
    from mitmproxy.proxy.layers.http import _events as hev

    class ProxaiEvent(events.MessageInjected[Any]):
        """An event of ours for the HttpLayer that holds ``flow``'s stream."""

    class ProxaiEndStream(ProxaiEvent):
        """End the client side of ``flow``'s response now (``message`` is a reason, for logs)."""

    class ProxaiAnswer(ProxaiEvent):
        """Answer ``flow``'s client now with ``message`` (an ``http.Response``), not streamed."""

    class ProxaiHold(ProxaiEvent):
        """Attach ``message`` (a ``StreamHold``) to ``flow``'s stream."""

    class ProxaiRelease(ProxaiEvent):
        """Hand ``flow``'s stream the ``RELEASE`` marker (held bytes whose time came)."""

    class ProxaiReset(ProxaiEvent):
        """Kill the client side of ``flow``'s response (``message``: the reason)."""

    _State.end_event_type = ProxaiEndStream
    _State.answer_event_type = ProxaiAnswer
    _State.hold_event_type = ProxaiHold
    _State.release_event_type = ProxaiRelease
    _State.reset_event_type = ProxaiReset
    server_end_events = (hev.ResponseEndOfMessage, hev.ResponseTrailers, hev.ResponseProtocolError)
    server_events = (hev.ResponseData, *server_end_events)
    HttpLayer = mhttp.HttpLayer
    HttpStream = mhttp.HttpStream
    stream_body_state = HttpStream.state_stream_response_body
    wait_headers_state = HttpStream.state_wait_for_response_headers
    consume_body_state = HttpStream.state_consume_response_body
    passthrough = HttpStream.passthrough

    def tunnels_http(layer: Any, stream: Any) -> bool:
        """A CONNECT stream in passthrough whose tunnel holds an HttpLayer of the same client."""
        handler = stream.__dict__.get("_handle_event")
        if getattr(handler, "__func__", None) is not passthrough or stream.child_layer is None:
            return False
        if stream.context.client is not layer.context.client:
            return False
        layers = stream.context.layers
        try:
            below = layers[layers.index(stream) + 1 :]
        except ValueError:
            return False
        return any(isinstance(x, HttpLayer) for x in below)

    def streaming(layer: Any, event: Any) -> Any:
        """The stream of ``event.flow`` while it streams its response body (None: not, or no
        longer: the upstream's own end won the race, or we ended it)."""
        flow: Any = event.flow
        for stream in list(layer.streams.values()):
            if id(getattr(stream, "flow", None)) != id(flow):
                continue
            state = getattr(stream.server_state, "__func__", None)
            if stream._paused is not None or state is not stream_body_state or stream.__dict__.get(_ENDED):
                logger.debug("proxai: stream of %s is no longer streaming; %s dropped", flow.id, event)
                return None
            return stream
        return None

    def through_tunnels(layer: Any, event: Any) -> Generator[Any, Any, None]:
        for stream in list(layer.streams.values()):
            if tunnels_http(layer, stream):
                yield from layer.event_to_child(stream, event)

    def holds(layer: Any, event: Any) -> bool:
        """Whether this layer holds ``event.flow``'s stream (in any state)."""
        return any(id(getattr(s, "flow", None)) == id(event.flow) for s in layer.streams.values())

    def target(layer: Any, event: Any) -> Generator[Any, Any, Any]:
        """The stream ``event`` is for, while it streams (None: not in this layer, then the event
        went on through the CONNECT tunnels, or no longer streaming)."""
        if not holds(layer, event):
            yield from through_tunnels(layer, event)
            return None
        return streaming(layer, event)

    def stop_holding(stream: Any) -> None:
        """Our own last events are never deferred by a fault's hold, and nothing deferred is replayed."""
        hold = stream.__dict__.get(_HOLD)
        if hold is not None:
            hold.off = True
            hold.deferred.clear()

    def close_client(layer: Any, event: Any, last: Any) -> Generator[Any, Any, None]:
        """Deliver ``last`` (an end of message or a protocol error) to the stream as its upstream's
        last event, then close the upstream once the stream is gone."""
        stream = yield from target(layer, event)
        if stream is None:
            return
        stop_holding(stream)
        layer.__dict__.setdefault(_PENDING, {})[stream.stream_id] = (event.flow.server_conn, CANCEL_MESSAGE)
        yield from layer.event_to_child(stream, last(stream.stream_id, event))
        stream.__dict__[_ENDED] = True
        drop_server_events(stream)

    def end(layer: Any, event: Any) -> Generator[Any, Any, None]:
        yield from close_client(layer, event, lambda sid, _: hev.ResponseEndOfMessage(sid))

    def reset(layer: Any, event: Any) -> Generator[Any, Any, None]:
        yield from close_client(
            layer,
            event,
            lambda sid, ev: hev.ResponseProtocolError(sid, str(ev.message), hev.ErrorCode.KILL),
        )

    def answer(layer: Any, event: Any) -> Generator[Any, Any, None]:
        flow: Any = event.flow
        response: Any = event.message
        for stream in list(layer.streams.values()):
            if id(getattr(stream, "flow", None)) != id(flow):
                continue
            state = getattr(stream.server_state, "__func__", None)
            if stream._paused is not None or stream.__dict__.get(_ENDED):
                logger.debug("proxai: stream of %s is busy or ended; answer dropped", flow.id)
                return
            sid = stream.stream_id
            body = response.raw_content or b""
            end_event = hev.ResponseEndOfMessage(sid)
            ours: list[Any] = [end_event]
            if state is wait_headers_state:
                head = response.copy()
                head.content = b""
                head.headers["content-length"] = str(len(body))
                data = hev.ResponseData(sid, body)
                ours = [hev.ResponseHeaders(sid, head, end_stream=False), data, end_event]
            elif state is consume_body_state:
                stream.flow.response = response
                stream.response_body_buf.clear()
                stream.response_body_buf += body
            else:
                logger.debug("proxai: %s is not waiting for a buffered response; answer dropped", flow.id)
                return
            stop_holding(stream)
            layer.__dict__.setdefault(_PENDING, {})[sid] = (flow.server_conn, CANCEL_MESSAGE)
            stream.__dict__[_ENDED] = True
            drop_server_events(stream, allow=ours)
            for ev in ours:
                yield from layer.event_to_child(stream, ev)
            return
        yield from through_tunnels(layer, event)

    def attach(layer: Any, event: Any) -> Generator[Any, Any, None]:
        flow: Any = event.flow
        for stream in list(layer.streams.values()):
            if id(getattr(stream, "flow", None)) == id(flow):
                hold_end_events(stream, event.message)
                return
        yield from through_tunnels(layer, event)

    def hold_end_events(stream: Any, hold: StreamHold) -> None:
        handle: Callable[[Any], Generator[Any, Any, None]] = stream._handle_event

        def handle_event(ev: Any) -> Generator[Any, Any, None]:
            if not hold.off and (
                (hold.blocking and isinstance(ev, server_events))
                or (isinstance(ev, server_end_events) and hold.holding())
            ):
                hold.deferred.append(ev)
                return _nothing()
            return handle(ev)

        stream.__dict__["_handle_event"] = handle_event
        stream.__dict__[_HOLD] = hold
        hold.attached = True

    def release(layer: Any, event: Any) -> Generator[Any, Any, None]:
        stream = yield from target(layer, event)
        if stream is None:
            return
        hold = stream.__dict__.get(_HOLD)
        if hold is not None and hold.blocking:
            return
        yield from layer.event_to_child(stream, hev.ResponseData(stream.stream_id, RELEASE))
        if hold is not None and hold.deferred and not hold.holding():
            deferred, hold.deferred = hold.deferred, []
            for ev in deferred:
                yield from layer.event_to_child(stream, ev)

    handlers: dict[type, Callable[[Any, Any], Generator[Any, Any, None]]] = {
        ProxaiEndStream: end,
        ProxaiAnswer: answer,
        ProxaiHold: attach,
        ProxaiRelease: release,
        ProxaiReset: reset,
    }

    def cancel_dropped(layer: Any, pending: dict[int, tuple[Any, str]]) -> Generator[Any, Any, None]:
        for stream_id, (server_conn, message) in list(pending.items()):
            if stream_id in layer.streams:
                continue  # the response hook still runs: the client stream has not ended yet
            del pending[stream_id]
            conn_layer = layer.connections.get(server_conn)
            if conn_layer is None or not server_conn.connected:
                continue
            logger.debug("proxai: closing the upstream of stream %s", stream_id)
            yield from layer.event_to_child(
                conn_layer, hev.RequestProtocolError(stream_id, message, hev.ErrorCode.CANCEL)
            )

    # The wrappers are plain functions that RETURN a command generator: for every event that is not
    # ours they hand back mitmproxy's own generator, so no extra generator frame sits between the
    # layer and each command it yields (a ``yield from`` wrapper cost every command of every read of
    # every flow, guarded or not). Only our event, and events while an upstream cancel is pending,
    # go through a generator of ours. ``pending`` can only be filled by ``end()`` (our event), so a
    # layer without it cannot gain one while mitmproxy's generator runs.
    if not getattr(HttpLayer._handle_event, _WRAPPED, False):
        original_layer: Callable[[Any, Any], Generator[Any, Any, None]] = HttpLayer._handle_event

        def layer_with_pending(self: Any, event: Any) -> Generator[Any, Any, None]:
            if isinstance(event, ProxaiEvent):
                yield from handlers[type(event)](self, event)
            else:
                yield from original_layer(self, event)
            pending = self.__dict__.get(_PENDING)
            if pending:
                yield from cancel_dropped(self, pending)

        def layer_handle_event(self: Any, event: Any) -> Generator[Any, Any, None]:
            if isinstance(event, ProxaiEvent) or self.__dict__.get(_PENDING):
                return layer_with_pending(self, event)
            return original_layer(self, event)

        setattr(layer_handle_event, _WRAPPED, True)
        HttpLayer._handle_event = layer_handle_event  # type: ignore[method-assign]


def drop_server_events(stream: Any, allow: list[Any] | None = None) -> None:
    """Upstream events that still arrive for an ``HttpStream`` we ended would hit ``state_done`` and
    raise: this one stream drops them from now on (mitmproxy's own pattern of an instance
    ``_handle_event``, as for ``passthrough``; no wrapper on every other stream's events). ``allow``:
    our own events, which may still wait in the stream's queue while a hook runs."""
    mine = {id(ev) for ev in allow or ()}
    from mitmproxy.proxy.layers.http import _events as hev

    server_events = (
        hev.ResponseHeaders,
        hev.ResponseData,
        hev.ResponseTrailers,
        hev.ResponseEndOfMessage,
        hev.ResponseProtocolError,
    )
    handle: Callable[[Any], Generator[Any, Any, None]] = stream._handle_event

    def handle_event(event: Any) -> Generator[Any, Any, None]:
        if isinstance(event, server_events) and id(event) not in mine:
            return _nothing()  # the upstream kept talking after we ended this response
        return handle(event)

    stream.__dict__["_handle_event"] = handle_event


def _nothing() -> Generator[Any, Any, None]:
    """A command generator that yields no command."""
    yield from ()


def _inject(flow: Any, event_type: Any, payload: Any, what: str) -> bool:
    """Hand ``event_type(flow, payload)`` to mitmproxy's proxy server, for the functions
    below. False when the internals are unavailable or the flow's client connection is gone
    (``what`` names the action in the debug line)."""
    if not _State.available or event_type is None:
        return False
    from mitmproxy import ctx

    server: Any = ctx.master.addons.get("proxyserver")  # type: ignore[no-untyped-call]
    if server is None:
        return False
    try:
        server.inject_event(event_type(flow, payload))
    except ValueError:
        logger.debug("proxai: %s: the client connection is gone, nothing to %s", flow.id, what)
        return False
    return True


def end_stream(flow: Any, reason: str = "guard") -> bool:
    """Ask mitmproxy to end ``flow``'s client stream now (asynchronously, through the event loop).

    False when the internals are unavailable or the flow's client connection is gone.
    """
    return _inject(flow, _State.end_event_type, reason, "end")


def answer_now(flow: Any, response: Any) -> bool:
    """Ask mitmproxy to answer ``flow``'s client with ``response`` (not streamed) and cancel the
    upstream, if the flow still waits for its upstream's response headers or buffers its body.

    False when the internals are unavailable or the flow's client connection is gone.
    """
    return _inject(flow, _State.answer_event_type, response, "answer")


def attach_hold(flow: Any, hold: StreamHold) -> bool:
    """Let ``hold`` defer the end events of ``flow``'s upstream (call it at request time)."""
    return _inject(flow, _State.hold_event_type, hold, "hold")


def release(flow: Any) -> bool:
    """Make ``flow``'s stream call its ``response.stream`` with ``RELEASE`` (held bytes leave)."""
    return _inject(flow, _State.release_event_type, "release", "release")


def reset_stream(flow: Any, reason: str) -> bool:
    """Kill the client side of ``flow``'s response now (and close its upstream)."""
    return _inject(flow, _State.reset_event_type, reason, "reset")


class GuardTimer:
    """One asyncio timer per guarded flow. ``arm(deadline)`` keeps the EARLIEST deadline armed; the
    callback recomputes and re-arms. Deadlines are ``time.monotonic()`` seconds."""

    def __init__(self, callback: Callable[[], None], clock: Callable[[], float] = time.monotonic) -> None:
        self._callback = callback
        self._clock = clock
        self._handle: asyncio.TimerHandle | None = None
        # The armed deadline (None: not armed). Read-only outside this class; a plain attribute
        # because the guard reads it on every chunk.
        self.armed_at: float | None = None
        self.closed = False

    def arm(self, deadline: float | None) -> None:
        if self.closed or deadline is None:
            return
        if self._handle is not None and self.armed_at is not None and self.armed_at <= deadline:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no event loop (unit tests of the carrier): data-driven only
        self._cancel_handle()
        self.armed_at = deadline
        self._handle = loop.call_later(max(0.0, deadline - self._clock()), self._fire)

    def cancel(self) -> None:
        self.closed = True
        self._cancel_handle()

    def _cancel_handle(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = None
        self.armed_at = None

    def _fire(self) -> None:
        self._handle = None
        self.armed_at = None
        if self.closed:
            return
        try:
            self._callback()
        except Exception:
            logger.warning("proxai: guard timer callback failed", exc_info=True)
