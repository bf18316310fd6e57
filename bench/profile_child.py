"""Where the addon's per-read work goes, by function: the real addon driven as mitmdump drives it for
a paced stream (``bench/fastpath_child.py``'s harness: default options, one SSE event per read, the
clock stepping 20 ms per read), under ``cProfile``, each function's own time (``tottime``) as a share
of the addon's.

``python -m bench.profile_child [EVENTS] [PATH_LABEL ...]`` (default: 2000 events, one observe-only
path per protocol and the Anthropic client on a Chat upstream)

cProfile adds a fixed cost to every call, so functions called per event weigh more than they do
unprofiled; read the ranking and the shares, not the times (docs/performance.md, "Paced end to
end").
"""

from __future__ import annotations

import asyncio
import cProfile
import functools
import pstats
import sys
import tempfile
import time
from pathlib import Path

from . import fastpath_child as fc
from .upstream import blocks

DEFAULT = (
    "observe anthropic_messages",
    "observe openai_chat",
    "observe openai_responses",
    "openai_chat -> anthropic_messages",
)


def _no_end() -> None:
    """``fastpath_child._read``'s end of the message: this profile reads the end itself, unprofiled."""


def profile(events: int, labels: list[str], top: int = 8) -> dict[str, list[tuple[str, float, int]]]:
    """Per path label: (function, share of the addon's own time, calls per event), the ``top``."""
    from mitmproxy.test import taddons

    from proxai.mitm.addon import ProxAI

    paths = {p[0]: p for p in fc.PATHS}
    out: dict[str, list[tuple[str, float, int]]] = {}
    with tempfile.TemporaryDirectory(prefix="proxai-bench-prof-") as tmp:
        routes = Path(tmp) / "routes.toml"
        routes.write_text(fc._ROUTES)
        addon = ProxAI()
        t = fc._Time()
        addon.clock = functools.partial(getattr, t, "now")

        async def one(label: str, n: int, prof: cProfile.Profile | None) -> None:
            _, path, upstream, model = paths[label]
            t.now = float(int(time.monotonic())) + 100.0
            f, stream = fc._flow(addon, path, model)
            bl = blocks(upstream, n)
            if prof is not None:
                prof.enable()
            functools.reduce(fc._read, bl, (stream, t, _no_end))  # the end is read below
            if prof is not None:
                prof.disable()
            stream(b"")
            addon.response(f)
            await asyncio.sleep(0)

        async def main() -> None:
            for label in labels:
                await one(label, 200, None)  # warm-up
                prof = cProfile.Profile()
                await one(label, events, prof)
                st = pstats.Stats(prof)
                rows = []
                total = 0.0
                for (file, line, fn), (_cc, nc, tt, _ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
                    if fn == "_read" or "reduce" in fn or "disable" in fn:
                        continue
                    total += tt
                    where = Path(file).name if file != "~" else ""
                    rows.append((f"{where}:{line} {fn}" if where else fn, tt, nc))
                rows.sort(key=lambda r: -r[1])
                n = len(blocks(paths[label][2], events))
                out[label] = [(name, tt / total, round(nc / n)) for name, tt, nc in rows[:top]]

        with taddons.context(addon) as ctx:  # type: ignore[no-untyped-call]
            ctx.configure(addon, proxai_diagnostics_dir=str(Path(tmp) / "diag"), proxai_routes=str(routes))
            asyncio.run(main())
    return out


def main() -> None:
    args = sys.argv[1:]
    events = int(args[0]) if args else 2000
    labels = args[1:] or list(DEFAULT)
    for label, rows in profile(events, labels).items():
        print(f"\n{label}: the addon's own time by function (cProfile tottime), calls per event")
        for name, share, calls in rows:
            print(f"  {share * 100:5.1f}%  {calls:>3}/event  {name}")


if __name__ == "__main__":
    main()
