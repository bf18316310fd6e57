"""Helpers shared by the source wrappers: JSON payload parsing with typed errors (a payload the
stream observer already parsed is taken as it is; the empty-tail tolerance of seed 002 is decided
by the caller), and classifying an upstream error event into an ``ErrorKind`` with the observers'
shared classifier."""

from __future__ import annotations

from typing import Any

import orjson

from proxai.errors import UpstreamProtocolError
from proxai.stream.limits import DEFAULT_MAX_TOOL_ARGS
from proxai.stream.textparts import keep

# One event's payload as a source wrapper gets it: the stream observer's parse of a JSON object
# (``sse.Payloads`` after observing; ``SseEvent.payload``), or the data as bytes or text.
type PayloadValue = dict[str, Any] | bytes | str

_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError


def text_of(value: bytes | str) -> str:
    """A payload's text: bytes decoded as the SSE rules decode them (invalid UTF-8 -> U+FFFD)."""
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


def load_object(value: PayloadValue, protocol: str) -> dict[str, Any] | None:
    """One event's payload as a JSON object. A ``dict`` is the stream observer's parse (the
    carrier's path parses each event once) and is taken as it is. Otherwise the payload's data
    (``bytes`` or ``str``, read as its text) is parsed: ``None`` for an empty or whitespace-only
    payload (the caller decides if that is the tolerated empty tail); a non-object or invalid
    JSON is an ``UpstreamProtocolError``."""
    if isinstance(value, dict):
        return value
    try:
        # Bytes of valid UTF-8 parse as their text does (orjson reads text as UTF-8); bytes that
        # are not, and an empty or blank payload, fail here and are judged as text below.
        obj = _loads(value)
    except _JSONDecodeError:
        data = text_of(value)
        if not data or data.isspace():
            return None
        try:
            obj = _loads(data)
        except _JSONDecodeError:
            raise UpstreamProtocolError(
                f"{protocol} event payload is not valid JSON: {data[:80]!r}"
            ) from None
    if not isinstance(obj, dict):
        data = text_of(value)
        raise UpstreamProtocolError(f"{protocol} event payload is not a JSON object: {data[:80]!r}")
    return obj


class ToolArgs:
    """Tool-call argument fragments, kept (bounded) until the call ends, when the whole must be
    valid JSON: seed 003 rejects invalid argument JSON instead of passing it on (or substituting
    ``{}``), and an upstream that lost a fragment must not reach the client as a success."""

    __slots__ = ("_parts", "_sizes", "max_bytes")

    def __init__(self, max_bytes: int = DEFAULT_MAX_TOOL_ARGS) -> None:
        self.max_bytes = max_bytes
        self._parts: dict[object, list[str]] = {}
        self._sizes: dict[object, int] = {}

    def add(self, key: object, text: str) -> None:
        parts = self._parts.get(key)
        if parts is None:
            parts = self._parts[key] = []
            self._sizes[key] = 0
        size = self._sizes[key] + len(text)
        if size > self.max_bytes:
            raise UpstreamProtocolError(f"tool call arguments exceed the limit of {self.max_bytes} bytes")
        self._sizes[key] = size
        keep(parts, text)  # memory near the count (proxai.stream.textparts)

    def close(self, key: object, what: str) -> None:
        parts = self._parts.pop(key, None)
        self._sizes.pop(key, None)
        if not parts:
            return  # no arguments at all: an empty object
        raw = "".join(parts)
        try:
            orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise UpstreamProtocolError(f"{what}: the streamed arguments are not valid JSON") from None
