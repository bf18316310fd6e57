"""Streams both official SDKs read that break the protocol's letter, read as the SDKs read them, with
a note, never a violation (docs/conformance.md, "Liberal where the SDKs are liberal"): a Responses
output_text.delta with ``item_id`` null (both SDKs place an item event by its ``output_index``), a
function_call_arguments.delta after its .done (both SDKs read it; their final object is
response.completed's, whose arguments are the .done's); and one the Python SDK reads and the Node SDK
raises on, a delta whose payload has no ``type`` (the summary counts its text as openai-python's
final object holds it); an Anthropic event both SDKs skip (no ``event:`` line, or empty data), LF
and CRLF; a Responses strict tool's arguments deeper than orjson reads, a reasoning or refusal
delta without its text; and one both SDKs raise on, a Responses event with a truthy ``error`` (the
upstream's error). Each is fed to the real Python and Node SDK and to the observe-only summary."""

from __future__ import annotations

import json
import warnings
from typing import Any

import orjson
import pytest

from proxai.core.model import Outcome, Protocol
from proxai.pipeline.flow import request_asks
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


def _observe(
    data: bytes, protocol: Protocol = Protocol.OPENAI_RESPONSES
) -> tuple[Any, list[tuple[str, int]]]:
    obs = StreamObserver(protocol, start=0.0)
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


def test_a_text_delta_naming_no_item_added_is_read_by_its_output_index() -> None:
    """An item_id no item was added with (the SDK property's find): both SDKs read no item_id."""
    data = _text_delta_item_id_null().replace(b'"item_id": null', b'"item_id": "x1"')
    assert b'"item_id": "x1"' in data
    summary, findings = _observe(data)
    assert summary.outcome is Outcome.COMPLETED and summary.error is None
    assert findings == [("openai_responses.item_id_unknown", 4)]
    assert summary.text_bytes == len("Hi there! \N{WAVING HAND SIGN}".encode())
    for final in _finals(data):
        assert [c["text"] for c in final["output"][0]["content"]] == ["Hi there! \N{WAVING HAND SIGN}"]


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


def _text_delta_untyped(drop: str) -> bytes:
    """text.sse with its first output_text.delta's ``type`` taken out of the payload (its ``event:``
    line still names it), and with ``drop`` events taken out after it (``done``: the
    output_text.done, content_part.done and output_item.done that also hold the text)."""
    evs = split_events((FIXTURES / "openai_responses" / "text.sse").read_bytes())
    i = next(k for k, e in enumerate(evs) if b"response.output_text.delta" in e)
    head, _, data = evs[i].partition(b"data: ")
    evs[i] = (
        head + b"data: " + json.dumps({k: v for k, v in json.loads(data).items() if k != "type"}).encode()
    )
    if drop == "done":
        done = (b"response.output_text.done", b"response.content_part.done", b"response.output_item.done")
        evs = [e for e in evs if e.split(b"\n", 1)[0].removeprefix(b"event: ") not in done]
    return b"".join(e + b"\n\n" for e in evs)


@pytest.mark.parametrize("drop", ["", "done"])
def test_the_text_of_an_untyped_delta_is_counted_as_the_final_object_holds_it(drop: str) -> None:
    """A delta whose payload has no ``type`` is an event of no type to both SDKs: openai-python
    passes over it and its final object (response.completed's response) holds the whole text;
    openai-node raises on it (rule ``unknown_event``). The summary counts the text the final
    object holds, from the terminal response, with or without the .done events that repeat it."""
    data = _text_delta_untyped(drop)
    summary, findings = _observe(data)
    assert summary.outcome is Outcome.COMPLETED and summary.error is None
    assert findings == [("openai_responses.unknown_event", 4), ("openai_responses.unmodelled.(no type)", 4)]
    assert summary.text_bytes == len("Hi there! \N{WAVING HAND SIGN}".encode()) == 14
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        py = sdks.python("responses", data)
    (nd,) = sdks.node([("responses", data)])
    assert py.ok and py.final is not None
    assert [c["text"] for c in py.final["output"][0]["content"]] == ["Hi there! \N{WAVING HAND SIGN}"]
    assert (nd.ok, nd.error, nd.message.split(":")[0]) == (
        False,
        "OpenAIError",
        "Unhandled response stream event",
    )


