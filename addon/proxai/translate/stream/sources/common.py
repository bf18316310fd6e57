"""Helpers shared by the source wrappers: JSON payload parsing with typed errors, the empty-tail
tolerance of seed 002, and classifying an upstream error event into an ``ErrorKind``."""

from __future__ import annotations

from typing import Any

import orjson

from proxai.errors import UpstreamProtocolError
from proxai.model import ErrorKind

_BY_TYPE: dict[str, ErrorKind] = {
    "overloaded_error": ErrorKind.OVERLOADED,
    "server_overloaded": ErrorKind.OVERLOADED,
    "rate_limit_error": ErrorKind.RATE_LIMITED,
    "rate_limit_exceeded": ErrorKind.RATE_LIMITED,
    "insufficient_quota": ErrorKind.RATE_LIMITED,
    "authentication_error": ErrorKind.AUTHENTICATION,
    "invalid_api_key": ErrorKind.AUTHENTICATION,
    "permission_error": ErrorKind.PERMISSION,
    "not_found_error": ErrorKind.NOT_FOUND,
    "invalid_request_error": ErrorKind.INVALID_REQUEST,
    "context_length_exceeded": ErrorKind.PROMPT_TOO_LONG,
    "api_error": ErrorKind.SERVER,
    "server_error": ErrorKind.SERVER,
    "timeout_error": ErrorKind.IDLE_TIMEOUT,
}

_PROMPT_TOO_LONG = (
    "prompt is too long",
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
)


def classify(type_: object, code: object, message: str) -> ErrorKind:
    low = message.lower()
    if any(p in low for p in _PROMPT_TOO_LONG):
        return ErrorKind.PROMPT_TOO_LONG
    for key in (code, type_):
        if isinstance(key, str) and key in _BY_TYPE:
            return _BY_TYPE[key]
    return ErrorKind.UNKNOWN


def load_object(data: str, protocol: str) -> dict[str, Any] | None:
    """Parse one event payload. ``None`` for an empty payload (the caller decides if that is
    the tolerated empty tail); a non-object or invalid JSON is an ``UpstreamProtocolError``."""
    if not data or data.isspace():
        return None
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise UpstreamProtocolError(f"{protocol} event payload is not valid JSON: {data[:80]!r}") from None
    if not isinstance(obj, dict):
        raise UpstreamProtocolError(f"{protocol} event payload is not a JSON object: {data[:80]!r}")
    return obj


def as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
