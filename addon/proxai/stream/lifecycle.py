"""The protocol-independent lifecycle of one translated stream (docs/design/translation.md).

``WAITING -> STREAMING -> TERMINAL -> STOPPED`` (plus ``ERRORED``, where an object stays after a
failure, as in h11's ``_state.py``). One table, one ``_transition()``; an illegal step raises a
``SemanticStreamError`` naming the step and the phase.

No grammar uses ``Lifecycle`` any more: each maps its own state machine's state to a ``Phase``
(``proxai.protocols``), so a translated stream's phase is the grammar's state; the phases and
their order are still the ones this table spells out.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from proxai.errors import SemanticStreamError
from proxai.stream.sink import Phase

__all__ = ["Lifecycle", "Phase", "StreamIdentity"]


class Step(Enum):
    START = "start"
    DELTA = "delta"
    TERMINAL = "terminal"
    TAIL = "tail"  # metadata after the terminal signal (Chat usage-only chunk)
    STOP = "stop"
    FAIL = "fail"


_TABLE: dict[tuple[Phase, Step], Phase] = {
    (Phase.WAITING, Step.START): Phase.STREAMING,
    (Phase.STREAMING, Step.DELTA): Phase.STREAMING,
    (Phase.STREAMING, Step.TERMINAL): Phase.TERMINAL,
    (Phase.TERMINAL, Step.TAIL): Phase.TERMINAL,
    (Phase.TERMINAL, Step.STOP): Phase.STOPPED,
    (Phase.WAITING, Step.FAIL): Phase.ERRORED,
    (Phase.STREAMING, Step.FAIL): Phase.ERRORED,
    (Phase.TERMINAL, Step.FAIL): Phase.ERRORED,
}


@dataclass(frozen=True, slots=True)
class StreamIdentity:
    id: str
    model: str


class Lifecycle:
    """The inbound lifecycle carrier: phase + identity."""

    __slots__ = ("done", "identity", "phase")

    def __init__(self) -> None:
        self.phase = Phase.WAITING
        self.identity: StreamIdentity | None = None
        # STOPPED or ERRORED: the stream is over (kept with ``phase``; read per event).
        self.done = False

    def _transition(self, step: Step) -> None:
        nxt = _TABLE.get((self.phase, step))
        if nxt is None:
            raise SemanticStreamError(
                f"stream step {step.value!r} is not allowed in phase {self.phase.value!r}"
            )
        self.phase = nxt
        self.done = nxt is Phase.STOPPED or nxt is Phase.ERRORED

    def start(self, identity: StreamIdentity) -> None:
        self._transition(Step.START)
        self.identity = identity

    def check_identity(self, id: str | None) -> None:
        """Chat: every chunk after the first repeats the stream id."""
        assert self.identity is not None
        if id is not None and id != self.identity.id:
            raise SemanticStreamError(f"chunk id {id!r} does not match the stream id {self.identity.id!r}")

    def delta(self) -> None:
        if self.phase is not Phase.STREAMING:
            self._transition(Step.DELTA)

    def terminal(self) -> None:
        self._transition(Step.TERMINAL)

    def tail(self) -> None:
        self._transition(Step.TAIL)

    def stop(self) -> None:
        self._transition(Step.STOP)

    def fail(self) -> None:
        """Enter ERRORED (idempotent). A stopped stream stays stopped: its output is complete."""
        if not self.done:
            self._transition(Step.FAIL)
