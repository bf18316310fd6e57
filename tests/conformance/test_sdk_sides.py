"""Responses streams where both SDKs raise, each for a reason of its own that no rule names
together (responses_sdk ``_side_rules``): each SDK's own rule is found at the event, and each SDK
raises as its rule says (openai-python keys its items by ``output_index`` and keeps the parts
``output_item.added`` gave; openai-node's snapshot is the last lifecycle event's ``response.output``,
here empty)."""

from __future__ import annotations

import pytest

from proxai.core.model import Protocol
from proxai.pipeline.observe import StreamObserver
from proxai.protocols.conformance import RULES

from . import sdks
from .test_sdk_reactions import (
    _MSG,
    _MSG_ADDED,
    R_CREATED,
    _added,
    _completed,
    _done,
    _r,
    _resp,
    _text,
    _text_done,
)

EMPTY = _r("response.in_progress", 2, response=_resp("in_progress", []))
STREAMS = {
    # openai-python: its message has no part 0 (IndexError); openai-node: no item at 0
    "a text delta": (
        R_CREATED + _added(1, 0, _MSG_ADDED) + EMPTY + _text(3, 0, 0) + _text_done(4, 0, 0)
        + _done(5, 0, _MSG) + _completed(_MSG, seq=6),
        [("openai_responses.python_content_index", 3), ("openai_responses.output_position", 3)],
    ),
    # openai-python: the done item is not the one added (another id); openai-node: no item at 0
    "an output_item.done": (
        R_CREATED + _added(1, 0, _MSG_ADDED) + EMPTY + _done(3, 0, {**_MSG, "id": "msg_2"})
        + _completed({**_MSG, "id": "msg_2"}, seq=4),
        [("openai_responses.output_position", 3), ("openai_responses.item_identity", 3)],
    ),
}  # fmt: skip


def _found(stream: bytes) -> list[tuple[str, int]]:
    obs = StreamObserver(Protocol.OPENAI_RESPONSES, start=0.0)
    obs.headers(200, 0.0)
    obs.observe(stream, 0.0)
    return [(f["rule"], f["event_index"]) for f in obs.finish(0.0).extra.get("conformance", [])]


@pytest.mark.parametrize("name", list(STREAMS))
def test_each_sdk_raises_as_its_own_rule_says(name: str) -> None:
    stream, found = STREAMS[name]
    assert _found(stream) == found
    rules = [RULES[r] for r, _ in found]
    py_rule = next(r for r in rules if r.python.does == "raises" and r.node.does != "raises")
    node_rule = next(r for r in rules if r.node.does == "raises" and r.python.does != "raises")
    py = sdks.python("responses", stream)
    nd = sdks.node([("responses", stream)])[0]
    assert (py.ok, py.error) == (False, py_rule.python.error) and py.message.startswith(
        py_rule.python.message
    )
    assert (nd.ok, nd.error) == (False, node_rule.node.error) and nd.message.startswith(
        node_rule.node.message
    )
