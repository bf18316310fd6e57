"""Chat Completions -> Anthropic Messages (seed 003 "Chat -> Anthropic streaming").

- the first assistant chunk -> ``message_start`` (input usage unknown yet: 0, overwritten by the
  cumulative ``message_delta`` usage);
- ``delta.content`` / ``delta.refusal`` -> a text block (refusal words stay visible text);
  a tool call's first delta -> a ``tool_use`` block with ``input: {}``, fragments ->
  ``input_json_delta``; block indexes dense in start order;
- ``finish_reason`` (after the fragments of its own chunk) closes every block and holds the
  terminal state; the ``choices: []`` chunk gives the final usage; ``[DONE]`` ->
  ``message_delta`` (stop reason + usage) + ``message_stop``;
- stop: stop -> end_turn (refusal when refusal text streamed), length -> max_tokens,
  tool_calls -> tool_use, content_filter -> refusal.
"""

from __future__ import annotations

from proxai.model import Protocol
from proxai.translate.stream.driver import StreamTranslatorImpl
from proxai.translate.stream.sources.chat import ChatSource
from proxai.translate.stream.sources.common import DEFAULT_MAX_BUFFER, DEFAULT_MAX_TOOL_ARGS
from proxai.translate.stream.to_anthropic.writer import AnthropicWriter

SOURCE, TARGET = Protocol.OPENAI_CHAT, Protocol.ANTHROPIC_MESSAGES


def build(
    *,
    created: int = 0,
    include_usage: bool = True,
    max_buffer: int = DEFAULT_MAX_BUFFER,
    max_tool_args: int = DEFAULT_MAX_TOOL_ARGS,
) -> StreamTranslatorImpl:
    writer = AnthropicWriter()
    return StreamTranslatorImpl(
        ChatSource(writer, max_tool_args=max_tool_args), writer, SOURCE, normalize=False
    )
