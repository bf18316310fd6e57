"""The errors real providers send, as they send them: status, headers, body, stream event.

One table per wire protocol of the errors an agent must survive (overloaded, rate limited, an
internal server error, a prompt that is too long), with the provider's own status code, error
type, wording and the headers that steer an SDK's retries (``retry-after``, ``x-should-retry``).
Two users read it: the embedded fake upstream (``proxai.upstream``), which plays these errors as
scripted scenarios, and the fault injector (``proxai.faults``), which answers a live request with
one of them. docs/design/faults.md says where the shapes come from.

- Anthropic Messages: HTTP 529 ``overloaded_error`` (with ``x-should-retry: true``), 429
  ``rate_limit_error`` (with ``retry-after``), 500 ``api_error``; body
  ``{"type":"error","error":{"type","message"},"request_id"}``; in a stream the same object as
  ``event: error``.
- OpenAI (Chat Completions and Responses alike): HTTP 503 "The server is overloaded or not
  ready yet.", 429 ``rate_limit_exceeded`` (with ``retry-after``), 500 "The server had an error
  ...", body ``{"error":{"message","type","param","code"}}``.

A rejected key (401) is apart (``auth_error``): its message quotes the key, as compatible servers
do, so the fake upstream can test that an operator's key never reaches a client.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson

from proxai.core.model import Protocol

ProviderError = Literal["overloaded", "rate_limit", "prompt_too_long", "server"]

# the retry-after the providers send with a rate limit, in seconds (as text, as on the wire)
DEFAULT_RETRY_AFTER = "2"

ANTHROPIC_ERRORS: dict[ProviderError, tuple[int, str, str]] = {
    "overloaded": (529, "overloaded_error", "Overloaded"),
    "server": (500, "api_error", "Internal server error"),
    "rate_limit": (
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50 requests per minute. "
        "For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response "
        "headers for current usage. Please reduce the prompt length or the maximum tokens requested, "
        "or try again later.",
    ),
    "prompt_too_long": (400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"),
}

# Chat Completions and Responses answer a rate limit alike
OPENAI_RATE_LIMIT: tuple[int, dict[str, Any]] = (
    429,
    {
        "message": "Rate limit reached for gpt-4o in organization org-fakeupstream on tokens per min "
        "(TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s. Visit "
        "https://platform.openai.com/account/rate-limits to learn more.",
        "type": "tokens",
        "param": None,
        "code": "rate_limit_exceeded",
    },
)

CHAT_ERRORS: dict[ProviderError, tuple[int, dict[str, Any]]] = {
    "overloaded": (
        503,
        {
            "message": "The server is overloaded or not ready yet.",
            "type": "server_error",
            "param": None,
            "code": None,
        },
    ),
    "server": (
        500,
        {
            "message": "The server had an error while processing your request. Sorry about that!",
            "type": "server_error",
            "param": None,
            "code": None,
        },
    ),
    "rate_limit": OPENAI_RATE_LIMIT,
    "prompt_too_long": (
        400,
        {
            "message": "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130012 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        },
    ),
}

RESPONSES_ERRORS: dict[ProviderError, tuple[int, dict[str, Any]]] = {
    "overloaded": (
        503,
        {
            "message": "The server is overloaded or not ready yet.",
            "type": "server_error",
            "param": None,
            "code": "server_error",
        },
    ),
    "server": (
        500,
        {
            "message": "The server had an error while processing your request. Sorry about that!",
            "type": "server_error",
            "param": None,
            "code": "server_error",
        },
    ),
    "rate_limit": OPENAI_RATE_LIMIT,
    "prompt_too_long": (
        400,
        {
            "message": "Your input exceeds the context window of this model. "
            "Please adjust your input and try again.",
            "type": "invalid_request_error",
            "param": "input",
            "code": "context_length_exceeded",
        },
    ),
}


# A rejected key (HTTP 401), in each provider's wording. Compatible servers often quote the key
# they received whole (OpenAI itself masks its middle): ``auth_error`` puts the given key in.
ANTHROPIC_INVALID_KEY = ("authentication_error", "invalid x-api-key: {key}")
OPENAI_INVALID_KEY: dict[str, Any] = {
    "message": "Incorrect API key provided: {key}. You can find your API key at "
    "https://platform.openai.com/account/api-keys.",
    "type": "invalid_request_error",
    "param": None,
    "code": "invalid_api_key",
}


def auth_error(protocol: Protocol, key: str, request_id: str = "") -> tuple[int, dict[str, Any]]:
    """A 401's status and error object quoting ``key``: for Anthropic the whole object (the HTTP
    body and the data of ``event: error``), for OpenAI the value of its ``"error"`` member."""
    if protocol is Protocol.ANTHROPIC_MESSAGES:
        etype, message = ANTHROPIC_INVALID_KEY
        err = {"type": etype, "message": message.replace("{key}", key)}
        return 401, {"type": "error", "error": err, "request_id": request_id}
    return 401, {**OPENAI_INVALID_KEY, "message": OPENAI_INVALID_KEY["message"].replace("{key}", key)}


def anthropic_error(name: ProviderError, request_id: str) -> tuple[int, dict[str, Any]]:
    """Anthropic's status and error object (the HTTP body, and the data of ``event: error``)."""
    status, etype, message = ANTHROPIC_ERRORS[name]
    return status, {"type": "error", "error": {"type": etype, "message": message}, "request_id": request_id}


def openai_errors(protocol: Protocol) -> dict[ProviderError, tuple[int, dict[str, Any]]]:
    return RESPONSES_ERRORS if protocol is Protocol.OPENAI_RESPONSES else CHAT_ERRORS


def http_headers(
    protocol: Protocol, name: ProviderError, request_id: str, retry_after: str | None = None
) -> tuple[tuple[str, str], ...]:
    """The headers a provider sends with an HTTP error: its request id, and for a rate limit the
    ``retry-after`` (``retry_after`` overrides the usual value, or sets one on any error)."""
    if protocol is Protocol.ANTHROPIC_MESSAGES:
        headers: tuple[tuple[str, str], ...] = (("request-id", request_id),)
        if name == "rate_limit":
            headers += (
                ("retry-after", retry_after or DEFAULT_RETRY_AFTER),
                ("anthropic-ratelimit-requests-remaining", "0"),
            )
        elif retry_after is not None:
            headers += (("retry-after", retry_after),)
        if name == "overloaded":
            headers += (("x-should-retry", "true"),)
        return headers
    headers = (("x-request-id", request_id),)
    if name == "rate_limit":
        headers += (
            ("retry-after", retry_after or DEFAULT_RETRY_AFTER),
            ("x-ratelimit-remaining-tokens", "0"),
        )
    elif retry_after is not None:
        headers += (("retry-after", retry_after),)
    return headers


def http_error(
    protocol: Protocol, name: ProviderError, request_id: str, retry_after: str | None = None
) -> tuple[int, tuple[tuple[str, str], ...], bytes]:
    """A provider's HTTP error response: status, headers (content-type included), JSON body."""
    if protocol is Protocol.ANTHROPIC_MESSAGES:
        status, obj = anthropic_error(name, request_id)
    else:
        status, err = openai_errors(protocol)[name]
        obj = {"error": err}
    headers = (("content-type", "application/json"), *http_headers(protocol, name, request_id, retry_after))
    return status, headers, orjson.dumps(obj)


def stream_error_message(protocol: Protocol, name: ProviderError) -> str:
    """The message the provider's error carries (what the client's SDK raises with)."""
    if protocol is Protocol.ANTHROPIC_MESSAGES:
        return ANTHROPIC_ERRORS[name][2]
    message: str = openai_errors(protocol)[name][1]["message"]
    return message
