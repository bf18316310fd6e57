"""The fake upstream's pauses: a pause with keepalives lasts its own length, however late each
wake-up is (a fake clock and sleep make every wake-up 13 ms late, as on a loaded machine)."""

from __future__ import annotations

import asyncio

import pytest

from proxai.upstream import playback
from proxai.upstream.ops import Delay

LATE = 0.013  # every wake-up comes this much after the time asked for


def _run(monkeypatch: pytest.MonkeyPatch, wait: Delay, timing: playback.Timing) -> tuple[float, list[float]]:
    clock = [0.0]
    writes: list[float] = []

    async def late_sleep(seconds: float) -> None:
        clock[0] += seconds + LATE

    async def write(data: bytes) -> None:
        assert data == b": ping\n\n"
        writes.append(round(clock[0], 6))

    monkeypatch.setattr(playback, "_now", lambda: clock[0])
    monkeypatch.setattr(playback, "_sleep", late_sleep)
    asyncio.run(timing.sleep(wait, write))
    return round(clock[0], 6), writes


def test_a_keepalive_pause_ends_one_late_wakeup_after_its_length(monkeypatch: pytest.MonkeyPatch) -> None:
    # The tool_stall pause at time scale 0.01: 60 s -> 0.6 s, a keepalive every 2 s -> 0.02 s.
    wait = Delay(60.0, keepalive=b": ping\n\n", every=2.0, stall=True)
    end, writes = _run(monkeypatch, wait, playback.Timing(scale=0.01, stall=None))
    assert end == pytest.approx(0.6 + LATE)  # summed per-keepalive sleeps would end at 30 x 0.033 = 0.99
    assert len(writes) == 29  # one keepalive between each pair of the 30 slots, none at the end
    assert writes[0] == pytest.approx(0.02 + LATE)
    assert writes[-1] == pytest.approx(0.58 + LATE)  # each keepalive at its slot, lateness not summed


def test_a_stall_override_is_absolute_with_the_unscaled_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    wait = Delay(60.0, keepalive=b": ping\n\n", every=2.0, stall=True)
    end, writes = _run(monkeypatch, wait, playback.Timing(scale=0.0, stall=5.0))
    assert end == pytest.approx(5.0 + LATE)
    assert writes == pytest.approx([2.0 + LATE, 4.0 + LATE])


def test_a_pause_without_keepalives_is_one_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    end, writes = _run(monkeypatch, Delay(0.4), playback.Timing(scale=0.5, stall=None))
    assert (end, writes) == (pytest.approx(0.2 + LATE), [])
