"""Header translation and upstream error bodies."""

from __future__ import annotations

import json

import pytest

from proxai.core.errors import TranslationError
from proxai.core.model import ErrorKind, Protocol
from proxai.translate.errors import extract_error, is_failed_body, translate_error
from proxai.translate.headers import client_key, env_key, plan_headers

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES


def _apply(
    headers: dict[str, str], client: Protocol, target: Protocol, key: str | None = None
) -> dict[str, str]:
    plan = plan_headers(headers, client=client, target=target, key=key)
    out = {k.lower(): v for k, v in headers.items() if k.lower() not in plan.remove}
    out.update(dict(plan.set))
    return out


def test_anthropic_client_to_openai_target() -> None:
    out = _apply(
        {
            "X-Api-Key": "sk-ant-client",
            "anthropic-version": "2023-06-01",
            "anthropic-beta": "prompt-caching-2024-07-31",
            "Content-Type": "application/json",
            "Content-Length": "10",
            "x-proxai-test": "t",
        },
        A,
        C,
    )
    assert out == {
        "authorization": "Bearer sk-ant-client",
        "content-type": "application/json",
        "content-length": "10",  # recomputed by mitmproxy when the body is replaced
        "x-proxai-test": "t",
    }


def test_openai_client_to_anthropic_target() -> None:
    out = _apply(
        {"Authorization": "Bearer sk-openai", "OpenAI-Organization": "org-1", "openai-beta": "assistants=v2"},
        C,
        A,
    )
    assert out == {"x-api-key": "sk-openai", "anthropic-version": "2023-06-01"}


def test_azure_key_header() -> None:
    out = _apply({"api-key": "azure-key", "OpenAI-Project": "p"}, C, A)
    assert out == {"x-api-key": "azure-key", "anthropic-version": "2023-06-01"}


def test_anthropic_client_to_anthropic_keeps_version_and_beta() -> None:
    out = _apply({"x-api-key": "k", "anthropic-version": "2024-01-01", "anthropic-beta": "b"}, A, A)
    assert out == {"x-api-key": "k", "anthropic-version": "2024-01-01", "anthropic-beta": "b"}


def test_env_key_replaces_client_key() -> None:
    out = _apply({"Authorization": "Bearer client-key"}, R, A, key="env-key")
    assert out["x-api-key"] == "env-key"
    assert "authorization" not in out
    out = _apply({"x-api-key": "client-key"}, A, R, key="env-key")
    assert out == {"authorization": "Bearer env-key"}


def test_client_key_and_env_key() -> None:
    assert client_key({"authorization": "bearer abc"}) == "abc"
    assert client_key({"authorization": "Basic abc"}) is None
    assert env_key({"K": "v"}, "K") == "v"
    with pytest.raises(TranslationError) as info:
        env_key({}, "MISSING_KEY")
    assert info.value.field == "auth" and "MISSING_KEY" in str(info.value)


ANTHROPIC_429 = {
    "type": "error",
    "error": {"type": "rate_limit_error", "message": "Number of requests exceeded"},
}
OPENAI_400_CTX = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
        "param": "messages",
    }
}


@pytest.mark.parametrize(
    ("raw", "status", "client", "out_status", "kind"),
    [
        (ANTHROPIC_429, 429, C, 429, ErrorKind.RATE_LIMITED),
        (OPENAI_400_CTX, 400, A, 400, ErrorKind.PROMPT_TOO_LONG),
        ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, 529, R, 503,
         ErrorKind.OVERLOADED),
        ({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                    "code": "invalid_api_key"}}, 401, A, 401, ErrorKind.AUTHENTICATION),
        ({"detail": "Not Found"}, 404, A, 404, ErrorKind.NOT_FOUND),
    ],
)  # fmt: skip
def test_error_bodies_in_client_shape(
    raw: dict[str, object], status: int, client: Protocol, out_status: int, kind: ErrorKind
) -> None:
    te = translate_error(json.dumps(raw).encode(), status, client)
    assert te.status == out_status
    assert te.kind is kind
    body = json.loads(te.body)
    message = extract_error(json.dumps(raw).encode())[0]
    if client is A:
        assert body["type"] == "error" and body["error"]["message"] == message
    else:
        assert body["error"]["message"] == message


def test_error_plain_text_and_status_kept() -> None:
    te = translate_error(b"<html>502 Bad Gateway</html>", 502, A)
    assert te.status == 502
    assert json.loads(te.body)["error"]["message"] == "<html>502 Bad Gateway</html>"
    te = translate_error(b"", 500, C)
    assert te.status == 500 and "empty error body" in te.message


def test_error_key_masked() -> None:
    te = translate_error(b'{"error": {"message": "bad key sk-proj-abcdefghijklmnop"}}', 401, A)
    assert "abcdefghijklmnop" not in te.body.decode()


def test_failed_responses_body() -> None:
    assert is_failed_body(R, {"status": "failed", "error": {"code": "server_error", "message": "x"}})
    assert not is_failed_body(C, {"status": "failed"})
