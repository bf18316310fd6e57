"""Anthropic Messages -> Chat Completions (seed 000 ``to_openai_chat_completions/streaming``).

- ``message_start`` -> the first chunk (``role: assistant``), id/model echoed on every chunk;
- text blocks -> ``delta.content``; tool_use blocks -> ``tool_calls`` with
  ``next_tool_call_index`` in first-appearance order (interleaved deltas stay with their call);
- thinking / redacted_thinking: Chat has no slot; dropped and counted (``metadata()["dropped"]``);
- ``message_delta`` emits nothing yet; ``message_stop`` -> finish chunk, usage-only chunk, ``[DONE]``;
- stop: end_turn/stop_sequence/pause_turn -> stop, max_tokens -> length, tool_use -> tool_calls,
  refusal -> content_filter.
"""

from __future__ import annotations

from proxai.model import Protocol

SOURCE, TARGET = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT
