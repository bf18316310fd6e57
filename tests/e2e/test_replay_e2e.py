"""Server-replayed flows are observed too: mitmproxy serves them whole, without ``responseheaders``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .harness import anthropic_client, openai_client, proxai_meta, running_mitmdump, tag

pytestmark = pytest.mark.e2e

MESSAGES: Any = [{"role": "user", "content": "replay me"}]


def test_server_replay_is_observed(upstream: Any, tmp_path: Path) -> None:
    t1, t2 = tag(), tag()
    with running_mitmdump(
        upstream.url, workdir=tmp_path / "record", options={"store_streamed_bodies": True}
    ) as rec:
        with anthropic_client(rec, t1).messages.stream(
            model="parallel_tools", max_tokens=64, messages=MESSAGES
        ) as s:
            original = s.get_final_message()
        chat = openai_client(rec, t2).chat.completions.create(model="text", messages=MESSAGES)
        recorded = [proxai_meta(rec.wait_flow(t)) for t in (t1, t2)]
        flow_file = rec.flow_path

    t3, t4 = tag(), tag()
    with running_mitmdump(
        upstream.url, workdir=tmp_path / "replay", extra=["--server-replay", str(flow_file)]
    ) as rep:
        with anthropic_client(rep, t3).messages.stream(
            model="parallel_tools", max_tokens=64, messages=MESSAGES
        ) as s:
            replayed = s.get_final_message()
        chat2 = openai_client(rep, t4).chat.completions.create(model="text", messages=MESSAGES)
        f3, f4 = rep.wait_flow(t3), rep.wait_flow(t4)
    assert f3.is_replay == "response" and f4.is_replay == "response"
    assert replayed.id == original.id and chat2.id == chat.id
    m3, m4 = proxai_meta(f3), proxai_meta(f4)
    assert m3["outcome"] == "completed" and m3["protocol"] == "anthropic_messages"
    assert [c["id"] for c in m3["tool_calls"]] == [c["id"] for c in recorded[0]["tool_calls"]]
    assert m3["usage"] == recorded[0]["usage"] and m3["stop_reason"] == "tool_use"
    assert "carrier" not in m3  # served whole: observed by observe_body, not by a carrier
    assert m4["outcome"] == "completed" and m4["streaming"] is False
    assert m4["usage"] == recorded[1]["usage"]
