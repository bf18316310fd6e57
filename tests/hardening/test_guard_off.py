"""``proxai_guard=false`` is pure observe-only: a stream the guard would end
(a tool call declared done with invalid JSON arguments, cut mid-``data:`` line) reaches the client as
exactly the upstream's bytes through a real mitmdump, and its outcome is still recorded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.harness import TEST_HEADER, Mitmdump, proxai_meta, running_mitmdump, tag

from .replay import Replay
from .test_cut_in_data import BODY

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def mitm_guard_off(replay: Replay, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    with running_mitmdump(
        replay.url, workdir=tmp_path_factory.mktemp("guard-off"), options={"proxai_guard": False}
    ) as md:
        yield md


@pytest.mark.parametrize("chunk", [1, 37, len(BODY)])
def test_guard_off_passes_exactly_the_upstream_bytes(
    replay: Replay, mitm_guard_off: Mitmdump, chunk: int
) -> None:
    md = mitm_guard_off
    token = replay.register(BODY, chunk=chunk)
    t = tag()
    with md.http_client() as c:
        r = c.post(
            md.url + "/v1/messages",
            json={"model": "m", "stream": True},
            headers={"x-replay": token, TEST_HEADER: t, "accept-encoding": "gzip"},
        )
    assert r.status_code == 200 and r.content == BODY
    meta = proxai_meta(md.wait_flow(t))
    assert "guard" not in meta.get("extra", {})
    assert meta["carrier"]["client_bytes"] == meta["carrier"]["upstream_bytes"] == len(BODY)
    assert meta["outcome"] == "completed"
    assert meta["tool_calls"][0]["arguments_valid_json"] is False
