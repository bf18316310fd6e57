"""An ``output_item.added`` without an ``item`` (absent or null) is skipped as openai-python skips
it (docs/design/protocol-grammars.md, quirk ``openai_responses.added_without_item``): openai-node
raises on it (rule ``openai_responses.node_added_item``), so normalize mode leaves the event out and
every route delivers the answer. Before, a translated or normalized flow refused the stream
("output item of type '' without an id") and observe-only called an absent item a malformed event."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from bench import golden

from proxai.core.model import Outcome, Protocol

from . import sdks

R, C, A = Protocol.OPENAI_RESPONSES, Protocol.OPENAI_CHAT, Protocol.ANTHROPIC_MESSAGES


def _ev(etype: str, **fields: Any) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (etype.encode(), orjson.dumps({"type": etype, **fields}))


_RESP = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "status": "in_progress",
    "model": "m",
    "output": [],
}
_MSG = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
_PART = {"type": "output_text", "text": "", "annotations": []}
_DONE = {
    **_RESP,
    "status": "completed",
    "output": [{**_MSG, "status": "completed", "content": [{**_PART, "text": "Hi"}]}],
}


def _stream(item: str) -> bytes:
    added: dict[str, Any] = {"output_index": 1, "sequence_number": 1}
    if item == "null":
        added["item"] = None
    return b"".join(
        [
            _ev("response.created", response=_RESP, sequence_number=0),
            _ev("response.output_item.added", **added),
            _ev("response.output_item.added", output_index=0, item=_MSG, sequence_number=2),
            _ev(
                "response.content_part.added",
                item_id="msg_1",
                output_index=0,
                content_index=0,
                part=_PART,
                sequence_number=3,
            ),
            _ev(
                "response.output_text.delta",
                item_id="msg_1",
                output_index=0,
                content_index=0,
                delta="Hi",
                sequence_number=4,
            ),
            _ev("response.completed", response=_DONE, sequence_number=5),
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
