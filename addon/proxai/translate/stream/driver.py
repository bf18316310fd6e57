"""The stream translator: the client protocol's writer, driven by the flow's one reading of the
upstream protocol, plus the end of the client's stream (the ``StreamTranslator`` contract of
``proxai.translate.stream``; docs/design/translation.md).

The flow's pipeline (``proxai.pipeline.flow.build_flow``) builds the upstream protocol's grammar
once, with the writer as its output, and gives the translator that grammar to read the state of:
the translator owns no grammar and reads no event. Each event the flow's observer hands the
grammar has fed the writer already; the translator takes the writer's bytes.

- ``collect()`` returns the client bytes the events read so far produced. When the reading stopped
  at a typed problem (``SemanticStreamError``, ``TranslationError``, ``UpstreamProtocolError``, a
  limit) it keeps the bytes produced before the problem and raises it; the carrier then calls
  ``fail()`` (or ``finish()``), which emits those bytes followed by a well-formed client-protocol
  error.
- ``finish()`` at upstream EOF: nothing more when the source stopped; otherwise (the upstream
  closed early: ``TruncatedStreamError``) a client-protocol ``connection`` error - a truncated
  stream is never reported as success.
- ``fail(kind, message)``: a client-protocol error and the end of the stream (the guard's stall
  error uses this). Once failed or stopped, every call returns ``b""``.

Errors are told apart by their types (``error_kind_of``), never by their names or messages.
"""

from __future__ import annotations

from typing import Protocol as TypingProtocol

from proxai.core.errors import (
    ProxaiError,
    SseLimitError,
    TranslationError,
    TruncatedStreamError,
    UpstreamProtocolError,
)
from proxai.core.model import ErrorKind, Protocol
from proxai.protocols.common import GrammarBase
from proxai.stream.sink import Phase, Sink


class Writer(Sink, TypingProtocol):
    protocol: Protocol
    out: list[bytes]  # the client bytes written since the last ``take``, in order

    def take(self) -> bytes: ...

    def fail(self, kind: ErrorKind, message: str) -> None: ...

    def metadata(self) -> dict[str, object]: ...


def error_kind_of(exc: ProxaiError) -> ErrorKind:
    """The client-protocol error kind of a typed problem that ended a translation."""
    if isinstance(exc, TruncatedStreamError):
        return ErrorKind.CONNECTION
    if isinstance(exc, TranslationError):
        return ErrorKind.TRANSLATION
    if isinstance(exc, UpstreamProtocolError):
        return ErrorKind.UPSTREAM_PROTOCOL
    if isinstance(exc, SseLimitError):
        return ErrorKind.STREAM_LIMIT
    return ErrorKind.UNKNOWN


class StreamTranslatorImpl:
    """The writer's bytes and the end of the client's stream, over the flow's reading (its
    grammar, whose ``out`` is ``writer``)."""

    __slots__ = (
        "_closed",
        "_failed",
        "_out",
        "_pending",
        "client_protocol",
        "error",
        "normalize",
        "reading",
        "upstream_protocol",
        "writer",
    )

    def __init__(self, reading: GrammarBase, writer: Writer, upstream: Protocol, *, normalize: bool) -> None:
        self.reading = reading
        self.writer = writer
        self._out = writer.out  # (``collect`` joins it: the writer's ``take`` without a call per read)
        self.client_protocol = writer.protocol
        self.upstream_protocol = upstream
        self.normalize = normalize
        self.error: ProxaiError | None = None  # the typed error that ended the translation, if any
        self._pending = b""
        self._closed = False  # the client stream ended (terminal, error, or fail)
        self._failed = False  # the translation failed: the reading feeds the writer no more

    @property
    def phase(self) -> Phase:
        return Phase.ERRORED if self._failed else self.reading.phase

    @property
    def upstream_error(self) -> bool:
        """True when the upstream itself sent an error event (translated for the client)."""
        return self.phase is Phase.ERRORED and self.error is None

    def collect(self) -> bytes:
        """The client bytes of the events read since the last call (may raise ``ProxaiError``)."""
        if self._closed:
            return b""
        g = self.reading
        exc = g.translate_error
        if exc is not None:  # the reading stopped at a typed problem: keep what came before it
            g.translate_error = None
            self.error = exc
            self._pending = self.writer.take()
            raise exc
        if g.errored or g.acc.terminal:  # the upstream's stream is over (its end, or its error)
            self._closed = True
        out = self._out
        data = b"".join(out)
        out.clear()
        return data

    def finish(self) -> bytes:
        if self._closed:
            return b""
        if self.error is not None:
            return self.fail(error_kind_of(self.error), str(self.error))
        try:
            self.reading.translate_eof()
        except ProxaiError as exc:
            self.error = exc
            return self._fail_bytes(error_kind_of(exc), str(exc))
        self._closed = True
        return self.writer.take()

    def fail(self, kind: ErrorKind, message: str) -> bytes:
        if self._closed:
            return b""
        return self._fail_bytes(kind, message)

    def _fail_bytes(self, kind: ErrorKind, message: str) -> bytes:
        self._closed = True
        self._failed = True
        self.reading.out = None  # the grammar reads on for the summary, and writes no more
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
