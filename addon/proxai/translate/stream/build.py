"""The client protocol's writer of one translated flow (``to_*/writer.py``): what a translated
flow's pipeline (``proxai.pipeline.flow``) gives the upstream protocol's grammar as its output
(docs/streaming-translation.md, "Layout"; docs/design/translation.md). The six directions'
mapping facts are in docs/streaming-translation.md, "The six directions".

Normalize mode is the same protocol in and out: the lenient reading (lifecycle-free deltas
accepted; Chat usage fallback and EOF after ``finish_reason``) drives the strict writer of the
same protocol, so the client sees a stream every SDK accepts whatever the provider sent.
"""

from __future__ import annotations

from proxai.core.model import Protocol
from proxai.stream.limits import DEFAULT_MAX_BUFFER
from proxai.translate.call_shapes import CallShapes
from proxai.translate.stream.driver import Writer
from proxai.translate.stream.to_anthropic.writer import AnthropicWriter
from proxai.translate.stream.to_chat.writer import ChatWriter
from proxai.translate.stream.to_responses.writer import ResponsesWriter

_A, _C, _R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES

#: The six translated pairs (upstream, client).
PAIRS: tuple[tuple[Protocol, Protocol], ...] = ((_A, _C), (_A, _R), (_C, _A), (_C, _R), (_R, _A), (_R, _C))


def make_writer(
    client: Protocol,
    *,
    normalize: bool,
    created: int = 0,
    include_usage: bool = True,
    call_shapes: CallShapes | None = None,
    max_buffer: int = DEFAULT_MAX_BUFFER,
    strict: bool = False,
) -> Writer:
    """The writer of ``client``'s stream (``normalize``: the upstream speaks the same protocol)."""
    if client is Protocol.ANTHROPIC_MESSAGES:
        return AnthropicWriter(strict=strict)
    if client is Protocol.OPENAI_CHAT:
        return ChatWriter(created=created, include_usage=include_usage, strict=strict)
    return ResponsesWriter(
        created_at=created,
        max_buffer=max_buffer,
        reasoning_summary=not normalize,
        call_shapes=call_shapes or {},
        strict=strict,
    )
