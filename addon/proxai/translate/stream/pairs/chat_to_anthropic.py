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

SOURCE, TARGET = Protocol.OPENAI_CHAT, Protocol.ANTHROPIC_MESSAGES
