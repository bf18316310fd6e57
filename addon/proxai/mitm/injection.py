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

Each step above is a function of its own, which declares the internals it uses (``_relies_on``,
names from the ``INTERNALS`` table). ``install()`` checks at start-up that every internal of that
table exists; when one does not, it logs ONE warning and ProxAI keeps the data-driven path only
(errors injected on the next upstream chunk).
``GuardTimer`` is the per-flow asyncio timer the guard arms.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

if TYPE_CHECKING:
    from mitmproxy import flow as mflow
    from mitmproxy import http
    from mitmproxy.connection import Server
    from mitmproxy.proxy import events
    from mitmproxy.proxy.layer import CommandGenerator
    from mitmproxy.proxy.layers.http import HttpLayer, HttpStream
    from mitmproxy.proxy.layers.http._events import HttpEvent

    _Injected = events.MessageInjected[Any]
    _Handler = Callable[[HttpLayer, _Injected], CommandGenerator[None]]
    _LayerHandler = Callable[[HttpLayer, events.Event], CommandGenerator[None]]
    _StreamHandler = Callable[[events.Event], CommandGenerator[None]]

logger = logging.getLogger(__name__)

_ENDED = "_proxai_ended"  # HttpStream attribute: we ended this stream
_PENDING = "_proxai_pending_cancel"  # HttpLayer attribute: {stream_id: (server_conn, message)}
_WRAPPED = "_proxai_wrapped"  # marker on our wrapper functions (idempotent install)
CANCEL_MESSAGE = "proxai guard closed the stream"

# -- the start-up check ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Internal:
    """One mitmproxy internal this module uses, as the start-up check probes it: ``attr`` of the
    object at ``owner`` (``module`` or ``module:Class``) is a class (``class``), a method
    (``method``), a field the class or one of its bases declares, set on instances
    (``field``), or an enum member (``member``). ``name`` is how the warning names it."""

    name: str
    owner: str
    attr: str
    kind: Literal["class", "method", "field", "member"]


_EVENTS = "mitmproxy.proxy.events"
_PROXYSERVER = "mitmproxy.addons.proxyserver:Proxyserver"
_LAYER = "mitmproxy.proxy.layer:Layer"
_CONTEXT = "mitmproxy.proxy.context:Context"
_HTTP = "mitmproxy.proxy.layers.http"
_HTTP_LAYER = f"{_HTTP}:HttpLayer"
_HTTP_STREAM = f"{_HTTP}:HttpStream"
_HTTP_EVENTS = "mitmproxy.proxy.layers.http._events"

