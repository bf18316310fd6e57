"""Accumulate a scenario's ops into the whole message (blocks, usage, stop reason).

Renderers need the message so far: non-streamed bodies are built from it, the Responses
renderer repeats it in ``*.done`` events and the terminal ``response.completed`` snapshot,
and every protocol reports cumulative usage at the end. Token accounting of the fake
upstream: one non-empty fragment is one output token; thinking fragments are also counted as
reasoning tokens. ``keep_text=False`` keeps only counters, so a huge Anthropic or Chat stream
(``big_stream``) is never held in memory.

Rule: docs/design/upstream.md, "Wire rules each renderer keeps" (usage): cache read and cache
write tokens are counted apart from new input tokens, and every protocol's input total includes
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .ops import BlockDelta, BlockKind, BlockStart, BlockStop, Finish, Op, Start, StopReason

REDACTED_TOKENS = 12


@dataclass(slots=True)
class Block:
    index: int
    kind: BlockKind
    tool_id: str = ""
    name: str = ""
    data: str = ""
    parts: list[str] = field(default_factory=list)
    signature: str = ""
    closed: bool = False
    fragments: int = 0

    @property
    def text(self) -> str:
        return "".join(self.parts)


@dataclass(slots=True)
class Transcript:
    keep_text: bool = True
    start: Start = field(default_factory=Start)
    blocks: dict[int, Block] = field(default_factory=dict)  # insertion order = start order
    output_tokens: int = 0
    reasoning_tokens: int = 0
    stop: StopReason | None = None

    def apply(self, op: Op) -> Block | None:
        """Record ``op``; return the block it touched (if any)."""
        match op:
            case Start():
                self.start = op
            case BlockStart():
                block = Block(op.index, op.kind, op.tool_id, op.name, op.data)
                self.blocks[op.index] = block
                if op.kind == "redacted_thinking":
                    self._count(block, REDACTED_TOKENS)
                return block
            case BlockDelta():
                block = self.blocks[op.index]
                self._add(block, op.text)
                return block
            case BlockStop():
                block = self.blocks[op.index]
                self._add(block, op.tail)
                block.signature = op.signature
                block.closed = True
                return block
            case Finish():
                self.stop = op.stop
            case _:
                pass
        return None

    def _add(self, block: Block, text: str) -> None:
        if not text:
            return
        block.fragments += 1
        if self.keep_text:
            block.parts.append(text)
        self._count(block, 1)

    def _count(self, block: Block, n: int) -> None:
        self.output_tokens += n
        if block.kind in ("thinking", "redacted_thinking"):
            self.reasoning_tokens += n

    @property
    def input_total(self) -> int:
        """All prompt tokens, cached ones included (the OpenAI convention)."""
        return self.start.input_tokens + self.start.cache_read + self.start.cache_write
