"""What every protocol grammar is built from: a state table, its transition function, the typed
error an illegal event raises, the classified deviations a grammar reports, and the JSON shape
helpers (the only copy of ``as_int`` / ``as_str`` / ``as_dict`` / ``as_list``).

docs/design/protocol-grammars.md describes the rules. A grammar's lifecycle is an ``Enum`` of
states and one ``Machine``: a table ``state -> {event -> next state}`` and ``step``, the one
transition function, which raises ``ProtocolStateError`` (naming the event and the state it
arrived in) for an event the table does not allow in that state. A state absent from the table,
or mapped to no events, accepts nothing (the terminal and errored states). A machine that is not
a protocol's (the stream carrier's, docs/design/carrier.md) names its own error type.

A deviation from a protocol is classified once, where the grammar reads it, as a ``Finding``:
a ``quirk`` (tolerated, the stream goes on with a note), a ``repair`` (normalize mode changed
what the client sees), or a ``violation`` (the stream ends with a typed error). Grammars hand
their findings to a ``FindingSink``; the summary's notes come from the same report.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, Protocol

from proxai.core.errors import SemanticStreamError

__all__ = [
    "Finding",
    "FindingSink",
    "Machine",
    "ProtocolStateError",
    "Severity",
    "StateEnum",
    "StateErrorType",
    "as_dict",
    "as_int",
    "as_list",
    "as_str",
]


# -- JSON shape helpers: untrusted parses read without a check per call site -----------------------


def as_int(v: Any) -> int | None:
    """``v`` if it is a JSON integer (never a bool), else ``None``."""
    return v if type(v) is int else None


def as_str(v: Any) -> str | None:
    """``v`` if it is a JSON string, else ``None``."""
    return v if type(v) is str else None


def as_dict(v: Any) -> dict[str, Any]:
    """``v`` if it is a JSON object, else an empty one."""
    return v if type(v) is dict else {}


def as_list(v: Any) -> list[Any]:
    """``v`` if it is a JSON array, else an empty one."""
    return v if type(v) is list else []


# -- the state machine ---------------------------------------------------------------------------


class StateEnum(Enum):
    """A grammar's states. A member hashes by identity, in C (a member is a singleton, equal only
    to itself): ``Enum.__hash__`` is a Python function, and every transition looks its state up
    in the machine's table."""

    __hash__ = object.__hash__


class ProtocolStateError(SemanticStreamError):
    """An event the protocol does not allow in the state it arrived in."""

    def __init__(self, message: str, *, event: str, state: Enum) -> None:
        super().__init__(message)
        self.event = event
        self.state = state


class StateErrorType(Protocol):
    """What ``Machine.step`` raises: an exception type taking the message, the event, the state."""

    def __call__(self, message: str, *, event: str, state: Enum) -> Exception: ...


class Machine[S: Enum]:
    """One protocol lifecycle: ``table[state][event]`` is the next state.

    ``message`` formats the error of an illegal step; its fields are ``event`` (the event as the
    grammar names it) and ``state`` (the state's ``name``). ``messages`` gives the protocol's own
    words for particular illegal steps (``(state, event) -> text``, e.g. "duplicate message_start").
    ``error``: the exception type of an illegal step (a protocol's ``ProtocolStateError`` unless
    the machine says otherwise)."""

    __slots__ = ("error", "message", "messages", "table")

    def __init__(
        self,
        table: dict[S, dict[str, S]],
        message: str,
        messages: dict[tuple[S, str], str] | None = None,
        *,
        error: StateErrorType = ProtocolStateError,
    ) -> None:
        self.table = table
        self.message = message
        self.messages = messages or {}
        self.error = error

    def step(self, state: S, event: str, name: str | None = None) -> S:
        """The state after ``event`` in ``state``; ``ProtocolStateError`` if not allowed.
        ``name``: the event as the error names it, when the table groups events by kind."""
        row = self.table.get(state)
        nxt = None if row is None else row.get(event)
        if nxt is None:
            shown = event if name is None else name
            text = self.messages.get((state, event))
            if text is None:
                text = self.message.format(event=shown, state=state.name)
            raise self.error(text, event=shown, state=state)
        return nxt

    def allows(self, state: S, event: str) -> bool:
        row = self.table.get(state)
        return row is not None and event in row


# -- classified deviations -----------------------------------------------------------------------

Severity = Literal["quirk", "repair", "violation"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One deviation from a protocol, classified where the grammar reads it.

    ``rule``: a stable identifier (``<protocol>.<rule>``, listed in
    docs/design/protocol-grammars.md); ``event``: the index of the event in the stream (0-based,
    counting every event the grammar was given); ``detail``: the human-readable text (the
    summary's note, or the error's message)."""

    rule: str
    severity: Severity
    event: int
    detail: str


class FindingSink(Protocol):
    """Where a grammar reports its findings (the summary accumulator, a conformance report)."""

    def finding(self, finding: Finding) -> None: ...
