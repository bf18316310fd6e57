"""Opaque content of another protocol in a writer (docs/design/real-streams.md, rule 6): a block,
item or event the neutral vocabulary does not model, that the client protocol has no counterpart
for. The writer leaves it out, carries the rest of the answer, and counts what it left out (the
``left_out`` counts and a note in the translator's metadata, which the addon adds to the flow's
``extra.notes``). Under strict translation (``strict``) such content ends the translation with
a ``TranslationError`` instead: the client gets an error in its protocol."""

from __future__ import annotations

from typing import Any

from proxai.core.errors import TranslationError
from proxai.stream.sink import BlockKey, Carried


class Foreign:
    __slots__ = ("carried", "keys", "strict")

    def __init__(self, *, strict: bool = False) -> None:
        self.keys: set[BlockKey] = set()  # open opaque blocks left out
        self.carried = Carried({})
        self.strict = strict

    def start(self, key: BlockKey, what: str, *, counted: bool = True) -> None:
        """An opaque block left out; ``counted=False`` when its content comes in neutral form
        too (a web search), so nothing is lost."""
        if counted:
            self._leave_out(what)
        self.keys.add(key)

    def event(self, key: BlockKey, payload: dict[str, Any]) -> None:
        """An event of a block left out is part of it; an unmodelled event of a kept block (a
        ``citations_delta`` in text) is counted by its own type."""
        if key not in self.keys:
            what = payload.get("type")
            self._leave_out(what if isinstance(what, str) else "event")

    def leave_out(self, what: str) -> None:
        """Content given in neutral form that the client's protocol has no counterpart for."""
        self._leave_out(what)

    def _leave_out(self, what: str) -> None:
        if self.strict:
            raise TranslationError(
                f"the upstream sent {what!r}, which the client's protocol has no counterpart for "
                "(strict translation)"
            )
        self.carried.add(what)

    def stop(self, key: BlockKey) -> bool:
        """True when ``key`` was an opaque block left out (its stop is then not written)."""
        if key in self.keys:
            self.keys.discard(key)
            return True
        return False

    def metadata(self) -> dict[str, object]:
        if not self.carried.left_out:
            return {}
        return {"left_out": dict(self.carried.left_out), "notes": [self.carried.note()]}
