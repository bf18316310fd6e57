"""A flow's pipeline, built once (docs/design/carrier.md, "One pipeline per flow").

``build_flow`` takes the upstream protocol, the client's side of a translated flow (or none: the
flow is observed only), the limits and the capture option, and builds and connects everything
the flow reads with, once:

    scanner -> the upstream protocol's grammar -> { summary accumulator, client writer }

The ``StreamObserver`` owns the scanner, the bytes and the timing; the grammar
(``proxai.protocols``) is built with the client protocol's writer as its output
(``proxai.stream.sink.Output``), so each event is read once for the summary and the client
alike, and both end at the same event. The translator (``proxai.translate.stream``) is the writer
plus the end of the client's stream; it reads the grammar's state and no event. The carrier
(``proxai.pipeline.carrier``) drives the result.

``Translation`` is the same pipeline without a carrier, for a body that is not carried read by
read (a buffered SSE reply) and for tests: ``feed`` its events, then ``finish``.

An observed-only flow needs nothing of ``proxai.translate``: its writers and request readers are
imported by the first flow that translates or whose request asks something of the SDKs' parse
helpers (docs/design/footprint.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import orjson

from proxai.core.errors import ConfigError, ProxaiError
from proxai.core.model import ErrorKind, Protocol
from proxai.core.sse import Payloads, SseEvent, payloads_of
from proxai.pipeline.observe import Limits, StreamObserver
from proxai.protocols.conformance import NOTHING_ASKED, Asked
from proxai.stream.limits import DEFAULT_MAX_BUFFER, DEFAULT_MAX_TOOL_ARGS
from proxai.stream.sink import Output, Phase

if TYPE_CHECKING:
    from proxai.translate.call_shapes import CallShapes
    from proxai.translate.stream import StreamTranslatorImpl

DEFAULT_LIMITS = Limits()

__all__ = [
    "DEFAULT_LIMITS",
    "ClientSide",
    "FlowPipeline",
    "Translation",
    "build_flow",
    "make_stream_translator",
    "request_asks",
]


@dataclass(frozen=True, slots=True)
class ClientSide:
    """The client's side of a translated flow: its protocol and what its writer needs.

    ``created``: the Unix time stamped on Chat chunks and Responses snapshots (the core reads no
    clock). ``include_usage``: the Chat client asked for the usage-only chunk
    (``stream_options.include_usage``). ``call_shapes``: a Responses client's tools offered in
    another shape, so their calls go back as the client declared them. ``max_buffer``: the content
    a Responses grammar or writer must keep, per stream (past it a ``SseLimitError`` ends the
    translation). ``strict``: content the client's protocol has no counterpart for ends the
    translation with a ``TranslationError`` instead of being left out with a note.
    ``custom_tools``: the custom (freeform) tools the client's request declares (only a Chat client
    can): a Responses upstream's ``custom_tool_call`` of another name is a call the server ran.

    The same protocol as the upstream's is normalize mode: the lenient reading drives the strict
    writer of that protocol."""

    protocol: Protocol
    created: int = 0
    include_usage: bool = True
    call_shapes: CallShapes = field(default_factory=dict)
    max_buffer: int = DEFAULT_MAX_BUFFER
    strict: bool = False
    custom_tools: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class FlowPipeline:
    """What ``build_flow`` connected: the observer (scanner, grammar, summary) and, on a translated
    flow, the translator whose writer the grammar drives."""

    observer: StreamObserver
    translator: StreamTranslatorImpl | None = None


def build_flow(
    upstream: Protocol,
    client: ClientSide | None,
    *,
    start: float = 0.0,
    limits: Limits = DEFAULT_LIMITS,
    capture: bool = False,
    asked: Asked = NOTHING_ASKED,
) -> FlowPipeline:
    """The pipeline of one flow whose upstream speaks ``upstream``: observed only when ``client``
    is None, else translated for ``client`` (normalize mode when it speaks the same protocol).
    ``asked``: what the request sent upstream asks of the SDKs' parse helpers (``request_asks``)."""
    if client is None:
        return FlowPipeline(
            StreamObserver(upstream, start=start, limits=limits, capture=capture, asked=asked)
        )
    from proxai.translate.stream import StreamTranslatorImpl, make_writer  # once per translated flow

    normalize = client.protocol is upstream
    if not normalize and asked.custom_tools != client.custom_tools:
        # the client's custom tools, read from its request (the translation's); an equal set
        # (most often none on either side) needs no copy of ``asked``
        asked = replace(asked, custom_tools=client.custom_tools)
    writer = make_writer(
        client.protocol,
        normalize=normalize,
        created=client.created,
        include_usage=client.include_usage,
        call_shapes=client.call_shapes,
        max_buffer=client.max_buffer,
        strict=client.strict,
    )
    output = Output(writer, normalize=normalize, max_buffer=client.max_buffer)
    observer = StreamObserver(
        upstream, start=start, limits=limits, capture=capture, output=output, asked=asked
    )
    translator = StreamTranslatorImpl(observer.grammar, writer, upstream, normalize=normalize)
    return FlowPipeline(observer, translator)


