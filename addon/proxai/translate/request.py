"""Request translation in all six directions: the entry point (docs/translation.md, "Requests").

``translate_request(body, client, target, opts)`` parses the client's body (pydantic at the trust
boundary) into the neutral form and renders it for the target; every position and rejection rule of
docs/translation.md lives in the parser / renderer modules (``req_from_*`` / ``req_to_*``). Anything
the target cannot express raises ``TranslationError(message, field)`` naming the client's field; the
mitm layer answers it with a 400 in the client's protocol and sends nothing upstream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field, replace
from typing import Any

import orjson

from proxai.core.errors import TranslationError
from proxai.core.model import Protocol
from proxai.translate import (
    ir,
    req_from_anthropic,
    req_from_chat,
    req_from_responses,
    req_to_anthropic,
    req_to_chat,
    req_to_responses,
)
from proxai.translate.call_shapes import shapes_of
from proxai.translate.checks import Reading

_PARSERS: dict[Protocol, Callable[[object, Reading], ir.RequestIR]] = {
    Protocol.ANTHROPIC_MESSAGES: req_from_anthropic.parse_request,
    Protocol.OPENAI_CHAT: req_from_chat.parse_request,
    Protocol.OPENAI_RESPONSES: req_from_responses.parse_request,
}

_RENDERERS: dict[Protocol, Callable[[ir.RequestIR, ir.RequestOptions, dict[str, int]], dict[str, Any]]] = {
    Protocol.ANTHROPIC_MESSAGES: req_to_anthropic.render_request,
    Protocol.OPENAI_CHAT: req_to_chat.render_request,
    Protocol.OPENAI_RESPONSES: req_to_responses.render_request,
}


@ir.value
class TranslatedRequest:
    body: dict[str, Any]
    stream: bool
    client_model: str | None  # the model the client asked for
    dropped: dict[str, int] = field(default_factory=dict)  # e.g. {"thinking_blocks": 2, ...}
    ignored: tuple[str, ...] = ()  # client fields with no meaning for the target (hints)
    notes: tuple[str, ...] = ()  # offers left out: hosted tools the target cannot run
    # a Responses client's tools offered in another shape: how their calls go back (call_shapes)
    call_shapes: dict[str, ir.CallShape] = field(default_factory=dict)
    # the custom (freeform) tools the client declared: their calls are the client's (the others a
    # Responses upstream streams are calls its server ran)
    custom_tools: frozenset[str] = frozenset()

    def to_bytes(self) -> bytes:
        return orjson.dumps(self.body)


def read_request(body: object, protocol: Protocol, *, strict: bool = True) -> ir.RequestIR:
    """A request body of ``protocol`` (parsed JSON) as the neutral form: the protocol's one request
    reader (docs/design/request-reading.md). Strict (translation): the first thing the target
    cannot be given raises ``TranslationError``. Not strict (the view, the run report, the
    telemetry, replay's matching): total on any JSON; what a strict reading refuses is listed in
    ``refused`` and an unreadable part stands as an ``ir.UnreadPart`` at its place."""
    return _PARSERS[protocol](body, Reading(strict))


def parse_body(raw: bytes) -> dict[str, Any]:
    """The client's JSON body as an object, or a ``TranslationError``."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise TranslationError("the request body is not valid JSON", "body") from None
    if not isinstance(value, dict):
        raise TranslationError("the request body must be a JSON object", "body")
    return value


def translate_request(
    body: dict[str, Any], client: Protocol, target: Protocol, opts: ir.RequestOptions | None = None
) -> TranslatedRequest:
    """The target-protocol body for a client-protocol body."""
    opts = opts or ir.RequestOptions()
    model = body.get("model") if isinstance(body.get("model"), str) else None
    if client is target:  # a plain reroute: the body is the client's, with the model mapped
        out = body if opts.model is None else {**body, "model": opts.model}
        capped = cap_output_tokens(out, target, opts)
        return TranslatedRequest(capped[0], bool(body.get("stream")), model, notes=capped[1])
    parsed = read_request(body, client)
    parsed, search_notes = _web_search(parsed, target)
    _refuse_what_cannot_be_given(parsed, opts)
    dropped: dict[str, int] = {}
    rendered, cap_notes = cap_output_tokens(_RENDERERS[target](parsed, opts, dropped), target, opts)
    return TranslatedRequest(
        rendered,
        parsed.stream,
        model,
        dropped,
        parsed.ignored,
        tuple(x.note for x in parsed.left_out) + search_notes + parsed.history_notes + cap_notes,
        shapes_of(parsed.tools),
        frozenset(t.name for t in parsed.tools if t.kind == "custom"),
    )


#: the field that limits the output's tokens, per target protocol (Chat: the route's choice)
_LIMIT_FIELDS = {Protocol.ANTHROPIC_MESSAGES: "max_tokens", Protocol.OPENAI_RESPONSES: "max_output_tokens"}


def cap_output_tokens(
    body: dict[str, Any], target: Protocol, opts: ir.RequestOptions
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The body with its output token limit lowered to the route's ``max_tokens_limit`` (the most
    the target's model serves), and a note saying so. A client asking for more than a server
    serves is refused by that server (vLLM: "max_tokens is too large"); asking for less never
    changes an answer that fits. An Anthropic thinking budget is kept below the new limit, as
    Anthropic requires, by giving the answer a quarter of it."""
    limit = opts.max_tokens_limit
    if limit is None:
        return body, ()
    name = _LIMIT_FIELDS.get(target, opts.chat_max_tokens_field)
    names = [n for n in (name, "max_tokens", "max_completion_tokens") if isinstance(body.get(n), int)]
    asked = [(n, body[n]) for n in dict.fromkeys(names) if body[n] > limit]
    if not asked:
        return body, ()
    out = {**body, **{n: limit for n, _ in asked}}
    notes = tuple(f"{n}: {v} lowered to the route's max_tokens_limit {limit}" for n, v in asked)
    thinking = out.get("thinking")
    if target is Protocol.ANTHROPIC_MESSAGES and isinstance(thinking, dict):
        budget = thinking.get("budget_tokens")
        if isinstance(budget, int) and budget >= limit:
            lowered = max(1024, limit * 3 // 4)
            out["thinking"] = {**thinking, "budget_tokens": lowered}
            notes += (f"thinking.budget_tokens: {budget} lowered to {lowered}, below max_tokens {limit}",)
    return out, notes


def _web_search(req: ir.RequestIR, target: Protocol) -> tuple[ir.RequestIR, tuple[str, ...]]:
    """The client's web search for ``target``: Anthropic and Responses run one (a setting the
    target has no field for is noted); Chat has none, so it is an offer left out."""
    ws = req.web_search
    if ws is None:
        return req, ()
    if target is Protocol.OPENAI_CHAT:
        gone = ir.LeftOut(ws.at, "web search tool", "Chat Completions has no server-side search", ws.name)
        return replace(req, web_search=None, left_out=(*req.left_out, gone)), ()
    choice = req.tool_choice
    if choice is not None and choice.mode == "tool" and choice.name == ws.name:
        raise TranslationError(
            "a tool_choice that forces the web search cannot be translated", f"{choice.at}.name"
        )
    unmapped = {
        "blocked_domains": bool(ws.blocked_domains) and target is not Protocol.ANTHROPIC_MESSAGES,
        "max_uses": ws.max_uses is not None and target is not Protocol.ANTHROPIC_MESSAGES,
        "search_context_size": ws.context_size is not None and target is not Protocol.OPENAI_RESPONSES,
    }
    notes = tuple(
        f"{ws.at}.{k}: the target's web search has no such setting; not sent"
        for k, v in unmapped.items()
        if v
    )
    return req, notes


def _refuse_what_cannot_be_given(req: ir.RequestIR, opts: ir.RequestOptions) -> None:
    """A declared tool the target cannot provide is an offer, left out with a note; but a
    ``tool_choice`` that forces it asks for something the target cannot do, and strict
    translation refuses every such offer (docs/translation.md, "Tools the target cannot run")."""
    choice = req.tool_choice
    if choice is not None and choice.mode == "tool":
        for x in req.left_out:
            if x.name is not None and x.name == choice.name and all(t.name != x.name for t in req.tools):
                raise TranslationError(
                    f"tool_choice forces {x.name!r}, the {x.what} of {x.at}: {x.why}", f"{choice.at}.name"
                )
    if opts.strict and req.left_out:
        x = req.left_out[0]
        raise TranslationError(f"{x.what} cannot be translated ({x.why}; strict translation)", x.at)
