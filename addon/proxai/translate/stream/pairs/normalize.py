"""Normalize mode: the same protocol in and out (seed 001 "Anthropic-compatible normalization"
and its OpenAI-compatible twin). The lenient source wrapper (lifecycle-free deltas accepted,
seed 004; Chat usage fallback and EOF after ``finish_reason``) drives the strict writer of the
same protocol, so the client sees a stream that satisfies CLIENTS.md whatever the provider sent."""

from __future__ import annotations

from proxai.model import Protocol
from proxai.translate.stream.driver import Source, StreamTranslatorImpl, Writer
from proxai.translate.stream.sources.anthropic import AnthropicSource
from proxai.translate.stream.sources.chat import ChatSource
from proxai.translate.stream.sources.common import DEFAULT_MAX_BUFFER, DEFAULT_MAX_TOOL_ARGS
from proxai.translate.stream.sources.responses import ResponsesSource
from proxai.translate.stream.to_anthropic.writer import AnthropicWriter
from proxai.translate.stream.to_chat.writer import ChatWriter
from proxai.translate.stream.to_responses.writer import ResponsesWriter


def build(
    protocol: Protocol,
    *,
    created: int = 0,
    include_usage: bool = True,
    max_buffer: int = DEFAULT_MAX_BUFFER,
    max_tool_args: int = DEFAULT_MAX_TOOL_ARGS,
) -> StreamTranslatorImpl:
    writer: Writer
    source: Source
    if protocol is Protocol.ANTHROPIC_MESSAGES:
        writer = AnthropicWriter()
        source = AnthropicSource(writer, lifecycle_free=True, max_tool_args=max_tool_args)
    elif protocol is Protocol.OPENAI_CHAT:
        writer = ChatWriter(created=created, include_usage=include_usage)
        source = ChatSource(writer, normalize=True, max_tool_args=max_tool_args)
    else:
        writer = ResponsesWriter(created_at=created, max_buffer=max_buffer)
        source = ResponsesSource(writer, max_buffer=max_buffer)
    return StreamTranslatorImpl(source, writer, protocol, normalize=True)