def test_a_terminal_response_without_its_output_keeps_the_streamed_text() -> None:
    """A response.completed whose output lists no message (a provider that leaves it out) does not
    take the streamed text away from the summary."""
    evs = split_events((FIXTURES / "openai_responses" / "text.sse").read_bytes())
    head, _, data = evs[-1].partition(b"data: ")
    obj = json.loads(data)
    obj["response"]["output"] = []
    evs[-1] = head + b"data: " + json.dumps(obj).encode()
    summary, findings = _observe(b"".join(e + b"\n\n" for e in evs))
    assert (summary.outcome, summary.text_bytes, findings) == (Outcome.COMPLETED, 14, [])


_SKIPPED = [
    b"data: ",  # no event: line, empty data
    b"data: x\ndata:",  # no event: line, data that is not JSON ("x\n")
    b"event: content_block_delta\ndata:",  # a named event with empty data
]


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
@pytest.mark.parametrize("event", _SKIPPED, ids=["unnamed-empty", "unnamed-not-json", "named-empty"])
def test_an_anthropic_payload_the_sdks_skip_is_no_violation(event: bytes, crlf: bool) -> None:
    """Both Anthropic stream helpers skip an event without an ``event:`` line whatever its data, and
    a named event whose data is empty (anthropic-python ``Stream.__stream__``: ``sse.event is None``,
    ``not sse.data``; @anthropic-ai/sdk ``Stream.fromSSEResponse``: ``sse.event === null``,
    ``!sse.data``), whatever the line ends (each SSE line decoder reads ``data:`` and ``data: ``
    as empty data, CRLF, CR and LF alike): their final message is the stream's without it; the
    summary, completed, notes it (``anthropic.unread_payload``)."""
    evs = split_events((FIXTURES / "anthropic_messages" / "text.sse").read_bytes())
    evs.insert(3, event)
    data = b"".join(e + b"\n\n" for e in evs)
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    obs = StreamObserver(Protocol.ANTHROPIC_MESSAGES, start=0.0)
    obs.headers(200, 0.0)
    obs.observe(data, 0.0)
    summary = obs.finish(0.0)
    assert (summary.outcome, summary.error, summary.stop_reason) == (Outcome.COMPLETED, None, "end_turn")
    assert summary.text_bytes == len("Hello! Grüße aus Zürich.".encode())
    assert [(f.rule, f.event) for f in obs.findings] == [("anthropic.unread_payload", 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        py = sdks.python("anthropic", data)
    (nd,) = sdks.node([("anthropic", data)])
    for got in (py, nd):
        assert got.ok and got.final is not None, got
        assert [c["text"] for c in got.final["content"]] == ["Hello! Grüße aus Zürich."]


def _mcp_delta_without_partial_json(btype: str) -> bytes:
    def ev(t: str, **kw: Any) -> bytes:
        return f"event: {t}\ndata: {json.dumps({'type': t, **kw})}\n\n".encode()

    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m"}
    usage = {"input_tokens": 1, "output_tokens": 1}
    block = {"type": btype, "id": "mcptoolu_1", "name": "f", "server_name": "s", "input": {}}
    return b"".join(
        [
            ev(
                "message_start",
                message={**message, "stop_reason": None, "stop_sequence": None, "usage": usage},
            ),
            ev("content_block_start", index=0, content_block=block),
            ev("content_block_delta", index=0, delta={"type": "input_json_delta"}),
            ev("content_block_stop", index=0),
            ev(
                "message_delta",
                delta={"stop_reason": "tool_use", "stop_sequence": None},
                usage={"output_tokens": 5},
            ),
            ev("message_stop"),
        ]
    )


def test_an_input_delta_without_partial_json_in_an_mcp_block_is_a_note() -> None:
    """Both SDKs keep a tool input from fragments only in tool_use and server_tool_use blocks, so an
    input_json_delta without partial_json in an mcp_tool_use block is not read: a note, never a
    violation. In a tool_use block both SDKs raise, and it stays a protocol violation."""
    data = _mcp_delta_without_partial_json("mcp_tool_use")
    summary, findings = _observe(data, Protocol.ANTHROPIC_MESSAGES)
    assert summary.outcome is Outcome.COMPLETED
    assert findings == [("anthropic.untracked_tool_input", 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        py = sdks.python("anthropic", data)
    (nd,) = sdks.node([("anthropic", data)])
    assert py.ok and nd.ok, (py, nd)
    assert py.final is not None and py.final["content"][0]["input"] == {}
    bad = _mcp_delta_without_partial_json("tool_use")
    summary, _ = _observe(bad, Protocol.ANTHROPIC_MESSAGES)
    assert summary.outcome is Outcome.ERROR
    assert (
        summary.error is not None
        and summary.error.message == "input_json_delta without partial_json (index 0)"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not sdks.python("anthropic", bad).ok
    assert not sdks.node([("anthropic", bad)])[0].ok


def test_strict_tool_arguments_deeper_than_orjson_reads_are_json() -> None:
    """Arguments of a strict tool nested 1,200 levels deep: orjson (ProxAI's own parser) stops at
    1,024, openai-python's ``json.loads`` and openai-node's ``JSON.parse`` read them; no finding
    (before: ``strict_tool_arguments``, which says both SDKs raise)."""
    from .test_sdk_reactions import R_STRICT, r_call

    arguments = '{"x": ' + "[" * 1199 + "]" * 1199 + "}"
    data = r_call(arguments)
    asked = request_asks(orjson.dumps({"model": "m", "input": "hi", **R_STRICT}), Protocol.OPENAI_RESPONSES)
    obs = StreamObserver(Protocol.OPENAI_RESPONSES, start=0.0, asked=asked)
    obs.headers(200, 0.0)
    obs.observe(data, 0.0)
    summary = obs.finish(0.0)
    assert summary.outcome is Outcome.COMPLETED
    assert summary.extra.get("conformance", []) == []
    (nd,) = sdks.node([("responses", data, R_STRICT)])
    assert nd.ok, nd
    assert nd.final["output"][0]["arguments"] == arguments
    nested = nd.final["output"][0]["parsed_arguments"]["x"]
    levels = 0
    while isinstance(nested, list):
        (nested,) = nested
        levels += 1
    # (sdk_node.mjs writes what lies deeper than 1,000 levels of the final object as a string)
    assert (levels, nested) == (996, "(deeper than 1000 levels)")
    # openai-python's final response (not dumped: pydantic's serializer stops at about 1,000 levels)
    import httpx2
    import openai

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=data, headers={"content-type": "text/event-stream"})

    client = openai.OpenAI(api_key="x", http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))
    with client.responses.stream(model="m", input="hi", tools=R_STRICT["tools"]) as stream:
        parsed = stream.get_final_response().output[0].parsed_arguments  # type: ignore[union-attr]
    assert json.dumps(parsed, separators=(",", ":")).replace(" ", "") == arguments.replace(" ", "")


_RS = {"id": "rs_1", "type": "reasoning", "summary": [], "content": []}
_RS_DONE = {
    **_RS,
    "summary": [{"type": "summary_text", "text": "t"}],
    "content": [{"type": "reasoning_text", "text": "t"}],
}
_REFUSED = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "refusal", "refusal": "no"}],
}