INTERNALS: tuple[Internal, ...] = (
    Internal("events.MessageInjected", _EVENTS, "MessageInjected", "class"),
    Internal("proxyserver.Proxyserver.inject_event", _PROXYSERVER, "inject_event", "method"),
    Internal("proxyserver.Proxyserver.connections", _PROXYSERVER, "connections", "field"),
    Internal("HttpLayer._handle_event", _HTTP_LAYER, "_handle_event", "method"),
    Internal("HttpLayer.event_to_child", _HTTP_LAYER, "event_to_child", "method"),
    Internal("HttpLayer.streams", _HTTP_LAYER, "streams", "field"),
    Internal("HttpLayer.connections", _HTTP_LAYER, "connections", "field"),
    Internal("HttpStream", _HTTP, "HttpStream", "class"),
    Internal("HttpStream._handle_event", _HTTP_STREAM, "_handle_event", "method"),
    Internal("HttpStream.state_stream_response_body", _HTTP_STREAM, "state_stream_response_body", "method"),
    Internal("HttpStream.passthrough", _HTTP_STREAM, "passthrough", "method"),
    Internal(
        "HttpStream.state_wait_for_response_headers",
        _HTTP_STREAM,
        "state_wait_for_response_headers",
        "method",
    ),
    Internal("HttpStream.state_consume_response_body", _HTTP_STREAM, "state_consume_response_body", "method"),
    Internal("HttpStream.response_body_buf", _HTTP_STREAM, "response_body_buf", "field"),
    Internal("HttpStream.flow", _HTTP_STREAM, "flow", "field"),
    Internal("HttpStream.stream_id", _HTTP_STREAM, "stream_id", "field"),
    Internal("HttpStream.child_layer", _HTTP_STREAM, "child_layer", "field"),
    Internal("Layer._paused", _LAYER, "_paused", "field"),
    Internal("Layer.context", _LAYER, "context", "field"),
    Internal("Context.client", _CONTEXT, "client", "field"),
    Internal("Context.layers", _CONTEXT, "layers", "field"),
    Internal("ResponseHeaders", _HTTP_EVENTS, "ResponseHeaders", "class"),
    Internal("ResponseEndOfMessage", _HTTP_EVENTS, "ResponseEndOfMessage", "class"),
    Internal("ResponseData", _HTTP_EVENTS, "ResponseData", "class"),
    Internal("ResponseTrailers", _HTTP_EVENTS, "ResponseTrailers", "class"),
    Internal("ResponseProtocolError", _HTTP_EVENTS, "ResponseProtocolError", "class"),
    Internal("RequestProtocolError", _HTTP_EVENTS, "RequestProtocolError", "class"),
    Internal("ErrorCode.CANCEL", f"{_HTTP_EVENTS}:ErrorCode", "CANCEL", "member"),
    Internal("ErrorCode.KILL", f"{_HTTP_EVENTS}:ErrorCode", "KILL", "member"),
)
_NAMES = frozenset(i.name for i in INTERNALS)

# Which internals each function below uses (``INTERNALS`` names), recorded by ``_relies_on``.
RELIES_ON: dict[str, tuple[str, ...]] = {}

_F = TypeVar("_F", bound=Callable[..., Any])


def _relies_on(*names: str) -> Callable[[_F], _F]:
    """Record that the decorated function uses these internals. Each must be in ``INTERNALS``,
    which the start-up check probes (tests/guard/test_injection.py: every recorded internal is
    checked, every checked one is used)."""
    unknown = [n for n in names if n not in _NAMES]
    if unknown:
        raise LookupError(f"not in INTERNALS: {', '.join(unknown)}")

    def record(fn: _F) -> _F:
        RELIES_ON[fn.__name__] = names
        return fn

    return record


@dataclass(frozen=True, slots=True)
class InternalsReport:
    ok: bool
    missing: tuple[str, ...]


def check_internals() -> InternalsReport:
    """Which of the mitmproxy internals this module relies on (``INTERNALS``) are missing."""
    try:
        for module in dict.fromkeys(i.owner.partition(":")[0] for i in INTERNALS):
            importlib.import_module(module)
    except Exception as exc:  # pragma: no cover - depends on the installed mitmproxy
        return InternalsReport(False, (f"import: {exc}",))
    missing = tuple(i.name for i in INTERNALS if not _present(i))
    return InternalsReport(not missing, missing)


def _present(internal: Internal) -> bool:
    """Whether ``internal`` is there, as its ``kind`` says (its module is imported)."""
    module, _, path = internal.owner.partition(":")
    owner: object = importlib.import_module(module)
    for part in filter(None, path.split(".")):
        owner = getattr(owner, part, None)
        if owner is None:
            return False
    if internal.kind == "field":
        return isinstance(owner, type) and internal.attr in _annotations(owner)
    if internal.kind == "member":
        return hasattr(owner, internal.attr)
    value = getattr(owner, internal.attr, None)
    return isinstance(value, type) if internal.kind == "class" else callable(value)


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
    event_base: type | None = None
    end_event_type: type | None = None
    answer_event_type: type | None = None
    hold_event_type: type | None = None
    release_event_type: type | None = None
    reset_event_type: type | None = None


# Our event types -> the function the HttpLayer hands each to (filled by ``_define_events``).
_HANDLERS: dict[type, _Handler] = {}


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
    """Define our events and wrap ``HttpLayer._handle_event`` (each once; a second call keeps both)."""
    _hook_http_layer(_define_events())


