"""responses_after: what an event after ``response.completed`` that sets a field does to openai-node's
final response, judged against ``response.completed``'s response (the streams on both real SDKs are
cases in test_sdk_reactions)."""

from __future__ import annotations

from typing import Any

import pytest

from proxai.protocols.conformance import NODE_RESPONSES_EVENTS
from proxai.protocols.responses_after import DONE_RULE, SETTING, STATUS_RULE, same, same_annotation, sets

_CITE = {"type": "url_citation", "url": "u", "title": "t", "start_index": 0, "end_index": 2}
_MSG = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [
        {"type": "output_text", "text": "Hi", "annotations": [_CITE]},
        {"type": "refusal", "refusal": "no"},
    ],
}
_FC = {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
_RS = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "s"}],
    "content": [{"type": "reasoning_text", "text": "r"}],
}
_WS = {"id": "ws_1", "type": "web_search_call", "status": "completed"}
RESP = {"id": "resp_1", "output": [_MSG, _FC, _RS, _WS]}


def _ev(oi: int, **body: Any) -> dict[str, Any]:
    return {"output_index": oi, **body}


def test_json_equality_as_a_javascript_object_holds_it() -> None:
    assert same({"a": 1, "b": [1, "x"]}, {"b": [1.0, "x"], "a": 1})
    assert not same({"a": 1}, {"a": True})
    assert not same({"a": None}, {})
    assert not same([1, 2], [1, 2, 3])
    assert not same("1", 1)
    deep: Any = 1
    other: Any = 1.0
    for _ in range(5000):  # deeper than the interpreter's recursion limit
        deep, other = [deep], {"a": [other]}
    assert not same(deep, other) and same(other, {"a": [dict(other)["a"][0]]})
    deep2: Any = 1
    for _ in range(5000):
        deep2 = [deep2]
    assert same([deep], [deep2]) and not same(deep, [deep2])


@pytest.mark.parametrize(
    ("etype", "event", "rule"),
    [
        ("response.output_text.done", _ev(0, content_index=0, text="Hi"), None),
        ("response.output_text.done", _ev(0, content_index=0, text="Bye"), DONE_RULE),
        ("response.output_text.done", _ev(0, content_index=0), DONE_RULE),  # no text: the part loses it
        ("response.output_text.done", _ev(0, content_index=1, text="Hi"), None),  # a refusal: Node raises
        ("response.output_text.done", _ev(0, content_index=2, text="Hi"), None),  # no part 2: Node raises
        ("response.output_text.done", _ev(1, content_index=0, text="Hi"), None),  # not a message: unread
        ("response.refusal.done", _ev(0, content_index=1, refusal="no"), None),
        ("response.refusal.done", _ev(0, content_index=1, refusal="never"), DONE_RULE),
        (
            "response.content_part.done",
            _ev(0, content_index=1, part={"type": "refusal", "refusal": "no"}),
            None,
        ),
        ("response.content_part.done", _ev(0, content_index=1, part={"type": "refusal"}), DONE_RULE),
        ("response.content_part.done", _ev(0, content_index="1", part={"type": "refusal"}), DONE_RULE),
        ("response.content_part.done", _ev(0, content_index=0), None),  # no part: Node raises
        (
            "response.content_part.done",
            _ev(2, content_index=0, part={"type": "reasoning_text", "text": "r"}),
            None,
        ),
        (
            "response.content_part.done",
            _ev(2, content_index=0, part={"type": "reasoning_text", "text": "q"}),
            DONE_RULE,
        ),
        (
            "response.content_part.done",
            _ev(2, content_index=0, part={"type": "output_text", "text": "q"}),
            None,
        ),
        ("response.reasoning_text.done", _ev(2, content_index=0, text="q"), DONE_RULE),
        ("response.reasoning_summary_part.done", _ev(2, summary_index=0, part=_RS["summary"][0]), None),
        ("response.reasoning_summary_part.done", _ev(2, summary_index=0), DONE_RULE),  # Node sets undefined
        ("response.reasoning_summary_text.done", _ev(2, summary_index=0, text="s"), None),
        ("response.reasoning_summary_text.done", _ev(2, summary_index=0, text="t"), DONE_RULE),
        ("response.function_call_arguments.done", _ev(1, arguments="{}"), None),
        ("response.function_call_arguments.done", _ev(1, arguments='{"a": 1}'), DONE_RULE),
        ("response.function_call_arguments.done", _ev(0, arguments='{"a": 1}'), None),  # a message
        ("response.output_item.done", _ev(1, item=dict(reversed(list(_FC.items())))), None),
        ("response.output_item.done", _ev(1, item={**_FC, "status": "completed"}), DONE_RULE),
        ("response.output_item.done", _ev(1), None),  # no item: both SDKs raise (SdkView)
        ("response.output_item.done", _ev(4, item=_FC), None),  # no item 4 in response.completed's output
        ("response.web_search_call.completed", _ev(3), None),
        ("response.web_search_call.searching", _ev(3), STATUS_RULE),
        ("response.mcp_call.failed", _ev(3), None),  # not an mcp_call: unread
        ("response.output_text.delta", _ev(0, content_index=0, delta="x"), None),  # adds: SdkView.adds
    ],
)
def test_what_an_event_after_completed_sets(etype: str, event: dict[str, Any], rule: str | None) -> None:
    assert sets(RESP, etype, {"type": etype, **event}) == rule


def test_a_message_done_lists_the_text_anew() -> None:
    carried = {**RESP, "output_text": "Hello"}  # cloneResponse keeps it, addOutputText replaces it
    assert sets(carried, "response.output_item.done", _ev(0, item=_MSG)) == DONE_RULE
    assert sets(carried, "response.output_item.done", _ev(1, item=_FC)) is None
    assert sets({**RESP, "output_text": "Hi"}, "response.output_item.done", _ev(0, item=_MSG)) is None
    assert sets(carried, "response.output_text.done", _ev(0, content_index=0, text="Hi")) == DONE_RULE


def test_the_same_annotation_at_its_index_changes_nothing() -> None:
    assert same_annotation(RESP, _ev(0, content_index=0, annotation_index=0, annotation=dict(_CITE)))
    assert not same_annotation(
        RESP, _ev(0, content_index=0, annotation_index=0, annotation={**_CITE, "url": "v"})
    )
    assert not same_annotation(RESP, _ev(0, content_index=0, annotation_index=1, annotation=_CITE))
    assert not same_annotation(None, _ev(0, content_index=0, annotation_index=0, annotation=_CITE))


def test_every_event_judged_is_one_openai_node_knows() -> None:
    assert SETTING <= NODE_RESPONSES_EVENTS
    assert len(SETTING) == 3 + 8 + 15
