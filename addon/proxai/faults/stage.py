"""The fault stage of one streamed flow: where a fault starts, and which client bytes leave when.

It sits after the carrier, on the bytes the CLIENT gets (the upstream's own bytes, or a
translation's output: the fault is always in the client's protocol). It cuts those bytes at SSE
event boundaries and reads each client event with a stream observer of the client's protocol
(the protocol's one reading, ``proxai.pipeline.observe``), so it knows exactly how many events the client
had, when the first content arrives and when a tool call is in the middle of its arguments. The
rules are in docs/design/faults.md.

The stage is a small state machine (``Phase``, transitions in ``_MOVES``):

- ``WAITING``: before the fault's point. Every complete event is checked against the rule's ``at``.
- at the point: ``truncate`` / ``error_event`` / ``reset`` go to ``ENDED`` (the shell closes the
  client stream cleanly, appends the error event, or resets the connection; ``Step.act`` says
  which); ``stall`` goes to ``HOLDING`` (everything from the point waits until ``seconds`` later);
  ``slow`` goes to ``PACING`` (every event that carries content waits ``1 / rate`` seconds after
  the previous one).
- ``HOLDING`` -> ``PASSING`` once the stall's bytes left; ``PASSING`` forwards at once.

Held bytes are bounded (``max_held``): past it they all leave at once and the fault records that
it was cut short. Sans-IO: the shell passes ``now`` and arms a timer for ``next_release``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from proxai.core.errors.providers import ProviderError, stream_error_message
from proxai.core.model import ErrorKind, Outcome, Protocol, StreamSummary
from proxai.pipeline.observe import Limits, StreamObserver

if TYPE_CHECKING:
    from proxai.faults.plan import FaultError
    from proxai.faults.rules import FaultRule


DEFAULT_MAX_HELD = 64 * 1024 * 1024
# a timer may fire up to the event loop's clock resolution early: bytes due that close are due
_SLACK = 0.002

# the rule's ``error`` -> the provider error and our error kind
ERRORS: dict[FaultError, tuple[ProviderError, ErrorKind]] = {
    "overloaded": ("overloaded", ErrorKind.OVERLOADED),
    "rate_limited": ("rate_limit", ErrorKind.RATE_LIMITED),
    "server": ("server", ErrorKind.SERVER),
}


class Phase(StrEnum):
    WAITING = "waiting"  # before the fault's point
    HOLDING = "holding"  # stall: the bytes from the point wait for their release
    PACING = "pacing"  # slow: content events leave at most ``rate`` per second
    PASSING = "passing"  # the stall is over: bytes leave at once
    ENDED = "ended"  # truncate / error_event / reset: nothing more goes to the client


class Act(StrEnum):
    """What the shell must do at the fault's point, after sending ``Step.send``."""

    TRUNCATE = "truncate"  # end the client stream cleanly
    ERROR = "error"  # append the error event in the client's protocol, then end the stream
    RESET = "reset"  # reset the client connection


class StageError(Exception):
    """A move the stage's table does not allow (a bug in the caller)."""


_MOVES: dict[Phase, frozenset[Phase]] = {
    Phase.WAITING: frozenset({Phase.HOLDING, Phase.PACING, Phase.ENDED}),
    # something else closed the client stream (the guard, a translation failure): ``abandon``
    Phase.HOLDING: frozenset({Phase.PASSING, Phase.ENDED}),
    Phase.PACING: frozenset({Phase.ENDED}),
    Phase.PASSING: frozenset({Phase.ENDED}),
    Phase.ENDED: frozenset(),
}

_ACTS: dict[str, Act] = {"truncate": Act.TRUNCATE, "error_event": Act.ERROR, "reset": Act.RESET}


@dataclass(slots=True)
class Step:
    send: list[bytes] = field(default_factory=list)
    act: Act | None = None


def _lines(data: bytes) -> list[bytes]:
    """``data`` cut after every line end (LF, CRLF, or a CR alone), so that each piece fed to the
    observer completes at most one SSE block; the last piece may be an unfinished line."""
    out: list[bytes] = []
    start = 0
    n = len(data)
    i = 0
    while i < n:
        lf = data.find(b"\n", i)
        cr = data.find(b"\r", i)
        if lf < 0 and cr < 0:
            break
        if cr < 0 or (0 <= lf < cr):
            end = lf + 1
        elif cr + 1 < n and data[cr + 1] == 0x0A:
            end = cr + 2
        else:
            end = cr + 1
        out.append(data[start:end])
        start = i = end
    if start < n:
        out.append(data[start:])
    return out