# -- our events and the HttpLayer hook ------------------------------------------------------------


@_relies_on("events.MessageInjected")
def _define_events() -> type:
    """Our event types, defined once, and their handlers in ``_HANDLERS``; returns their base.

    Subclasses of ``events.MessageInjected``: ``proxyserver.inject_event`` takes them, and the stock
    layers pass ``MessageInjected`` down to the ``HttpLayer`` (through TLS layers too), where our
    hook picks them up. Defined here, not at import, so that a mitmproxy without that class
    degrades at the start-up check instead of failing to load ProxAI."""
    if _State.event_base is not None:
        return _State.event_base
    from mitmproxy.proxy import events

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
    _HANDLERS.update(
        {
            ProxaiEndStream: _end_client_stream,
            ProxaiAnswer: _answer,
            ProxaiHold: _attach_hold,
            ProxaiRelease: _release_held,
            ProxaiReset: _reset_client_stream,
        }
    )
    _State.event_base = ProxaiEvent
    return ProxaiEvent


@_relies_on("HttpLayer._handle_event")
def _hook_http_layer(ours: type) -> None:
    """Replace ``HttpLayer._handle_event`` by ``_wrap_layer``'s hook, once: a wrapper already in
    place carries the ``_WRAPPED`` marker and is kept."""
    from mitmproxy.proxy.layers import http as mhttp

    if not getattr(mhttp.HttpLayer._handle_event, _WRAPPED, False):
        hook = _wrap_layer(mhttp.HttpLayer._handle_event, ours)
        mhttp.HttpLayer._handle_event = hook  # type: ignore[method-assign,assignment]


def _wrap_layer(original: _LayerHandler, ours: type) -> _LayerHandler:
    """mitmproxy's ``HttpLayer._handle_event`` (``original``) with our events and the pending
    upstream cancels added.

    The hook is a plain function that returns a command generator: for an event that is not ours
    it hands back mitmproxy's own generator, so nothing of ours sits between the layer and the
    commands it yields. Our events (instances of ``ours``), and any event of a layer with an
    upstream cancel pending, go through ``_with_ours``. Only our handlers fill ``_PENDING``, so a
    layer without it cannot gain one while mitmproxy's generator runs."""

    def layer_handle_event(self: HttpLayer, event: events.Event) -> CommandGenerator[None]:
        if isinstance(event, ours) or self.__dict__.get(_PENDING):
            return _with_ours(original, self, event)
        return original(self, event)

    setattr(layer_handle_event, _WRAPPED, True)
    return layer_handle_event


def _with_ours(original: _LayerHandler, layer: HttpLayer, event: events.Event) -> CommandGenerator[None]:
    """Hand ``event`` to its handler (ours) or to mitmproxy, then cancel the upstream of every
    stream we ended that the layer has dropped since."""
    handler = _HANDLERS.get(type(event))
    if handler is not None:
        yield from handler(layer, cast("_Injected", event))
    else:
        yield from original(layer, event)
    pending = layer.__dict__.get(_PENDING)
    if pending:
        yield from _cancel_dropped(layer, pending)


# -- finding the stream of a flow -----------------------------------------------------------------


@_relies_on("HttpLayer.streams", "HttpStream.flow")
def _stream_of(layer: HttpLayer, flow: mflow.Flow) -> HttpStream | None:
    """The ``HttpStream`` of ``layer`` that carries ``flow`` (a stream gets its ``flow`` with its
    request headers: one without it carries none yet)."""
    for stream in layer.streams.values():
        if getattr(stream, "flow", None) is flow:
            return stream
    return None


def _stream_or_tunnels(layer: HttpLayer, event: _Injected) -> CommandGenerator[HttpStream | None]:
    """The stream of ``event.flow`` in ``layer``; None when the layer holds none, once the event went
    on through the layer's CONNECT tunnels (regular proxy mode: the stream is in the tunnel's inner
    ``HttpLayer``, where our hook meets the event again)."""
    stream = _stream_of(layer, event.flow)
    if stream is None:
        yield from _through_tunnels(layer, event)
    return stream


