"""Responses -> Chat Completions.

- ``response.created`` -> the first chunk; output_text deltas -> ``delta.content``, refusal
  deltas -> ``delta.refusal``; function_call items -> ``tool_calls`` (``call_id`` as id,
  ``next_tool_call_index`` in item order); arguments only in ``.done`` are sent as one fragment;
- reasoning items: no Chat slot, dropped and counted;
- ``response.completed`` / ``response.incomplete`` -> finish chunk (tool_calls / stop / length /
  content_filter), usage-only chunk, ``[DONE]``; ``error`` / ``response.failed`` -> an error payload.
"""

from __future__ import annotations

from proxai.model import Protocol
from proxai.translate.stream.driver import StreamTranslatorImpl
from proxai.translate.stream.sources.common import DEFAULT_MAX_BUFFER, DEFAULT_MAX_TOOL_ARGS
from proxai.translate.stream.sources.responses import ResponsesSource
from proxai.translate.stream.to_chat.writer import ChatWriter

SOURCE, TARGET = Protocol.OPENAI_RESPONSES, Protocol.OPENAI_CHAT


def build(
    *,
    created: int = 0,
    include_usage: bool = True,
    max_buffer: int = DEFAULT_MAX_BUFFER,
    max_tool_args: int = DEFAULT_MAX_TOOL_ARGS,
) -> StreamTranslatorImpl:
    writer = ChatWriter(created=created, include_usage=include_usage)
    return StreamTranslatorImpl(
        ResponsesSource(writer, max_buffer=max_buffer), writer, SOURCE, normalize=False
    )
