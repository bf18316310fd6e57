"""The guard's injected error after an upstream chunk that ends INSIDE a ``data:`` line (issue 7).

``test_injection_boundary.py`` covers a chunk that ends inside the ``event:`` line. Here the chunk
before a data-driven injection ends inside the data line of ``message_delta``: before the fix the
client received ``data: {"type":"message_delta","del`` dispatched as a whole event and the Anthropic
SDK raised ``json.JSONDecodeError`` instead of the guard's message. The guarded pass-through carrier
now forwards whole events only and drops the held partial event when it injects, so the SDK raises
``APIStatusError`` with our message.
"""

from __future__ import annotations

import anthropic
import pytest

from tests.e2e.harness import TEST_HEADER, Mitmdump, proxai_meta, tag

from .replay import Replay

pytestmark = pytest.mark.e2e


def ev(name: str, data: str) -> bytes:
    return f"event: {name}\ndata: {data}\n\n".encode()


BODY = (
    ev(
        "message_start",
        '{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],'
        '"model":"claude-x","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}',
    )
    + ev(
        "content_block_start",
        '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1",'
        '"name":"write_file","input":{}}}',
    )
    + ev(
        "content_block_delta",
        '{"type":"content_block_delta","index":0,'
        '"delta":{"type":"input_json_delta","partial_json":"{\\"path\\": "}}',
    )
    + ev("content_block_stop", '{"type":"content_block_stop","index":0}')  # invalid JSON declared done
    + ev(
        "message_delta",
        '{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}',
    )
    + ev("message_stop", '{"type":"message_stop"}')
)


def test_guard_injection_after_a_chunk_that_ends_mid_event(replay: Replay, mitm_replay: Mitmdump) -> None:
    md = mitm_replay
    cut = BODY.index(b"event: message_delta") + 40  # inside the data line
    token = replay.register(BODY, chunk=cut)
    t = tag()
    client = anthropic.Anthropic(
        base_url=md.url, api_key="x", max_retries=0, default_headers={"x-replay": token, TEST_HEADER: t}
    )
    with (
        pytest.raises(anthropic.APIStatusError, match="not valid JSON"),
        client.messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as s,
    ):
        s.get_final_message()
    meta = proxai_meta(md.wait_flow(t))
    assert meta["extra"]["guard"]["injected"] is True
