"""Recognize LLM API requests: which of the three wire protocols a request speaks.

Recognize LLM flows by the three protocols' paths, Azure OpenAI deployment paths, and (in the shell)
a mitmproxy filter option for anything else (docs/usage.md, "Which flows are LLM flows"). The
observer for the detected protocol then decides completeness (``message_stop`` / ``[DONE]`` /
Responses terminal event).

Paths may carry any base path prefix (``/anthropic/v1/messages``, ``/api/openai/v1/...``)
and a query string (Azure's ``?api-version=...``). Only ``POST`` creates a message; a
``GET /v1/responses/{id}`` or ``POST /v1/messages/count_tokens`` is not a generation, except
``GET /v1/responses/{id}?stream=true``: the stream of a background response, replayed or resumed
after ``starting_after`` (docs/design/protocol-grammars.md, "Background mode"), which is read as
a Responses stream.

Sans-IO: strings and bytes in, a ``Protocol`` (or ``None``) out.
"""

from __future__ import annotations

import re

import orjson

from proxai.core.model import Protocol

_MESSAGES = re.compile(r"^(?:/.*)?/v1/messages/?$")
_CHAT = re.compile(r"^(?:/.*)?/chat/completions/?$")
# OpenAI /v1/responses; Azure /openai/responses, /openai/v1/responses and
# /openai/deployments/<name>/responses.
_RESPONSES = re.compile(r"^(?:/.*)?/(?:v1|openai|openai/deployments/[^/]+)/responses/?$")
# GET .../responses/{id}?...stream=true...: a background response's stream
_RESUME = re.compile(r"^(?:/.*)?/(?:v1|openai)/responses/[^/?#]+\?(?:[^#]*&)?stream=true(?:[&#]|$)")


def _strip_query(path: str) -> str:
    for sep in ("?", "#"):
        cut = path.find(sep)
        if cut >= 0:
            path = path[:cut]
    return path


def detect_protocol(method: str, path: str) -> Protocol | None:
    """The protocol of a request by its method and path (query allowed), or ``None``."""
    if method.upper() != "POST":
        return Protocol.OPENAI_RESPONSES if method.upper() == "GET" and is_resume(path) else None
    p = _strip_query(path)
    # Each pattern ends in its own last segment (then an optional "/", and ``$`` allows a final
    # newline): that segment picks the one pattern that can match, the others are not tried.
    last = p.rstrip("/\n")
    if last.endswith("/messages"):
        return Protocol.ANTHROPIC_MESSAGES if _MESSAGES.match(p) else None
    if last.endswith("/completions"):
        return Protocol.OPENAI_CHAT if _CHAT.match(p) else None
    if last.endswith("/responses"):
        return Protocol.OPENAI_RESPONSES if _RESPONSES.match(p) else None
    return None


def is_resume(path: str) -> bool:
    """``path`` (with its query) asks for a background response's stream: ``GET
    /v1/responses/{id}?stream=true``, with ``starting_after=N`` to resume after event N."""
    return _RESUME.match(path) is not None


def parse_protocol(name: str) -> Protocol:
    """A protocol from its name (the ``proxai_protocol`` option); raises ``ValueError``."""
    aliases = {
        "anthropic": Protocol.ANTHROPIC_MESSAGES,
        "messages": Protocol.ANTHROPIC_MESSAGES,
        "chat": Protocol.OPENAI_CHAT,
        "responses": Protocol.OPENAI_RESPONSES,
    }
    key = name.strip().lower()
    if key in aliases:
        return aliases[key]
    return Protocol(key)


def sniff_protocol(body: bytes, *, anthropic_headers: bool = False) -> Protocol | None:
    """Guess the protocol of a request body that no path rule matched.

    - ``input`` (and no ``messages``) -> Responses;
    - ``messages`` + an ``anthropic-version`` header, or a top-level ``system`` string/list,
      or ``max_tokens`` without any OpenAI-only field -> Anthropic Messages;
    - ``messages`` otherwise -> Chat Completions.
    """
    if not body:
        return None
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    has_messages = isinstance(doc.get("messages"), list)
    if "input" in doc and not has_messages:
        return Protocol.OPENAI_RESPONSES
    if not has_messages:
        return None
    if anthropic_headers or "system" in doc or "anthropic_version" in doc:
        return Protocol.ANTHROPIC_MESSAGES
    openai_only = ("max_completion_tokens", "n", "logprobs", "response_format", "stream_options")
    if "max_tokens" in doc and not any(k in doc for k in openai_only):
        messages = doc["messages"]
        if not any(
            isinstance(m, dict) and m.get("role") in ("system", "developer", "tool") for m in messages
        ):
            return Protocol.ANTHROPIC_MESSAGES
    return Protocol.OPENAI_CHAT
