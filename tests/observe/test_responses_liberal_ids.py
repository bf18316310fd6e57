"""A Responses reading both official SDKs make and the grammar must match (protocol-grammars.md,
"OpenAI Responses"): a ``response.failed`` whose response lost its ``status`` is failed all the same
(both SDKs raise: no ``response.completed``), with the error its response carries; an item event is
the item at its ``output_index`` whatever its ``item_id`` says."""

from __future__ import annotations

import orjson
import pytest

from proxai.core.model import ErrorKind, Outcome, Protocol, StreamSummary
from proxai.core.sse import SseScanner
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


def _two(kind: str, ids: tuple[str, str]) -> bytes:
    """Two messages (text "Hi", "Yo") or two function calls (arguments {"a":1}, {"b":2}) at output
    indexes 0 and 1, whose deltas name the items ``ids`` (each delta at its item's index)."""
    msg = kind == "message"
    items = [
        {"id": f"msg_{k}", "type": "message", "role": "assistant", "status": "completed", "content": []}
        if msg
        else {"id": f"fc_{k}", "type": "function_call", "call_id": f"call_{k}", "name": "fg"[k - 1]}
        for k in (1, 2)
    ]
    pieces = ["Hi", "Yo"] if msg else ['{"a":1}', '{"b":2}']
    done = [
        {**it, "content": [{"type": "output_text", "text": p, "annotations": []}]}
        if msg
        else {**it, "arguments": p, "status": "completed"}
        for it, p in zip(items, pieces, strict=True)
    ]
    resp = {"id": "resp_1", "object": "response", "model": "m", "status": "in_progress", "output": []}
    events: list[dict] = [{"type": "response.created", "response": resp}]
    for k, it in enumerate(items):
        events.append(
            {"type": "response.output_item.added", "output_index": k, "item": {**it, "arguments": ""}}
        )
        if msg:
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(
                {"type": "response.content_part.added", "item_id": it["id"], "output_index": k}
                | {"content_index": 0, "part": part}
            )
    for k, p in enumerate(pieces):
        where = {"content_index": 0} if msg else {}
        etype = "response.output_text.delta" if msg else "response.function_call_arguments.delta"
        events.append({"type": etype, "item_id": ids[k], "output_index": k, "delta": p, **where})
    events += [
        {"type": "response.output_item.done", "output_index": k, "item": d} for k, d in enumerate(done)
    ]
    events.append({"type": "response.completed", "response": {**resp, "status": "completed", "output": done}})
    return _sse([{**e, "sequence_number": n} for n, e in enumerate(events)])


@pytest.mark.parametrize("kind", ["message", "function_call"])
def test_an_item_event_naming_another_item_is_the_one_at_its_output_index(kind: str) -> None:
    """Both SDKs place an item event by its ``output_index`` and read no ``item_id``: deltas whose
    ids are swapped go to the items at their indexes (before: to the items they named, so an
    Anthropic client got "Hi" in the second text block, and a function call's .done contradicted
    the arguments streamed into it, a violation in every translation). Noted, never a violation."""
    prefix = "msg" if kind == "message" else "fc"
    body = _two(kind, (f"{prefix}_2", f"{prefix}_1"))
    s, obs = run_stream(R, [body])
    assert (s.outcome, s.error) == (Outcome.COMPLETED, None)
    notes = [(f.rule, f.detail) for f in obs.findings]
    etype = "response.output_text.delta" if kind == "message" else "response.function_call_arguments.delta"
    assert notes == [
        (
            "openai_responses.item_id_other",
            f"{etype} with item_id '{prefix}_2': read as item '{prefix}_1', the one at its output_index",
        )
    ]
    reads, error, _ = _carrier(R, Protocol.ANTHROPIC_MESSAGES, [body])
    assert error is None
    deltas = [
        (d["index"], d["delta"].get("text", d["delta"].get("partial_json")))
        for e in SseScanner().feed(b"".join(reads))
        if (d := orjson.loads(e.data))["type"] == "content_block_delta"
    ]
    assert deltas == ([(0, "Hi"), (1, "Yo")] if kind == "message" else [(0, '{"a":1}'), (1, '{"b":2}')])
    _check(R, [body])


def test_an_item_event_whose_output_index_names_an_item_of_another_type_is_the_named_one() -> None:
    """The SDK property (seed 508): a function call's arguments.done whose output_index names the
    reasoning item at 0. Both SDKs find that item and skip the event (openai-python does not read an
    arguments.done, openai-node applies it to a function_call only); read as the call it names, as
    before, not as the reasoning item (a violation: arguments for a reasoning item)."""
    name = "openai--vercel-ai--programmatic-tool-calling-1.rebuilt.sse"
    body = (FIXTURES / "real" / "responses" / name).read_bytes()
    whole, _ = run_stream(R, [body])
    events = [orjson.loads(b.split(b"data: ", 1)[1]) for b in body.split(b"\n\n") if b"data: " in b]
    assert (events[8]["type"], events[8]["output_index"]) == ("response.function_call_arguments.done", 2)
    events[8]["output_index"] = 0
    s, obs = run_stream(R, [_sse(events)])
    assert (s.outcome, s.error) == (Outcome.COMPLETED, None)
    assert (
        _tools(s) == _tools(whole) == [("call_VgDSZztLociNcutQZWkC2fmL", "getInventory", '{"sku":"sku_123"}')]
    )
    assert [f.rule for f in obs.findings if f.rule.startswith("openai_responses.item_id")] == []
