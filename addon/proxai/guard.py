"""Stream guard: pure stall / idle / abnormal-argument decisions (docs/design/guard.md).

When a streamed tool call's arguments stop progressing or turn out abnormal, the observer records a
stream error, an SSE error in the client's protocol is injected and the stream is closed (the carrier's
inject-and-close). An upstream that sends no byte at all for too long (the carrier's read idle timeout)
is the second rule.
This module only DECIDES. It reads no clock, arms no timer and knows nothing of mitmproxy: the shell
passes the observer state and ``now`` (monotonic seconds) and asks two questions:

- ``check(...)``: is there a verdict now? (``None`` when the stream is healthy)
- ``next_deadline(...)``: the earliest ``now`` at which ``check`` could return a verdict if no byte
  arrives before; the shell arms ONE timer for it (``None``: nothing to wait for).

Rules (docs/guard.md explains the defaults):

- tool stall: the started, unfinished tool call being streamed (the one started last) whose arguments
  have not grown for ``tool_stall`` s. Only argument deltas of that call count as its progress
  (``OpenCall.last_progress_at``); pings, keepalive comments and deltas of other blocks do not.
- abnormal arguments: a call declared done whose arguments are not valid JSON, or a terminal event (or
  the upstream's end of body) while a call is still unfinished.
- idle upstream: no byte at all for ``idle_timeout`` s.

A threshold of 0 disables its rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from proxai.core.model import ErrorKind, Outcome

DEFAULT_TOOL_STALL = 60.0
DEFAULT_IDLE_TIMEOUT = 300.0


class OpenCall(Protocol):
    """What the guard reads of a started, unfinished call (``proxai.pipeline.observe.OpenToolCall``)."""

    @property
    def id(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def started_at(self) -> float: ...
    @property
    def last_progress_at(self) -> float: ...
    @property
    def arguments_bytes(self) -> int: ...


class ClosedCall(Protocol):
    """What the guard reads of an observed call (``proxai.core.model.ToolCallInfo``)."""

    @property
    def id(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def arguments_complete(self) -> bool: ...
    @property
    def arguments_valid_json(self) -> bool: ...
    @property
    def arguments_bytes(self) -> int: ...


class VerdictKind(StrEnum):
    TOOL_STALL = "tool_stall"
    ABNORMAL_ARGUMENTS = "abnormal_arguments"
    IDLE_TIMEOUT = "idle_timeout"


@dataclass(frozen=True, slots=True)
class GuardConfig:
    """Thresholds in seconds; 0 turns a rule off (``proxai_tool_stall``, ``proxai_idle_timeout``)."""

    tool_stall: float = DEFAULT_TOOL_STALL
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    abnormal_arguments: bool = True

    @property
    def enabled(self) -> bool:
        return self.tool_stall > 0 or self.idle_timeout > 0 or self.abnormal_arguments


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why the guard ends a stream. ``message`` is what the client's SDK raises with."""

    kind: VerdictKind
    message: str
    tool_id: str | None = None
    tool_name: str | None = None
    since_last_delta_s: float | None = None  # seconds since the call's last argument delta
    idle_s: float | None = None  # seconds since the last upstream byte
    arguments_bytes: int | None = None
    threshold_s: float | None = None

    @property
    def error_kind(self) -> ErrorKind:
        if self.kind is VerdictKind.IDLE_TIMEOUT:
            return ErrorKind.IDLE_TIMEOUT
        if self.kind is VerdictKind.TOOL_STALL:
            return ErrorKind.TOOL_STALL
        return ErrorKind.UPSTREAM_PROTOCOL

    @property
    def outcome(self) -> Outcome:
        return Outcome.ERROR if self.kind is VerdictKind.IDLE_TIMEOUT else Outcome.UNFINISHED_TOOL

    def to_metadata(self, *, injected: bool) -> dict[str, Any]:
        """The ``flow.metadata["proxai"]["guard"]`` dict (JSON-able, no secrets)."""
        return {
            "kind": str(self.kind),
            "message": self.message,
            "tool_id": self.tool_id,
            "tool_name": self.tool_name,
            "since_last_delta_s": _r(self.since_last_delta_s),
            "idle_s": _r(self.idle_s),
            "arguments_bytes": self.arguments_bytes,
            "threshold_s": self.threshold_s,
            "injected": injected,
        }


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def _call_label(tool_id: str | None, name: str | None) -> str:
    return f"tool call {name or '<unnamed>'!r} (id {tool_id or '<none>'})"


def _stall_message(call: OpenCall, stalled: float, threshold: float) -> str:
    return (
        f"ProxAI guard: {_call_label(call.id, call.name)} stalled: no argument delta for "
        f"{stalled:.1f}s (limit {threshold:g}s, proxai_tool_stall) after {call.arguments_bytes} "
        f"argument bytes; the upstream stream was closed"
    )


def _idle_message(idle: float, threshold: float, call: OpenCall | None) -> str:
    inside = ""
    if call is not None:
        inside = f" inside {_call_label(call.id, call.name)} ({call.arguments_bytes} argument bytes)"
    return (
        f"ProxAI guard: upstream sent no bytes for {idle:.1f}s (limit {threshold:g}s, "
        f"proxai_idle_timeout){inside}; the upstream stream was closed"
    )


