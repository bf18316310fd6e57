"""Streaming translation between Anthropic Messages, OpenAI Chat Completions and OpenAI
Responses, and same-protocol normalization (docs/design/translation.md).

Pure and sans-IO: SSE events in (``Payloads`` as the scanner and the stream observer return
them, or event objects), client bytes out. ``make_stream_translator`` picks the reading of the upstream
protocol (its grammar in ``proxai.protocols``) and the writer
(``to_*/``) for the client protocol; ``driver.StreamTranslatorImpl`` implements the
``StreamTranslator`` contract below; docs/streaming-translation.md describes the design.
"""

from __future__ import annotations

from typing import Protocol as TypingProtocol

from proxai.core.errors import ConfigError
from proxai.core.model import ErrorKind, Protocol
from proxai.core.sse import Payloads, SseEvent
from proxai.stream.limits import DEFAULT_MAX_BUFFER, DEFAULT_MAX_TOOL_ARGS
from proxai.stream.sink import Phase
from proxai.translate.call_shapes import CallShapes

from . import build as _build
from .driver import StreamTranslatorImpl

__all__ = [
    "PAIRS",
    "Phase",
    "StreamTranslator",
    "StreamTranslatorImpl",
    "make_stream_translator",
]


class StreamTranslator(TypingProtocol):
    """What the carrier (``proxai.pipeline.carrier``) needs of a stream translator."""

    client_protocol: Protocol

    def bind(self, grammar: object) -> bool:
        """Read through the flow observer's grammar (``StreamObserver.attach`` calls it)."""

    def feed(self, events: list[SseEvent]) -> bytes:
        """Upstream events -> client bytes (may raise ``ProxaiError``)."""

    def feed_payloads(self, payloads: Payloads) -> bytes:
        """``feed`` for the carrier's path: the events as ``StreamObserver.observe_payloads``
        returns them (read only when the translator is not attached to that observer)."""

    def finish(self) -> bytes:
        """Upstream EOF: the terminal flush, or a client-protocol error if truncated."""

    def fail(self, kind: ErrorKind, message: str) -> bytes:
        """A well-formed client-protocol error that ends the stream."""

    def metadata(self) -> dict[str, object]:
        """JSON-able counters for ``flow.metadata`` (dropped thinking, phase, error)."""


#: The six translated pairs (upstream, client).
PAIRS: tuple[tuple[Protocol, Protocol], ...] = _build.PAIRS


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
) -> StreamTranslatorImpl:
    """A translator from ``upstream``'s stream to ``client``'s.

    ``normalize`` (same protocol on both sides only) repairs compatible providers' quirks and
    accepts lifecycle-free deltas. ``created`` is the Unix time stamped on Chat chunks
    and Responses snapshots (the core reads no clock). ``include_usage``: emit the Chat
    usage-only chunk (the client asked for ``stream_options.include_usage``). ``call_shapes``: a
    Responses client's tools offered in another shape, so their calls go back as the client
    declared them (proxai.translate.call_shapes). ``max_buffer``: the
    content a Responses source or target must keep (for ``.done`` checks and the terminal
    snapshot), per stream, in bytes really held; past it a ``SseLimitError`` ends the translation
    (bounded memory). ``max_tool_args``: the argument characters kept per tool call to check its
    JSON (Anthropic and Chat sources); past it an ``UpstreamProtocolError`` ends the translation.
    ``strict``: content the client's protocol has no counterpart for ends the translation with a
    ``TranslationError`` instead of being left out with a note (strict translation).
    """
    if (upstream is client) != normalize:
        if normalize:
            raise ConfigError("normalize needs the same protocol on both sides")
        raise ConfigError(f"same protocol on both sides ({upstream}) needs normalize = true")
    return _build.build(
        upstream,
        client,
        created=created,
        include_usage=include_usage,
        call_shapes=call_shapes or {},
        max_buffer=max_buffer,
        max_tool_args=max_tool_args,
        strict=strict,
    )
