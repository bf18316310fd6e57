"""Streams both official SDKs read that break the protocol's letter, read as the SDKs read them, with
a note, never a violation (docs/conformance.md, "Liberal where the SDKs are liberal"): a Responses
output_text.delta with ``item_id`` null (both SDKs place an item event by its ``output_index``), a
function_call_arguments.delta after its .done (both SDKs read it; their final object is
response.completed's, whose arguments are the .done's). Each is fed to the real Python and Node SDK
and to the observe-only summary."""

from __future__ import annotations

import json
import warnings
from typing import Any

from proxai.core.model import Outcome, Protocol
from proxai.pipeline.observe import StreamObserver

from . import sdks
from .mutations import FIXTURES, REAL, split_events


def _text_delta_item_id_null() -> bytes:
    evs = split_events((FIXTURES / "openai_responses" / "text.sse").read_bytes())
    i = next(k for k, e in enumerate(evs) if b"response.output_text.delta" in e)
    head, _, data = evs[i].partition(b"data: ")
    evs[i] = head + b"data: " + json.dumps({**json.loads(data), "item_id": None}).encode()
    return b"".join(e + b"\n\n" for e in evs)


def _arguments_delta_after_done() -> bytes:
    evs = split_events((REAL / "responses" / "openai--chatlas--chat-tool-request-reject.sse").read_bytes())
    evs[3], evs[4] = evs[4], evs[3]  # function_call_arguments.done, then its delta
    return b"".join(e + b"\n\n" for e in evs)


def _observe(data: bytes) -> tuple[Any, list[tuple[str, int]]]:
    obs = StreamObserver(Protocol.OPENAI_RESPONSES, start=0.0)
    obs.headers(200, 0.0)
    obs.observe(data, 0.0)
    summary = obs.finish(0.0)
    return summary, [(f.rule, f.event) for f in obs.findings]


def _finals(data: bytes) -> list[dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        py = sdks.python("responses", data)
    (nd,) = sdks.node([("responses", data)])
    assert py.ok and nd.ok, (py, nd)
    assert py.final is not None and nd.final is not None
    return [py.final, nd.final]


def test_a_text_delta_with_item_id_null_is_read_by_its_output_index() -> None:
    data = _text_delta_item_id_null()
    summary, findings = _observe(data)
    assert summary.outcome is Outcome.COMPLETED and summary.error is None
    assert findings == [("openai_responses.item_id_null", 4)]
    assert summary.text_bytes == len("Hi there! \N{WAVING HAND SIGN}".encode())
    for final in _finals(data):
        assert [c["text"] for c in final["output"][0]["content"]] == ["Hi there! \N{WAVING HAND SIGN}"]


def test_an_arguments_delta_after_its_done_is_not_read() -> None:
    data = _arguments_delta_after_done()
    summary, findings = _observe(data)
    assert summary.outcome is Outcome.COMPLETED and summary.error is None
    assert findings == [("openai_responses.delta_after_done", 4)]
    assert [(t.id, t.arguments_bytes, t.arguments_valid_json) for t in summary.tool_calls] == [
        ("call_c4O00h5rtKqAmkczVPR5dMJX", 14, True),
        ("call_n6JPk3cwsicCGZNjmccWBpdf", 17, True),
    ]
    for final in _finals(data):
        assert final["output"][0]["arguments"] == '{"user":"Joe"}'