def request_asks(body: bytes | None, protocol: Protocol) -> Asked:
    """What a request body of ``protocol`` asks of the SDKs' parse helpers (``conformance.Asked``),
    read with the protocol's request reader (liberal: total on any JSON). A body that is not a JSON
    object, or names no ``strict``, ``json_schema`` or ``custom``, asks nothing (the reader runs
    only when it might)."""
    if not body or (b'"strict"' not in body and b"json_schema" not in body and b'"custom"' not in body):
        return NOTHING_ASKED
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return NOTHING_ASKED
    if not isinstance(value, dict):
        return NOTHING_ASKED
    from proxai.translate.request import read_request  # once per flow that may ask

    req = read_request(value, protocol, strict=False)
    strict = frozenset(t.name for t in req.tools if t.kind == "function" and t.strict)
    json_format = req.json_schema is not None
    custom = frozenset(t.name for t in req.tools if t.kind == "custom")
    if not (strict or json_format or custom):
        return NOTHING_ASKED
    schema = req.json_schema.get("schema") if req.json_schema is not None else None
    return Asked(strict, json_format, custom, schema if isinstance(schema, dict) else None)


class Translation:
    """A translated pipeline fed with events instead of carried bytes: ``feed`` (or
    ``feed_payloads``) returns the client bytes of each batch, ``finish`` the end of the stream,
    ``fail`` a client-protocol error. The flow's observer reads the events (the summary is
    ``observer.summary()``)."""

    __slots__ = ("observer", "translator")

    def __init__(self, pipeline: FlowPipeline) -> None:
        if pipeline.translator is None:
            raise ConfigError("a translation needs a client side (build_flow with a ClientSide)")
        self.observer = pipeline.observer
        self.translator = pipeline.translator

    @property
    def client_protocol(self) -> Protocol:
        return self.translator.client_protocol

    @property
    def phase(self) -> Phase:
        return self.translator.phase

    @property
    def error(self) -> ProxaiError | None:
        return self.translator.error

    @property
    def upstream_error(self) -> bool:
        return self.translator.upstream_error

    def feed_payloads(self, payloads: Payloads) -> bytes:
        """Upstream events (``Payloads``) -> client bytes (may raise ``ProxaiError``)."""
        self.observer.observe_events(payloads, 0.0)  # a translation needs no time
        return self.translator.collect()

    def feed(self, events: list[SseEvent]) -> bytes:
        """``feed_payloads`` for event objects."""
        return self.feed_payloads(payloads_of(events))

    def finish(self) -> bytes:
        return self.translator.finish()

    def fail(self, kind: ErrorKind, message: str) -> bytes:
        return self.translator.fail(kind, message)

    def metadata(self) -> dict[str, object]:
        return self.translator.metadata()


def make_stream_translator(
    upstream: Protocol,
    client: Protocol,
    *,
    normalize: bool = False,
    created: int = 0,
    include_usage: bool = True,
    call_shapes: CallShapes | None = None,
    max_buffer: int = DEFAULT_MAX_BUFFER,
    max_tool_args: int = DEFAULT_MAX_TOOL_ARGS,
    strict: bool = False,
    custom_tools: frozenset[str] = frozenset(),
) -> Translation:
    """A ``Translation`` from ``upstream``'s stream to ``client``'s (``ClientSide`` says what each
    option means; ``max_tool_args``: the argument characters kept per tool call to check its JSON).
    ``normalize`` must be asked for exactly when both sides speak the same protocol."""
    if (upstream is client) != normalize:
        if normalize:
            raise ConfigError("normalize needs the same protocol on both sides")
        raise ConfigError(f"same protocol on both sides ({upstream}) needs normalize = true")
    side = ClientSide(
        client,
        created=created,
        include_usage=include_usage,
        call_shapes=call_shapes or {},
        max_buffer=max_buffer,
        strict=strict,
        custom_tools=custom_tools,
    )
    return Translation(build_flow(upstream, side, limits=Limits(max_tool_args=max_tool_args)))
