"""``guard.next_deadline`` takes the minimum without a list; it must answer exactly what its
previous code, verbatim below, answers. hypothesis compares them on arbitrary states (open calls,
terminal, clock values, every threshold switched on or off).
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from proxai import guard
from proxai.guard import (
    GuardConfig,
    OpenCall,
    VerdictKind,
    _current_call,
)
from tests.guard.test_guard_rules import Open


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
    terminal=st.booleans(),
    last_byte_at=st.none() | times,
    start=times,
)
def test_next_deadline_matches_the_reference(
    *,
    config: GuardConfig,
    open_calls: list[Open],
    terminal: bool,
    last_byte_at: float | None,
    start: float,
) -> None:
    kw = {"open_calls": open_calls, "terminal": terminal, "last_byte_at": last_byte_at, "start": start}
    assert guard.next_deadline(config, **kw) == reference_next_deadline(config, **kw)


def test_a_quiet_stream_without_calls_trips_idle_at_its_exact_threshold() -> None:
    cfg = GuardConfig(tool_stall=10.0, idle_timeout=100.0)
    assert guard.check(cfg, open_calls=[], last_byte_at=5.0, start=0.0, now=104.999) is None
    v = guard.check(cfg, open_calls=[], last_byte_at=5.0, start=0.0, now=105.0)
    assert v is not None and v.kind is VerdictKind.IDLE_TIMEOUT and v.idle_s == 100.0
    assert guard.check(cfg, open_calls=[], terminal=True, last_byte_at=5.0, start=0.0, now=500.0) is None
