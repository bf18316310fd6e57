"""An ``output_item.added`` without an ``item`` (absent or null) is skipped as openai-python skips
it (docs/design/protocol-grammars.md, quirk ``openai_responses.added_without_item``): openai-node
raises on it (rule ``openai_responses.node_added_item``), so normalize mode leaves the event out and
every route delivers the answer. Before, a translated or normalized flow refused the stream
("output item of type '' without an id") and observe-only called an absent item a malformed event."""

from __future__ import annotations

from typing import Any

import pytest
from bench import golden

from proxai.core.model import Outcome, Protocol
from tests.translate_stream.test_unmodelled_events import DONE_MSG, MSG, PART, R0, _ev

from . import sdks

R, C, A = Protocol.OPENAI_RESPONSES, Protocol.OPENAI_CHAT, Protocol.ANTHROPIC_MESSAGES


_DONE = {**R0, "status": "completed", "output": [DONE_MSG]}


def _stream(item: str) -> bytes:
    added: dict[str, Any] = {"output_index": 1}
    if item == "null":
        added["item"] = None
    at = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    return b"".join(
        [
            _ev("response.created", 0, response=R0),
            _ev("response.output_item.added", 1, **added),
            _ev("response.output_item.added", 2, output_index=0, item=MSG),
            _ev("response.content_part.added", 3, **at, part=PART),
            _ev("response.output_text.delta", 4, **at, delta="Hi"),
            _ev("response.completed", 5, response=_DONE),
        ]
    )


@pytest.mark.parametrize("item", ["absent", "null"])
@pytest.mark.parametrize("client", [R, C, A], ids=["normalize", "chat", "anthropic"])
def test_an_added_event_without_its_item_is_skipped_on_every_route(item: str, client: Protocol) -> None:
    carrier = golden.build(R, client, client is R)
    out = b"".join(carrier.feed(_stream(item), 0.001)) + b"".join(carrier.feed(b"", 0.002))
    summary = carrier.summary
    assert (summary.outcome, summary.error, summary.text) == (Outcome.COMPLETED, None, "Hi")
    assert [f["rule"] for f in summary.extra["conformance"]] == ["openai_responses.node_added_item"]
    assert "response.output_item.added without an item (absent or null): skipped" in summary.extra["notes"]
    kind = {R: "responses", C: "chat", A: "anthropic"}[client]
    (node,) = sdks.node([(kind, out)])
    for got in (sdks.python(kind, out), node):
        assert got.ok, got
    if client is R:
        assert out.count(b"response.output_item.added") == 2  # the event line and its type: one event
        assert node.final["output"][0]["content"][0]["text"] == "Hi"


def test_openai_node_raises_on_the_upstream_stream_and_python_reads_it() -> None:
    """What the rule and the quirk say, on the upstream's own bytes."""
    for item in ("absent", "null"):
        (node,) = sdks.node([("responses", _stream(item))])
        python = sdks.python("responses", _stream(item))
        assert (python.ok, node.ok, node.error) == (True, False, "OpenAIError")
        assert python.final["output"][0]["content"][0]["text"] == "Hi"
