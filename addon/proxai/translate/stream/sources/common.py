"""Helpers shared by the source wrappers: JSON payload parsing with typed errors (the empty-tail
tolerance of seed 002 is decided by the caller), and classifying an upstream error event into an
``ErrorKind`` with the observers' shared classifier."""

from __future__ import annotations

from typing import Any

import orjson

from proxai.error_kind import classify_error
from proxai.errors import UpstreamProtocolError
from proxai.model import ErrorKind


def classify(type_: object, code: object, message: str) -> ErrorKind:
    """The shared classifier (``proxai.error_kind``), given the more specific of code / type."""
    key = code if isinstance(code, str) and code else type_
    return classify_error(message, type=key if isinstance(key, str) else None)


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