def check(
    config: GuardConfig,
    *,
    open_calls: Sequence[OpenCall],
    calls: Sequence[ClosedCall] = (),
    terminal: bool = False,
    ended: bool = False,
    last_byte_at: float | None,
    start: float,
    now: float,
) -> Verdict | None:
    """The verdict for this moment, or ``None``.

    ``open_calls`` are the started, unfinished calls; ``calls`` every observed call (abnormal-argument
    rule); ``terminal`` whether the protocol's terminal event was seen; ``ended`` whether the upstream
    ended the body (end of message: only the abnormal-argument rule applies then, and a call still open
    at the end is abnormal); ``last_byte_at`` the time of the last upstream body byte (``None``: none
    yet, then ``start``, the time the headers arrived, counts).
    Precedence: abnormal arguments, then tool stall (the more specific diagnosis of a silent upstream
    mid-arguments), then idle.
    """
    if config.abnormal_arguments:
        for c in calls:
            if c.arguments_complete and not c.arguments_valid_json:
                return Verdict(
                    kind=VerdictKind.ABNORMAL_ARGUMENTS,
                    message=(
                        f"ProxAI guard: {_call_label(c.id, c.name)} was declared done but its "
                        f"{c.arguments_bytes} argument bytes are not valid JSON; the stream was closed"
                    ),
                    tool_id=c.id,
                    tool_name=c.name,
                    arguments_bytes=c.arguments_bytes,
                )
        if terminal and open_calls:
            o = open_calls[0]
            return Verdict(
                kind=VerdictKind.ABNORMAL_ARGUMENTS,
                message=(
                    f"ProxAI guard: the stream reached its terminal event while {_call_label(o.id, o.name)} "
                    f"was unfinished ({o.arguments_bytes} argument bytes); the stream was closed"
                ),
                tool_id=o.id,
                tool_name=o.name,
                since_last_delta_s=max(0.0, now - o.last_progress_at),
                arguments_bytes=o.arguments_bytes,
            )
        if ended and open_calls:
            o = _current_call(open_calls) or open_calls[0]
            return Verdict(
                kind=VerdictKind.ABNORMAL_ARGUMENTS,
                message=(
                    f"ProxAI guard: the upstream ended the stream while {_call_label(o.id, o.name)} was "
                    f"unfinished ({o.arguments_bytes} argument bytes); the stream was closed"
                ),
                tool_id=o.id,
                tool_name=o.name,
                since_last_delta_s=max(0.0, now - o.last_progress_at),
                arguments_bytes=o.arguments_bytes,
            )
    if terminal or ended:
        return None  # a finished stream is no longer guarded for time
    stalled_call = _current_call(open_calls)
    if config.tool_stall > 0 and stalled_call is not None:
        stalled = now - stalled_call.last_progress_at
        if stalled >= config.tool_stall:
            return Verdict(
                kind=VerdictKind.TOOL_STALL,
                message=_stall_message(stalled_call, stalled, config.tool_stall),
                tool_id=stalled_call.id,
                tool_name=stalled_call.name,
                since_last_delta_s=stalled,
                idle_s=now - (start if last_byte_at is None else last_byte_at),
                arguments_bytes=stalled_call.arguments_bytes,
                threshold_s=config.tool_stall,
            )
    if config.idle_timeout > 0:
        idle = now - (start if last_byte_at is None else last_byte_at)
        if idle >= config.idle_timeout:
            return Verdict(
                kind=VerdictKind.IDLE_TIMEOUT,
                message=_idle_message(idle, config.idle_timeout, stalled_call),
                tool_id=None if stalled_call is None else stalled_call.id,
                tool_name=None if stalled_call is None else stalled_call.name,
                since_last_delta_s=None if stalled_call is None else now - stalled_call.last_progress_at,
                idle_s=idle,
                arguments_bytes=None if stalled_call is None else stalled_call.arguments_bytes,
                threshold_s=config.idle_timeout,
            )
    return None


def next_deadline(
    config: GuardConfig,
    *,
    open_calls: Sequence[OpenCall],
    terminal: bool = False,
    last_byte_at: float | None,
    start: float,
) -> float | None:
    """The earliest time at which a time rule trips if nothing arrives before; ``None``: no timer."""
    if terminal:
        return None
    deadline: float | None = None  # min(stall, idle) without a list: this runs on every chunk
    if config.tool_stall > 0 and open_calls:
        stalled_call = _current_call(open_calls)
        if stalled_call is not None:
            deadline = stalled_call.last_progress_at + config.tool_stall
    if config.idle_timeout > 0:
        idle = (start if last_byte_at is None else last_byte_at) + config.idle_timeout
        if deadline is None or idle < deadline:
            deadline = idle
    return deadline


def _current_call(open_calls: Sequence[OpenCall]) -> OpenCall | None:
    """The call the upstream is streaming: the one started last (the last of equals).

    In every protocol one call streams at a time; an earlier call that is still "open" is either
    finished in practice (Chat has no per-call end before ``finish_reason``) or superseded. Judging
    it would trip the stall rule while a later call streams healthily.
    """
    best: OpenCall | None = None
    for c in open_calls:
        if best is None or c.started_at >= best.started_at:
            best = c
    return best
