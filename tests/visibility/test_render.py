"""proxai.render: the flow-list comment and markers, and request rendering edge cases."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxai import render, report
from proxai.model import Outcome, Protocol, StreamSummary, ToolCallInfo, Usage


def test_comment_completed() -> None:
    meta = {
        "protocol": "openai_chat",
        "outcome": "completed",
        "stop_reason": "tool_calls",
        "usage": {"input_tokens": 12, "output_tokens": 30},
        "tool_calls": [{"name": "a", "arguments_complete": True}, {"name": "b", "arguments_complete": True}],
    }
    assert (
        render.comment_line(meta)
        == "proxai openai_chat: completed, stop tool_calls, tokens 12 in/30 out, 2 tool calls"
    )


def test_comment_translated_unfinished_tool() -> None:
    meta = {
        "protocol": "openai_chat",
        "client_protocol": "anthropic_messages",
        "outcome": "unfinished_tool",
        "usage": {"input_tokens": None, "output_tokens": 4},
        "error": {"kind": "tool_stall", "status": None},
        "tool_calls": [{"name": "search", "arguments_complete": True}, {"name": "get_weather"}],
    }
    assert render.comment_line(meta) == (
        "proxai anthropic_messages<-openai_chat: unfinished_tool in get_weather, tool_stall, "
        "tokens ? in/4 out, 2 tool calls"
    )


def test_comment_http_error() -> None:
    meta = {
        "protocol": "openai_responses",
        "outcome": "error",
        "error": {"kind": "prompt_too_long", "status": 400},
    }
    assert render.comment_line(meta) == "proxai openai_responses: error, prompt_too_long (HTTP 400)"


def test_comment_is_one_line_from_a_summary() -> None:
    s = StreamSummary(Protocol.ANTHROPIC_MESSAGES, True, Outcome.CLOSED, usage=Usage(1, 2))
    line = render.comment_line(s.to_metadata())
    assert line == "proxai anthropic_messages: closed, tokens 1 in/2 out"
    assert "\n" not in line


@pytest.mark.parametrize(
    ("outcome", "kind", "marker"),
    [
        ("completed", None, ""),
        ("closed", None, ":warning:"),
        ("error", "rate_limited", ":red_circle:"),
        ("error", "idle_timeout", ":hourglass:"),
        ("unfinished_tool", "tool_stall", ":hourglass:"),
        (None, None, ""),
    ],
)
def test_markers(outcome: str | None, kind: str | None, marker: str) -> None:
    assert render.marker_for(outcome, kind) == marker


def test_markers_are_mitmproxy_emoji() -> None:
    from mitmproxy.utils import emoji

    for m in [*render.MARKERS.values(), render.GUARD_MARKER]:
        assert m == "" or m in emoji.emoji


def test_request_lines_odd_bodies() -> None:
    assert render.request_lines("openai_chat", [1, 2]) == [
        "ProxAI request · openai_chat",
        "(the body is not a JSON object)",
    ]
    body: dict[str, Any] = {
        "model": "m",
        "input": "just a string",
        "max_output_tokens": 50,
        "tools": [{"type": "web_search"}],
    }
    assert render.request_lines("openai_responses", body) == [
        "ProxAI request · openai_responses",
        "model: m · stream: false",
        "params: max_output_tokens 50",
        "── messages (1) ──",
        "[1] user:",
        "  just a string",
        "── tools (1) ──",
        "web_search (web_search)",
    ]


def test_chat_parts_and_images() -> None:
    body = {
        "model": "m",
        "stream": True,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                ],
            }
        ],
    }
    assert render.request_lines("openai_chat", body)[-3:] == ["[1] user:", "  what is this?", "  [image_url]"]


def test_invalid_tool_arguments_are_shown_raw() -> None:
    s = StreamSummary(
        Protocol.OPENAI_CHAT,
        True,
        Outcome.COMPLETED,
        tool_calls=[ToolCallInfo("c1", "f", arguments_complete=True, arguments_bytes=5, arguments="{oops")],
    )
    lines = render.tool_call_lines(s.to_metadata()["tool_calls"], s)
    assert lines == [
        "── tool call 1: f · id c1 · complete, invalid JSON · 5 bytes ──",
        "{oops",
        "(arguments are not valid JSON; shown as received)",
    ]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=12), kids, max_size=4),
    max_leaves=20,
)
KEYS = st.sampled_from(
    [
        "protocol",
        "outcome",
        "usage",
        "tool_calls",
        "error",
        "timing",
        "counts",
        "extra",
        "route",
        "client_protocol",
        "messages",
        "input",
        "system",
        "instructions",
        "tools",
        "content",
        "role",
        "type",
        "model",
        "stream",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    meta=st.dictionaries(KEYS, JSON, max_size=8),
    proto=st.sampled_from(["anthropic_messages", "openai_chat", "openai_responses", ""]),
)
def test_rendering_never_raises_on_odd_metadata_or_bodies(meta: dict[str, Any], proto: str) -> None:
    assert isinstance(render.comment_line(meta), str)
    assert all(isinstance(line, str) for line in render.flow_response_lines(meta, None, proto))
    assert all(isinstance(line, str) for line in render.flow_request_lines(meta, proto, meta))
    assert all(isinstance(line, str) for line in render.request_lines(proto, meta))
    diag = report.diagnostics_from(meta, None, b"tail")
    row = report.make_row(
        meta, index=1, flow_id="f", method="POST", url="http://h/v1/x?key=k", status=200, diagnostics=diag
    )
    assert all(isinstance(line, str) for line in report.table_lines([row]))
