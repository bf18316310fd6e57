"""The embedded fake upstream's scenarios, rendered to bytes (no server, no clock), through the
observers: every protocol, streamed and not, whole and byte by byte.

A cross-component check: the fake upstream writes what the real APIs write, so what the
observers say about its scenarios is what they say about real traffic of that kind.
"""

from __future__ import annotations

from typing import Any

import pytest

from proxai.core.model import Protocol
from proxai.pipeline.observe import observe_body
from proxai.upstream import render_anthropic, render_chat, render_responses
from proxai.upstream.ops import Abort, Delay, Params, Respond
from proxai.upstream.scenarios import SCENARIOS
from proxai.upstream.wire import json_actions
from tests.observe.harness import bytewise, normalize, run_stream

RENDERERS: dict[Protocol, Any] = {
    Protocol.ANTHROPIC_MESSAGES: render_anthropic.AnthropicRenderer,
    Protocol.OPENAI_CHAT: render_chat.ChatRenderer,
    Protocol.OPENAI_RESPONSES: render_responses.ResponsesRenderer,
}

# scenario -> (streamed outcome, error kind or None); a stall is cut where the stream would die.
STREAMED: dict[str, tuple[str, str | None]] = {
    "text": ("completed", None),
    "parallel_tools": ("completed", None),
    "thinking": ("completed", None),
    "redacted_thinking": ("completed", None),
    "max_tokens": ("completed", None),
    "refusal": ("completed", None),
    "error_midstream": ("error", None),
    "truncated": ("closed", None),
    "reset": ("closed", None),
    "dropped": ("closed", None),
    "rate_limit": ("error", "rate_limited"),
    "prompt_too_long": ("error", "prompt_too_long"),
    "slow_tokens": ("completed", None),
    "long_reasoning": ("completed", None),
    "tool_stall": ("unfinished_tool", None),
    "total_stall": ("unfinished_tool", None),
    "idle_stall": ("closed", None),
    "empty_tool_delta": ("completed", None),
    "args_in_done": ("completed", None),
    "last_fragment_in_finish": ("completed", None),
    "cache_usage": ("completed", None),
    "malformed_json": ("error", "upstream_protocol"),
    "wrong_content_type": ("completed", None),
    "slowloris": ("completed", None),
    "gzip": ("completed", None),
}


def render(protocol: Protocol, name: str, stream: bool) -> tuple[int, str | None, bytes] | None:
    sc = SCENARIOS[name]
    params = Params(model="m", stream=stream, include_usage=True, request_number=1)
    r = RENDERERS[protocol](params)
    if sc.http_error is not None:
        try:
            resp = r.error_response(sc.http_error)
        except KeyError:
            return None  # an error the server writes itself (an HTML page)
        return resp.status, resp.content_type, resp.body
    if not stream:
        for action in json_actions(r, sc.script(params)):
            if isinstance(action, Respond):
                return (
                    action.status,
                    action.content_type,
                    action.body[: action.cut] if action.cut else action.body,
                )
            if isinstance(action, Abort):
                break
        return 200, "application/json", b""
    out = bytearray()
    for action in r.stream(sc.script(params)):
        if isinstance(action, bytes):
            out += action
        elif (isinstance(action, Delay) and action.stall) or isinstance(action, Abort):
            break
    return 200, sc.content_type, bytes(out)


CASES = [(p, name) for name in STREAMED for p in Protocol if name in SCENARIOS]


@pytest.mark.parametrize(("protocol", "name"), CASES, ids=[f"{p}-{n}" for p, n in CASES])
def test_streamed_scenario(protocol: Protocol, name: str) -> None:
    rendered = render(protocol, name, stream=True)
    assert rendered is not None
    status, ctype, body = rendered
    s = observe_body(protocol, body, status_code=status, start=0, headers_at=0, end=0, content_type=ctype)
    outcome, kind = STREAMED[name]
    assert s.outcome == outcome, s.error
    if kind is not None:
        assert s.error is not None and s.error.kind == kind
    if outcome == "completed":
        assert s.error is None and s.id and s.model
        assert all(t.arguments_complete and t.arguments_valid_json for t in s.tool_calls)
    if name == "parallel_tools":
        assert len(s.tool_calls) == 2
    if name == "cache_usage":
        assert s.usage.cache_read_tokens
    if status == 200 and ctype == "text/event-stream":
        whole, obs = run_stream(protocol, [body], capture=False)
        split, obs2 = run_stream(protocol, bytewise(body), capture=False)
        assert normalize(whole, obs.failed) == normalize(split, obs2.failed)


@pytest.mark.parametrize("protocol", list(Protocol), ids=str)
def test_every_scenario_renders_without_raising(protocol: Protocol) -> None:
    for name in SCENARIOS:
        if name == "huge_line":
            continue  # 48 MiB: covered by tests/hardening end to end
        for stream in (True, False):
            rendered = render(protocol, name, stream)
            if rendered is None:
                continue
            status, ctype, body = rendered
            s = observe_body(
                protocol, body, status_code=status, start=0, headers_at=0, end=0, content_type=ctype
            )
            s.to_metadata()
            if not stream and status == 200 and name in ("text", "parallel_tools", "thinking", "cache_usage"):
                assert s.outcome == "completed" and not s.streaming
