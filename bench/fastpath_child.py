"""Child process of the ``instructions`` section's in-process part: the addon's per-read work, as
mitmdump does it for a paced stream, counted under callgrind once with every fast path on and once
per fast path switched off.

``python -m bench.fastpath_child EVENTS REGIONS_JSON [VARIANT ...]``

The real addon (``ProxAI`` under ``mitmproxy.test.taddons``, default options: the guard with its
timer, the body keeper) is given a flow per path: observe-only for each protocol, and each of the
six translated pairs through a route. Its response hooks install the stream callable mitmproxy
would call (``flow.response.stream``: keeper, carrier, guard hook); the counted region is that
callable called once per SSE event, each read one whole event, the clock stepping 20 ms per read
as in the paced run, then with ``b""`` (the end of the message) and the flow's ``response`` hook,
so that the end's work that grows with the reads (the kept body's read marks) is counted too.
Each region runs inside one ``functools.reduce`` call, which nothing else in
the process calls: callgrind, started with ``--collect-atstart=no
--toggle-collect=functools_reduce --dump-after=functools_reduce``, counts only inside it and
writes one dump per region. Every path runs a stream of ``EVENTS`` events and one of twice as many;
the difference of the two counts over the difference of their event counts is the per-event cost,
so set-up, the region's own entry and the stream's first and last events cancel.

A variant switches one fast path off the way its equivalence test does: the general path
monkeypatched in for the run, never a production option. ``REGIONS_JSON``: where the list of
regions (variant, path, events), in dump order, is written. ``--dry``: no callgrind (the smoke
test); the regions still run.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from .upstream import blocks

# (label, client path, upstream protocol, client protocol, model): a route per translated pair;
# a model no route matches is observed only.
PATHS: tuple[tuple[str, str, str, str], ...] = (
    ("observe anthropic_messages", "/v1/messages", "anthropic_messages", "observe"),
    ("observe openai_chat", "/v1/chat/completions", "openai_chat", "observe"),
    ("observe openai_responses", "/v1/responses", "openai_responses", "observe"),
    ("anthropic_messages -> openai_chat", "/v1/chat/completions", "anthropic_messages", "to-anthropic"),
    ("anthropic_messages -> openai_responses", "/v1/responses", "anthropic_messages", "to-anthropic"),
    ("openai_chat -> anthropic_messages", "/v1/messages", "openai_chat", "to-chat"),
    ("openai_chat -> openai_responses", "/v1/responses", "openai_chat", "to-chat"),
    ("openai_responses -> anthropic_messages", "/v1/messages", "openai_responses", "to-responses"),
    ("openai_responses -> openai_chat", "/v1/chat/completions", "openai_responses", "to-responses"),
)

_ROUTES = "".join(
    f'[[route]]\nname = "{model}-{i}"\nmatch = {{ path = "{path}", model = "{model}" }}\n'
    f'upstream = "http://127.0.0.1:9/v1"\nprotocol = "{protocol}"\n\n'
    for i, (model, protocol) in enumerate(
        (
            ("to-anthropic", "anthropic_messages"),
            ("to-chat", "openai_chat"),
            ("to-responses", "openai_responses"),
        )
    )
    for path in ("/v1/messages", "/v1/chat/completions", "/v1/responses")
)

PACE = 0.02  # seconds between two reads, as in the paced run
WARM = 40  # events of the warm-up stream before each measured pair


def _body(path: str, model: str) -> bytes:
    if path == "/v1/messages":
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
        }
    elif path == "/v1/chat/completions":
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    else:
        body = {"model": model, "input": "hi"}
    return orjson.dumps({**body, "stream": True})


# -- the variants: one fast path switched off each ------------------------------------------------


@contextlib.contextmanager
def _patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    old = owner.__dict__[name]
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


def _no_fast(cls: Any) -> Callable[[], contextlib.AbstractContextManager[None]]:
    """The grammar's ``_fast`` declines every event: ``GrammarBase.observe`` takes the general path."""

    def fast(self: Any, name: Any, obj: Any, now: float) -> bool:
        return False

    return lambda: _patched(cls, "_fast", fast)


