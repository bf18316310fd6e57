"""The replayed stream both guard-injection boundary tests use (``test_injection_boundary.py``,
``test_cut_in_data.py``): an Anthropic tool call whose argument JSON is declared done while invalid,
so the data-driven guard injects right after the chunk that carries ``content_block_stop``; and the
one check both make (docs/design/guard.md: inject an SSE error
and close).
"""

from __future__ import annotations

import anthropic
import pytest

from tests.e2e.harness import TEST_HEADER, Mitmdump, proxai_meta, tag

from .replay import Replay


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


def guard_error_after_cut(replay: Replay, md: Mitmdump, cut: int) -> None:
    """Replay ``BODY`` with its first chunk ending at byte ``cut``: the Anthropic SDK raises the guard's
    message (not a JSON error, not a final message), and the flow says the guard injected."""
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
