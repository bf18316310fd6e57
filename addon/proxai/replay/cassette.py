"""The recorded answers of one or more runs, looked up by conversation (docs/replay.md).

Each recorded LLM flow is an ``Entry``: where it came from (file, position, flow id), its
request's ``Conversation`` (``proxai.replay.match``) and its answer (what the client received,
``proxai.replay.plan.Answer``). A request takes the first entry of equal conversation that was
not served yet, in recorded order (files in the order given, flows in file order), so identical
requests get their recorded answers one after the other; once all were served, the last one is
served again (a client that retries more often than the recording did). A request no entry
matches gets the divergence message: the closest recording (same protocol; the same model
first, then the longest run of equal pieces, then the earliest) and the first field where the
request differs from it.

Rules: docs/design/replay.md, 4. Pure: no mitmproxy, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from proxai.replay.match import Conversation, Divergence, divergence
from proxai.replay.plan import Answer


@dataclass(frozen=True, slots=True)
class Source:
    """Where a recorded flow came from."""

    file: str
    index: int  # 1-based position among the file's flows
    flow_id: str
    url: str = ""  # the URL the client sent it to (credentials taken out)

    def describe(self) -> str:
        return f"{self.file}, flow {self.index}"

    def to_metadata(self) -> dict[str, object]:
        return {"file": self.file, "flow_index": self.index, "flow_id": self.flow_id}


@dataclass(slots=True)
class Entry:
    source: Source
    conversation: Conversation
    answer: Answer
    served: int = 0


@dataclass(frozen=True, slots=True)
class Hit:
    entry: Entry
    again: bool  # every entry of this conversation was served before: the last one is served again


@dataclass(frozen=True, slots=True)
class Miss:
    message: str  # names the first field that differs from the closest recording
    closest: Source | None
    divergence: Divergence | None


class Cassette:
    """The entries of the recorded runs, in recorded order."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.entries = list(entries)
        self._by_key: dict[str, list[Entry]] = {}
        for e in self.entries:
            self._by_key.setdefault(e.conversation.key, []).append(e)

    def __len__(self) -> int:
        return len(self.entries)

    def take(self, request: Conversation) -> Hit | Miss:
        """The recorded answer of ``request``, or why there is none."""
        same = self._by_key.get(request.key)
        if not same:
            return self.miss(request)
        for e in same:
            if e.served == 0:
                e.served = 1
                return Hit(e, again=False)
        last = same[-1]
        last.served += 1
        return Hit(last, again=True)

    def give_back(self, entry: Entry) -> None:
        """The answer taken was never played (a fault answered the request first): it is served
        to the next equal request again."""
        entry.served = max(0, entry.served - 1)

    def miss(self, request: Conversation) -> Miss:
        best: tuple[tuple[bool, int, int], Entry, Divergence] | None = None
        for i, e in enumerate(self.entries):
            if e.conversation.protocol is not request.protocol:
                continue
            d = divergence(request, e.conversation)
            if d is None:  # equal conversation, different key: cannot happen; never a miss
                continue
            rank = (e.conversation.model == request.model, d.common, -i)
            if best is None or rank > best[0]:
                best = (rank, e, d)
        if best is None:
            protocols = sorted({str(e.conversation.protocol) for e in self.entries})
            have = ", ".join(protocols) if protocols else "none"
            return Miss(
                f"proxai replay: no recorded {request.protocol} request to compare with "
                f"(the recordings hold: {have})",
                None,
                None,
            )
        _, entry, d = best
        return Miss(
            "proxai replay: no recorded request matches: "
            + d.describe(f"the closest recording ({entry.source.describe()})"),
            entry.source,
            d,
        )
