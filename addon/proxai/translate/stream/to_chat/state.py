"""Accumulating state of a Chat Completions target (docs/streaming-translation.md): Chat keeps
only the block kind and the chat tool index; content is emitted at once, never kept.

``next_tool_call_index`` hands out ``tool_calls[].index`` in first-appearance order, unrelated
to the source's own index. Thinking text travels as ``reasoning_content``; Chat has no slot for a
thinking signature or for redacted thinking: those are dropped and COUNTED here so the carrier
can put the counts in the flow metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from proxai.stream.sink import BlockKey, BlockKind


@dataclass(slots=True)
class Dropped:
    signature_chars: int = 0
    redacted_thinking_blocks: int = 0

    def to_metadata(self) -> dict[str, int]:
        return {
            "signature_chars": self.signature_chars,
            "redacted_thinking_blocks": self.redacted_thinking_blocks,
        }

    def __bool__(self) -> bool:
        return bool(self.redacted_thinking_blocks or self.signature_chars)


@dataclass(slots=True)
class ChatState:
    prefix: bytes = b""  # the identity part of every chunk, pre-serialized
    tool_index: dict[BlockKey, int] = field(default_factory=dict)
    kinds: dict[BlockKey, BlockKind] = field(default_factory=dict)
    next_tool_call_index: int = 0
    refusal_streamed: bool = False
    dropped: Dropped = field(default_factory=Dropped)

    def register(self, key: BlockKey, kind: BlockKind) -> int | None:
        """Record a block; a tool block gets the next chat tool index."""
        self.kinds[key] = kind
        if kind == "tool":
            idx = self.next_tool_call_index
            self.next_tool_call_index += 1
            self.tool_index[key] = idx
            return idx
        if kind == "redacted_thinking":
            self.dropped.redacted_thinking_blocks += 1
        elif kind == "refusal":
            self.refusal_streamed = True
        return None