def _carrier_general() -> contextlib.AbstractContextManager[None]:
    """Every read through ``StreamCarrier._chunk`` (tests/mitm/test_carrier_hot_path.py's reference)."""
    from proxai.pipeline.carrier import StreamCarrier

    def feed(self: Any, chunk: bytes, now: float | None = None) -> list[bytes]:
        if now is None:
            now = self.clock()
        out = self._end(now) if chunk == b"" else self._chunk(chunk, now)
        out = [b for b in out if b]
        sent = sum(len(b) for b in out)
        self.client_bytes += sent
        if sent and self.kept is not None:
            self.kept.add_read(out, sent, now)
        return out

    return _patched(StreamCarrier, "feed", feed)


def _scanner_general() -> contextlib.AbstractContextManager[None]:
    """``SseScanner.feed_payloads`` as ``feed``'s events (tests/hardening/test_sse_fuzz.py compares
    the two)."""
    from proxai.core.sse import SseScanner, payloads_of

    def feed_payloads(self: Any, data: bytes) -> Any:
        return payloads_of(self.feed(data))

    return _patched(SseScanner, "feed_payloads", feed_payloads)


def _guard_every_chunk() -> contextlib.AbstractContextManager[None]:
    """The guard without its shortcut (the carrier skips ``FlowGuard.on_chunk`` for a read before
    ``Accum.quiet_until``): every chunk judged in full (tests/guard/test_guard_timer_skip.py's
    reference judges every chunk)."""
    from proxai.mitm.guard_addon import FlowGuard
    from proxai.protocols.common import LOOK

    shortcut = FlowGuard.__dict__["on_chunk"]

    def on_chunk(self: Any, carrier: Any, events: int, now: float) -> Any:
        try:
            return shortcut(self, carrier, events, now)
        finally:
            self._acc.quiet_until = LOOK  # never "nothing to look at before then": no read skipped

    return _patched(FlowGuard, "on_chunk", on_chunk)


def _no_lean() -> contextlib.AbstractContextManager[None]:
    """The Anthropic grammar reads every payload whole (``GrammarBase._lean`` declines every one;
    tests/observe/test_lean_reading.py compares the two)."""
    from proxai.protocols.anthropic import AnthropicGrammar
    from proxai.protocols.common import GrammarBase

    return _patched(AnthropicGrammar, "_lean", GrammarBase._lean)


def variants() -> dict[str, Callable[[], contextlib.AbstractContextManager[None]]]:
    """Fast path -> a context manager that switches it off (its general path patched in)."""
    from proxai.protocols.anthropic import AnthropicGrammar
    from proxai.protocols.chat import ChatGrammar
    from proxai.protocols.responses import ResponsesGrammar

    return {
        "carrier hot read": _carrier_general,
        "scanner payload path": _scanner_general,
        "anthropic lean reading": _no_lean,
        "anthropic _fast": _no_fast(AnthropicGrammar),
        "chat _fast": _no_fast(ChatGrammar),
        "responses _fast": _no_fast(ResponsesGrammar),
        "guard chunk shortcut": _guard_every_chunk,
    }


# Option variants: the same code with default options changed (not a fast path switched off):
# what an option's work costs per event, e.g. the kept body (proxai_keep_body).
OPTIONS: dict[str, dict[str, Any]] = {"keep body off": {"proxai_keep_body": False}}


@contextlib.contextmanager
def _options(**changes: Any) -> Iterator[None]:
    from mitmproxy import ctx

    old = {k: getattr(ctx.options, k) for k in changes}
    ctx.options.update(**changes)
    try:
        yield
    finally:
        ctx.options.update(**old)


# The upstream protocol whose paths a fast path serves (the others: every path).
SERVES = {
    "anthropic lean reading": "anthropic_messages",
    "anthropic _fast": "anthropic_messages",
    "chat _fast": "openai_chat",
    "responses _fast": "openai_responses",
    "carrier hot read": "observe",  # uncompressed pass-through only
}


def served(variant: str) -> list[str]:
    """The paths (``PATHS`` labels) ``variant``'s fast path serves."""
    what = SERVES.get(variant)
    return [p[0] for p in PATHS if what is None or what in (p[2], p[3])]


# -- the regions ----------------------------------------------------------------------------------


