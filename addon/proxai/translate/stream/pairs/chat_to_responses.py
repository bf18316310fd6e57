"""Chat Completions -> Responses (seed 003 "Chat -> Responses output positions").

- the first assistant chunk -> ``response.created``; content -> a message item with an
  ``output_text`` part, refusal -> a message item with a ``refusal`` part (message items come in
  first-appearance order, tool calls are sibling ``function_call`` items, never message content);
- ``finish_reason`` closes every item (``*.done`` + ``output_item.done``); usage-only chunk held;
  ``[DONE]`` -> ``response.completed`` / ``response.incomplete`` with the full output.
- stop: length -> incomplete/max_output_tokens, content_filter -> incomplete/content_filter,
  a streamed refusal -> completed with the refusal part.
"""

from __future__ import annotations

from proxai.model import Protocol
from proxai.translate.stream.driver import StreamTranslatorImpl
from proxai.translate.stream.sources.chat import ChatSource
from proxai.translate.stream.sources.common import DEFAULT_MAX_BUFFER, DEFAULT_MAX_TOOL_ARGS
from proxai.translate.stream.to_responses.writer import ResponsesWriter

SOURCE, TARGET = Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES


def build(
    *,
    created: int = 0,
    include_usage: bool = True,
    max_buffer: int = DEFAULT_MAX_BUFFER,
    max_tool_args: int = DEFAULT_MAX_TOOL_ARGS,
) -> StreamTranslatorImpl:
    writer = ResponsesWriter(created_at=created, max_buffer=max_buffer)
    return StreamTranslatorImpl(
        ChatSource(writer, max_tool_args=max_tool_args), writer, SOURCE, normalize=False
    )
