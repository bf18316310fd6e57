"""Mutated fixture streams through a REAL mitmdump in observe-only mode.

For every mutated stream: mitmdump stays up, the client receives exactly the upstream bytes,
the flow is recorded with a ProxAI summary, and a healthy stream running at the same time
through the same mitmdump arrives intact and completed. No traceback in mitmdump's log.

The one allowed difference is the guard's: when it injects an error and closes, the client gets a prefix of
the upstream bytes, the line ends that close a partial upstream event, and the guard's error
event, and the metadata says ``injected``.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.core.model import Outcome, Protocol
from proxai.core.sse import SseScanner
from tests.e2e.harness import PATHS, TEST_HEADER, Mitmdump, proxai_meta, tag

from .logcheck import assert_clean_log
from .mutate import PROTOCOLS, fixture_streams, metadata_safe, mutated_stream
from .replay import Replay

pytestmark = pytest.mark.e2e

OUTCOMES = {str(o) for o in Outcome}


# Where the guard's injected error starts, per client protocol (proxai.core.errors.shapes).
INJECTED_START = {
    Protocol.ANTHROPIC_MESSAGES: b"event: error\n",
    Protocol.OPENAI_CHAT: b'data: {"error":',
    Protocol.OPENAI_RESPONSES: b"event: error\n",
}


def post(client: httpx.Client, md: Mitmdump, protocol: Protocol, token: str, test_tag: str) -> httpx.Response:
    return client.post(
        md.url + PATHS[protocol],
        json={"model": "m", "stream": True},
        headers={"x-replay": token, TEST_HEADER: test_tag},
    )


def check_client_bytes(protocol: Protocol, upstream: bytes, got: bytes, meta: dict[str, Any]) -> None:
    if got == upstream:
        return
    guard = meta.get("extra", {}).get("guard")
    assert guard is not None and guard["injected"], f"client bytes differ without a guard injection: {meta}"
    k = got.rfind(INJECTED_START[protocol])
    assert k >= 0, got[-300:]
    # Before the error: exactly the upstream's bytes up to a block boundary (the guarded carrier
    # forwards whole events only and drops the unfinished one when it injects).
    assert got[:k] == upstream[:k], "the bytes before the injected error are not the upstream's"
    sc = SseScanner()
    sc.feed(got[:k])
    assert sc.pending_bytes == 0, (
        f"the injected error does not start on an event boundary: {got[k - 60 : k]!r}"
    )
    assert orjson.dumps(guard["message"])[1:-1] in got[k:]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_mutated_streams_through_mitmdump(protocol: Protocol, replay: Replay, mitm_replay: Mitmdump) -> None:
    md = mitm_replay
    healthy = max(fixture_streams(protocol), key=len)
    # A healthy stream that trickles (8-byte chunks, about 4 s) while the mutated ones go through.
    healthy_token = replay.register(healthy, chunk=8, gap=4.0 / (len(healthy) / 8))
    healthy_tag, mutated_tag = tag(), tag()
    healthy_result: list[httpx.Response] = []

    def run_healthy() -> None:
        with md.http_client() as c:
            healthy_result.append(post(c, md, protocol, healthy_token, healthy_tag))

    t = threading.Thread(target=run_healthy)
    t.start()
    results: dict[str, tuple[bytes, bytes]] = {}

    with md.http_client() as client:

        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(
            body=mutated_stream(protocol), chunk=st.integers(1, 700), status=st.sampled_from([200, 200, 500])
        )
        def one(body: bytes, chunk: int, status: int) -> None:
            token = replay.register(body, chunk=chunk, status=status)
            r = post(client, md, protocol, token, mutated_tag)
            results[token] = (body, r.content)
            assert r.status_code == status
            md.check_alive()

        one()
    t.join(60)
    assert healthy_result and healthy_result[0].status_code == 200
    assert healthy_result[0].content == healthy
    flows = md.wait_flows(mutated_tag, len(results))
    assert {f.request.headers["x-replay"] for f in flows} == set(results)
    for f in flows:
        meta = proxai_meta(f)
        metadata_safe(meta)
        assert meta["outcome"] in OUTCOMES
        assert meta["protocol"] == str(protocol)
        upstream, got = results[f.request.headers["x-replay"]]
        check_client_bytes(protocol, upstream, got, meta)
    hmeta = proxai_meta(md.wait_flow(healthy_tag))
    assert hmeta["outcome"] == "completed"
    assert hmeta["counts"]["bytes"] == len(healthy)
    assert_clean_log(md)