class _Time:
    """The clock's value: ``functools.partial(getattr, t, "now")`` reads it in C, as cheaply as
    ``time.monotonic`` (a Python ``__call__`` would add its own cost to every read)."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 1000.0


_State = tuple[Callable[[bytes], Any], _Time, Callable[[], Any]]


def _read(state: _State, block: bytes) -> _State:
    """One read at the next tick of the clock; ``b""``: the end of the message, then the flow's
    response hook (``end``): the end's work per read (the kept body's marks, the summary) is counted
    with the reads."""
    stream, t, end = state
    t.now += PACE
    stream(block)
    if not block:
        end()
    return state


def _flow(addon: Any, path: str, model: str) -> tuple[Any, Callable[[bytes], Any]]:
    from mitmproxy import http
    from mitmproxy.test import tflow, tutils

    req = tutils.treq(method=b"POST", path=path.encode(), content=_body(path, model))
    req.headers["content-type"] = "application/json"
    f = tflow.tflow(req=req)
    addon.request(f)
    assert f.response is None, "the request was refused"
    f.response = tutils.tresp(
        status_code=200, headers=http.Headers(content_type="text/event-stream"), content=None
    )
    addon.responseheaders(f)
    stream = f.response.stream
    assert callable(stream), "no stream callable installed"
    return f, stream


def run(events: int, names: list[str]) -> list[tuple[str, str, int]]:
    """Every region, in the order of callgrind's dumps: (variant, path, events)."""
    from mitmproxy.test import taddons

    from proxai.mitm.addon import ProxAI

    table = variants()
    unknown = [n for n in names if n != "all on" and n not in table and n not in OPTIONS]
    if unknown:
        raise SystemExit(f"unknown variant(s): {unknown}; known: {sorted(table)}")
    regions: list[tuple[str, str, int]] = []
    with tempfile.TemporaryDirectory(prefix="proxai-bench-fp-") as tmp:
        routes = Path(tmp) / "routes.toml"
        routes.write_text(_ROUTES)
        addon = ProxAI()
        t = _Time()
        addon.clock = functools.partial(getattr, t, "now")

        async def stream_once(path: str, model: str, bl: tuple[bytes, ...], label: str) -> None:
            t.now = float(int(time.monotonic())) + 100.0  # the guard's timers stay in the future
            f, stream = _flow(addon, path, model)
            functools.reduce(_read, (*bl, b""), (stream, t, functools.partial(addon.response, f)))
            meta = f.metadata["proxai"]
            assert meta["outcome"] == "completed", (label, meta["outcome"])
            assert ("translation" in meta) == (model != "observe"), label
            # a body not kept ends empty (the visibility part of the response hook, as in mitmdump)
            assert bool(f.response.raw_content) == addon.keep_body, label
            await asyncio.sleep(0)  # the loop drops the cancelled timers

        async def main() -> None:
            # No collection while counting: the collector's runs would land in some regions and
            # not others. The garbage of a few hundred flows stays (a few MB).
            gc.collect()
            gc.disable()
            for n in (events, 2 * events):  # the harness alone: ``_read`` around a stream that does nothing
                functools.reduce(_read, (*blocks("openai_chat", n), b""), (len, t, list))
                regions.append(("harness", "harness", len(blocks("openai_chat", n))))
            for name in names:
                switch = (
                    _options(**OPTIONS[name])
                    if name in OPTIONS
                    else table[name]()
                    if name != "all on"
                    else contextlib.nullcontext()
                )
                with switch:
                    for label, path, upstream, model in PATHS:
                        # A first stream warms the code up (Python specializes its bytecode as it
                        # runs): it is counted but not used. Then the two measured ones.
                        for i, n in enumerate((min(WARM, events), events, 2 * events)):
                            bl = blocks(upstream, n)
                            await stream_once(path, model, bl, label)
                            regions.append((name if i else "warm-up", label, len(bl)))

        with taddons.context(addon) as ctx:  # type: ignore[no-untyped-call]
            ctx.configure(addon, proxai_diagnostics_dir=str(Path(tmp) / "diag"), proxai_routes=str(routes))
            asyncio.run(main())
    return regions


def main() -> None:
    args = sys.argv[1:]
    events, out, names = int(args[0]), Path(args[1]), args[2:] or ["all on"]
    regions = run(events, names)
    out.write_text(json.dumps(regions))


if __name__ == "__main__":
    main()
