"""The translator of one pair, or of normalize mode: the upstream protocol's grammar
(``proxai.protocols``) with the client protocol's writer (``to_*/writer.py``) as its ``out``
(docs/streaming-translation.md, "Layout"; docs/design/translation.md). The six directions'
mapping facts are in docs/streaming-translation.md, "The six directions".

Normalize mode is the same protocol in and out: the lenient reading (lifecycle-free deltas
accepted; Chat usage fallback and EOF after ``finish_reason``) drives the strict writer of the
same protocol, so the client sees a stream every SDK accepts whatever the provider sent.
"""

from __future__ import annotations

from proxai.core.model import Protocol
from proxai.protocols.anthropic import AnthropicGrammar
from proxai.protocols.chat import ChatGrammar
from proxai.protocols.common import Accum
from proxai.protocols.responses import ResponsesGrammar
from proxai.stream.limits import DEFAULT_MAX_BUFFER, DEFAULT_MAX_TOOL_ARGS
from proxai.translate.call_shapes import CallShapes
from proxai.translate.stream.driver import StreamTranslatorImpl, TranslatingGrammar, Writer
from proxai.translate.stream.to_anthropic.writer import AnthropicWriter
from proxai.translate.stream.to_chat.writer import ChatWriter
from proxai.translate.stream.to_responses.writer import ResponsesWriter

_A, _C, _R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES

#: The six translated pairs (upstream, client).
PAIRS: tuple[tuple[Protocol, Protocol], ...] = ((_A, _C), (_A, _R), (_C, _A), (_C, _R), (_R, _A), (_R, _C))


def build(
    upstream: Protocol,
    client: Protocol,
    *,
    created: int = 0,
    include_usage: bool = True,
    call_shapes: CallShapes | None = None,
    max_buffer: int = DEFAULT_MAX_BUFFER,
    max_tool_args: int = DEFAULT_MAX_TOOL_ARGS,
    strict: bool = False,
) -> StreamTranslatorImpl:
    """The translator of one pair, or normalize mode when ``upstream is client`` (the caller
    checks that the pair is one of ``PAIRS`` or normalize mode was asked for)."""
    normalize = upstream is client
    writer: Writer
    if client is Protocol.ANTHROPIC_MESSAGES:
        writer = AnthropicWriter(strict=strict)
    elif client is Protocol.OPENAI_CHAT:
        writer = ChatWriter(created=created, include_usage=include_usage, strict=strict)
    else:
        writer = ResponsesWriter(
            created_at=created,
            max_buffer=max_buffer,
            reasoning_summary=not normalize,
            call_shapes=call_shapes or {},
            strict=strict,
        )
    reading: TranslatingGrammar
    if upstream is Protocol.ANTHROPIC_MESSAGES:
        grammar = AnthropicGrammar(Accum(max_tool_args=max_tool_args, max_capture=0, capture=False))
        grammar.out, grammar.normalize = writer, normalize
        reading = grammar
    elif upstream is Protocol.OPENAI_CHAT:
        cgrammar = ChatGrammar(Accum(max_tool_args=max_tool_args, max_capture=0, capture=False))
        cgrammar.out, cgrammar.normalize = writer, normalize
        reading = cgrammar
    else:
        rgrammar = ResponsesGrammar(Accum(max_tool_args=max_tool_args, max_capture=0, capture=False))
        rgrammar.out, rgrammar.normalize, rgrammar.max_buffer = writer, normalize, max_buffer
        reading = rgrammar
    return StreamTranslatorImpl(reading, writer, upstream, normalize=normalize)
