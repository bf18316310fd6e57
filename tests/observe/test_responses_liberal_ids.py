"""A Responses reading both official SDKs make and the grammar must match (protocol-grammars.md,
"OpenAI Responses"): a ``response.failed`` whose response lost its ``status`` is failed all the same
(both SDKs raise: no ``response.completed``), with the error its response carries."""

from __future__ import annotations

import orjson

from proxai.core.model import ErrorKind, Outcome, Protocol, StreamSummary
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


def _tools(s: StreamSummary) -> list[tuple[str | None, str | None, str | None]]:
    return [(t.id, t.name, t.arguments) for t in s.tool_calls]


def test_an_item_added_without_an_id_is_the_one_its_events_name() -> None:
    whole, _ = run_stream(R, [(FIXTURES / "openai_responses" / "parallel_tools.sse").read_bytes()])
    events = _events("parallel_tools.sse")
    added = next(e for e in events if e["type"] == "response.output_item.added")
    iid = added["item"].pop("id")
    s, obs = run_stream(R, [_sse(events)])
    assert s.outcome is Outcome.COMPLETED, s.error
    assert len(whole.tool_calls) == 2 and _tools(s) == _tools(whole)
    notes = [f.detail for f in obs.findings if f.rule == "openai_responses.item_id_null"]
    assert len(notes) == 1 and f"item_id {iid!r}: read as item 'output_" in notes[0]


def test_an_item_event_with_an_empty_item_id_is_the_one_at_its_output_index() -> None:
    whole, _ = run_stream(R, [(FIXTURES / "openai_responses" / "parallel_tools.sse").read_bytes()])
    events = _events("parallel_tools.sse")
    delta = next(e for e in events if e["type"] == "response.function_call_arguments.delta")
    iid = delta["item_id"]
    delta["item_id"] = ""
    s, obs = run_stream(R, [_sse(events)])
    assert s.outcome is Outcome.COMPLETED, s.error
    assert _tools(s) == _tools(whole)
    notes = [f.detail for f in obs.findings if f.rule == "openai_responses.item_id_null"]
    assert len(notes) == 1 and f"with item_id '': read as item {iid!r}" in notes[0]
