"""The mitmproxy-internals module: its start-up check, the degrade path and the per-flow timer."""

from __future__ import annotations

import asyncio
import logging

import pytest

from proxai.mitm import injection


def test_the_installed_mitmproxy_has_every_internal_we_use() -> None:
    report = injection.check_internals()
    assert report == injection.InternalsReport(True, ())


def test_missing_internals_warn_once_and_degrade(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(injection._State, "installed", False)
    monkeypatch.setattr(injection._State, "available", False)
    monkeypatch.setattr(injection._State, "warned", False)
    monkeypatch.setattr(
        injection, "check_internals", lambda: injection.InternalsReport(False, ("HttpStream.passthrough",))
    )
    with caplog.at_level(logging.WARNING, logger="proxai.mitm.injection"):
        assert injection.install() is False
        assert injection.install() is False  # idempotent: checked once
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "HttpStream.passthrough" in warnings[0] and "data-driven" in warnings[0]
    assert injection.available() is False
    assert injection.end_stream(object()) is False


def test_install_wraps_the_http_layer_once() -> None:
    from mitmproxy.proxy.layers import http as mhttp

    injection.install()
    assert injection.available()
    first = mhttp.HttpLayer._handle_event
    injection._State.installed = False
    try:
        injection._patch()  # a second install keeps the same wrapper
    finally:
        injection._State.installed = True
    assert mhttp.HttpLayer._handle_event is first
    assert getattr(first, injection._WRAPPED) is True


def test_timer_keeps_the_earliest_deadline_and_fires_once() -> None:
    fired: list[float] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        timer = injection.GuardTimer(lambda: fired.append(loop.time()), clock=loop.time)
        start = loop.time()
        timer.arm(start + 0.2)
        timer.arm(start + 5.0)  # later: ignored, the callback re-arms if needed
        assert timer.armed_at == start + 0.2
        timer.arm(start + 0.05)  # earlier: re-armed
        assert timer.armed_at == start + 0.05
        await asyncio.sleep(0.3)
        assert len(fired) == 1 and fired[0] >= start + 0.05
        assert timer.armed_at is None

    asyncio.run(main())


def test_cancelled_timer_never_fires_nor_rearms() -> None:
    fired: list[int] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        timer = injection.GuardTimer(lambda: fired.append(1), clock=loop.time)
        timer.arm(loop.time() + 0.05)
        timer.cancel()
        timer.arm(loop.time() + 0.01)
        await asyncio.sleep(0.15)

    asyncio.run(main())
    assert fired == []


def test_timer_without_an_event_loop_does_nothing() -> None:
    timer = injection.GuardTimer(lambda: None)
    timer.arm(1.0)
    assert timer.armed_at is None
