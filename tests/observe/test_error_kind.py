"""classify_error: the prompt-too-long patterns (docs/design/outcomes.md) and the other kinds,
from real vendor texts."""

from __future__ import annotations

import pytest

from proxai.core.errors.kinds import (
    MAX_ERROR_MESSAGE,
    PROMPT_TOO_LONG_PATTERNS,
    classify_error,
    error_message,
)
from proxai.core.model import ErrorKind


@pytest.mark.parametrize("pattern", PROMPT_TOO_LONG_PATTERNS)
def test_every_seed_002_pattern_is_prompt_too_long(pattern: str) -> None:
    assert classify_error(f"Error: {pattern.upper()} (request 1)") is ErrorKind.PROMPT_TOO_LONG


@pytest.mark.parametrize(
    ("message", "status", "type", "kind"),
    [
        # Anthropic
        (
            "prompt is too long: 208310 tokens > 200000 maximum",
            400,
            "invalid_request_error",
            "prompt_too_long",
        ),
        ("Overloaded", 529, "overloaded_error", "overloaded"),
        ("Overloaded", None, "overloaded_error", "overloaded"),
        (
            "Number of request tokens has exceeded your per-minute rate limit",
            429,
            "rate_limit_error",
            "rate_limited",
        ),
        ("invalid x-api-key", 401, "authentication_error", "authentication"),
        (
            "Your API key does not have permission to use the specified resource.",
            403,
            "permission_error",
            "permission",
        ),
        ("model: claude-9", 404, "not_found_error", "not_found"),
        ("Internal server error", 500, "api_error", "server"),
        ("max_tokens: Field required", 400, "invalid_request_error", "invalid_request"),
        (
            "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000",
            400,
            "invalid_request_error",
            "invalid_request",
        ),
        # OpenAI
        (
            "This model's maximum context length is 128000 tokens. However, your messages resulted in "
            "130012 tokens.",
            400,
            "context_length_exceeded",
            "prompt_too_long",
        ),
        (
            "Your input exceeds the context window of this model.",
            400,
            "context_length_exceeded",
            "prompt_too_long",
        ),
        (
            "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): "
            "Limit 30000, Used 29950, Requested 400.",
            429,
            "rate_limit_exceeded",
            "rate_limited",
        ),
        (
            "You exceeded your current quota, please check your plan and billing details.",
            429,
            "insufficient_quota",
            "rate_limited",
        ),
        ("Incorrect API key provided: sk-***.", 401, "invalid_api_key", "authentication"),
        (
            "The model `gpt-9` does not exist or you do not have access to it.",
            404,
            "model_not_found",
            "not_found",
        ),
        ("The server had an error while processing your request.", None, "server_error", "server"),
        ("The server is overloaded or not ready yet.", 503, None, "overloaded"),
        ("The server is overloaded or not ready yet.", None, "server_error", "overloaded"),
        ("Service Unavailable", 503, "server_error", "overloaded"),
        ("Internal error", 500, "server_error", "server"),
        ("Invalid value for 'temperature'", 400, "invalid_request_error", "invalid_request"),
        # Rate limit words about tokens are not a long prompt.
        ("too many tokens per minute", 429, None, "rate_limited"),
        # Status only / words only
        ("", 502, None, "server"),
        ("<html>502 Bad Gateway</html>", 502, None, "server"),
        ("upstream connect error", None, None, "unknown"),
        ("Request rate limit exceeded", None, None, "rate_limited"),
        ("Service overloaded", None, None, "overloaded"),
    ],
)
def test_vendor_errors(message: str, status: int | None, type: str | None, kind: str) -> None:
    assert classify_error(message, status=status, type=type) is ErrorKind(kind)


def test_error_message_is_bounded_and_masks_keys() -> None:
    assert error_message("bad key sk-ant-api03-AbCdEfGh12345 here") == "bad key [REDACTED] here"
    assert error_message("key sk-proj-abcdefghijkl") == "key [REDACTED]"
    # keys without an sk- prefix go through the same engine as every other output
    assert error_message("bad key AIzaSyPLANTEDabcdefghijklmnopqrstu") == "bad key [REDACTED]"
    long = error_message("x" * 10_000)
    assert len(long) == MAX_ERROR_MESSAGE + 3
    assert error_message("nothing secret") == "nothing secret"
