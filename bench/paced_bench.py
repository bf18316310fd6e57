"""Paced end to end in scheduler CPU: plain mitmdump, mitmdump with a stream callback that only
returns the chunk (``identity``, ``bench/identity_addon.py``) and mitmdump with ProxAI (default
options: the body kept, the guard on), same upstream bytes, alternating rounds, best of three.

The upstream (``bench.upstream``) writes every stream in 256-byte pieces 1 ms apart, 6 streams at
once, so each read of mitmdump carries about one piece, cut anywhere in an event, as a slow LLM API
or a TLS record boundary cuts it. Four sets of streams, each measured in every mitmdump started:

- ``bench, observe-only``: the generated streams of ``bench.streams``, the three protocols in turn;
- ``bench, anthropic client on chat upstream``: an Anthropic Messages client routed to a Chat
  upstream (a route of ``proxai_routes``): the addon observes the Chat stream and translates it;
  plain and identity carry the same Chat stream;
- ``real, observe-only``: every recording of tests/fixtures/real (their key orders, ``obfuscation``
  fields and padding as recorded), 6 at a time, each on its protocol's path;
- ``real, anthropic client on chat upstream``: the Chat recordings through the same route.

The figure is the mitmdump process's CPU seconds while a set runs (``procs.cpu_seconds``:
``/proc/PID/task/*/schedstat``), the variants' ratios to plain in the best round of each, and the
ratio within every round (the variants alternate, so a round's three see the same machine).
mitmdump runs alone on one CPU where there are two or more (``procs.cpu_layout``).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import client, procs, streams, upstream

VARIANTS = ("plain", "identity", "addon")
IDENTITY = Path(__file__).resolve().parent / "identity_addon.py"
PIECE = 256
INTERVAL_MS = 1.0
CONCURRENCY = 6
ROUTED_MODEL = "bench-on-chat"
_DIRS = {"anthropic": "anthropic_messages", "chat": "openai_chat", "responses": "openai_responses"}


def corpus(quick: bool, only: str | None = None) -> list[tuple[str, str]]:
    """(protocol, recording relative to tests/fixtures/real), every recording (a few per protocol when
    ``quick``); ``only``: one protocol's."""
    out: list[tuple[str, str]] = []
    for d, protocol in _DIRS.items():
        if only is not None and protocol != only:
            continue
        names = sorted(p.name for p in (upstream.REAL / d).glob("*.sse"))
        out += [(protocol, f"{d}/{n}") for n in (names[:4] if quick else names)]
    return out


@dataclass
class Job:
    """One request: the client's protocol (its path), the upstream's headers, the model."""

    protocol: str
    headers: dict[str, str]
    model: str = "bench-model"


@dataclass
class Set:
    name: str
    routed: bool
    jobs: list[Job]
    upstream_bytes: int
    events: int


def _paced(extra: dict[str, str]) -> dict[str, str]:
    return {"x-bench-piece": str(PIECE), "x-bench-interval-ms": f"{INTERVAL_MS:g}", **extra}


def sets(quick: bool) -> list[Set]:
    events = 300 if quick else 1500
    gen = [streams.PROTOCOLS[i % 3] for i in range(CONCURRENCY)]

    def size(p: str) -> tuple[int, int]:
        bl = upstream.blocks(p, events)
        return sum(map(len, bl)), len(bl)

    chat_n = size("openai_chat")
    real = corpus(quick)
    real_chat = corpus(quick, "openai_chat")

    def rec(files: list[tuple[str, str]]) -> tuple[int, int]:
        datas = [upstream.recorded(f) for _, f in files]
        return sum(map(len, datas)), sum(d.count(b"\n\n") for d in datas)

    return [
        Set(
            "bench, observe-only",
            False,
            [Job(p, _paced({"x-bench-events": str(events)})) for p in gen],
            sum(size(p)[0] for p in gen),
            sum(size(p)[1] for p in gen),
        ),
        Set(
            "bench, anthropic client on chat upstream",
            True,
            [
                Job("anthropic_messages", _paced({"x-bench-events": str(events)}), ROUTED_MODEL)
                for _ in range(CONCURRENCY)
            ],
            chat_n[0] * CONCURRENCY,
            chat_n[1] * CONCURRENCY,
        ),
        Set("real, observe-only", False, [Job(p, _paced({"x-bench-file": f})) for p, f in real], *rec(real)),
        Set(
            "real, anthropic client on chat upstream",
            True,
            [Job("anthropic_messages", _paced({"x-bench-file": f}), ROUTED_MODEL) for _, f in real_chat],
            *rec(real_chat),
        ),
    ]


def routes_toml(upstream_url: str) -> str:
    return (
        f'[[route]]\nname = "bench-on-chat"\nmatch = {{ path = "/v1/messages", model = "{ROUTED_MODEL}" }}\n'
        f'upstream = "{upstream_url}/v1"\nprotocol = "openai_chat"\n'
    )


