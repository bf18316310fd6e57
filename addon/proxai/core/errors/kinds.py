"""Classify an upstream error into an ``ErrorKind`` from the upstream's own words.

Context-overflow errors are recognized by a fixed list of
lowercase substrings of the message, so callers need not know each vendor's wording. The same
idea extends to the other kinds: first the upstream's error type / code (the most reliable
signal), then the HTTP status, then words in the message. ``upstream_protocol``,
``stream_limit`` and the guard's kinds are never guessed here: the observers set them directly.

Also here: ``error_message`` (bounded, with API-key-looking tokens masked) so that no upstream
error text can grow the metadata without limit or leak a key (docs/design/core.md, "Secrets stay
out"). The kinds and the patterns are listed in docs/metadata.md, "Error kinds".
"""

from __future__ import annotations

from proxai.core.model import ErrorKind
from proxai.safety.redact import redact_text

# The substrings that mark a prompt-too-long / context-overflow error (docs/metadata.md, "Error kinds").
PROMPT_TOO_LONG_PATTERNS: tuple[str, ...] = (
    "prompt is too long",
    "prompt too long",
    "context length",
    "context_length",
    "maximum context",
    "max context",
    "too many tokens",
    "exceeds the context",
    "exceeded context",
)

# The upstream's error ``type`` or ``code`` (Anthropic ``error.type``, OpenAI ``error.type`` /
# ``error.code``, Responses ``response.error.code``), lowercased.
_TYPE_KINDS: dict[str, ErrorKind] = {
    "rate_limit_error": ErrorKind.RATE_LIMITED,
    "rate_limit_exceeded": ErrorKind.RATE_LIMITED,
    "insufficient_quota": ErrorKind.RATE_LIMITED,
    "requests": ErrorKind.RATE_LIMITED,
    "tokens": ErrorKind.RATE_LIMITED,
    "overloaded_error": ErrorKind.OVERLOADED,
    "server_overloaded": ErrorKind.OVERLOADED,
    "overloaded": ErrorKind.OVERLOADED,
    "authentication_error": ErrorKind.AUTHENTICATION,
    "invalid_api_key": ErrorKind.AUTHENTICATION,
    "unauthorized": ErrorKind.AUTHENTICATION,
    "permission_error": ErrorKind.PERMISSION,
    "permission_denied": ErrorKind.PERMISSION,
    "not_found_error": ErrorKind.NOT_FOUND,
    "model_not_found": ErrorKind.NOT_FOUND,
    "not_found": ErrorKind.NOT_FOUND,
    "context_length_exceeded": ErrorKind.PROMPT_TOO_LONG,
    "string_above_max_length": ErrorKind.PROMPT_TOO_LONG,
    "invalid_request_error": ErrorKind.INVALID_REQUEST,
    "invalid_prompt": ErrorKind.INVALID_REQUEST,
    "invalid_value": ErrorKind.INVALID_REQUEST,
    "request_too_large": ErrorKind.INVALID_REQUEST,
    "api_error": ErrorKind.SERVER,
    "server_error": ErrorKind.SERVER,
    "internal_server_error": ErrorKind.SERVER,
    "timeout_error": ErrorKind.SERVER,
    # the codes of ProxAI's own guard errors in the OpenAI shape (a guard answer crosses a route)
    "proxai_idle_timeout": ErrorKind.IDLE_TIMEOUT,
    "proxai_tool_stall": ErrorKind.TOOL_STALL,
}

# Types so generic that the message or status may say more (OpenAI's 503 "The server is
# overloaded or not ready yet." comes as ``server_error``).
_GENERIC = frozenset({ErrorKind.SERVER})

_STATUS_KINDS: dict[int, ErrorKind] = {
    400: ErrorKind.INVALID_REQUEST,
    401: ErrorKind.AUTHENTICATION,
    403: ErrorKind.PERMISSION,
    404: ErrorKind.NOT_FOUND,
    413: ErrorKind.INVALID_REQUEST,
    422: ErrorKind.INVALID_REQUEST,
    429: ErrorKind.RATE_LIMITED,
    503: ErrorKind.OVERLOADED,
    529: ErrorKind.OVERLOADED,
}

# Last resort: words in the message.
_MESSAGE_KINDS: tuple[tuple[str, ErrorKind], ...] = (
    ("rate limit", ErrorKind.RATE_LIMITED),
    ("rate_limit", ErrorKind.RATE_LIMITED),
    ("overloaded", ErrorKind.OVERLOADED),
    ("api key", ErrorKind.AUTHENTICATION),
    ("api_key", ErrorKind.AUTHENTICATION),
    ("unauthorized", ErrorKind.AUTHENTICATION),
    ("authentication", ErrorKind.AUTHENTICATION),
    ("permission", ErrorKind.PERMISSION),
    ("forbidden", ErrorKind.PERMISSION),
    ("not found", ErrorKind.NOT_FOUND),
    ("does not exist", ErrorKind.NOT_FOUND),
    ("internal server error", ErrorKind.SERVER),
    ("server error", ErrorKind.SERVER),
    ("invalid", ErrorKind.INVALID_REQUEST),
)

MAX_ERROR_MESSAGE = 2000


def classify_error(message: str, *, status: int | None = None, type: str | None = None) -> ErrorKind:
    """The kind of an upstream error, from its type/code, HTTP status and message words.

    Order: a rate-limit type or HTTP 429 wins (a rate-limit text about "tokens per minute"
    is not a long prompt); then the prompt-too-long patterns (they override the
    generic ``invalid_request_error`` / 400 that vendors use for context overflow); then the
    type/code table (a generic ``server_error`` / ``api_error`` that says "overloaded", or
    comes with 503 / 529, is ``overloaded``); then the status; then message words; else
    ``server`` for 5xx, ``unknown``.
    """
    t = type.lower() if type else ""
    tkind = _TYPE_KINDS.get(t)
    if tkind is ErrorKind.RATE_LIMITED or status == 429:
        return ErrorKind.RATE_LIMITED
    m = message.lower()
    if tkind is ErrorKind.PROMPT_TOO_LONG or any(p in m for p in PROMPT_TOO_LONG_PATTERNS):
        return ErrorKind.PROMPT_TOO_LONG
    if tkind is not None and tkind not in _GENERIC:
        return tkind
    if "overloaded" in m or status in (503, 529):
        return ErrorKind.OVERLOADED  # a generic server_error / api_error that says it is overloaded
    if tkind is not None:
        return tkind
    if status is not None:
        skind = _STATUS_KINDS.get(status)
        if skind is not None:
            return skind
    for word, kind in _MESSAGE_KINDS:
        if word in m:
            return kind
    if status is not None and status >= 500:
        return ErrorKind.SERVER
    return ErrorKind.UNKNOWN


def classify(type_: object, code: object, message: str) -> ErrorKind:
    """``classify_error`` given the more specific of an error's ``code`` and ``type``."""
    key = code if isinstance(code, str) and code else type_
    return classify_error(message, type=key if isinstance(key, str) else None)


def error_message(text: str) -> str:
    """An upstream error text made safe for metadata: API-key-like tokens masked, bounded."""
    if len(text) > MAX_ERROR_MESSAGE:
        text = text[:MAX_ERROR_MESSAGE] + "..."
    return redact_text(text)
