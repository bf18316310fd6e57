"""The neutral calls between a protocol's grammar and the consumers of its reading.

A grammar (``proxai.protocols.*``) reads its protocol's event order (what the official SDKs
drop, such as an orphan delta or a delta of another block's type, never reaches a writer) and
then calls a ``Sink``:
a target writer (``proxai.translate.stream.to_*/writer.py``) that turns these calls into the
client protocol's bytes (docs/design/translation.md). A writer may therefore trust the calls:
every ``delta`` and ``block_stop`` names a started, open block of the matching kind, and
``end`` comes once, after ``start``.

Blocks are keyed by the source's own handle (Anthropic index, Chat tool index, Responses item
id / content part), never by a target index: target ids are synthesized by the writer
(docs/design/translation.md).

Content the neutral vocabulary does not model (Anthropic server tool blocks and their results,
citations, Responses hosted-tool items and their events, ...) is handed on as it came, in the
source protocol's own form: ``opaque_start`` / ``opaque_event`` / ``block_stop``. A writer of
the same protocol (normalize mode) re-emits it verbatim with its own indexes; a writer of another
protocol leaves it out and counts it (``Carried`` in ``metadata()``), so the rest of the answer
still reaches the client.

A web citation of a text block (Anthropic ``citations_delta`` with a
``web_search_result_location``, a Responses ``url_citation`` annotation, a Chat ``annotations``
entry) has a counterpart in every protocol: ``citation`` carries it in neutral terms, with the
source's own form for a writer of the same protocol.

Usage is carried in one neutral form: ``input`` counts ALL prompt tokens (cached or not, as
OpenAI's ``prompt_tokens``); ``cache_read`` / ``cache_write`` are subsets of it, kept
apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal
from typing import Protocol as TypingProtocol

from proxai.core.model import ErrorKind, Protocol, StopClass
from proxai.stream.limits import DEFAULT_MAX_BUFFER

BlockKind = Literal["text", "refusal", "thinking", "redacted_thinking", "tool", "opaque"]
DeltaKind = Literal["text", "thinking", "signature", "args"]
BlockKey = int | str | tuple[str, int]
#: ``Sink.opaque_event``'s key for an event of no block or item (a Responses ``keepalive``)
NO_BLOCK: BlockKey = ""


class Phase(Enum):
    """Where a translated stream is: the grammar's state as the writer's lifecycle sees it."""

    WAITING = "waiting"  # no semantic source message/chunk yet
    STREAMING = "streaming"  # source deltas in progress
    TERMINAL = "terminal"  # the source signalled its end (message_delta / finish_reason), stop pending
    STOPPED = "stopped"  # the final target output was emitted
    ERRORED = "errored"  # a client-protocol error was emitted; nothing more is accepted


@dataclass(slots=True)
class TokenUsage:
    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None
    # the cache writes by lifetime, inside ``cache_write`` (Anthropic's ``cache_creation``; only an
    # Anthropic writer has a place for them)
    cache_write_5m: int | None = None
    cache_write_1h: int | None = None
    # the upstream's usage fields the neutral form does not name (a gateway's ``cost``), given
    # only in normalize mode: the writer of the same protocol writes them as they came
    extra: dict[str, Any] | None = None

    @property
    def total(self) -> int | None:
        if self.input is None and self.output is None:
            return None
        return (self.input or 0) + (self.output or 0)


@dataclass(frozen=True, slots=True)
class Citation:
    """A web source the text of one block cites. ``start`` / ``end``: the cited span in that
    block's text (characters), ``None`` when the citation covers the block (Anthropic's).
    ``raw``: the source protocol's own form, written as it came by a writer of ``protocol``."""

    url: str
    title: str | None
    cited_text: str
    start: int | None
    end: int | None
    protocol: Protocol
    raw: dict[str, Any]


@dataclass(frozen=True, slots=True)
class WebSearchCall:
    """A server-side web search that ran (Anthropic ``server_tool_use`` ``web_search`` and its
    ``web_search_tool_result``, a Responses ``web_search_call`` item): its query and the pages
    it found, ``(url, title)``. ``protocol``: where it came from; that protocol's writer already
    wrote it as it came (opaque content given in neutral form too)."""

    id: str
    query: str | None
    sources: tuple[tuple[str, str | None], ...]
    protocol: Protocol


@dataclass(frozen=True, slots=True)
class Stop:
    """The source's stop, normalized. ``raw`` is the source's own value (for metadata)."""

    cls: StopClass
    raw: str | None


@dataclass(slots=True)
class Carried:
    """What a writer of another protocol left out of the client's stream: a count per kind of
    block or event (``"web_search_tool_result"``, ``"citations_delta"``, ...)."""

    left_out: dict[str, int]

    def add(self, what: str) -> None:
        self.left_out[what] = self.left_out.get(what, 0) + 1

    def note(self) -> str:
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(self.left_out.items()))
        return f"left out (no counterpart in the client protocol): {kinds}"


class Sink(TypingProtocol):
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

    def opaque_start(
        self, key: BlockKey, protocol: Protocol, what: str, payload: dict[str, Any], *, neutral: bool = False
    ) -> None:
        """A block (Anthropic ``content_block``) or item (Responses ``item``) the neutral
        vocabulary does not model, of type ``what``, as ``protocol`` sent it; ``block_stop``
        closes it. ``neutral``: its content is also given in neutral form (``web_search``), so a
        writer of another protocol leaves the block out without counting it."""

    def opaque_event(self, key: BlockKey, protocol: Protocol, payload: dict[str, Any]) -> None:
        """An event of an open opaque block, or an unmodelled delta of a modelled one (a
        ``citations_delta`` of a document), as ``protocol`` sent it; ``key`` ``NO_BLOCK``: an
        event of no block, to be written as it came (normalize mode only)."""

    def citation(self, key: BlockKey, citation: Citation) -> None:
        """A web citation of the open text block ``key``."""

    def web_search(self, key: BlockKey, call: WebSearchCall) -> None:
        """A server-side web search that ran, once its results are known (``key``: the source's
        handle of the block or item that completed it)."""

    def end(self, stop: Stop, usage: TokenUsage) -> None: ...

    def comment(self, lines: bytes, *, hold: bool = False) -> None:
        """SSE comment lines of the upstream (each with its LF; not events, every SDK skips them),
        written as they came at this place among the events; ``hold``: the source's stop waits
        for its end, so they wait for it too. The flow's observer calls it, never a grammar."""

    def upstream_error(self, kind: ErrorKind, message: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Output:
    """Where a grammar's reading goes besides the summary, given when the grammar is built (a
    translated flow's pipeline, ``proxai.pipeline.flow``): the client protocol's writer, whether
    the flow is in normalize mode (the same protocol on both sides: the lenient reading), and the
    content a grammar may keep for its writer (Responses), per stream, in bytes."""

    sink: Sink
    normalize: bool = False
    max_buffer: int = DEFAULT_MAX_BUFFER
