"""Load: 200 concurrent streams through one mitmdump with the addon.

Two rounds of 200 concurrent streams (all three protocols, four scenarios with known outcomes)
through one mitmdump writing ``-w``. Every flow is read back with the right outcome; after the
second round mitmdump holds no more file descriptors and barely more memory than after the
first (a leak would grow with every round). Streams per second are printed, never asserted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from bench.procs import fd_count, status_kb

from tests.e2e.harness import PATHS, TEST_HEADER, Mitmdump, proxai_meta, running_mitmdump, tag

from .logcheck import assert_clean_log
from .mutate import PROTOCOLS

pytestmark = pytest.mark.e2e

N = 200
# scenario -> (outcome, number of tool calls)
SCENARIOS = {
    "text": ("completed", 0),
    "parallel_tools": ("completed", 2),
    "truncated": ("closed", 0),
    "error_midstream": ("error", 0),
}


@pytest.fixture(scope="module")
def load_mitm(fake: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    with running_mitmdump(fake.url, workdir=tmp_path_factory.mktemp("hard-load")) as md:
        yield md


async def _one(c: httpx.AsyncClient, md: Mitmdump, i: int, t: str) -> tuple[int, int]:
    protocol = PROTOCOLS[i % 3]
    scenario = list(SCENARIOS)[(i // 3) % len(SCENARIOS)]
    hdrs = {"x-proxai-scenario": scenario, TEST_HEADER: t, "x-load-index": str(i)}
    body = {"model": "m", "stream": True, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    async with c.stream("POST", md.url + PATHS[protocol], json=body, headers=hdrs) as r:
        n = 0
        async for piece in r.aiter_raw():
            n += len(piece)
        return r.status_code, n


async def _round(md: Mitmdump, t: str) -> list[tuple[int, int]]:
    limits = httpx.Limits(max_connections=N + 10, max_keepalive_connections=0)
    async with md.async_http_client(limits=limits) as c:
        return await asyncio.gather(*(_one(c, md, i, t) for i in range(N)))


def _settle(pid: int, baseline: int | None = None) -> int:
    """The fd count once connections are torn down (waits up to 10 s for it to stop falling)."""
    deadline = time.monotonic() + 10
    last = fd_count(pid)
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = fd_count(pid)
        if now == last and (baseline is None or now <= baseline):
            break
        last = now
    return fd_count(pid)


def test_200_concurrent_streams(load_mitm: Mitmdump, capsys: pytest.CaptureFixture[str]) -> None:
    md = load_mitm
    pid = md.proc.pid
    figures = []
    after: list[tuple[int, int]] = []
    for _ in range(2):
        t = tag()
        t0 = time.monotonic()
        results = asyncio.run(_round(md, t))
        elapsed = time.monotonic() - t0
        figures.append(N / elapsed)
        assert all(status == 200 for status, _ in results)
        flows = md.wait_flows(t, N, timeout=60)
        assert len(flows) == N
        for f in flows:
            i = int(f.request.headers["x-load-index"])
            scenario = list(SCENARIOS)[(i // 3) % len(SCENARIOS)]
            outcome, calls = SCENARIOS[scenario]
            meta = proxai_meta(f)
            assert meta["protocol"] == str(PROTOCOLS[i % 3])
            assert meta["outcome"] == outcome, (scenario, meta)
            assert len(meta["tool_calls"]) == calls
            assert meta["counts"]["bytes"] == results[i][1]
        fds = _settle(pid, after[0][0] if after else None)
        after.append((fds, status_kb(pid, "VmRSS")))
    (fd1, rss1), (fd2, rss2) = after
    assert fd2 <= fd1, f"file descriptors grew from {fd1} to {fd2} over a round of {N} streams"
    assert rss2 - rss1 < 24 * 1024, f"RSS grew {(rss2 - rss1) / 1024:.1f} MB over a round of {N} streams"
    md.check_alive()
    assert_clean_log(md)
    with capsys.disabled():
        print(
            f"\n[load] {N} concurrent streams x 2 rounds: {figures[0]:.0f} and {figures[1]:.0f} streams/s; "
            f"fds {fd1} -> {fd2}, RSS {rss1 / 1024:.0f} -> {rss2 / 1024:.0f} MB"
        )
