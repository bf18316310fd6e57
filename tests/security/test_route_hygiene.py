"""Route credential hygiene, sans-IO parts: the header plan, the query filter, the operator's key
never returned to a client, and every error ProxAI writes for a client redacted."""

from __future__ import annotations

import json

import pytest
from mitmproxy.test import tutils

from proxai.core.errors.shapes import error_body, error_event
from proxai.core.model import ErrorKind, Protocol
from proxai.mitm.routing import scrub_operator_key
from proxai.safety.redact import REDACTED, register_secret
from proxai.translate.errors import translate_error
from proxai.translate.headers import credential_free_query, is_client_credential, plan_headers
from tests.security import planted

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES


def _apply(headers: dict[str, str], client: Protocol, target: Protocol, key: str | None) -> dict[str, str]:
    plan = plan_headers(headers, client=client, target=target, key=key)
    out = {k.lower(): v for k, v in headers.items() if k.lower() not in plan.remove}
    out.update(dict(plan.set))
    return out


@pytest.mark.parametrize("client", [A, C, R])
@pytest.mark.parametrize("target", [A, C, R])
def test_env_route_sends_only_its_key(client: Protocol, target: Protocol) -> None:
    headers = {**planted.client_headers(), "x-proxai-test": "t", "content-type": "application/json"}
    out = _apply(headers, client, target, "sk-env-route-key")
    expected = {"x-proxai-test": "t", "content-type": "application/json"}
    if target is A:
        expected |= {"x-api-key": "sk-env-route-key", "anthropic-version": "2023-06-01"}
    else:
        expected |= {"authorization": "Bearer sk-env-route-key"}
    assert out == expected


def test_pass_route_keeps_openai_identity_only_between_openai_protocols() -> None:
    headers = {"authorization": "Bearer sk-client", "openai-organization": "org-1", "openai-project": "p"}
    assert _apply(headers, C, R, None) == {**headers}
    assert _apply(headers, C, A, None) == {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}


def test_sigv4_and_custom_credential_headers() -> None:
    h = planted.client_headers(sigv4=True)
    out = _apply({"authorization": h["authorization"], "x-amz-date": "d", "x-custom-key": "k"}, C, C, None)
    assert out == {}
    assert is_client_credential("X-Custom-Auth-Token") and is_client_credential("x-amz-content-sha256")
    assert not is_client_credential("anthropic-version") and not is_client_credential("x-stainless-os")


def test_credential_free_query() -> None:
    assert credential_free_query(planted.QUERY) == "api-version=2024-06-01"
    assert credential_free_query("a=1&X-Amz-Signature=s&sig=x&b&accessToken=t") == "a=1&b"
    assert credential_free_query("") == ""


def test_operator_key_scrubbed_from_reply() -> None:
    key = "sk-proj-PLANTEDscrubTestKey"
    resp = tutils.tresp(content=f'{{"error":{{"message":"Incorrect API key provided: {key}"}}}}'.encode())
    resp.headers["x-echo"] = f"got {key}"
    scrub_operator_key(resp, key)
    assert key not in (resp.content or b"").decode() and key not in resp.headers["x-echo"]
    assert json.loads(resp.content or b"")["error"]["message"] == f"Incorrect API key provided: {REDACTED}"


def test_errors_written_for_a_client_are_redacted() -> None:
    operator = "9f8e7d6c5b4aOPERATORonlyKey"  # no provider prefix: known only by registration
    register_secret(operator)
    message = f"Incorrect API key provided: {planted.AZURE_KEY} / {operator} / {planted.GOOGLE_KEY}"
    for protocol in (A, C, R):
        for out in (
            error_body(protocol, ErrorKind.AUTHENTICATION, message),
            error_event(protocol, ErrorKind.AUTHENTICATION, message),
        ):
            text = out.decode()
            assert operator not in text and planted.GOOGLE_KEY not in text, text
            assert "Incorrect API key provided" in text
    te = translate_error(json.dumps({"error": {"message": message}}).encode(), 401, A)
    assert operator not in te.body.decode() and operator not in te.message
