"""Anthropic Messages -> Responses (seed 000's mapping table, ``to_openai_responses/streaming``).

- ``message_start`` -> ``response.created`` + ``response.in_progress``;
- block start -> ``output_item.added`` (message / reasoning / function_call) + ``content_part.added``;
  text and reasoning items get ids from the allocator, a tool_use keeps its ``toolu_`` id;
- deltas -> ``output_text.delta`` / ``reasoning_text.delta`` / ``function_call_arguments.delta``
  (``content_index`` 0); ``signature_delta`` -> the reasoning item's ``encrypted_content``;
- ``redacted_thinking`` -> a reasoning item whose payload is ``encrypted_content``;
- block stop -> ``*.done`` + ``output_item.done``; ``message_delta`` emits nothing (held);
- ``message_stop`` -> ``response.completed`` or ``response.incomplete`` (max_tokens ->
  max_output_tokens, refusal -> content_filter) with the full output and usage.
"""

from __future__ import annotations

from proxai.model import Protocol
from proxai.translate.stream.driver import StreamTranslatorImpl
from proxai.translate.stream.sources.anthropic import AnthropicSource
from proxai.translate.stream.sources.common import DEFAULT_MAX_BUFFER, DEFAULT_MAX_TOOL_ARGS
from proxai.translate.stream.to_responses.writer import ResponsesWriter

SOURCE, TARGET = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_RESPONSES


def build(
    *,
    created: int = 0,
    include_usage: bool = True,
    max_buffer: int = DEFAULT_MAX_BUFFER,
    max_tool_args: int = DEFAULT_MAX_TOOL_ARGS,
) -> StreamTranslatorImpl:
    writer = ResponsesWriter(created_at=created, max_buffer=max_buffer)
    return StreamTranslatorImpl(
        AnthropicSource(writer, max_tool_args=max_tool_args), writer, SOURCE, normalize=False
    )
