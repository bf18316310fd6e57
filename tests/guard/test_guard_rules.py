"""Pure unit tests of proxai.guard: exact verdicts for every rule, precedence and deadlines."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from proxai import guard
from proxai.core.model import ErrorKind, Outcome
from proxai.guard import GuardConfig, Verdict, VerdictKind


@dataclass(frozen=True)
class Open:
    id: str | None
    name: str | None
    started_at: float
    last_progress_at: float
    arguments_bytes: int
    kind: str = "function"


@dataclass(frozen=True)
class Done:
    id: str | None
    name: str | None
    arguments_complete: bool
    arguments_valid_json: bool
    arguments_bytes: int


CFG = GuardConfig(tool_stall=10.0, idle_timeout=100.0)


def test_healthy_stream_has_no_verdict() -> None:
    calls = [Open("call_1", "get_weather", 0.0, 5.0, 12)]
    assert guard.check(CFG, open_calls=calls, last_byte_at=14.9, start=0.0, now=14.9) is None


def test_tool_stall_exact_verdict() -> None:
    calls = [Open("toolu_1", "read_file", 1.0, 2.0, 37)]
    v = guard.check(CFG, open_calls=calls, last_byte_at=11.5, start=0.0, now=12.0)
    assert v == Verdict(
        kind=VerdictKind.TOOL_STALL,
        message=(
            "ProxAI guard: tool call 'read_file' (id toolu_1) stalled: no argument delta for 10.0s "
            "(limit 10s, proxai_tool_stall) after 37 argument bytes; the upstream stream was closed"
        ),
        tool_id="toolu_1",
        tool_name="read_file",
        since_last_delta_s=10.0,
        idle_s=0.5,
        arguments_bytes=37,
        threshold_s=10.0,
    )
    assert v.error_kind is ErrorKind.TOOL_STALL
    assert v.outcome is Outcome.UNFINISHED_TOOL
    assert v.to_metadata(injected=True) == {
        "kind": "tool_stall",
        "message": v.message,
        "tool_id": "toolu_1",
        "tool_name": "read_file",
        "since_last_delta_s": 10.0,
        "idle_s": 0.5,
        "arguments_bytes": 37,
        "threshold_s": 10.0,
        "injected": True,
    }


def test_pings_are_not_progress_the_streaming_call_is_named() -> None:
    # bytes keep arriving (last_byte_at is recent) but the second call has not grown
    calls = [Open("a", "first", 0.0, 20.0, 5), Open("b", "second", 1.0, 3.0, 9)]
    v = guard.check(CFG, open_calls=calls, last_byte_at=25.0, start=0.0, now=25.0)
    assert v is not None
    assert (v.kind, v.tool_id, v.tool_name, v.arguments_bytes) == (VerdictKind.TOOL_STALL, "b", "second", 9)
    assert v.since_last_delta_s == 22.0


def test_tool_stall_disabled_by_zero() -> None:
    cfg = GuardConfig(tool_stall=0, idle_timeout=0)
    calls = [Open("a", "x", 0.0, 0.0, 1)]
    assert guard.check(cfg, open_calls=calls, last_byte_at=None, start=0.0, now=1e6) is None
    assert guard.next_deadline(cfg, open_calls=calls, last_byte_at=None, start=0.0) is None
    assert not GuardConfig(tool_stall=0, idle_timeout=0, abnormal_arguments=False).enabled


def test_idle_before_any_byte_counts_from_start() -> None:
    v = guard.check(CFG, open_calls=[], last_byte_at=None, start=5.0, now=105.0)
    assert v == Verdict(
        kind=VerdictKind.IDLE_TIMEOUT,
        message=(
            "ProxAI guard: upstream sent no bytes for 100.0s (limit 100s, proxai_idle_timeout); "
            "the upstream stream was closed"
        ),
        idle_s=100.0,
        threshold_s=100.0,
    )
    assert v.error_kind is ErrorKind.IDLE_TIMEOUT
    assert v.outcome is Outcome.ERROR
    assert guard.check(CFG, open_calls=[], last_byte_at=None, start=5.0, now=104.9) is None


def test_idle_inside_a_call_when_tool_stall_is_off() -> None:
    cfg = GuardConfig(tool_stall=0, idle_timeout=30.0)
    calls = [Open("c", "edit", 0.0, 1.0, 4)]
    v = guard.check(cfg, open_calls=calls, last_byte_at=1.0, start=0.0, now=31.0)
    assert v is not None
    assert v.kind is VerdictKind.IDLE_TIMEOUT
    assert (v.tool_id, v.tool_name, v.arguments_bytes, v.since_last_delta_s) == ("c", "edit", 4, 30.0)
    assert "inside tool call 'edit' (id c) (4 argument bytes)" in v.message


def test_tool_stall_wins_over_idle_when_both_trip() -> None:
    cfg = GuardConfig(tool_stall=5.0, idle_timeout=5.0)
    calls = [Open("c", "edit", 0.0, 0.0, 4)]
    v = guard.check(cfg, open_calls=calls, last_byte_at=0.0, start=0.0, now=5.0)
    assert v is not None and v.kind is VerdictKind.TOOL_STALL


def test_abnormal_invalid_json_declared_done() -> None:
    calls = [Done("call_9", "search", True, False, 14)]
    v = guard.check(CFG, open_calls=[], calls=calls, last_byte_at=1.0, start=0.0, now=1.0)
    assert v == Verdict(
        kind=VerdictKind.ABNORMAL_ARGUMENTS,
        message=(
            "ProxAI guard: tool call 'search' (id call_9) was declared done but its 14 argument bytes "
            "are not valid JSON; the stream was closed"
        ),
        tool_id="call_9",
        tool_name="search",
        arguments_bytes=14,
    )
    assert v.error_kind is ErrorKind.UPSTREAM_PROTOCOL
    assert v.outcome is Outcome.UNFINISHED_TOOL


def test_valid_or_unfinished_calls_are_not_abnormal() -> None:
    calls = [Done("a", "x", True, True, 2), Done("b", "y", False, False, 3)]
    assert guard.check(CFG, open_calls=[], calls=calls, last_byte_at=1.0, start=0.0, now=1.0) is None
    cfg = GuardConfig(abnormal_arguments=False)
    bad = [Done("a", "x", True, False, 2)]
    assert guard.check(cfg, open_calls=[], calls=bad, last_byte_at=1.0, start=0.0, now=1.0) is None


def test_terminal_with_unfinished_call_is_abnormal() -> None:
    calls = [Open("fc_1", "shell", 0.0, 2.0, 8)]
    v = guard.check(CFG, open_calls=calls, terminal=True, last_byte_at=3.0, start=0.0, now=3.0)
    assert v is not None
    assert v.kind is VerdictKind.ABNORMAL_ARGUMENTS
    assert (v.tool_id, v.tool_name, v.arguments_bytes, v.since_last_delta_s) == ("fc_1", "shell", 8, 1.0)
    assert v.message == (
        "ProxAI guard: the stream reached its terminal event while tool call 'shell' (id fc_1) was "
        "unfinished (8 argument bytes); the stream was closed"
    )


def test_terminal_stream_is_not_timed() -> None:
    assert guard.check(CFG, open_calls=[], terminal=True, last_byte_at=0.0, start=0.0, now=1e9) is None
    assert guard.next_deadline(CFG, open_calls=[], terminal=True, last_byte_at=0.0, start=0.0) is None


@pytest.mark.parametrize(
    ("calls", "last_byte_at", "expected"),
    [
        ([], None, 100.0),  # idle from start
        ([], 40.0, 140.0),  # idle from the last byte
        ([Open("a", "x", 0.0, 7.0, 1)], 50.0, 17.0),  # the tool stall comes first
        ([Open("a", "x", 0.0, 7.0, 1), Open("b", "y", 0.0, 3.0, 1)], 50.0, 13.0),  # the last of equals
        ([Open("a", "x", 0.0, 1.0, 1), Open("b", "y", 2.0, 9.0, 1)], 50.0, 19.0),  # the call started last
    ],
)
def test_next_deadline(calls: list[Open], last_byte_at: float | None, expected: float) -> None:
    assert guard.next_deadline(CFG, open_calls=calls, last_byte_at=last_byte_at, start=0.0) == expected


def test_check_is_none_just_before_the_deadline_and_a_verdict_at_it() -> None:
    calls = [Open("a", "x", 0.0, 7.0, 1)]
    d = guard.next_deadline(CFG, open_calls=calls, last_byte_at=8.0, start=0.0)
    assert d == 17.0
    assert guard.check(CFG, open_calls=calls, last_byte_at=8.0, start=0.0, now=d - 1e-6) is None
    assert guard.check(CFG, open_calls=calls, last_byte_at=8.0, start=0.0, now=d) is not None


def test_unnamed_call_message() -> None:
    v = guard.check(CFG, open_calls=[Open(None, None, 0.0, 0.0, 0)], last_byte_at=0.0, start=0.0, now=10.0)
    assert v is not None
    assert "tool call '<unnamed>' (id <none>)" in v.message


def test_an_earlier_open_call_is_not_judged_while_a_later_one_streams() -> None:
    # Chat: call 0 has no per-call end before finish_reason; call 1 streams healthily
    calls = [Open("call_0", "a", 0.0, 1.0, 47), Open("call_1", "b", 2.0, 29.0, 300)]
    assert guard.check(CFG, open_calls=calls, last_byte_at=29.0, start=0.0, now=30.0) is None
    v = guard.check(CFG, open_calls=calls, last_byte_at=29.5, start=0.0, now=39.0)
    assert v is not None and (v.tool_id, v.arguments_bytes) == ("call_1", 300)


def test_end_of_body_inside_a_call_is_abnormal_and_stops_time_rules() -> None:
    calls = [Open("toolu_9", "write", 0.0, 1.0, 21)]
    v = guard.check(CFG, open_calls=calls, ended=True, last_byte_at=1.0, start=0.0, now=1.5)
    assert v == Verdict(
        kind=VerdictKind.ABNORMAL_ARGUMENTS,
        message=(
            "ProxAI guard: the upstream ended the stream while tool call 'write' (id toolu_9) was unfinished "
            "(21 argument bytes); the stream was closed"
        ),
        tool_id="toolu_9",
        tool_name="write",
        since_last_delta_s=0.5,
        arguments_bytes=21,
    )
    # no open call: an ended stream is never judged for time, however long ago the last byte was
    assert guard.check(CFG, open_calls=[], ended=True, last_byte_at=0.0, start=0.0, now=1e6) is None
