"""A Responses reading both official SDKs make and the grammar must match (protocol-grammars.md,
"OpenAI Responses"): a ``response.failed`` whose response lost its ``status`` is failed all the same
(both SDKs raise: no ``response.completed``), with the error its response carries."""

from __future__ import annotations

import orjson

from proxai.core.model import ErrorKind, Outcome, Protocol
from tests.observe.harness import FIXTURES, run_stream

R = Protocol.OPENAI_RESPONSES


def _events(name: str) -> list[dict]:
    blocks = (FIXTURES / "openai_responses" / name).read_bytes().split(b"\n\n")
    return [orjson.loads(b.split(b"data: ", 1)[1]) for b in blocks if b"data: " in b]


def _sse(events: list[dict]) -> bytes:
    return b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in events)


def test_a_failed_response_without_its_status_is_an_error() -> None:
    events = _events("failed.sse")
    assert events[-1]["type"] == "response.failed"
    del events[-1]["response"]["status"]
    s, _ = run_stream(R, [_sse(events)])
    assert s.outcome is Outcome.ERROR
    assert s.error is not None and s.error.kind is ErrorKind.SERVER
    assert s.error.message == "The model failed to generate a response."
    assert s.stop_reason == "failed"
