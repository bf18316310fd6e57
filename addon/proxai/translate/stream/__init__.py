"""Streaming translation between Anthropic Messages, OpenAI Chat Completions and OpenAI
Responses, and same-protocol normalization (docs/design/translation.md).

Pure and sans-IO: the upstream protocol's grammar (``proxai.protocols``) reads each event once
and drives the client protocol's writer (``to_*/``, made by ``make_writer``); the
``StreamTranslatorImpl`` (``driver``) takes the writer's bytes and ends the client's stream. A
flow's pipeline (``proxai.pipeline.flow.build_flow``) builds and connects them once;
docs/streaming-translation.md describes the design.
"""

from __future__ import annotations

from typing import Protocol as TypingProtocol

from proxai.core.model import ErrorKind, Protocol
from proxai.stream.sink import Phase

from .build import PAIRS, make_writer
from .driver import StreamTranslatorImpl, Writer, error_kind_of

__all__ = [
    "PAIRS",
    "Phase",
    "StreamTranslator",
    "StreamTranslatorImpl",
    "Writer",
    "error_kind_of",
    "make_writer",
]


class StreamTranslator(TypingProtocol):
    """What the carrier (``proxai.pipeline.carrier``) needs of a stream translator."""

    client_protocol: Protocol

    def collect(self) -> bytes:
        """The client bytes of the events the flow's reading has read since the last call
        (may raise ``ProxaiError``: the carrier then ends the stream with ``fail``)."""

    def finish(self) -> bytes:
        """Upstream EOF: the terminal flush, or a client-protocol error if truncated."""

    def fail(self, kind: ErrorKind, message: str) -> bytes:
        """A well-formed client-protocol error that ends the stream."""

    def metadata(self) -> dict[str, object]:
        """JSON-able counters for ``flow.metadata`` (dropped thinking, phase, error)."""
