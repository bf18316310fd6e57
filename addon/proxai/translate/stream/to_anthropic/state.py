"""Accumulating state of an Anthropic Messages target.

Block indexes are dense, in start order (docs/design/clients.md: the SDKs append blocks in arrival order),
whatever the source's own handles were: this is also the normalize-mode repair of non-dense
indexes. Only the open set is kept; content is emitted at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from proxai.stream.sink import BlockKey


@dataclass(slots=True)
class AnthropicState:
    index_of: dict[BlockKey, int] = field(default_factory=dict)
    open: dict[int, None] = field(default_factory=dict)  # ordered set of open target indexes
    next_index: int = 0

    def open_block(self, key: BlockKey) -> int:
        idx = self.next_index
        self.next_index += 1
        self.index_of[key] = idx
        self.open[idx] = None
        return idx

    def close_block(self, key: BlockKey) -> int:
        idx = self.index_of[key]
        del self.open[idx]
        return idx

    def close_all(self) -> list[int]:
        idxs = list(self.open)
        self.open.clear()
        return idxs
