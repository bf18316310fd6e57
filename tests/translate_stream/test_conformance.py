"""Conformance: every pair and normalize mode, every scenario of the fake upstream, fed whole,
byte by byte and at random splits. The emitted stream must pass the strict validator of the
client protocol, and the REAL SDK helper reading it must end with the same text, tool calls,
stop-reason class and usage as the upstream stream."""

from __future__ import annotations

import anthropic
import openai
import pytest

from proxai.core.model import Protocol, StopClass

from .harness import SDKS, A, C, Neutral, R, neutral_of, render, sdk_neutral, stop_bucket, translate, truth
from .validators import VALIDATORS, validate_typed

ROUTES = [(A, C), (A, R), (C, A), (C, R), (R, A), (R, C), (A, A), (C, C), (R, R)]
ROUTE_IDS = [f"{u.value}->{c.value}" for u, c in ROUTES]
SUCCESS = [
    "text",
    "parallel_tools",
    "thinking",
    "redacted_thinking",
    "max_tokens",
    "refusal",
    "empty_tool_delta",
    "args_in_done",
    "last_fragment_in_finish",
    "cache_usage",
]
FAILURE = ["error_midstream", "truncated", "reset"]
MODES = ["whole", "bytes", "random"]
THINKING_CAPABLE = {A, R}


def assert_same(expect: Neutral, got: Neutral, up: Protocol, client: Protocol, where: str) -> None:
    assert got.text == expect.text, where
    assert got.tools == expect.tools, where
    assert stop_bucket(got.stop) == stop_bucket(expect.stop), where
    if got.usage != (None, None, None, None):
        assert got.usage == expect.usage, where
    if up in THINKING_CAPABLE and client in THINKING_CAPABLE:
        assert (got.thinking, got.signature, got.redacted) == (
            expect.thinking,
            expect.signature,
            expect.redacted,
        ), where
    elif up in THINKING_CAPABLE and client is C:
        # Chat carries the reasoning text (``reasoning_content``), not its signature
        assert got.thinking == expect.thinking, where


@pytest.mark.parametrize("scenario", SUCCESS)
@pytest.mark.parametrize(("up", "client"), ROUTES, ids=ROUTE_IDS)
def test_success(up: Protocol, client: Protocol, scenario: str) -> None:
    raw, reset = render(up, scenario)
    assert not reset
    expect = truth(up, raw)
    whole, t = translate(up, client, raw)
    for mode in MODES[1:]:
        for seed in range(2 if mode == "random" else 1):
            again, _ = translate(up, client, raw, mode, seed=seed)
            assert again == whole, f"{mode} chunking changed the output"
    fin = VALIDATORS[client.value](whole)
    validate_typed(client.value, whole)
    assert fin.error is None

    assert_same(expect, neutral_of(client, fin), up, client, "validator")
    final = SDKS[client](whole)
    got = sdk_neutral(client, final)
    if got is None:
        # The Python Responses helper returns only completed responses (docs/design/clients.md).
        assert client is R and isinstance(final, RuntimeError)
        assert stop_bucket(expect.stop) in (StopClass.MAX_TOKENS, StopClass.REFUSAL)
    else:
        assert_same(expect, got, up, client, "sdk")
    if isinstance(final, openai.LengthFinishReasonError):
        assert expect.stop is StopClass.MAX_TOKENS
    if isinstance(final, openai.ContentFilterFinishReasonError):
        assert stop_bucket(expect.stop) is StopClass.REFUSAL
    if client is C and up is not C and (expect.signature or expect.redacted):
        dropped = t.metadata()["dropped"]
        assert dropped == {
            "signature_chars": len(expect.signature),
            "redacted_thinking_blocks": len(expect.redacted),
        }


def _sdk_raises(client: Protocol, body: bytes) -> Exception:
    with pytest.raises((anthropic.APIError, openai.APIError)) as info:
        SDKS[client](body)
    return info.value


@pytest.mark.parametrize("scenario", FAILURE)
@pytest.mark.parametrize(("up", "client"), ROUTES, ids=ROUTE_IDS)
def test_failure(up: Protocol, client: Protocol, scenario: str) -> None:
    raw, reset = render(up, scenario)
    whole, t = translate(up, client, raw, reset=reset)
    for mode in MODES[1:]:
        again, _ = translate(up, client, raw, mode, reset=reset)
        assert again == whole
    fin = VALIDATORS[client.value](whole)
    validate_typed(client.value, whole)
    assert fin.error is not None, "a failed upstream must end in a client-protocol error"
    assert fin.stop is None or client is R  # never a finish_reason / message_delta / completed
    assert b"data: [DONE]\n" not in whole
    exc = _sdk_raises(client, whole)
    if scenario == "error_midstream":
        assert "verloaded" in str(exc) or "overloaded" in str(exc).lower()
        assert t.upstream_error
    elif scenario == "truncated":
        assert "closed the" in str(exc)
    else:
        assert "reset" in str(exc)
    assert t.phase.value == "errored"
