"""A Chat usage that carries fields the neutral usage does not name (OpenRouter's ``cost``,
``cost_details``, ``is_byok``), through the addon's real ``Carrier`` in every mode, the client's
bytes read by the official Python SDK (``CompletionUsage`` keeps extra fields): observe-only
passes it byte for byte, normalize mode writes the fields as they came beside the tokens the
writer rebuilds, a translation has no place for them (docs/design/protocol-grammars.md, "Events
the grammars do not model").

The body is written from the shape OpenRouter documents for its usage accounting.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corpus import run as corpus_run
from corpus import streams

from proxai.core.model import Outcome, Protocol

from .harness import sdk_anthropic, sdk_chat, sdk_responses

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES

HEAD = {"id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
COST = {"cost": 0.00042, "is_byok": False, "cost_details": {"upstream_inference_cost": None}}
USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5, **COST}


def _chunk(choices: list[dict[str, Any]], **fields: Any) -> bytes:
    return f"data: {json.dumps({**HEAD, 'choices': choices, **fields})}\n\n".encode()


BODY = b"".join(
    [
        _chunk([{"index": 0, "delta": {"role": "assistant", "content": "Hi"}, "finish_reason": None}]),
        _chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
        _chunk([], usage=USAGE),
        b"data: [DONE]\n\n",
    ]
)


def _carry(client: Protocol | None) -> corpus_run.Carried:
    path = Path(f"/tmp/proxai-unmodelled-c-{id(BODY)}.sse")
    path.write_bytes(BODY)
    try:
        got = corpus_run.carry(streams.Stream("chat/u.sse", path, C, "t", "t", False), client)
    finally:
        path.unlink()
    assert got.bugs == []
    return got


def _usage(body: bytes) -> list[dict[str, Any]]:
    chunks = [json.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: {")]
    return [c["usage"] for c in chunks if c.get("usage")]


def test_observed_bytes_unchanged_and_the_summary_counts_the_tokens() -> None:
    ref = sdk_chat(BODY).usage
    assert (ref.total_tokens, ref.cost, ref.is_byok, ref.cost_details) == (
        5,
        0.00042,
        False,
        COST["cost_details"],
    )
    got = _carry(None)
    assert got.out == BODY
    s = got.summary
    assert (s.outcome, s.stop_reason, s.text_bytes) == (Outcome.COMPLETED, "stop", 2)
    assert (s.usage.input_tokens, s.usage.output_tokens, s.usage.total_tokens) == (3, 2, 5)


def test_normalize_carries_the_usage_fields_as_they_came() -> None:
    got = _carry(C)
    assert _usage(got.out) == [USAGE]
    final = sdk_chat(got.out)
    assert final.choices[0].message.content == "Hi"
    u = final.usage
    assert (u.prompt_tokens, u.completion_tokens, u.total_tokens) == (3, 2, 5)
    assert (u.cost, u.is_byok, u.cost_details) == (0.00042, False, COST["cost_details"])


def test_translated_the_tokens_arrive_without_the_cost() -> None:
    for client in (A, R):
        got = _carry(client)
        assert got.summary.outcome is Outcome.COMPLETED
        assert b"cost" not in got.out
    msg = sdk_anthropic(_carry(A).out)
    assert ([(b.type, b.text) for b in msg.content], msg.usage.input_tokens, msg.usage.output_tokens) == (
        [("text", "Hi")],
        3,
        2,
    )
    resp = sdk_responses(_carry(R).out)
    assert (resp.output_text, resp.usage.total_tokens, resp.usage.model_extra) == ("Hi", 5, {})
