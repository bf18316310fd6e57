"""The addon's per-flow work on short streams, split by hook, counted in instructions: the real addon
(``ProxAI`` under ``mitmproxy.test.taddons``, default options) driven as mitmdump drives it over the
real corpus (the recordings of ``tests/fixtures/real``, cut in the paced run's 256-byte pieces).

``python -m bench.flow_child REGIONS_JSON [--callgrind] [--reads] [--profile] [--every N]``, run
under callgrind by ``python -m bench.flow_instructions`` (which reads the dumps and prints the table).
``--profile``: no callgrind, cProfile over the counted regions instead (which functions the hooks
spend on); ``--every N``: every N-th recording only; ``--reads``: count the stream reads too.

Two sets, as in the paced run (``bench/paced_bench.py``): ``real, observe-only`` (each recording on
its protocol's path) and ``real, anthropic client on chat upstream`` (the Chat recordings through a
``proxai_routes`` route). Each set runs twice: once not counted (the warm-up: Python specializes its
bytecode, the price table and the pydantic models are built on first use, per-model caches fill), then
counted, one region per step over every flow of the set: the ``request`` hook, the
``responseheaders`` hook, the stream reads (each 256-byte piece one call of the stream callable
mitmdump would call, the clock stepping 20 ms per read; counted with ``--reads``), the end of the
body (the stream callable called with ``b""``: the summary is made there), the ``response`` hook.
Hooks go through mitmproxy's addon manager (``invoke_addon_sync``), so the child addons' hooks (guard,
faults, replay, visibility) run as in mitmdump. A region is one ``functools.reduce`` call (callgrind
counts only inside it, ``instructions_bench.regions_callgrind``); with ``--callgrind`` the child also
turns callgrind's instrumentation on for each region and off after it (``callgrind_control -i``,
started with ``--instr-atstart=no``), so what is not counted runs several times faster. A last pair
of regions is the harness alone (the same reduce over the flows and over the pieces with nothing
called), subtracted from each region.
"""

from __future__ import annotations

import asyncio
import cProfile
import functools
import gc
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import fastpath_child as fc
from . import paced_bench, upstream

HOOKS = ("request", "responseheaders", "reads", "end of body", "response")
ROUTED = "bench-on-chat"
SETS = ("real, observe-only", "real, anthropic client on chat upstream")
_PATH = {
    "anthropic_messages": "/v1/messages",
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
}
_ROUTES = (
    f'[[route]]\nname = "bench-on-chat"\nmatch = {{ path = "/v1/messages", model = "{ROUTED}" }}\n'
    'upstream = "http://127.0.0.1:9/v1"\nprotocol = "openai_chat"\n'
)


def jobs(name: str, every: int = 1) -> list[tuple[str, str, bytes]]:
    """(client path, model, recorded bytes) of every flow of set ``name`` (every ``every``-th
    recording: a quicker run)."""
    if name == SETS[0]:
        return [
            (_PATH[p], "bench-model", upstream.recorded(f)) for p, f in paced_bench.corpus(False)[::every]
        ]
    return [
        ("/v1/messages", ROUTED, upstream.recorded(f))
        for _, f in paced_bench.corpus(False, "openai_chat")[::every]
    ]


def pieces(data: bytes) -> list[bytes]:
    return [data[i : i + paced_bench.PIECE] for i in range(0, len(data), paced_bench.PIECE)]