def _delta_without_text(etype: str) -> bytes:
    """A reasoning item's summary or reasoning-text part, or a message's refusal part, whose one
    delta (event 3) has no ``delta``; the part's text comes in the done item."""
    from .test_sdk_reactions import R_CREATED, _added, _completed, _done, _r

    added, done, where, ptype, part = {
        "response.refusal.delta": (
            {**_REFUSED, "content": []},
            _REFUSED,
            {"content_index": 0},
            "response.content_part.added",
            {"type": "refusal", "refusal": ""},
        ),
        "response.reasoning_text.delta": (
            _RS,
            _RS_DONE,
            {"content_index": 0},
            "response.content_part.added",
            {"type": "reasoning_text", "text": ""},
        ),
        "response.reasoning_summary_text.delta": (
            _RS,
            _RS_DONE,
            {"summary_index": 0},
            "response.reasoning_summary_part.added",
            {"type": "summary_text", "text": ""},
        ),
    }[etype]
    added_part = _r(ptype, 2, item_id=added["id"], output_index=0, **where, part=part)
    delta = _r(etype, 3, item_id=added["id"], output_index=0, **where)
    return R_CREATED + _added(1, 0, added) + added_part + delta + _done(4, 0, done) + _completed(done, seq=5)


@pytest.mark.parametrize(
    "etype",
    ["response.reasoning_text.delta", "response.reasoning_summary_text.delta", "response.refusal.delta"],
)
def test_a_delta_without_its_text_that_the_sdks_accept_is_a_note(etype: str) -> None:
    """The SDK property (seed 408: a DeepSeek reasoning_text.delta without ``delta``) found ProxAI
    calling it malformed: openai-python does not read these deltas, openai-node appends undefined to
    its snapshot, which response.completed's response replaces. Not read, noted; every client's
    stream is whole."""
    from tests.observe.test_payload_reuse import CLIENTS, _carrier

    data = _delta_without_text(etype)
    summary, findings = _observe(data)
    assert (summary.outcome, summary.error) == (Outcome.COMPLETED, None)
    assert findings == [("openai_responses.delta_not_string", 3)]
    assert summary.extra.get("conformance", []) == []
    py, nd = _finals(data)
    for final in (py, nd):
        assert final["status"] == "completed"
        assert [o["id"] for o in final["output"]] == [_REFUSED["id"] if "refusal" in etype else "rs_1"]
    for client in CLIENTS[Protocol.OPENAI_RESPONSES]:
        _, error, translated = _carrier(Protocol.OPENAI_RESPONSES, client, [data])
        assert error is None, (client, error)
        assert translated["metadata"]["outcome"] == "completed"


