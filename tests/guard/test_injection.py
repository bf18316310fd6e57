"""The mitmproxy-internals module: its start-up check, the degrade path and the per-flow timer."""

from __future__ import annotations

import asyncio
import enum
import importlib
import inspect
import logging
import re

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


def test_every_internal_a_function_relies_on_is_checked_and_every_checked_one_is_used() -> None:
    names = [i.name for i in injection.INTERNALS]
    assert len(names) == len(set(names))
    used = {name for needs in injection.RELIES_ON.values() for name in needs}
    assert used == set(names)
    # The HttpLayer handlers and helpers that touch mitmproxy each declare what they use.
    assert {
        "_define_events",
        "_hook_http_layer",
        "_stream_of",
        "_tunnels_http",
        "_streams_body",
        "_close_client",
        "_answer_events",
        "_cancel_dropped",
        "_defer_end_events",
        "drop_server_events",
        "_inject",
    } <= set(injection.RELIES_ON)


def test_an_unknown_internal_is_refused_where_it_is_declared() -> None:
    with pytest.raises(LookupError, match=re.escape("not in INTERNALS: HttpStream.nonexistent")):
        injection._relies_on("HttpStream.flow", "HttpStream.nonexistent")


def _owner(path: str) -> object:
    module, _, qualname = path.partition(":")
    owner: object = importlib.import_module(module)
    for part in filter(None, qualname.split(".")):
        owner = getattr(owner, part)
    return owner


def _remove(monkeypatch: pytest.MonkeyPatch, internal: injection.Internal) -> None:
    """Make ``internal`` absent, as a mitmproxy without it would be (restored after the test)."""
    owner = _owner(internal.owner)
    if internal.kind == "field":
        assert isinstance(owner, type)
        for klass in owner.__mro__:
            declared = inspect.get_annotations(klass)
            if internal.attr in declared:
                kept = {k: v for k, v in declared.items() if k != internal.attr}
                monkeypatch.setattr(klass, "__annotations__", kept)
    elif internal.kind == "member":
        assert isinstance(owner, enum.EnumMeta)
        module, _, name = internal.owner.partition(":")
        others = [m.name for m in owner if m.name != internal.attr]  # type: ignore[var-annotated]
        monkeypatch.setattr(importlib.import_module(module), name, enum.Enum(name, others))
    else:
        monkeypatch.setattr(owner, internal.attr, None)  # a method inherited from a base would remain


@pytest.mark.parametrize("internal", injection.INTERNALS, ids=lambda i: i.name)
def test_each_missing_internal_is_named_in_one_warning_and_degrades(
    internal: injection.Internal, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _remove(monkeypatch, internal)
    # Removing a class removes what it owns too.
    gone = {internal.name} | {
        i.name for i in injection.INTERNALS if i.owner == f"{internal.owner}:{internal.attr}"
    }
    report = injection.check_internals()
    assert report.ok is False
    assert set(report.missing) == gone
    monkeypatch.setattr(injection._State, "installed", False)
    monkeypatch.setattr(injection._State, "available", False)
    monkeypatch.setattr(injection._State, "warned", False)
    with caplog.at_level(logging.WARNING, logger="proxai.mitm.injection"):
        assert injection.install() is False
        assert injection.install() is False
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "proxai: mitmproxy internals needed to end a silent stream are missing "
        f"({', '.join(report.missing)}); the guard falls back to the data-driven path: errors are "
        "injected on the next upstream chunk only"
    ]
    assert injection.available() is False
    flow = object()
    assert injection.end_stream(flow) is False
    assert injection.answer_now(flow, object()) is False
    assert injection.attach_hold(flow, injection.StreamHold(lambda: False)) is False
    assert injection.release(flow) is False
    assert injection.reset_stream(flow, "fault") is False


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
    assert injection._State.event_base is not None
    assert set(injection._HANDLERS) == {
        injection._State.end_event_type,
        injection._State.answer_event_type,
        injection._State.hold_event_type,
        injection._State.release_event_type,
        injection._State.reset_event_type,
    }
    assert all(issubclass(t, injection._State.event_base) for t in injection._HANDLERS)


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
