"""The six translated pairs, one module each (issue 5). A pair is one source wrapper driving one
target writer (docs/streaming-translation.md, "Layout"); each module documents the facts
specific to its direction and builds its translator."""

from __future__ import annotations

from collections.abc import Callable

from proxai.model import Protocol
from proxai.translate.stream.driver import StreamTranslatorImpl

from . import (
    anthropic_to_chat,
    anthropic_to_responses,
    chat_to_anthropic,
    chat_to_responses,
    responses_to_anthropic,
    responses_to_chat,
)

Builder = Callable[..., StreamTranslatorImpl]

REGISTRY: dict[tuple[Protocol, Protocol], Builder] = {
    (m.SOURCE, m.TARGET): m.build
    for m in (
        anthropic_to_chat,
        anthropic_to_responses,
        chat_to_anthropic,
        chat_to_responses,
        responses_to_anthropic,
        responses_to_chat,
    )
}