async def _run_jobs(url: str, jobs: list[Job], routed_here: bool) -> tuple[int, list[str]]:
    """Run ``jobs`` ``CONCURRENCY`` at a time; a routed job goes to the Chat path where nothing
    routes (plain, identity: the same upstream stream). Returns (client bytes, errors)."""
    queue = list(reversed(jobs))
    total, errors = 0, []

    async def worker() -> None:
        nonlocal total
        while queue:
            j = queue.pop()
            protocol = j.protocol if routed_here or j.model != ROUTED_MODEL else "openai_chat"
            try:
                r = await client.stream(url, protocol, j.headers, model=j.model)
            except Exception as exc:  # counted, the set goes on
                errors.append(repr(exc))
                continue
            if r.status != 200:
                errors.append(f"status {r.status}")
            total += r.body_bytes

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return total, errors


@dataclass
class Measure:
    cpu: list[float] = field(default_factory=list)  # CPU seconds per round
    client_bytes: int = 0
    errors: list[str] = field(default_factory=list)


def run(quick: bool, rounds: int | None = None) -> dict[str, Any]:
    rounds = rounds or (1 if quick else 3)
    layout = procs.cpu_layout()
    md_cpus, rest = layout if layout else (None, None)
    before = os.sched_getaffinity(0)
    the_sets = sets(quick)
    res: dict[tuple[str, str], Measure] = {(v, s.name): Measure() for v in VARIANTS for s in the_sets}
    logs: dict[str, str] = {}
    if rest:
        os.sched_setaffinity(0, rest)
    up = procs.start_upstream(rest)
    conf = Path(tempfile.mkdtemp(prefix="proxai-bench-paced-"))
    routes = conf / "routes.toml"
    routes.write_text(routes_toml(up.url))
    try:
        for _ in range(rounds):
            for v in VARIANTS:
                if v == "addon":
                    md = procs.start_mitmdump(
                        up.url, addon=True, extra=["--set", f"proxai_routes={routes}"], cpus=md_cpus
                    )
                elif v == "identity":
                    md = procs.start_mitmdump(up.url, addon=False, extra=["-s", str(IDENTITY)], cpus=md_cpus)
                else:
                    md = procs.start_mitmdump(up.url, addon=False, cpus=md_cpus)
                try:
                    warm = [Job(p, _paced({"x-bench-events": "60"})) for p in streams.PROTOCOLS]
                    warm.append(Job("anthropic_messages", _paced({"x-bench-events": "60"}), ROUTED_MODEL))
                    asyncio.run(_run_jobs(md.url, warm, v == "addon"))
                    for s in the_sets:
                        m = res[(v, s.name)]
                        cpu0 = procs.cpu_seconds(md.pid)
                        nbytes, errs = asyncio.run(_run_jobs(md.url, s.jobs, v == "addon"))
                        m.cpu.append(procs.cpu_seconds(md.pid) - cpu0)
                        m.client_bytes, m.errors = nbytes, m.errors + errs
                    if "Traceback" in md.log():
                        logs[v] = md.log()[-2000:]
                finally:
                    md.stop()
    finally:
        up.stop()
        os.sched_setaffinity(0, before)
    return {
        "rounds": rounds,
        "sets": the_sets,
        "res": res,
        "tracebacks": logs,
        "layout": "the scheduler places every process"
        if layout is None
        else f"mitmdump on CPU {sorted(layout[0])}, upstream and clients on CPU {sorted(layout[1])}",
    }


def ratios(r: dict[str, Any], name: str) -> dict[str, Any]:
    """Best-of-rounds CPU per variant, ratios to plain, and the per-round ratios."""
    res = r["res"]
    best = {v: min(res[(v, name)].cpu) for v in VARIANTS}
    per_round = {
        v: sorted(a / p for a, p in zip(res[(v, name)].cpu, res[("plain", name)].cpu, strict=True))
        for v in ("identity", "addon")
    }
    return {"best": best, "per_round": per_round}


def report(r: dict[str, Any]) -> list[str]:
    lines = [
        f"{CONCURRENCY} concurrent streams, {PIECE}-byte pieces {INTERVAL_MS:g} ms apart, reverse mode; "
        f"{r['layout']}; mitmdump CPU seconds (schedstat) while each set runs, best of {r['rounds']} "
        "alternating rounds; ProxAI with default options (body kept, guard on).",
        "",
        "| set | upstream MB | events | plain CPU s | identity / plain | addon / plain "
        "| addon / plain, every round | addon over identity, us per event |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in r["sets"]:
        x = ratios(r, s.name)
        b = x["best"]
        every = ", ".join(f"{q:.2f}" for q in x["per_round"]["addon"])
        lines.append(
            f"| {s.name} | {s.upstream_bytes / 1e6:.2f} | {s.events:,} | {b['plain']:.3f} "
            f"| {b['identity'] / b['plain']:.3f} | **{b['addon'] / b['plain']:.3f}** | {every} "
            f"| {(b['addon'] - b['identity']) / s.events * 1e6:.1f} |"
        )
    errs = {k: m.errors for k, m in r["res"].items() if m.errors}
    for (v, name), e in errs.items():
        lines.append(f"\n{v}, {name}: {len(e)} errors, e.g. {sorted(set(e))[:3]}")
    for v, log in r["tracebacks"].items():
        lines.append(f"\n{v}: traceback in the mitmdump log:\n{log}")
    return lines