@_relies_on("HttpLayer.streams", "HttpLayer.event_to_child")
def _through_tunnels(layer: HttpLayer, event: _Injected) -> CommandGenerator[None]:
    """Hand ``event`` to every stream of ``layer`` that tunnels HTTP (``_tunnels_http``)."""
    for stream in list(layer.streams.values()):
        if _tunnels_http(layer, stream):
            yield from layer.event_to_child(stream, event)


@_relies_on(
    "HttpStream",
    "HttpStream.passthrough",
    "HttpStream.child_layer",
    "Layer.context",
    "Context.client",
    "Context.layers",
)
def _tunnels_http(layer: HttpLayer, stream: HttpStream) -> bool:
    """Whether ``stream`` is a CONNECT tunnel of ``layer``'s client with an ``HttpLayer`` inside.

    mitmproxy turns a CONNECT stream into a tunnel by giving it ``passthrough`` as its instance
    ``_handle_event``; the layers inside it follow the stream in ``context.layers``."""
    from mitmproxy.proxy.layers import http as mhttp

    handler = stream.__dict__.get("_handle_event")
    if getattr(handler, "__func__", None) is not mhttp.HttpStream.passthrough or stream.child_layer is None:
        return False
    if stream.context.client is not layer.context.client:
        return False
    layers = stream.context.layers
    try:
        below = layers[layers.index(stream) + 1 :]
    except ValueError:
        return False
    return any(isinstance(x, mhttp.HttpLayer) for x in below)


@_relies_on("HttpStream", "HttpStream.state_stream_response_body", "Layer._paused")
def _streams_body(stream: HttpStream, event: _Injected) -> bool:
    """Whether ``stream`` still streams its response body (``state_stream_response_body``), is not
    paused by a hook (``Layer._paused``) and was not ended by us. False: ``event`` is dropped; the
    upstream's own end won the race, or we ended the stream already."""
    from mitmproxy.proxy.layers import http as mhttp

    state = getattr(stream.server_state, "__func__", None)
    if (
        stream._paused is not None
        or state is not mhttp.HttpStream.state_stream_response_body
        or stream.__dict__.get(_ENDED)
    ):
        logger.debug("proxai: stream of %s is no longer streaming; %s dropped", event.flow.id, event)
        return False
    return True


def _streaming_target(layer: HttpLayer, event: _Injected) -> CommandGenerator[HttpStream | None]:
    """The stream ``event`` is for, while it streams its body (None: not in this layer, then the
    event went on through the CONNECT tunnels, or no longer streaming)."""
    stream = yield from _stream_or_tunnels(layer, event)
    if stream is None or not _streams_body(stream, event):
        return None
    return stream


# -- ending a client stream -----------------------------------------------------------------------


def _stop_holding(stream: HttpStream) -> None:
    """Our own last events are never deferred by a fault's hold, and nothing deferred is replayed."""
    hold = stream.__dict__.get(_HOLD)
    if hold is not None:
        hold.off = True
        hold.deferred.clear()


def _cancel_upstream_later(layer: HttpLayer, stream_id: int, server_conn: Server) -> None:
    """Have ``_cancel_dropped`` cancel ``stream_id``'s upstream request once the layer dropped it."""
    layer.__dict__.setdefault(_PENDING, {})[stream_id] = (server_conn, CANCEL_MESSAGE)


@_relies_on("HttpStream.stream_id", "HttpLayer.event_to_child")
def _close_client(
    layer: HttpLayer, event: _Injected, last: Callable[[int, _Injected], HttpEvent]
) -> CommandGenerator[None]:
    """Deliver ``last(stream_id, event)`` (an end of message or a protocol error) to the stream as its
    upstream's last event, while it streams its body; its upstream is cancelled once it is gone,
    and upstream events still arriving for it are dropped (``drop_server_events``)."""
    stream = yield from _streaming_target(layer, event)
    if stream is None:
        return
    _stop_holding(stream)
    _cancel_upstream_later(layer, stream.stream_id, event.flow.server_conn)
    yield from layer.event_to_child(stream, last(stream.stream_id, event))
    stream.__dict__[_ENDED] = True
    drop_server_events(stream)


