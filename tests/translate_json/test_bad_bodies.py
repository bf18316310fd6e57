"""A request body the wire models refuse gives the same typed error (the client's field and
pydantic's message) whichever way the readers validate it: the body at the top, each message and
block under it, in the readers' order (docs/performance.md, "The routed request hook, 2026-12-03
night": the readers call each model's validator themselves; the errors are the ones
``model_validate`` gave)."""

from __future__ import annotations

from typing import Any

import pytest

from proxai.core.errors import TranslationError
from proxai.core.model import Protocol
from proxai.translate.request import translate_request

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
CASES: list[tuple[Protocol, Protocol, dict[str, Any], str, str]] = [
    (A, C, {"model": "m", "messages": "hi"}, "messages", "Input should be a valid list"),
    (A, C, {"model": "m"}, "messages", "Field required"),
    (A, C, {"model": "m", "messages": ["hi"]}, "messages[0]", "Input should be a valid dictionary"),
    (
        A,
        C,
        {"model": "m", "messages": [{"role": "user", "content": 3}]},
        "messages[0].content",
        "Input should be a valid string",
    ),
    (
        A,
        C,
        {"model": "m", "messages": [{"role": "robot", "content": "x"}]},
        "messages[0].role",
        "Input should be 'user', 'assistant' or 'system'",
    ),
    (  # the body's own field first, then the messages
        A,
        C,
        {"model": "m", "max_tokens": "lots", "messages": [{"role": "user", "content": 3}]},
        "max_tokens",
        "Input should be a valid integer, unable to parse string as an integer",
    ),
    (
        A,
        R,
        {"model": "m", "messages": [{"role": "user", "content": [{"type": "text"}]}]},
        "messages[0].content[0].text",
        "Field required",
    ),
    (
        A,
        R,
        {
            "model": "m",
            "messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "n", "input": []}]}
            ],
        },
        "messages[0].content[0].input",
        "Input should be a valid dictionary",
    ),
    (
        C,
        A,
        {"model": "m", "messages": [{"role": "user"}]},
        "messages[0].content",
        "a user message needs content",
    ),
    (
        C,
        A,
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"},
        "temperature",
        "Input should be a valid number, unable to parse string as a number",
    ),
    (R, C, {"model": "m", "input": 5}, "input", "Input should be a valid string"),
    (
        R,
        A,
        {"model": "m", "input": [{"type": "message", "role": "user", "content": [{"type": "input_text"}]}]},
        "input[0].content[0].text",
        "Field required",
    ),
]


@pytest.mark.parametrize(("client", "target", "body", "field", "reason"), CASES)
def test_a_bad_body_gives_the_same_typed_error(
    client: Protocol, target: Protocol, body: dict[str, Any], field: str, reason: str
) -> None:
    with pytest.raises(TranslationError) as err:
        translate_request(body, client, target)
    assert (err.value.field, err.value.reason) == (field, reason)
