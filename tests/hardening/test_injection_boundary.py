"""The guard's injected error after an upstream chunk that ends inside an event (issue 7 found it).

When the guard injects on the data-driven path right after a chunk that stopped mid-event, the
injected ``event: error`` must not be glued onto the partial upstream line (it was:
``event: messaevent: error``, so the Anthropic SDK saw an unknown event and returned a final message
with ``stop_reason=None``, the guard's error lost). The client must fail with the guard's message.
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
    cut = BODY.index(b"event: message_delta") + 12  # the chunk with content_block_stop ends mid-event
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