@_relies_on("ResponseEndOfMessage")
def _end_client_stream(layer: HttpLayer, event: _Injected) -> CommandGenerator[None]:
    """``ProxaiEndStream``: a plain ``ResponseEndOfMessage``. The stream calls
    ``flow.response.stream(b"")`` (the carrier returns its pending error bytes), mitmproxy runs the
    ``response`` hook and ends the client's stream (chunked terminator, HTTP/2 END_STREAM)."""
    from mitmproxy.proxy.layers.http import _events as hev

    yield from _close_client(layer, event, lambda sid, _: hev.ResponseEndOfMessage(sid))


@_relies_on("ResponseProtocolError", "ErrorCode.KILL")
def _reset_client_stream(layer: HttpLayer, event: _Injected) -> CommandGenerator[None]:
    """``ProxaiReset``: a ``ResponseProtocolError`` (``KILL``), as if the upstream had died: mitmproxy
    runs the error hook and kills the client side (HTTP/1: the connection is closed mid-body;
    HTTP/2: that stream is reset)."""
    from mitmproxy.proxy.layers.http import _events as hev

    yield from _close_client(
        layer,
        event,
        lambda sid, ev: hev.ResponseProtocolError(sid, str(ev.message), hev.ErrorCode.KILL),
    )


@_relies_on(
    "HttpStream",
    "HttpStream.state_wait_for_response_headers",
    "HttpStream.state_consume_response_body",
    "HttpStream.response_body_buf",
    "HttpStream.stream_id",
    "ResponseHeaders",
    "ResponseData",
    "ResponseEndOfMessage",
)
def _answer_events(stream: HttpStream, response: http.Response) -> list[HttpEvent] | None:
    """The events that answer ``stream``'s client with ``response`` as if the upstream had sent it,
    by the stream's state (None: it waits for no buffered response, the answer is dropped):

    - waiting for the upstream's headers (``state_wait_for_response_headers``): the response's
      headers, its body and its end;
    - buffering the body (``state_consume_response_body``): the flow's response and the stream's
      body buffer (``response_body_buf``) are replaced here, then its end."""
    from mitmproxy.proxy.layers import http as mhttp
    from mitmproxy.proxy.layers.http import _events as hev

    state = getattr(stream.server_state, "__func__", None)
    sid = stream.stream_id
    body = response.raw_content or b""
    end_event = hev.ResponseEndOfMessage(sid)
    if state is mhttp.HttpStream.state_wait_for_response_headers:
        head = response.copy()
        head.content = b""
        head.headers["content-length"] = str(len(body))
        return [hev.ResponseHeaders(sid, head, end_stream=False), hev.ResponseData(sid, body), end_event]
    if state is mhttp.HttpStream.state_consume_response_body:
        stream.flow.response = response
        stream.response_body_buf.clear()  # type: ignore[no-untyped-call]
        stream.response_body_buf += body
        return [end_event]
    return None


@_relies_on("Layer._paused", "HttpLayer.event_to_child")
def _answer(layer: HttpLayer, event: _Injected) -> CommandGenerator[None]:
    """``ProxaiAnswer``: answer a response that is not streamed with ``event.message``, unless its
    stream is paused by a hook or already ended. mitmproxy then runs the ``responseheaders`` /
    ``response`` hooks and sends the whole response; the upstream is cancelled once the stream is
    gone."""
    stream = yield from _stream_or_tunnels(layer, event)
    if stream is None:
        return
    flow = event.flow
    if stream._paused is not None or stream.__dict__.get(_ENDED):
        logger.debug("proxai: stream of %s is busy or ended; answer dropped", flow.id)
        return
    ours = _answer_events(stream, event.message)
    if ours is None:
        logger.debug("proxai: %s is not waiting for a buffered response; answer dropped", flow.id)
        return
    _stop_holding(stream)
    _cancel_upstream_later(layer, stream.stream_id, flow.server_conn)
    stream.__dict__[_ENDED] = True
    drop_server_events(stream, allow=ours)
    for ev in ours:
        yield from layer.event_to_child(stream, ev)


