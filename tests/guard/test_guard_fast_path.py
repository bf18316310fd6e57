"""Differential test of the guard's per-chunk fast paths (issue 7, end-to-end CPU).

``guard.check`` decides a chunk without calls by the idle rule alone, and ``guard.next_deadline``
takes the minimum without a list. Both must answer exactly what the full rule chain answered
before: the reference implementations below are the previous code, verbatim, and hypothesis
compares them on arbitrary states (open calls, closed calls, terminal, end of body, clock values,
every threshold switched on or off).
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from proxai import guard
from proxai.guard import (
    ClosedCall,
    GuardConfig,
    OpenCall,
    Verdict,
    VerdictKind,
    _call_label,
    _current_call,
    _idle_message,
    _stall_message,
)
from tests.guard.test_guard_rules import Done, Open


def reference_check(
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
    """``guard.check`` before the fast path (commit 52b7ab3)."""
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
        return None
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


def reference_next_deadline(
    config: GuardConfig,
    *,
    open_calls: Sequence[OpenCall],
    terminal: bool = False,
    last_byte_at: float | None,
    start: float,
) -> float | None:
    """``guard.next_deadline`` before the list-free minimum (commit 52b7ab3)."""
    if terminal:
        return None
    deadlines: list[float] = []
    stalled_call = _current_call(open_calls)
    if config.tool_stall > 0 and stalled_call is not None:
        deadlines.append(stalled_call.last_progress_at + config.tool_stall)
    if config.idle_timeout > 0:
        deadlines.append((start if last_byte_at is None else last_byte_at) + config.idle_timeout)
    return min(deadlines) if deadlines else None


# Small integer-valued times make ties (deadline == now, equal deadlines) common.
times = st.integers(0, 40).map(float) | st.floats(0, 40, allow_nan=False)
ids = st.none() | st.sampled_from(["call_1", "toolu_2", ""])
names = st.none() | st.sampled_from(["get_weather", "search", ""])
opens = st.builds(Open, ids, names, times, times, st.integers(0, 10_000))
dones = st.builds(Done, ids, names, st.booleans(), st.booleans(), st.integers(0, 10_000))
configs = st.builds(
    GuardConfig,
    tool_stall=st.sampled_from([0.0, 1.0, 2.5, 10.0]),
    idle_timeout=st.sampled_from([0.0, 1.0, 3.0, 20.0]),
    abnormal_arguments=st.booleans(),
)


@settings(max_examples=2000, deadline=None)
@given(
    config=configs,
    open_calls=st.lists(opens, max_size=3),
    calls=st.lists(dones, max_size=3),
    terminal=st.booleans(),
    ended=st.booleans(),
    last_byte_at=st.none() | times,
    start=times,
    now=times,
    at_threshold=st.none() | st.sampled_from(["idle", "stall"]),
)
def test_check_and_deadline_match_the_reference(
    *,
    config: GuardConfig,
    open_calls: list[Open],
    calls: list[Done],
    terminal: bool,
    ended: bool,
    last_byte_at: float | None,
    start: float,
    now: float,
    at_threshold: str | None,
) -> None:
    # Often exactly at a threshold (the boundary of every rule), not only at random times.
    if at_threshold == "idle":
        now = (start if last_byte_at is None else last_byte_at) + config.idle_timeout
    elif at_threshold == "stall" and open_calls:
        now = max(open_calls, key=lambda c: c.started_at).last_progress_at + config.tool_stall
    kw = {"open_calls": open_calls, "terminal": terminal, "last_byte_at": last_byte_at, "start": start}
    assert guard.check(config, calls=calls, ended=ended, now=now, **kw) == reference_check(
        config, calls=calls, ended=ended, now=now, **kw
    )
    assert guard.next_deadline(config, **kw) == reference_next_deadline(config, **kw)


def test_the_fast_path_is_taken_and_still_trips_idle() -> None:
    """No calls: a quiet stream is judged by the idle rule alone, at its exact threshold."""
    cfg = GuardConfig(tool_stall=10.0, idle_timeout=100.0)
    assert guard.check(cfg, open_calls=[], last_byte_at=5.0, start=0.0, now=104.999) is None
    v = guard.check(cfg, open_calls=[], last_byte_at=5.0, start=0.0, now=105.0)
    assert v is not None and v.kind is VerdictKind.IDLE_TIMEOUT and v.idle_s == 100.0
    assert guard.check(cfg, open_calls=[], terminal=True, last_byte_at=5.0, start=0.0, now=500.0) is None
