"""Error bodies and SSE error events in each protocol's own shape.

One place builds every error ProxAI sends to a client: the guard's injected stream error
(docs/design/guard.md, "Acting on a verdict"), a translated upstream error, a rejected request
(HTTP 400 in the client's protocol, docs/translation.md, "What is rejected, and why"). These
shapes make the official SDKs raise (docs/design/clients.md; docs/guard.md, "What the client receives"):

- Anthropic: ``event: error`` + ``{"type":"error","error":{"type","message"}}``.
- Chat: a data payload with a top-level ``"error"`` object (SDKs raise ``APIError``).
- Responses: the Python SDK ignores a bare ``error`` event (it only fails later for lack of
  ``response.completed``), but raises ``APIError`` at once on any payload with a top-level
  ``"error"`` object; Node raises on the ``error`` event itself. So the ``error`` event also
  carries a top-level ``"error"`` object, and a terminal ``response.failed`` follows for
  clients that keep reading (docs/guard.md explains the choice).
"""

from __future__ import annotations

from typing import Any

import orjson

from proxai.core.model import ErrorKind, Protocol
from proxai.core.sse import encode_event
from proxai.safety.redact import redact_text

# ErrorKind -> (Anthropic error type, HTTP status)
_ANTHROPIC_TYPES: dict[ErrorKind, tuple[str, int]] = {
    ErrorKind.PROMPT_TOO_LONG: ("invalid_request_error", 400),
    ErrorKind.INVALID_REQUEST: ("invalid_request_error", 400),
    ErrorKind.TRANSLATION: ("invalid_request_error", 400),
    ErrorKind.AUTHENTICATION: ("authentication_error", 401),
    ErrorKind.PERMISSION: ("permission_error", 403),
    ErrorKind.NOT_FOUND: ("not_found_error", 404),
    ErrorKind.RATE_LIMITED: ("rate_limit_error", 429),
    ErrorKind.OVERLOADED: ("overloaded_error", 529),
    ErrorKind.IDLE_TIMEOUT: ("timeout_error", 504),
    ErrorKind.TOOL_STALL: ("timeout_error", 504),
}

# ErrorKind -> (OpenAI error type, OpenAI error code, HTTP status)
_OPENAI_TYPES: dict[ErrorKind, tuple[str, str | None, int]] = {
    ErrorKind.PROMPT_TOO_LONG: ("invalid_request_error", "context_length_exceeded", 400),
    ErrorKind.INVALID_REQUEST: ("invalid_request_error", None, 400),
    ErrorKind.TRANSLATION: ("invalid_request_error", "unsupported_by_target", 400),
    ErrorKind.AUTHENTICATION: ("authentication_error", "invalid_api_key", 401),
    ErrorKind.PERMISSION: ("permission_error", None, 403),
    ErrorKind.NOT_FOUND: ("not_found_error", None, 404),
    ErrorKind.RATE_LIMITED: ("rate_limit_error", "rate_limit_exceeded", 429),
    ErrorKind.OVERLOADED: ("server_error", "server_overloaded", 503),
    ErrorKind.IDLE_TIMEOUT: ("timeout_error", "proxai_idle_timeout", 504),
    ErrorKind.TOOL_STALL: ("timeout_error", "proxai_tool_stall", 504),
}


def http_status_for(kind: ErrorKind, protocol: Protocol) -> int:
    """The HTTP status a client of ``protocol`` expects for an error of ``kind``."""
    if protocol is Protocol.ANTHROPIC_MESSAGES:
        return _ANTHROPIC_TYPES.get(kind, ("api_error", 500))[1]
    return _OPENAI_TYPES.get(kind, ("server_error", None, 500))[2]


def anthropic_error_object(kind: ErrorKind, message: str) -> dict[str, Any]:
    message = redact_text(message)  # an upstream's message can quote the key it received
    etype = _ANTHROPIC_TYPES.get(kind, ("api_error", 500))[0]
    return {"type": "error", "error": {"type": etype, "message": message}}


def openai_error_object(kind: ErrorKind, message: str, param: str | None = None) -> dict[str, Any]:
    message = redact_text(message)  # an upstream's message can quote the key it received
    etype, code, _ = _OPENAI_TYPES.get(kind, ("server_error", None, 500))
    return {
        "message": message,
        "type": etype,
        "code": code if code is not None else str(kind),
        "param": param,
    }


def error_body(protocol: Protocol, kind: ErrorKind, message: str, param: str | None = None) -> bytes:
    """A non-streamed JSON error body in ``protocol``'s shape."""
    if protocol is Protocol.ANTHROPIC_MESSAGES:
        return orjson.dumps(anthropic_error_object(kind, message))
    return orjson.dumps({"error": openai_error_object(kind, message, param)})


def error_event(
    protocol: Protocol,
    kind: ErrorKind,
    message: str,
    *,
    response_id: str | None = None,
    model: str | None = None,
    sequence_number: int = 0,
    created_at: int = 0,
) -> bytes:
    """The SSE bytes that make a client of ``protocol`` fail at once with ``message``.

    ``sequence_number`` is the next Responses sequence number to use (Responses only).
    """
    if protocol is Protocol.ANTHROPIC_MESSAGES:
        return encode_event(orjson.dumps(anthropic_error_object(kind, message)), event="error")
    err = openai_error_object(kind, message)
    if protocol is Protocol.OPENAI_CHAT:
        return encode_event(orjson.dumps({"error": err}))
    error_payload = {
        "type": "error",
        "code": err["code"],
        "message": err["message"],
        "param": None,
        "sequence_number": sequence_number,
        "error": err,
    }
    failed = {
        "type": "response.failed",
        "sequence_number": sequence_number + 1,
        "response": {
            "id": response_id or "resp_proxai_error",
            "object": "response",
            "created_at": created_at,
            "status": "failed",
            "model": model or "unknown",
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": {"code": "server_error", "message": err["message"]},
            "incomplete_details": None,
            "usage": None,
        },
    }
    return encode_event(orjson.dumps(error_payload), event="error") + encode_event(
        orjson.dumps(failed), event="response.failed"
    )
