"""Non-streamed (JSON) response translation in all six directions: the entry point.

``translate_response(body, upstream, client, created=...)`` parses the upstream's JSON reply
into the neutral form (``resp_from_*``) and renders it in the client's protocol
(``resp_to_*``). What the client's protocol cannot hold is either rejected
(``TranslationError``: multi-choice Chat responses, custom tool calls for Anthropic clients,
hosted-tool items) or, for thinking/reasoning that Chat has no slot for, dropped and counted in
``dropped`` so the mitm layer can record it in the metadata (docs/translation.md, "JSON
responses"). Stop reasons use the one shared table (``stop_reasons``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from proxai.core.errors import UpstreamProtocolError
from proxai.core.model import Protocol, StopClass
from proxai.translate import (
    ir,
    resp_from_anthropic,
    resp_from_chat,
    resp_from_responses,
    resp_to_anthropic,
    resp_to_chat,
    resp_to_responses,
)
from proxai.translate.call_shapes import CallShapes

_PARSERS: dict[Protocol, Callable[[dict[str, Any]], ir.ResponseIR]] = {
    Protocol.ANTHROPIC_MESSAGES: resp_from_anthropic.parse_response,
    Protocol.OPENAI_CHAT: resp_from_chat.parse_response,
    Protocol.OPENAI_RESPONSES: resp_from_responses.parse_response,
}

_RENDERERS: dict[Protocol, Callable[[ir.ResponseIR, int], dict[str, Any]]] = {
    Protocol.ANTHROPIC_MESSAGES: resp_to_anthropic.render_response,
    Protocol.OPENAI_CHAT: resp_to_chat.render_response,
    Protocol.OPENAI_RESPONSES: resp_to_responses.render_response,
}


@dataclass(frozen=True, slots=True)
class TranslatedResponse:
    body: dict[str, Any]
    stop: StopClass
    dropped: dict[str, int] = field(default_factory=dict)  # e.g. {"thinking_blocks": 1, ...}
    left_out: dict[str, int] = field(default_factory=dict)  # e.g. {"web_search_call": 1}

    def to_bytes(self) -> bytes:
        return orjson.dumps(self.body)


def load_json(raw: bytes) -> dict[str, Any]:
    """An upstream JSON body as an object, or ``UpstreamProtocolError``."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise UpstreamProtocolError("the upstream response is not valid JSON") from None
    if not isinstance(value, dict):
        raise UpstreamProtocolError("the upstream response is not a JSON object")
    return value


def parse_response(
    body: dict[str, Any], upstream: Protocol, custom_tools: frozenset[str] = frozenset()
) -> ir.ResponseIR:
    """``custom_tools``: the custom tools the client declared (a Responses ``custom_tool_call`` of
    another name is a call the server ran)."""
    if upstream is Protocol.OPENAI_RESPONSES:
        return resp_from_responses.parse_response(body, custom_tools)
    return _PARSERS[upstream](body)


def render_response(
    resp: ir.ResponseIR, client: Protocol, *, created: int = 0, call_shapes: CallShapes | None = None
) -> TranslatedResponse:
    if client is Protocol.OPENAI_RESPONSES:
        body = resp_to_responses.render_response(resp, created, call_shapes)
    else:
        body = _RENDERERS[client](resp, created)
    return TranslatedResponse(body, resp.stop, dict(resp.dropped), dict(resp.left_out))


def translate_response(
    body: dict[str, Any],
    upstream: Protocol,
    client: Protocol,
    *,
    created: int = 0,
    call_shapes: CallShapes | None = None,
    custom_tools: frozenset[str] = frozenset(),
) -> TranslatedResponse:
    """The client-protocol JSON response for an upstream-protocol JSON response.

    ``created``: Unix time for targets that need one when the source has none (the core reads
    no clock). ``call_shapes``: a Responses client's tools offered in another shape, whose calls
    go back as the client declared them. ``custom_tools``: the custom tools the client's request
    declared.
    """
    parsed = parse_response(body, upstream, custom_tools)
    return render_response(parsed, client, created=created, call_shapes=call_shapes)
