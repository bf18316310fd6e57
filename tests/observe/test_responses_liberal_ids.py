"""A Responses reading both official SDKs make and the grammar must match (protocol-grammars.md,
"OpenAI Responses"): a ``response.failed`` whose response lost its ``status`` is failed all the same
(both SDKs raise: no ``response.completed``), with the error its response carries."""

from __future__ import annotations

import orjson
import pytest

from proxai.core.model import ErrorKind, Outcome, Protocol, StreamSummary
from tests.observe.harness import FIXTURES, run_stream
from tests.observe.test_payload_reuse import CLIENTS, _carrier, _check

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


@pytest.mark.parametrize(
    "etype",
    [
        "response.output_text.delta",
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
    ],
)
def test_an_item_event_naming_no_item_added_is_the_one_at_its_output_index(etype: str) -> None:
    """Both SDKs place every item event by its ``output_index`` and read no ``item_id`` (the SDK
    property found a text delta, and a function call's .done, with the id of no item added, which
    the grammar refused): read as the item added there, noted in every reading (observe-only looks
    the item of a content part up as a translation does), never a violation; every client gets the
    text (tests/conformance/test_liberal_reads.py runs the SDKs on it)."""
    whole, _ = run_stream(R, [(FIXTURES / "openai_responses" / "text.sse").read_bytes()])
    events = _events("text.sse")
    event = next(e for e in events if e["type"] == etype)
    iid, event["item_id"] = event["item_id"], "x1"
    body = _sse(events)
    s, obs = run_stream(R, [body])
    assert (s.outcome, s.error, s.text_bytes) == (Outcome.COMPLETED, None, whole.text_bytes)
    notes = [(f.rule, f.detail) for f in obs.findings if f.rule.startswith("openai_responses.item_id")]
    assert notes == [
        (
            "openai_responses.item_id_unknown",
            f"{etype} with item_id 'x1': read as item {iid!r}, the one at its output_index",
        )
    ]
    for client in CLIENTS[R]:
        _, error, summary = _carrier(R, client, [body])
        assert error is None, (client, error)
        assert summary["metadata"]["extra"]["notes"] == [notes[0][1]]
    _check(R, [body])