def _with_error(etype: str, error: Any) -> bytes:
    """The text fixture with ``error`` added to its first event of type ``etype``."""
    evs = split_events((FIXTURES / "openai_responses" / "text.sse").read_bytes())
    i = next(k for k, e in enumerate(evs) if f'"type":"{etype}"'.encode() in e)
    head, _, data = evs[i].partition(b"data: ")
    evs[i] = head + b"data: " + json.dumps({**json.loads(data), "error": error}).encode()
    return b"".join(e + b"\n\n" for e in evs)


@pytest.mark.parametrize("etype", ["response.output_text.delta", "response.in_progress"])
def test_a_truthy_error_on_a_response_event_is_the_upstreams_error(etype: str) -> None:
    """openai-python and openai-node raise APIError on any payload whose ``error`` is truthy (their
    stream layers test every payload, whatever its type): the flow ends with the upstream's error,
    the delta's text not counted; a null ``error`` is read on."""
    data = _with_error(etype, {"message": "the server is overloaded", "type": "server_error"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        py = sdks.python("responses", data)
    (nd,) = sdks.node([("responses", data)])
    assert (py.ok, py.error, py.message) == (False, "APIError", "the server is overloaded")
    assert (nd.ok, nd.error) == (False, "APIError"), nd
    summary, findings = _observe(data)
    assert summary.outcome is Outcome.ERROR and findings == []
    assert summary.error is not None and summary.error.message == "the server is overloaded"
    assert summary.text_bytes == 0
    calm, _ = _observe(_with_error(etype, None))
    assert calm.outcome is Outcome.COMPLETED
    assert calm.text_bytes == len("Hi there! \N{WAVING HAND SIGN}".encode())
