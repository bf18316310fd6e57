"""Pure builders of Chat Completions stream chunks (no state). docs/design/clients.md: every chunk carries
``"object": "chat.completion.chunk"``; ``role``/``id``/``name``/``type`` appear once per call;
every tool-call delta carries ``function``; usage rides only on the final ``choices: []`` chunk,
then ``data: [DONE]``."""

from __future__ import annotations

from typing import Any

import orjson

from proxai.stream.sink import TokenUsage

DONE = b"data: [DONE]\n\n"


def identity_prefix(id: str, model: str, created: int) -> bytes:
    """``{"id":..,"object":..,"created":..,"model":..,`` - shared by every chunk of the stream."""
    head = orjson.dumps({"id": id, "object": "chat.completion.chunk", "created": created, "model": model})
    return head[:-1] + b","


def chunk(prefix: bytes, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
    return b"data: " + prefix + b'"choices":[' + orjson.dumps(choice) + b"]}\n\n"


def logprobs_chunk(prefix: bytes, logprobs: dict[str, Any]) -> bytes:
    """The upstream's token log probabilities, on a chunk of their own (the SDK extends its
    ``logprobs.content`` / ``refusal`` lists with each chunk's)."""
    choice = {"index": 0, "delta": {}, "logprobs": logprobs, "finish_reason": None}
    return b"data: " + prefix + b'"choices":[' + orjson.dumps(choice) + b"]}\n\n"


def raw_choice_chunk(prefix: bytes, choice: dict[str, Any]) -> bytes:
    """One upstream choice as it came, on a chunk of the stream (normalize mode, ``n > 1``)."""
    return b"data: " + prefix + b'"choices":[' + orjson.dumps(choice) + b"]}\n\n"


_IDENTITY_KEYS = frozenset({"id", "object", "created", "model", "choices"})


def choiceless_chunk(prefix: bytes, obj: dict[str, Any]) -> bytes:
    """An upstream chunk that had no ``choices``, with the stream's identity and ``choices: []``
    (the Python SDK's helper indexes ``choices`` and skips another ``object``), its other fields
    as they came."""
    extra = {k: v for k, v in obj.items() if k not in _IDENTITY_KEYS}
    rest = b"," + orjson.dumps(extra)[1:-1] if extra else b""
    return b"data: " + prefix + b'"choices":[]' + rest + b"}\n\n"


CHOICE_TAIL = b'},"logprobs":null,"finish_reason":null}]}\n\n'
ARGS_TAIL = b"}}]" + CHOICE_TAIL


def content_frame(prefix: bytes, field: bytes) -> bytes:
    """A ``content`` / ``refusal`` delta chunk as one ``bytes %`` format of ``json(text)``
    (everything else is constant within the block: the hot path serializes only the text, and
    one format costs less than two concatenations)."""
    head = b'data: %b"choices":[{"index":0,"delta":{"%b":' % (prefix, field)
    return head.replace(b"%", b"%%") + b"%b" + CHOICE_TAIL


def args_frame(prefix: bytes, index: int) -> bytes:
    """Tool call ``index``'s argument fragment chunks as one ``bytes %`` format of
    ``json(fragment)`` (``function`` on every tool delta, docs/design/clients.md)."""
    head = b'data: %b"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":' % (
        prefix,
        index,
    )
    return head.replace(b"%", b"%%") + b"%b" + ARGS_TAIL


def usage_chunk(prefix: bytes, usage: TokenUsage, fields: dict[str, Any] | None = None) -> bytes:
    """The usage-only chunk; ``fields``: the upstream's own fields on it (normalize mode), but the
    stream's identity and ``choices``."""
    body: dict[str, Any] = {
        "prompt_tokens": usage.input or 0,
        "completion_tokens": usage.output or 0,
        "total_tokens": usage.total or 0,
    }
    if usage.cache_read is not None or usage.cache_write is not None:
        details: dict[str, int] = {"cached_tokens": usage.cache_read or 0}
        if usage.cache_write is not None:
            details["cache_write_tokens"] = usage.cache_write
        body["prompt_tokens_details"] = details
    if usage.reasoning is not None:
        body["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning}
    if usage.extra:  # (normalize mode: a gateway's cost, as it came)
        body.update(usage.extra)
    extra = {k: v for k, v in fields.items() if k not in _IDENTITY_KEYS} if fields else None
    rest = b"," + orjson.dumps(extra)[1:-1] if extra else b""
    return b"data: " + prefix + b'"choices":[],"usage":' + orjson.dumps(body) + rest + b"}\n\n"


def role_delta() -> dict[str, Any]:
    return {"role": "assistant"}


def tool_start_delta(index: int, id: str, name: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}
        ]
    }
