"""What the views show of a replayed flow: its comment names the recorded flow, the details hold
the ``replay`` summary, and the read marks (up to 1,024 pairs) are never listed."""

from __future__ import annotations

from typing import Any

from proxai.outputs.verdict import comment_line
from proxai.outputs.view_text import details_lines

META: dict[str, Any] = {
    "schema": 1,
    "protocol": "anthropic_messages",
    "streaming": True,
    "outcome": "completed",
    "model": "claude",
    "stop_reason": "end_turn",
    "stop_class": "end_turn",
    "usage": {"input_tokens": 3, "output_tokens": 4},
    "tool_calls": [],
    "reads": [[10, 0.1], [20, 0.2]],
    "replay": {"replayed": True, "file": "run.flow", "flow_index": 2, "flow_id": "f2"},
}


def test_a_replayed_flow_in_the_views() -> None:
    assert "replayed from flow 2" in comment_line(META).split(" · ")
    details = details_lines(META)
    assert details == [
        "── details ──",
        "replay:",
        '  file: "run.flow"',
        '  flow_id: "f2"',
        "  flow_index: 2",
        "  replayed: true",
    ]
    assert not any("reads" in line for line in details)
    miss = {**META, "outcome": "error", "replay": {"replayed": False, "miss": "error", "message": "m"}}
    assert "replay miss" in comment_line(miss).split(" · ")
