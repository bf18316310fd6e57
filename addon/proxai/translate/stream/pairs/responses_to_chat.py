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

SOURCE, TARGET = Protocol.OPENAI_RESPONSES, Protocol.OPENAI_CHAT