@_relies_on("RequestProtocolError", "ErrorCode.CANCEL", "HttpLayer.streams", "HttpLayer.connections")
def _cancel_dropped(layer: HttpLayer, pending: dict[int, tuple[Server, str]]) -> CommandGenerator[None]:
    """Cancel the upstream request of each stream we ended that the layer has dropped (the client's
    stream ended: its ``response`` hook ran): ``RequestProtocolError(..., CANCEL)`` to the layer of
    its server connection (``HttpLayer.connections``). HTTP/1 closes that connection, HTTP/2 resets
    only that stream; the upstream stops spending tokens."""
    from mitmproxy.proxy.layers.http import _events as hev

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


# -- a fault's hold and release -------------------------------------------------------------------


def _attach_hold(layer: HttpLayer, event: _Injected) -> CommandGenerator[None]:
    """``ProxaiHold``: attach ``event.message`` (a ``StreamHold``) to the flow's stream, in any state."""
    stream = yield from _stream_or_tunnels(layer, event)
    if stream is not None:
        _defer_end_events(stream, event.message)


@_relies_on(
    "HttpStream._handle_event",
    "ResponseData",
    "ResponseEndOfMessage",
    "ResponseTrailers",
    "ResponseProtocolError",
)
def _defer_end_events(stream: HttpStream, hold: StreamHold) -> None:
    """Give ``stream`` its own ``_handle_event`` (an instance attribute, as mitmproxy does for
    ``passthrough``) that defers into ``hold.deferred`` its upstream's end of message, trailers and
    protocol errors while ``hold.holding()``, and every upstream event while ``hold.blocking``, so
    the client's stream cannot end under held bytes. Everything else reaches mitmproxy's method."""
    from mitmproxy.proxy.layers.http import _events as hev

    end_events = (hev.ResponseEndOfMessage, hev.ResponseTrailers, hev.ResponseProtocolError)
    upstream_events = (hev.ResponseData, *end_events)
    handle: _StreamHandler = stream._handle_event

    def handle_event(ev: events.Event) -> CommandGenerator[None]:
        if not hold.off and (
            (hold.blocking and isinstance(ev, upstream_events))
            or (isinstance(ev, end_events) and hold.holding())
        ):
            hold.deferred.append(ev)
            return _nothing()
        return handle(ev)

    stream.__dict__["_handle_event"] = handle_event
    stream.__dict__[_HOLD] = hold
    hold.attached = True


@_relies_on("ResponseData", "HttpStream.stream_id", "HttpLayer.event_to_child")
def _release_held(layer: HttpLayer, event: _Injected) -> CommandGenerator[None]:
    """``ProxaiRelease``: a ``ResponseData`` holding the ``RELEASE`` marker for the stream while it
    streams its body (not while a reset is on its way): the stream calls
    ``flow.response.stream(RELEASE)`` and the fault injector answers with the bytes whose time
    came. Once nothing is held any more, the deferred upstream events are replayed in order."""
    from mitmproxy.proxy.layers.http import _events as hev

    stream = yield from _streaming_target(layer, event)
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


@_relies_on(
    "HttpStream._handle_event",
    "ResponseHeaders",
    "ResponseData",
    "ResponseTrailers",
    "ResponseEndOfMessage",
    "ResponseProtocolError",
)
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


# -- the calls the guard and the fault injector make ----------------------------------------------


@_relies_on("proxyserver.Proxyserver.inject_event", "proxyserver.Proxyserver.connections")
def _inject(flow: Any, event_type: Any, payload: Any, what: str) -> bool:
    """Hand ``event_type(flow, payload)`` to mitmproxy's proxy server, for the functions
    below. False when the internals are unavailable or the flow's client connection is gone
    (``what`` names the action in the debug line; ``inject_event`` raises ``ValueError`` when the
    flow's client is not among its ``connections``)."""
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
