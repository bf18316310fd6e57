"""Chat normalize mode: an upstream chunk without ``choices`` (``null``) that carries the usage goes
after the finish chunk the writer holds back to the end, on the one usage-only chunk, with the
fields the upstream gave it (to_chat/writer.py ``ChatWriter.opaque_event``, ``end``). openai-python
and openai-node raise on ``choices: null`` (``openai_chat.no_choices``); the client gets
``choices: []`` and every SDK reads the answer and the usage."""

from __future__ import annotations

import json
from typing import Any

from proxai.core.model import Protocol
from proxai.pipeline.flow import make_stream_translator
from tests.conformance import sdks

from .harness import carry
from .validators import VALIDATORS

C = Protocol.OPENAI_CHAT
USAGE = {"prompt_tokens": 25, "completion_tokens": 11, "total_tokens": 36}
HEAD = '{"id":"c1","object":"chat.completion.chunk","created":1767225600,"model":"m",'


def _data(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _chunk(choices: Any, **kw: Any) -> bytes:
    return _data(
        {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": choices, **kw}
    )


def _ch(delta: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
    return [{"index": 0, "delta": delta, "finish_reason": finish}]


def _normalized(body: bytes, include_usage: bool = True) -> bytes:
    t = make_stream_translator(C, C, normalize=True, created=1_767_225_600, include_usage=include_usage)
    return carry(t, [body])


def _expected_text_chunks() -> bytes:
    role = HEAD + '"choices":[{"index":0,"delta":{"role":"assistant"},"logprobs":null,"finish_reason":null}]}'
    hi = HEAD + '"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}'
    finish = HEAD + '"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}'
    return f"data: {role}\n\ndata: {hi}\n\ndata: {finish}\n\n".encode()


# the upstream's last chunk lost its choices (null) and kept its usage; no finish_reason came
BODY = (
    _chunk(_ch({"role": "assistant", "content": ""}))
    + _chunk(_ch({"content": "Hi"}))
    + _chunk(None, usage=USAGE, system_fingerprint="fp_1")
    + b"data: [DONE]\n\n"
)


def test_a_usage_chunk_without_choices_goes_after_the_finish_chunk() -> None:
    out = _normalized(BODY)
    usage = (
        HEAD + '"choices":[],"usage":{"prompt_tokens":25,"completion_tokens":11,"total_tokens":36},'
        '"system_fingerprint":"fp_1"}'
    )
    assert out == _expected_text_chunks() + f"data: {usage}\n\ndata: [DONE]\n\n".encode()
    fin = VALIDATORS["openai_chat"](out)
    assert (fin.text, fin.usage) == ("Hi", USAGE)
    py = sdks.python("chat", out)
    nd = sdks.node([("chat", out)])[0]
    for got in (py, nd):
        assert got.ok, got
        choice = got.final["choices"][0]
        assert (choice["message"]["content"], choice["finish_reason"]) == ("Hi", "stop")
        assert {k: got.final["usage"][k] for k in USAGE} == USAGE
    assert py.final["system_fingerprint"] == nd.final["system_fingerprint"] == "fp_1"


def test_without_include_usage_the_held_chunk_comes_as_it_came_after_the_finish() -> None:
    out = _normalized(BODY, include_usage=False)
    held = (
        HEAD + '"choices":[],"usage":{"prompt_tokens":25,"completion_tokens":11,"total_tokens":36},'
        '"system_fingerprint":"fp_1"}'
    )
    assert out == _expected_text_chunks() + f"data: {held}\n\ndata: [DONE]\n\n".encode()
    VALIDATORS["openai_chat"](out)


def test_a_chunk_without_choices_nor_usage_is_written_where_it_came() -> None:
    body = (
        _chunk(_ch({"role": "assistant", "content": ""}))
        + _chunk(None, system_fingerprint="fp_1")
        + _chunk(_ch({"content": "Hi"}))
        + _chunk(_ch({}, "stop"))
        + b"data: [DONE]\n\n"
    )
    out = _normalized(body, include_usage=False)
    role, hi_finish = _expected_text_chunks().split(b"\n\n", 1)
    meta = HEAD + '"choices":[],"system_fingerprint":"fp_1"}'
    assert out == role + f"\n\ndata: {meta}\n\n".encode() + hi_finish + b"data: [DONE]\n\n"
