"""Scanner and observer cost per protocol, as ratios to the same-process floor."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from proxai.core.model import Protocol
from proxai.core.sse import SseScanner

from . import streams
from .floor import floor
from .timing import best_of


@dataclass
class Row:
    protocol: str
    events: int
    mb: float
    floor_s: float
    scanner_s: float
    observer_s: float | None
    events_s: float | None = None
    note: str = ""

    @property
    def scanner_ratio(self) -> float:
        return self.scanner_s / self.floor_s

    @property
    def observer_ratio(self) -> float | None:
        return None if self.observer_s is None else self.observer_s / self.floor_s

    @property
    def events_ratio(self) -> float | None:
        return None if self.events_s is None else self.events_s / self.floor_s


def scan_only(chunks: list[bytes]) -> int:
    sc = SseScanner()
    n = 0
    for c in chunks:
        n += len(sc.feed(c))
    n += len(sc.close())
    return n


def observer_factory(events: bool = False) -> Callable[[str, list[bytes]], Any] | None:
    """``observe(protocol, chunks) -> summary`` if the observers have landed, else None.
    ``events``: through ``StreamObserver.feed`` (event objects: tests, no carrier path), else
    ``StreamObserver.observe_payloads`` (every carrier's path: observed, guarded or translated)."""
    try:
        mod = importlib.import_module("proxai.pipeline.observe")
    except ImportError:
        return None
    cls = mod.StreamObserver

    def observe(protocol: str, chunks: list[bytes]) -> Any:
        obs = cls(Protocol(protocol), start=0.0)
        obs.headers(200, 0.0)
        feed = obs.feed if events else getattr(obs, "observe_payloads", obs.observe)
        now = 0.0
        for c in chunks:
            now += 1e-4
            feed(c, now)
        return obs.finish(now)

    return observe


def run(events: int, repeats: int) -> list[Row]:
    observe = observer_factory()
    observe_events = observer_factory(events=True)
    rows = []
    for proto in streams.PROTOCOLS:
        body = streams.generate(proto, events)
        chunks = streams.chunks(body, 512)
        n_events = scan_only(chunks)
        note = ""
        fns: dict[str, Callable[[], Any]] = {
            "floor": partial(floor, chunks),
            "scanner": partial(scan_only, chunks),
        }
        if observe is not None:
            summary = observe(proto, chunks)
            outcome = str(getattr(summary, "outcome", "?"))
            if outcome != "completed":
                note = f"observer outcome {outcome!r} (expected completed)"
            fns["observer"] = partial(observe, proto, chunks)
        if observe_events is not None:
            fns["events"] = partial(observe_events, proto, chunks)
        else:
            note = "proxai.pipeline.observe not landed"
        best = best_of(fns, repeats)
        rows.append(
            Row(
                proto,
                n_events,
                len(body) / 1e6,
                best["floor"],
                best["scanner"],
                best.get("observer"),
                best.get("events"),
                note,
            )
        )
    return rows


def report(rows: list[Row]) -> list[str]:
    lines = [
        "| protocol | events | MB | floor MB/s | scanner (events) x floor | observer x floor "
        "| observer events/s | observer with event objects x floor | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        obs = "-" if r.observer_ratio is None else f"{r.observer_ratio:.2f}"
        eps = "-" if r.observer_s is None else f"{r.events / r.observer_s:,.0f}"
        evs = "-" if r.events_ratio is None else f"{r.events_ratio:.2f}"
        lines.append(
            f"| {r.protocol} | {r.events} | {r.mb:.1f} | {r.mb / r.floor_s:.0f} | {r.scanner_ratio:.2f} "
            f"| {obs} | {eps} | {evs} | {r.note} |"
        )
    lines += [
        "",
        "observer: `StreamObserver.observe_payloads` (every carrier's path: observe-only, guarded "
        "or translated; no event objects); with event objects: `StreamObserver.feed` (no carrier "
        "path since the translated flows moved to the payload path); scanner: `SseScanner.feed` alone.",
    ]
    return lines
