"""Runs inside ``bench/.peer-venv`` (LiteLLM installed there, never in .venv): LiteLLM's
streaming adapters on the same generated streams, timed against the same floor.

- Anthropic -> Chat: ``litellm.llms.anthropic.chat.handler.ModelResponseIterator`` over the
  stream's lines, each chunk serialized as a Chat SSE event (``model_dump_json``).
- Chat -> Anthropic: each Chat chunk parsed into ``ModelResponseStream`` (as LiteLLM's OpenAI
  client does), then ``AnthropicStreamWrapper.anthropic_sse_wrapper()`` gives the SSE bytes.

LiteLLM receives whole lines (its HTTP client splits them); our figures include scanning.
Prints one JSON object.

The rule (docs/design/translation.md): the Chat <-> Anthropic streaming lifecycle that
these adapters implement too, so the comparison is like for like.
"""

from __future__ import annotations

import json
import logging
import sys
from functools import partial
from typing import Any

import orjson

from . import streams
from .floor import floor
from .timing import best_of


def anthropic_to_chat(body: bytes) -> int:
    from litellm.llms.anthropic.chat.handler import ModelResponseIterator  # type: ignore[import-not-found]
    from litellm.types.utils import ModelResponseStream  # type: ignore[import-not-found]

    lines = [ln for ln in body.decode().split("\n") if ln]
    it = ModelResponseIterator(iter(lines), sync_stream=True)
    n = 0
    for chunk in it:
        if isinstance(chunk, ModelResponseStream):
            b"data: " + chunk.model_dump_json(exclude_none=True).encode() + b"\n\n"
            n += 1
    return n


def chat_to_anthropic(body: bytes) -> int:
    from litellm.llms.anthropic.messages.adapters.streaming_iterator import (  # type: ignore[import-not-found]
        AnthropicStreamWrapper,
    )
    from litellm.types.utils import ModelResponseStream

    def chunks() -> Any:
        for line in body.split(b"\n"):
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                yield ModelResponseStream(**orjson.loads(line[6:]))

    w = AnthropicStreamWrapper(completion_stream=chunks(), model="claude-sonnet-4-5")
    n = 0
    for _ in w.anthropic_sse_wrapper():
        n += 1
    return n


def main() -> None:
    logging.disable(logging.CRITICAL)
    events, repeats = int(sys.argv[1]), int(sys.argv[2])
    out: dict[str, Any] = {}
    for name, src, fn in (
        ("anthropic_messages->openai_chat", "anthropic_messages", anthropic_to_chat),
        ("openai_chat->anthropic_messages", "openai_chat", chat_to_anthropic),
    ):
        body = streams.generate(src, events)
        ch = streams.chunks(body, 512)
        try:
            produced = fn(body)
            best = best_of({"floor": partial(floor, ch), "peer": partial(fn, body)}, repeats)
            out[name] = {
                "events": floor(ch),
                "produced": produced,
                "floor_s": best["floor"],
                "peer_s": best["peer"],
            }
        except Exception as exc:
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    import litellm  # type: ignore[import-not-found]

    out["version"] = getattr(litellm, "__version__", None) or _version()
    print(json.dumps(out))


def _version() -> str:
    from importlib.metadata import version

    return version("litellm")


if __name__ == "__main__":
    main()