class FaultStage:
    """One flow's fault. ``feed`` each carrier output, ``end`` with the last one, ``release`` when
    the timer for ``next_release`` fires."""

    def __init__(
        self,
        rule: FaultRule,
        protocol: Protocol,
        *,
        now: float,
        status_code: int = 200,
        limits: Limits | None = None,
        max_held: int = DEFAULT_MAX_HELD,
    ) -> None:
        self.rule = rule
        self.protocol = protocol
        self.max_held = max_held
        # ``probe`` reads each client event as it ARRIVES (where the point is, what carries
        # content); ``view`` reads what was SENT (the client's outcome).
        self.probe = StreamObserver(protocol, start=now, limits=limits or Limits())
        self.probe.headers(status_code, now)
        self.view = StreamObserver(protocol, start=now, limits=limits or Limits())
        self.view.headers(status_code, now)
        self._now = now
        self.phase = Phase.WAITING
        self.events = 0  # complete client events read so far
        self.at_event: int | None = None  # events the client had got when the fault started
        self.started_at: float | None = None
        self.released_at: float | None = None
        self.cut_short = False
        self.sent_bytes = 0
        self.held_bytes = 0
        self.max_held_seen = 0
        self.dropped_bytes = 0
        self._queue: deque[tuple[float, bytes]] = deque()
        self._partial: list[bytes] = []  # bytes of the unfinished client event (WAITING, PACING)
        self._last_release = now
        self._gap = 1.0 / rule.rate if rule.rate else 0.0
        self._stall_until = now
        self._summary: StreamSummary | None = None

    # -- what the shell reads ----------------------------------------------------------------------

    @property
    def holding(self) -> bool:
        """Bytes are waiting: the upstream's end of message must wait for them."""
        return bool(self._queue)

    @property
    def next_release(self) -> float | None:
        return self._queue[0][0] if self._queue else None

    @property
    def fired(self) -> bool:
        return self.at_event is not None

    @property
    def error(self) -> tuple[ProviderError, ErrorKind, str]:
        """The provider error, our kind and the provider's message (``error_event``)."""
        name, kind = ERRORS[self.rule.error]
        return name, kind, stream_error_message(self.protocol, name)

    # -- the carrier's output ----------------------------------------------------------------------

    def feed(self, pieces: list[bytes], now: float) -> Step:
        self._now = now
        step = Step()
        for piece in pieces:
            if piece:
                self._take(piece, now, step)
        step.send.extend(self._due(now))
        self._count(step)
        return step

    def end(self, pieces: list[bytes], now: float) -> Step:
        """The carrier's last output (end of message): whatever is held leaves now."""
        step = self.feed(pieces, now)
        if self.phase is not Phase.ENDED:
            if self._queue:
                self.cut_short = self.cut_short or self.phase is Phase.HOLDING
            rest = [b for _, b in self._queue] + self._partial
            self._queue.clear()
            self._partial = []
            self.held_bytes = 0
            step.send.extend(rest)
            self._count_extra(rest)
        self._summary = self.view.finish(now)
        return step

    def abandon(self, now: float) -> list[bytes]:
        """Something else closes the client stream: what waited leaves now (before its error),
        the stage forwards nothing more."""
        rest = [b for _, b in self._queue if b] + self._partial
        if self._queue and self.phase is Phase.HOLDING:
            self.cut_short = True
        self._queue.clear()
        self._partial = []
        self.held_bytes = 0
        if self.phase is not Phase.ENDED:
            self._move(Phase.ENDED)
        self._count_extra(rest)
        return rest

    def release(self, now: float) -> list[bytes]:
        """The timer fired: the bytes whose time has come."""
        self._now = now
        out = self._due(now)
        self._count(Step(out))
        return out

    def injected(self, data: bytes, now: float) -> None:
        """The shell sent ``data`` (the error event) after the point: the client's view has it."""
        self._count_extra([data])

    def client_summary(self, now: float) -> StreamSummary:
        """What the client got, read in its protocol."""
        if self._summary is None:
            self._summary = self.view.abort("the client stream was ended", now)
        return self._summary

    def client_outcome(self, now: float) -> Outcome:
        return self.client_summary(now).outcome

    def metadata(self, now: float) -> dict[str, Any]:
        """``extra.fault``: the rule, whether and where it fired, what the client got."""
        r = self.rule
        out: dict[str, Any] = {
            "fault": r.fault,
            "rule": r.describe(),
            "injected": self.fired,
            "at": r.at,
            "at_event": self.at_event,
            "client_outcome": str(self.client_outcome(now)),
            "client_bytes": self.sent_bytes,
        }
        if r.fault == "error_event":
            out["error"] = r.error
        if r.fault == "stall":
            out["seconds"] = r.seconds
        if r.fault == "slow":
            out["rate"] = r.rate
        if self.cut_short:
            out["cut_short"] = True
        if not self.fired:
            out["reason"] = "the stream ended before the fault's point"
        return out

    # -- internals ---------------------------------------------------------------------------------

    def _move(self, to: Phase) -> None:
        if to not in _MOVES[self.phase]:
            raise StageError(f"fault stage: cannot go from {self.phase} to {to}")
        self.phase = to

    def _take(self, piece: bytes, now: float, step: Step) -> None:
        if self.phase is Phase.WAITING or self.phase is Phase.PACING:
            piece = self._by_event(piece, now, step)
            if not piece:
                return
        if self.phase is Phase.ENDED:
            self.dropped_bytes += len(piece)
            return
        # After the point the events need no reading one by one: only the client's view.
        self.probe.observe_payloads(piece, now)
        if self.phase is Phase.HOLDING:
            self._hold(self._stall_until, piece, now)
        else:  # PASSING: nothing waits
            step.send.append(piece)

    def _by_event(self, piece: bytes, now: float, step: Step) -> bytes:
        """Read ``piece`` event by event while the phase needs it; the bytes left once it does
        not (the fault's point moved the stage on)."""
        offset = 0
        for line in _lines(piece):
            offset += len(line)
            self._partial.append(line)
            before = self._progress()
            if not self.probe.observe_payloads(line, now):
                continue  # the event is not complete yet
            event = b"".join(self._partial)
            self._partial = []
            content = self._progress() > before
            if self.phase is Phase.WAITING:
                self._waiting(event, content, now, step)
            else:
                self._pace(event, content, now)
            self.events += 1
            if self.phase is not Phase.WAITING and self.phase is not Phase.PACING:
                return piece[offset:]
        return b""

    def _waiting(self, event: bytes, content: bool, now: float, step: Step) -> None:
        r = self.rule
        if r.at == "start":
            hit, before = self.events == r.after_events, True
        elif r.at == "first_token":
            hit, before = content, True
        else:  # tool_args: right after the first argument delta of a call
            hit, before = any(t.nbytes > 0 for t in self.probe.grammar.acc.open_tools()), False
        if not hit:
            self._send_now(event, step)
            return
        self.at_event = self.events if before else self.events + 1
        self.started_at = now
        if not before:
            self._send_now(event, step)
        act = _ACTS.get(r.fault)
        if act is not None:
            self._move(Phase.ENDED)
            step.act = act
            if before:
                self.dropped_bytes += len(event)
            return
        if r.fault == "stall":
            assert r.seconds is not None
            self._move(Phase.HOLDING)
            self._stall_until = now + r.seconds
            # an empty marker keeps the stall's release time even when nothing follows yet
            self._hold(self._stall_until, event if before else b"", now)
            return
        self._move(Phase.PACING)
        self._last_release = now
        if before:
            self._pace(event, content, now)

    def _pace(self, event: bytes, content: bool, now: float) -> None:
        at = max(now, self._last_release + (self._gap if content else 0.0))
        self._last_release = at
        self._hold(at, event, now)

    def _send_now(self, event: bytes, step: Step) -> None:
        step.send.append(event)  # before the point nothing waits

    def _hold(self, at: float, data: bytes, now: float) -> None:
        self._queue.append((at, data))
        self.held_bytes += len(data)
        self.max_held_seen = max(self.max_held_seen, self.held_bytes)
        if self.held_bytes > self.max_held:
            # Bounded memory: everything leaves now; the fault is cut short.
            self.cut_short = True
            self._queue = deque((min(a, now), b) for a, b in self._queue)
            self._stall_until = self._last_release = now

    def _due(self, now: float) -> list[bytes]:
        out: list[bytes] = []
        q = self._queue
        while q and q[0][0] <= now + _SLACK:
            _, data = q.popleft()
            self.held_bytes -= len(data)
            if data:
                out.append(data)
        if not q and self.phase is Phase.HOLDING:
            self._move(Phase.PASSING)
            self.released_at = now
        return out

    def _progress(self) -> int:
        acc = self.probe.grammar.acc
        return (
            acc.text_bytes + acc.reasoning_bytes + acc.refusal_bytes + sum(t.nbytes for t in acc.tool_order)
        )

    def _count(self, step: Step) -> None:
        self._count_extra(step.send)

    def _count_extra(self, data: list[bytes]) -> None:
        for b in data:
            if b:
                self.sent_bytes += len(b)
                self.view.observe_payloads(b, self._now)