def run(
    out: Path, *, profile: bool, every: int = 1, callgrind: bool = False, count_reads: bool = False
) -> None:
    from mitmproxy import http
    from mitmproxy.proxy.layers.http import _hooks as hooks
    from mitmproxy.test import taddons, tflow, tutils

    from proxai.mitm.addon import ProxAI
    from proxai.outputs import cost

    regions: list[dict[str, Any]] = []
    profs: dict[str, cProfile.Profile] = {}
    with tempfile.TemporaryDirectory(prefix="proxai-bench-flow-") as tmp:
        routes = Path(tmp) / "routes.toml"
        routes.write_text(_ROUTES)
        addon = ProxAI()
        t = fc._Time()
        addon.clock = functools.partial(getattr, t, "now")

        def invoke(hook: Callable[[Any], Any]) -> Callable[[None, Any], None]:
            def one(_: None, f: Any) -> None:
                manager.invoke_addon_sync(addon, hook(f))

            return one

        def answer(_: None, item: tuple[Any, Any]) -> None:
            f, f.response = item
            manager.invoke_addon_sync(addon, hooks.HttpResponseHeadersHook(f))

        def reads(_: None, item: tuple[Any, list[bytes]]) -> None:
            f, ps = item
            stream = f.response.stream
            for p in ps:  # not a reduce: callgrind's region toggles at every reduce
                t.now += fc.PACE
                stream(p)

        def end(_: None, f: Any) -> None:
            t.now += fc.PACE
            f.response.stream(b"")

        def harness(_: None, item: tuple[Any, list[bytes]]) -> None:
            for p in item[1]:
                t.now += fc.PACE
                len(p)

        def region(what: str, fn: Callable[[None, Any], None], items: list[Any]) -> None:
            prof = profs.setdefault(what.rsplit(": ", 1)[-1], cProfile.Profile()) if profile else None
            if callgrind:
                _instrument(True)
            if prof is not None:
                prof.enable()
            functools.reduce(fn, items, None)
            if prof is not None:
                prof.disable()
            if callgrind:
                _instrument(False)
            regions.append({"region": what})

        def one_set(name: str, counted: bool) -> dict[str, Any]:
            flows = []
            for path, model, _ in todo[name]:
                req = tutils.treq(method=b"POST", path=path.encode(), content=fc._body(path, model))
                req.headers["content-type"] = "application/json"
                flows.append(tflow.tflow(req=req))
            items = list(zip(flows, [pieces(d) for _, _, d in todo[name]], strict=True))
            answers = [  # made before the region: mitmproxy's HTTP layer makes them in mitmdump
                (
                    f,
                    tutils.tresp(
                        status_code=200, headers=http.Headers(content_type="text/event-stream"), content=None
                    ),
                )
                for f in flows
            ]
            t.now = float(int(time.monotonic())) + 100.0  # the guard's timers stay in the future
            steps: list[tuple[str, Callable[[None, Any], None], list[Any]]] = [
                ("request", invoke(hooks.HttpRequestHook), flows),
                ("responseheaders", answer, answers),
                ("reads", reads, items),
                ("end of body", end, flows),
                ("response", invoke(hooks.HttpResponseHook), flows),
            ]
            for hook, fn, xs in steps:
                if counted and (hook != "reads" or count_reads):
                    region(f"{name}: {hook}", fn, xs)
                else:
                    for x in xs:
                        fn(None, x)
            for f in flows:
                meta = f.metadata["proxai"]
                assert meta.get("outcome"), name  # recorded: every flow went through every hook
                assert f.response.raw_content is not None
            return {
                "set": name,
                "flows": len(flows),
                "reads": sum(len(ps) for _, ps in items),
                "events": sum(d.count(b"\n\n") for _, _, d in todo[name]),
            }

        todo = {name: jobs(name, every) for name in SETS}
        sets: list[dict[str, Any]] = []
        with taddons.context(addon) as ctx:  # type: ignore[no-untyped-call]
            manager = ctx.master.addons
            ctx.configure(addon, proxai_diagnostics_dir=str(Path(tmp) / "diag"), proxai_routes=str(routes))
            cost.warm()  # mitmdump loads it in a thread at ``running``

            async def main() -> None:
                gc.collect()
                gc.disable()  # no collection inside some regions and not others
                for name in SETS:
                    one_set(name, counted=False)
                    await asyncio.sleep(0)
                    sets.append(one_set(name, counted=True))
                    await asyncio.sleep(0)  # the loop drops the cancelled timers
                    gc.collect()
                # the harness alone: the same reduce over the flows and over the pieces
                items = [(None, pieces(d)) for _, _, d in todo[SETS[0]]]
                region("harness: per flow", lambda _, x: None, items)
                if count_reads:
                    region("harness: reads", harness, items)

            asyncio.run(main())
    out.write_text(json.dumps({"regions": regions, "sets": sets}))
    for hook, prof in profs.items():
        print(f"==== {hook}")
        st = pstats.Stats(prof)
        st.sort_stats("cumulative").print_stats(45)
        st.sort_stats("tottime").print_stats(25)


def _instrument(on: bool) -> None:
    """callgrind's instrumentation of this process on or off (it runs under valgrind)."""
    subprocess.run(
        ["callgrind_control", "-i", "on" if on else "off", str(os.getpid())], check=True, capture_output=True
    )


if __name__ == "__main__":
    args = sys.argv[2:]
    run(
        Path(sys.argv[1]),
        profile="--profile" in args,
        every=int(args[args.index("--every") + 1]) if "--every" in args else 1,
        callgrind="--callgrind" in args,
        count_reads="--reads" in args,
    )
