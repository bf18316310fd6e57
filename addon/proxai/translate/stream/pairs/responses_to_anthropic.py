"""Responses -> Anthropic Messages (seed 000: flattening ``output[]`` back into one ``content[]``).

- ``response.created`` -> ``message_start``; each message content part / function_call item /
  reasoning item -> one content block, dense index in start order (item ids are dropped, the
  ``call_id`` becomes the ``tool_use`` id);
- reasoning text (``reasoning_text`` or summary) -> thinking, ``encrypted_content`` -> its
  signature; a reasoning item with only ``encrypted_content`` -> ``redacted_thinking``;
- arguments sent only in ``function_call_arguments.done`` / ``output_item.done`` are forwarded
  as one ``input_json_delta``;
- ``response.completed`` / ``response.incomplete`` -> ``message_delta`` + ``message_stop``
  (function calls -> tool_use, max_output_tokens -> max_tokens, content_filter / refusal part ->
  refusal); ``error`` / ``response.failed`` -> ``event: error``.
"""

from __future__ import annotations

from proxai.model import Protocol

SOURCE, TARGET = Protocol.OPENAI_RESPONSES, Protocol.ANTHROPIC_MESSAGES
