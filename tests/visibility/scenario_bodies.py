"""Deterministic scenario bodies from the embedded fake upstream's renderers (no server, no clock).

Frozen as fixture files under ``fixtures/`` (so the golden renderings do not move when the fake
upstream's wire details change); ``PROXAI_REGEN_FIXTURES=1`` re-renders them from the renderers.

The same scenarios the fake upstream plays (``proxai.upstream.scenarios``), rendered straight into
the bytes a client would receive: streamed (SSE) or non-streamed (JSON), plus HTTP errors. A stall
("tool_stall") is cut at its stall: that is the body a client sees when the stream dies there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import orjson

from proxai.core.model import Protocol
from proxai.upstream import render_anthropic, render_chat, render_responses
from proxai.upstream.ops import Abort, Delay, Params, Respond
from proxai.upstream.scenarios import get_scenario
from proxai.upstream.wire import json_actions

RENDERERS = {
    Protocol.ANTHROPIC_MESSAGES: render_anthropic.AnthropicRenderer,
    Protocol.OPENAI_CHAT: render_chat.ChatRenderer,
    Protocol.OPENAI_RESPONSES: render_responses.ResponsesRenderer,
}
MODELS = {
    Protocol.ANTHROPIC_MESSAGES: "claude-sonnet-4-5",
    Protocol.OPENAI_CHAT: "gpt-4.1",
    Protocol.OPENAI_RESPONSES: "gpt-5",
}


@dataclass(frozen=True, slots=True)
class Body:
    status: int
    content_type: str
    data: bytes


FIXTURES = Path(__file__).parent / "fixtures"
REGEN = os.environ.get("PROXAI_REGEN_FIXTURES") == "1"


def scenario_body(protocol: Protocol, name: str, stream: bool) -> Body:
    """The frozen fixture body of a scenario (created from the renderers when missing)."""
    base = FIXTURES / str(protocol) / f"{name}.{'sse' if stream else 'json'}"
    head = base.with_name(base.name + ".head.json")
    if REGEN or not base.exists():
        body = render_scenario(protocol, name, stream)
        base.parent.mkdir(parents=True, exist_ok=True)
        base.write_bytes(body.data)
        head.write_bytes(orjson.dumps({"status": body.status, "content_type": body.content_type}))
        return body
    meta = orjson.loads(head.read_bytes())
    return Body(meta["status"], meta["content_type"], base.read_bytes())


def render_scenario(protocol: Protocol, name: str, stream: bool) -> Body:
    """A scenario rendered now by the fake upstream's renderers."""
    sc = get_scenario(name)
    params = Params(model=MODELS[protocol], stream=stream, include_usage=True, request_number=1)
    renderer = RENDERERS[protocol](params)
    if sc.http_error is not None:
        resp = renderer.error_response(sc.http_error)  # type: ignore[arg-type]
        return Body(resp.status, resp.content_type, resp.body)
    if not stream:
        for action in json_actions(renderer, sc.script(params)):
            if isinstance(action, Respond):
                body = action.body[: action.cut] if action.cut else action.body
                return Body(action.status, action.content_type, body)
            if isinstance(action, Abort):
                break
        return Body(200, "application/json", b"")
    out = bytearray()
    for action in renderer.stream(sc.script(params)):
        if isinstance(action, bytes):
            out += action
        elif isinstance(action, Delay) and action.stall:
            break  # the stream dies in its stall
        elif isinstance(action, Abort):
            break
    return Body(200, sc.content_type or "text/event-stream", bytes(out))
