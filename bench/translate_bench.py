"""Each stream translation pair: events/s and the ratio to the same floor.

The measured path is the carrier's: ``StreamObserver.observe_payloads`` (which scans once,
observes, feeding the attached translator's writer, and returns the events) then
``translator.feed_payloads`` per 512-byte chunk, and ``finish()`` at the end. The translator alone
(``SseScanner.feed_payloads`` beforehand, fed in the same per-chunk batches with
``translator.feed_payloads``, so it parses every payload itself) is reported too.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from proxai.core.model import Protocol
from proxai.core.sse import Payloads, SseScanner

from . import streams
from .floor import floor
from .timing import best_of


@dataclass
class Row:
    pair: str
    events: int
    out_bytes: int
    floor_s: float | None = None
    path_s: float | None = None
    translator_s: float | None = None
    note: str = ""


def _factory() -> Callable[[Protocol, Protocol], Any] | None:
    try:
        mod = importlib.import_module("proxai.pipeline.flow")
    except ImportError:
        return None
    make = getattr(mod, "make_stream_translator", None)
    return make if callable(make) else None


def _batches(chunks: list[bytes]) -> list[Payloads]:
    sc = SseScanner()
    out = [sc.feed_payloads(c) for c in chunks]
    out.append(sc.close_payloads())
    return [b for b in out if b]


def _translate_only(make: Callable[[], Any], batches: list[Payloads]) -> int:
    tr = make()
    n = 0
    for b in batches:
        n += len(tr.feed_payloads(b))
    return n + len(tr.finish())


def _full_path(proto: Protocol, client: Protocol, chunks: list[bytes]) -> int:
    """The carrier's path of a translated flow: its pipeline built once (``build_flow``), each
    read observed (the grammar feeds the writer) and the translator's bytes collected."""
    from proxai.pipeline.flow import ClientSide, build_flow

    pipe = build_flow(proto, ClientSide(client))
    obs, tr = pipe.observer, pipe.translator
    assert tr is not None
    obs.headers(200, 0.0)
    n = 0
    now = 0.0
    for c in chunks:
        now += 1e-4
        payloads = obs.observe_payloads(c, now)
        if payloads:  # as the carrier: no call for a read that completed no event
            n += len(tr.collect())
    obs.finish(now)
    return n + len(tr.finish())


def run(events: int, repeats: int) -> list[Row]:
    make_pair = _factory()
    rows: list[Row] = []
    if make_pair is None:
        return [Row("-", 0, 0, note="proxai.pipeline.flow.make_stream_translator not landed")]
    try:
        importlib.import_module("proxai.pipeline.observe")
        have_observer = True
    except ImportError:
        have_observer = False
    for up in streams.PROTOCOLS:
        body = streams.generate(up, events)
        chunks = streams.chunks(body, 512)
        batches = _batches(chunks)
        n_events = sum(len(b) for b in batches)
        for client in streams.PROTOCOLS:
            if client == up:
                continue
            name = f"{up} -> {client}"
            make = partial(make_pair, Protocol(up), Protocol(client))
            try:
                out_bytes = _translate_only(make, batches)
            except Exception as exc:
                rows.append(Row(name, n_events, 0, note=f"{type(exc).__name__}: {exc}"[:160]))
                continue
            fns: dict[str, Callable[[], Any]] = {
                "floor": partial(floor, chunks),
                "translator": partial(_translate_only, make, batches),
            }
            if have_observer:
                fns["path"] = partial(_full_path, Protocol(up), Protocol(client), chunks)
            best = best_of(fns, repeats)
            rows.append(Row(name, n_events, out_bytes, best["floor"], best.get("path"), best["translator"]))
    return rows


def report(rows: list[Row]) -> list[str]:
    lines = [
        "| pair | events | observe+translate x floor | translator alone x floor | events/s (path) | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.floor_s is None:
            lines.append(f"| {r.pair} | {r.events} | - | - | - | {r.note} |")
            continue
        path = "-" if r.path_s is None else f"{r.path_s / r.floor_s:.2f}"
        tr = "-" if r.translator_s is None else f"{r.translator_s / r.floor_s:.2f}"
        eps = "-" if r.path_s is None else f"{r.events / r.path_s:,.0f}"
        lines.append(f"| {r.pair} | {r.events} | {path} | {tr} | {eps} | {r.note} |")
    return lines
