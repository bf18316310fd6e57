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

SOURCE, TARGET = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_RESPONSES
