"""The stream translator: one reading of the upstream protocol driving one target writer (the
``StreamTranslator`` contract of ``proxai.translate.stream``; docs/design/translation.md).

The reading is the upstream protocol's grammar (``proxai.protocols``) with the writer as its
``out``. The translator's grammar reads the events itself, unless the flow's ``StreamObserver``
attached its own grammar (``bind``): then the observer's one reading of each event has already
fed the writer, and ``feed_payloads`` only collects the bytes.

- ``feed_payloads(payloads)`` returns the client bytes for a batch of upstream events
  (``sse.Payloads``, as the scanner and the stream observer return them; read only when no
  observer's grammar is attached, so the carrier's path parses each event once). On a typed error
  (``SemanticStreamError``, ``TranslationError``, ``UpstreamProtocolError``) it keeps the bytes
  already produced for that batch and re-raises; the carrier then calls ``fail()`` (or
  ``finish()``), which emits those bytes followed by a well-formed client-protocol error.
- ``feed(events)``: the same for event objects (tests, a buffered body).
- ``finish()`` at upstream EOF: nothing more when the source stopped; otherwise (truncated
  upstream) a client-protocol error - a truncated stream is never reported as success.
- ``fail(kind, message)``: a client-protocol error and the end of the stream (the guard's stall
  error uses this). Once failed or stopped, every call returns ``b""``.
"""

from __future__ import annotations

from typing import Any
from typing import Protocol as TypingProtocol

from proxai.core.errors import ProxaiError, TranslationError, UpstreamProtocolError
from proxai.core.model import ErrorKind, Protocol
from proxai.core.sse import Payloads, SseEvent, payloads_of
from proxai.stream.sink import Phase, Sink


class _Ended(TypingProtocol):
    terminal: bool


class TranslatingGrammar(TypingProtocol):
    """What the translator needs of a grammar (``proxai.protocols.common.GrammarBase``)."""

    out: Sink | None
    normalize: bool
    max_buffer: int
    translate_error: ProxaiError | None
    events: int
    errored: bool  # the reading stopped (a problem, or the upstream's own error)

    @property
    def acc(self) -> _Ended:
        """``acc.terminal``: the terminal event was read."""

    @property
    def phase(self) -> Phase: ...

    def observe(self, payloads: Payloads, now: float) -> None: ...

    def translate_eof(self) -> None: ...


class Writer(Sink, TypingProtocol):
    protocol: Protocol

    def take(self) -> bytes: ...

    def fail(self, kind: ErrorKind, message: str) -> None: ...

    def metadata(self) -> dict[str, object]: ...


def error_kind_of(exc: ProxaiError) -> ErrorKind:
    if isinstance(exc, TranslationError):
        return ErrorKind.TRANSLATION
    if isinstance(exc, UpstreamProtocolError):
        return ErrorKind.UPSTREAM_PROTOCOL
    return ErrorKind.STREAM_LIMIT if type(exc).__name__ == "SseLimitError" else ErrorKind.UNKNOWN


class StreamTranslatorImpl:
    """``feed`` / ``finish`` / ``fail`` over the upstream's grammar and a target writer (its ``out``)."""

    __slots__ = (
        "_attached",
        "_closed",
        "_failed",
        "_pending",
        "client_protocol",
        "error",
        "grammar",
        "normalize",
        "upstream_protocol",
        "writer",
    )

    def __init__(
        self, grammar: TranslatingGrammar, writer: Writer, upstream: Protocol, *, normalize: bool
    ) -> None:
        self.grammar = grammar
        self.writer = writer
        self.client_protocol = writer.protocol
        self.upstream_protocol = upstream
        self.normalize = normalize
        self.error: ProxaiError | None = None  # the typed error that ended the translation, if any
        self._pending = b""
        self._closed = False  # the client stream ended (terminal, error, or fail)
        self._attached = False  # the flow observer's grammar reads for this translator (``bind``)
        self._failed = False  # the translation failed: its grammar feeds the writer no more

    @property
    def phase(self) -> Phase:
        return Phase.ERRORED if self._failed else self.grammar.phase

    @property
    def upstream_error(self) -> bool:
        """True when the upstream itself sent an error event (translated for the client)."""
        return self.phase is Phase.ERRORED and self.error is None

    def bind(self, grammar: object) -> bool:
        """Attach the flow observer's grammar (``StreamObserver.attach``): its one reading of
        each event feeds this translator's writer, and ``feed_payloads`` reads nothing again.
        False when the grammar cannot serve (another protocol, or events already read)."""
        own = self.grammar
        if type(grammar) is not type(own) or self._attached or own.events:
            return False
        g: Any = grammar
        if g.events or g.out is not None:
            return False
        g.out, g.normalize, g.max_buffer = own.out, own.normalize, own.max_buffer
        own.out = None
        self.grammar = g
        self._attached = True
        return True

    def feed_payloads(self, payloads: Payloads) -> bytes:
        """Upstream events (``Payloads``: one ``(type, data)`` tuple each) -> client bytes."""
        if self._closed:
            return b""
        g = self.grammar
        if not self._attached:
            g.observe(payloads, 0.0)  # the core reads no clock; a translation needs no time
        exc = g.translate_error
        if exc is not None:  # the reading stopped at a typed problem: keep what came before it
            g.translate_error = None
            self.error = exc
            self._pending = self.writer.take()
            raise exc
        if g.errored or g.acc.terminal:  # the upstream's stream is over (its end, or its error)
            self._closed = True
        return self.writer.take()

    def feed(self, events: list[SseEvent]) -> bytes:
        """``feed_payloads`` for event objects."""
        return self.feed_payloads(payloads_of(events))

    def finish(self) -> bytes:
        if self._closed:
            return b""
        if self.error is not None:
            return self.fail(error_kind_of(self.error), str(self.error))
        try:
            self.grammar.translate_eof()
        except ProxaiError as exc:
            self.error = exc
            return self._fail_bytes(
                ErrorKind.CONNECTION if self._truncated(exc) else error_kind_of(exc), str(exc)
            )
        self._closed = True
        return self.writer.take()

    def _truncated(self, exc: ProxaiError) -> bool:
        return "closed the" in str(exc)

    def fail(self, kind: ErrorKind, message: str) -> bytes:
        if self._closed:
            return b""
        return self._fail_bytes(kind, message)

    def _fail_bytes(self, kind: ErrorKind, message: str) -> bytes:
        self._closed = True
        self._failed = True
        self.grammar.out = None  # read on (an attached grammar still observes), write no more
        out = self._pending + self.writer.take()
        self._pending = b""
        self.writer.fail(kind, message)
        return out + self.writer.take()

    def metadata(self) -> dict[str, object]:
        """Counters the carrier can put in ``flow.metadata["proxai"]["extra"]["translation"]``."""
        meta: dict[str, object] = {
            "upstream": str(self.upstream_protocol),
            "client": str(self.client_protocol),
            "normalize": self.normalize,
            "phase": self.phase.value,
        }
        if self.error is not None:
            meta["error"] = f"{type(self.error).__name__}: {self.error}"
        meta.update(self.writer.metadata())
        return meta
