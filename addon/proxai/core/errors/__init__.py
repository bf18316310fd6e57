"""The typed error hierarchy of ProxAI.

Every error the core raises on bad input is a ``ProxaiError``. Anything else escaping the
core is a bug; the mitmproxy shell logs it and keeps the flow and the proxy alive
(docs/design/core.md, "Errors are typed").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from proxai.core.sse import SseEvent


class ProxaiError(Exception):
    """Base class of every error ProxAI raises on purpose."""


class SseLimitError(ProxaiError):
    """An SSE line or event went past the configured size limit (bounded memory).

    ``events`` holds the events the failing ``feed``/``close`` call completed before the limit
    was crossed, so that chunking never changes what a caller sees.
    """

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"SSE {what} exceeds the limit of {limit} bytes")
        self.what = what
        self.limit = limit
        self.events: list[SseEvent] = []


class UpstreamProtocolError(ProxaiError):
    """The upstream broke the rules of its own wire protocol."""


class TruncatedStreamError(UpstreamProtocolError):
    """The upstream closed a stream before its protocol's terminal event (a translated client is
    told so with a ``connection`` error: the answer was cut, not malformed)."""


class SemanticStreamError(UpstreamProtocolError):
    """An inconsistent source stream (docs/design/protocol-grammars.md): duplicate start, orphan
    delta, stop without start, or a delta whose type does not match its block."""


class TranslationError(ProxaiError):
    """Valid input that the target protocol cannot express (docs/translation.md, "What is rejected").

    ``field`` names the offending location, e.g. ``messages[2].role``.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message if field is None else f"{field}: {message}")
        self.field = field
        self.reason = message


class ConfigError(ProxaiError):
    """A bad option value or routes file; the shell surfaces it as mitmproxy ``OptionsError``."""


class DecodeError(ProxaiError):
    """A compressed body could not be decoded, or decoding would exceed the size limit."""
