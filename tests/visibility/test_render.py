"""proxai.outputs.view_text: the flow-list comment and markers, and request rendering edge cases."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.core.model import Outcome, Protocol, StreamSummary, ToolCallInfo, Usage
from proxai.outputs import cost, report, verdict, view_request, view_text


def test_comment_completed() -> None:
    meta = {
        "protocol": "openai_chat",
        "model": "gpt-4.1",
        "outcome": "completed",
        "stop_reason": "tool_calls",
        "stop_class": "tool_use",
        "usage": {"input_tokens": 12, "output_tokens": 30},
        "tool_calls": [{"name": "a", "arguments_complete": True}, {"name": "b", "arguments_complete": True}],
    }
    assert verdict.comment_line(meta) == "completed (tool_calls) · chat gpt-4.1 · 12 in/30 out · 2 tool calls"
    assert verdict.marker_for(meta) == ""


def test_comment_translated_unfinished_tool() -> None:
    meta = {
        "protocol": "openai_chat",
        "client_protocol": "anthropic_messages",
        "outcome": "unfinished_tool",
        "usage": {"input_tokens": None, "output_tokens": 4},
        "error": {"kind": "tool_stall", "status": None},
        "tool_calls": [{"name": "search", "arguments_complete": True}, {"name": "get_weather"}],
    }
    assert verdict.comment_line(meta) == (
        "unfinished_tool in get_weather · anthropic<-chat · ? in/4 out · 2 tool calls"
    )


def test_comment_http_error() -> None:
    meta = {
        "protocol": "openai_responses",
        "outcome": "error",
        "error": {"kind": "prompt_too_long", "status": 400},
    }
    assert verdict.comment_line(meta) == "error: prompt_too_long (HTTP 400) · responses"


def test_comment_is_one_line_from_a_summary() -> None:
    s = StreamSummary(Protocol.ANTHROPIC_MESSAGES, True, Outcome.CLOSED, usage=Usage(1, 2))
    line = verdict.comment_line(s.to_metadata())
    assert line == "closed: no message_stop · anthropic · 1 in/2 out"
    assert "\n" not in line


@pytest.mark.parametrize(
    ("protocol", "stop", "stop_class"),
    [
        ("anthropic_messages", "max_tokens", "max_tokens"),
        ("anthropic_messages", "model_context_window_exceeded", "max_tokens"),
        ("openai_chat", "length", "max_tokens"),
        ("openai_responses", "max_output_tokens", "max_tokens"),
        ("openai_responses", "incomplete", "other"),
    ],
)
def test_truncation_never_looks_like_success(protocol: str, stop: str, stop_class: str) -> None:
    meta = {"protocol": protocol, "outcome": "completed", "stop_reason": stop, "stop_class": stop_class}
    assert verdict.verdict(meta) is verdict.Verdict.TRUNCATED
    assert verdict.marker_for(meta) == ":scissors:"
    assert verdict.comment_line(meta).startswith(f"truncated ({stop}) · ")
    assert f"TRUNCATED ({stop})" in verdict.dump_line(meta)


def test_translated_comment_gives_the_clients_stop_reason() -> None:
    """Anthropic client served by a Chat upstream: the upstream said ``stop`` / ``length``, the
    client got ``end_turn`` / ``max_tokens``."""
    meta = {
        "protocol": "openai_chat",
        "client_protocol": "anthropic_messages",
        "model": "gpt-4.1",
        "outcome": "completed",
        "stop_reason": "stop",
        "stop_class": "end_turn",
    }
    assert verdict.comment_line(meta) == "completed (end_turn) · anthropic<-chat gpt-4.1"
    meta |= {"stop_reason": "length", "stop_class": "max_tokens"}
    assert verdict.comment_line(meta) == "truncated (max_tokens) · anthropic<-chat gpt-4.1"
    meta |= {"client_protocol": "openai_responses"}
    assert verdict.comment_line(meta) == "truncated (max_output_tokens) · responses<-chat gpt-4.1"


def test_dump_line_has_every_fact() -> None:
    meta = {
        "protocol": "openai_chat",
        "model": "gpt-4.1",
        "outcome": "error",
        "error": {"kind": "overloaded", "status": None},
        "usage": {"input_tokens": 25, "output_tokens": None},
        "timing": {"first_token_s": 0.125, "total_s": 1.5},
    }
    assert (
        verdict.dump_line(meta)
        == "proxai chat gpt-4.1 · ERROR: overloaded · 25 in/? out · ttft 0.12s · 1.50s"
    )
    meta = {"protocol": "openai_chat", "outcome": "completed", "stop_reason": "stop", "timing": {}}
    assert verdict.dump_line(meta) == "proxai chat · completed (stop) · - tokens · ttft - · -"


def test_network_strings_are_terminal_safe() -> None:
    meta = {
        "protocol": "openai_chat",
        "model": "gpt\x1b]52;c;AAAA\x07\x1b[2J",
        "outcome": "completed",
        "stop_reason": "stop\r\nX",
    }
    for line in (verdict.comment_line(meta), verdict.dump_line(meta)):
        assert "\x1b" not in line and "\r" not in line and "\n" not in line and "\x07" not in line
        assert "gpt\\x1b]52;c;AAAA\\x07\\x1b[2J" in line


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
    meta = {"outcome": outcome, "error": {"kind": kind} if kind else None}
    assert verdict.marker_for(meta) == marker


def test_markers_are_mitmproxy_emoji() -> None:
    from mitmproxy.utils import emoji

    for m in [*verdict.MARKERS.values(), verdict.GUARD_MARKER, verdict.SDK_MARKER]:
        assert m == "" or m in emoji.emoji
    assert [m for m, _ in verdict.LEGEND] == [
        "(none)",
        *[m for m in verdict.MARKERS.values() if m],
        verdict.SDK_MARKER,
    ]


def test_wrap_keeps_every_character() -> None:
    line = "    " + " ".join(["word"] * 60) + " " + "x" * 250
    out = view_text.wrap([line, "short"])
    assert all(len(x) <= view_text.WIDTH for x in out) and out[-1] == "short"
    assert out[0].startswith("    word") and all(x.startswith("      ") for x in out[1:-1])
    assert "".join(out[:-1]).replace(" ", "") == "word" * 60 + "x" * 250


def test_request_lines_odd_bodies() -> None:
    assert view_request.request_lines("openai_chat", [1, 2]) == [
        "ProxAI request · openai_chat",
        "(the body is not a JSON object)",
    ]
    body: dict[str, Any] = {
        "model": "m",
        "input": "just a string",
        "max_output_tokens": 50,
        "tools": [{"type": "web_search"}],
    }
    assert view_request.request_lines("openai_responses", body) == [
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
    lines = view_request.request_lines("openai_chat", body)
    assert lines[-3:] == ["[1] user:", "  what is this?", "  [image_url]"]


def test_invalid_tool_arguments_are_shown_raw() -> None:
    s = StreamSummary(
        Protocol.OPENAI_CHAT,
        True,
        Outcome.COMPLETED,
        tool_calls=[ToolCallInfo("c1", "f", arguments_complete=True, arguments_bytes=5, arguments="{oops")],
    )
    lines = view_text.tool_call_lines(s.to_metadata()["tool_calls"], s)
    assert lines == [
        "── tool call 1: f · id c1 · complete, arguments not valid JSON · 5 bytes ──",
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
        "stop_reason",
        "stop_class",
        "body_not_kept",
        "translation",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    meta=st.dictionaries(KEYS, JSON, max_size=8),
    proto=st.sampled_from(["anthropic_messages", "openai_chat", "openai_responses", ""]),
)
def test_rendering_never_raises_on_odd_metadata_or_bodies(meta: dict[str, Any], proto: str) -> None:
    assert isinstance(verdict.comment_line(meta), str)
    assert isinstance(verdict.dump_line(meta), str)
    assert isinstance(verdict.marker_for(meta), str)
    for body in (None, b"data: {}\n\ndata: [1]\n\nevent: x\ndata: {", b"\xff\xfe"):
        lines = view_text.flow_response_lines(meta, None, proto, body=body)
        assert all(isinstance(line, str) and len(line) <= view_text.WIDTH for line in lines)
    assert all(isinstance(line, str) for line in view_text.flow_request_lines(meta, proto, meta))
    assert all(isinstance(line, str) for line in view_request.request_lines(proto, meta))
    diag = report.diagnostics_from(meta, None, b"tail")
    row = report.make_row(
        meta, index=1, flow_id="f", method="POST", url="http://h/v1/x?key=k", status=200, diagnostics=diag
    )
    assert all(isinstance(line, str) for line in report.table_lines([row]))


def test_closed_stream_without_a_body_names_its_last_events() -> None:
    meta = {
        "protocol": "anthropic_messages",
        "outcome": "closed",
        "streaming": True,
        "last_events": ["content_block_delta", "content_block_stop"],
    }
    lines = view_text.flow_response_lines(meta, None, "anthropic_messages")
    assert lines[:2] == [
        "ProxAI · closed: no message_stop · anthropic_messages · streamed",
        "The stream ended before its terminal event: the message_stop event never came.",
    ]
    at = lines.index("── how the stream ended ──")
    assert lines[at + 1] == "last events: content_block_delta, content_block_stop"


def _priced(model: str) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "protocol": "openai_chat",
        "model": model,
        "outcome": "completed",
        "stop_reason": "tool_calls",
        "stop_class": "tool_use",
        "usage": {"input_tokens": 25, "output_tokens": 26},
        "tool_calls": [{"name": "a", "arguments_complete": True}, {"name": "b", "arguments_complete": True}],
        "timing": {"first_token_s": 0.12, "total_s": 1.5},
    }
    cost.add_cost(meta, api_url="https://api.openai.com/v1/chat/completions", at=None)
    return meta


def test_the_cost_in_the_comment_the_view_and_the_dump_line() -> None:
    # gpt-4.1 at $2 / $8 per million tokens: 25 * 2e-6 + 26 * 8e-6
    meta = _priced("gpt-4.1")
    assert verdict.comment_line(meta) == (
        "completed (tool_calls) · chat gpt-4.1 · 25 in/26 out · $0.000258 · 2 tool calls"
    )
    assert verdict.dump_line(meta) == (
        "proxai chat gpt-4.1 · completed (tool_calls) · 25 in/26 out · $0.000258 · 2 tool calls"
        " · ttft 0.12s · 1.50s"
    )
    assert view_text.usage_lines(meta)[1:3] == [
        "tokens: input 25 · output 26 · total -",
        f"cost: $0.000258 (openai gpt-4.1, genai-prices {cost.version()})",
    ]


def test_an_unpriced_flow_says_why_in_the_view_only() -> None:
    meta = _priced("house-model-7")
    assert meta["cost"] is None
    assert (
        verdict.comment_line(meta)
        == "completed (tool_calls) · chat house-model-7 · 25 in/26 out · 2 tool calls"
    )
    assert "$" not in verdict.dump_line(meta)
    assert view_text.usage_lines(meta)[2] == (
        f"cost: - (genai-prices {cost.version()} has no price for model 'house-model-7')"
    )


def test_a_request_the_translator_refuses_is_shown_with_its_unread_parts() -> None:
    body = {
        "model": "claude",
        "top_k": 5,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "search_result", "x": 1}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "plan", "signature": "s"}]},
        ],
    }
    assert view_request.request_lines("anthropic_messages", body) == [
        "ProxAI request · anthropic_messages",
        "model: claude · stream: false",
        "── messages (2) ──",
        "[1] user:",
        "  hi",
        '  [search_result] {"type":"search_result","x":1}',
        "[2] assistant:",
        "  [thinking]",
        "  plan",
    ]
