"""The neutral interface between a source-protocol wrapper and a target writer.

A source wrapper (``sources/*``) validates its protocol's event order (duplicate
start, orphan delta, stop without start, delta/block type mismatch are ``SemanticStreamError``)
and then calls a ``Sink``: a target writer (``to_*/writer.py``) that turns these calls into the
client protocol's bytes. A writer may therefore trust the calls: every ``delta`` and
``block_stop`` names a started, open block of the matching kind, and ``end`` comes once, after
``start``.

Blocks are keyed by the source's own handle (Anthropic index, Chat tool index, Responses item
id / content part), never by a target index: target ids are synthesized by the writer
(docs/design/translation.md).

Usage is carried in one neutral form: ``input`` counts ALL prompt tokens (cached or not, as
OpenAI's ``prompt_tokens``); ``cache_read`` / ``cache_write`` are subsets of it, kept
apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from proxai.model import ErrorKind, StopClass

BlockKind = Literal["text", "refusal", "thinking", "redacted_thinking", "tool"]
DeltaKind = Literal["text", "thinking", "signature", "args"]
BlockKey = int | str | tuple[str, int]


@dataclass(slots=True)
class TokenUsage:
    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None

    @property
    def total(self) -> int | None:
        if self.input is None and self.output is None:
            return None
        return (self.input or 0) + (self.output or 0)


@dataclass(frozen=True, slots=True)
class Stop:
    """The source's stop, normalized. ``raw`` is the source's own value (for metadata)."""

    cls: StopClass
    raw: str | None


class Sink(Protocol):
    def start(self, id: str, model: str, usage: TokenUsage | None) -> None: ...

    def block_start(
        self,
        key: BlockKey,
        kind: BlockKind,
        *,
        id: str | None = None,
        name: str | None = None,
        data: str | None = None,
    ) -> None: ...

    def delta(self, key: BlockKey, kind: DeltaKind, text: str) -> None: ...

    def block_stop(self, key: BlockKey) -> None: ...

    def end(self, stop: Stop, usage: TokenUsage) -> None: ...

    def upstream_error(self, kind: ErrorKind, message: str) -> None: ...
