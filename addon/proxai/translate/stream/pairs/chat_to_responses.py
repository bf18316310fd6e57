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

SOURCE, TARGET = Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
