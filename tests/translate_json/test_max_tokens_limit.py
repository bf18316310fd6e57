"""A route's ``max_tokens_limit``: the output token limit sent to the target is at most the limit,
in the target's own field, with a note; an Anthropic thinking budget stays below it."""

from __future__ import annotations

from typing import Any

import pytest

from proxai.core.model import Protocol
from proxai.translate.ir import RequestOptions
from proxai.translate.request import translate_request

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
MESSAGES: Any = [{"role": "user", "content": "hi"}]


def _body(client: Protocol, limit: int) -> dict[str, Any]:
    if client is A:
        return {"model": "m", "max_tokens": limit, "messages": MESSAGES}
    if client is C:
        return {"model": "m", "max_completion_tokens": limit, "messages": MESSAGES}
    return {"model": "m", "max_output_tokens": limit, "input": "hi"}


@pytest.mark.parametrize(
    ("client", "target", "field"),
    [
        (A, C, "max_tokens"),
        (A, R, "max_output_tokens"),
        (C, A, "max_tokens"),
        (R, C, "max_tokens"),
        (R, A, "max_tokens"),
        (A, A, "max_tokens"),  # a plain reroute is capped too
        (C, C, "max_completion_tokens"),
    ],
)
def test_above_the_limit_is_lowered_with_a_note(client: Protocol, target: Protocol, field: str) -> None:
    out = translate_request(_body(client, 128000), client, target, RequestOptions(max_tokens_limit=32768))
    assert out.body[field] == 32768
    assert out.notes == (f"{field}: 128000 lowered to the route's max_tokens_limit 32768",)


@pytest.mark.parametrize("asked", [32768, 1000])
def test_at_or_below_the_limit_is_untouched(asked: int) -> None:
    out = translate_request(_body(A, asked), A, C, RequestOptions(max_tokens_limit=32768))
    assert out.body["max_tokens"] == asked and out.notes == ()


def test_no_limit_changes_nothing() -> None:
    out = translate_request(_body(A, 128000), A, C, RequestOptions())
    assert out.body["max_tokens"] == 128000 and out.notes == ()


def test_the_chat_field_the_route_chose() -> None:
    opts = RequestOptions(max_tokens_limit=8192, chat_max_tokens_field="max_completion_tokens")
    out = translate_request(_body(A, 128000), A, C, opts)
    assert out.body["max_completion_tokens"] == 8192 and "max_tokens" not in out.body


def test_an_anthropic_thinking_budget_stays_below_the_limit() -> None:
    body = {"model": "gpt-5", "input": "hi", "reasoning": {"effort": "high"}}
    out = translate_request(body, R, A, RequestOptions(max_tokens_limit=8000))
    assert out.body["max_tokens"] == 8000
    assert out.body["thinking"] == {"type": "enabled", "budget_tokens": 6000}
    assert out.notes == (
        f"max_tokens: {4096 + 16384} lowered to the route's max_tokens_limit 8000",
        "thinking.budget_tokens: 16384 lowered to 6000, below max_tokens 8000",
    )
