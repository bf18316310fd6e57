"""Every conformance rule (proxai.protocols.conformance.RULES): a stream that breaks it is found by the
grammar at
the event the finding names, and the real SDKs react to that stream exactly as the finding says: the
Python SDKs in the venv, the Node SDKs that .ci/install-node-sdks pins (all streams in one node run).
A clean stream of each protocol: no finding, and every SDK returns the whole object."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from proxai.core.model import Protocol
from proxai.pipeline.flow import request_asks
from proxai.pipeline.observe import StreamObserver
from proxai.protocols import conformance
from proxai.protocols.conformance import RULES, SDK_VERSIONS, Reaction

from . import sdks

KINDS = {
    "anthropic": Protocol.ANTHROPIC_MESSAGES,
    "chat": Protocol.OPENAI_CHAT,
    "responses": Protocol.OPENAI_RESPONSES,
}

# -- Anthropic Messages -----------------------------------------------------------------------------


def _a(etype: str, body: dict[str, Any], named: bool = True) -> bytes:
    data = json.dumps({"type": etype, **body}, separators=(",", ":")).encode()
    return (f"event: {etype}\n".encode() if named else b"") + b"data: " + data + b"\n\n"


_A_START = {
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
}
_A_DELTA_END = {"delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 2}}


def anthropic_stream(
    *, unnamed: frozenset[int] = frozenset(), usage: bool = True, stop: bool = True
) -> bytes:
    """message_start, a text block "Hi" + " there", message_delta, message_stop (events 0..6)."""
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", _A_START),
        ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": " there"}}),
        ("content_block_stop", {"index": 0}),
        ("message_delta", _A_DELTA_END if usage else {"delta": _A_DELTA_END["delta"]}),
        ("message_stop", {}),
    ]
    if not stop:
        events.pop()
    return b"".join(_a(t, b, i not in unnamed) for i, (t, b) in enumerate(events))


def _blk(i: int, block: dict[str, Any]) -> bytes:
    return _a("content_block_start", {"index": i, "content_block": block})


def _dl(i: int, delta: dict[str, Any]) -> bytes:
    return _a("content_block_delta", {"index": i, "delta": delta})


_A_S = _a("message_start", _A_START)
_A_E = _a("message_delta", _A_DELTA_END) + _a("message_stop", {})
_A_TEXT = {"type": "text", "text": ""}
_A_TOOL = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}


def a_tool(*fragments: str) -> bytes:
    """A tool block whose input comes in these ``input_json_delta`` fragments (the first is event
    2, the block's stop follows the last)."""
    deltas = [_dl(0, {"type": "input_json_delta", "partial_json": f}) for f in fragments]
    return _A_S + _blk(0, _A_TOOL) + b"".join(deltas) + _a("content_block_stop", {"index": 0}) + _A_E


def a_input(final: dict[str, Any]) -> Any:
    return final["content"][0]["input"]


def a_text(final: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in final["content"])


# -- OpenAI Chat Completions ------------------------------------------------------------------------


def _c(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> bytes:
    chunk = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


C_HI = _c({"role": "assistant", "content": "Hi"})
C_USAGE = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
C_STOP = _c({}, "stop")
C_DONE = b"data: [DONE]\n\n"


def _tool(i: int, call_id: str, name: str) -> bytes:
    call = {"index": i, "id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}
    return _c({"tool_calls": [call]})


def _raw(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _chunk(choices: Any, drop: str = "") -> dict[str, Any]:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": choices}
    chunk.pop(drop, None)
    return chunk


def _ch(delta: Any, finish: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish}


def _calls(*calls: Any) -> bytes:
    return _raw(_chunk([_ch({"tool_calls": list(calls)})]))


C_ROLE = _raw(_chunk([_ch({"role": "assistant", "content": None})]))
C_TOOLS_END = _c({}, "tool_calls") + b"data: [DONE]\n\n"


def c_args(*fragments: str) -> bytes:
    """One call of tool ``f`` whose arguments come in these fragments, the first in the call's
    first chunk (event 1), then one chunk each, then finish_reason tool_calls and [DONE]."""
    first = {"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": fragments[0]}}
    rest = [_c({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments[1:]]
    return C_ROLE + _calls(first) + b"".join(rest) + C_TOOLS_END


_CITE_A = {
    "type": "url_citation",
    "url_citation": {"url": "https://a", "title": "a", "start_index": 0, "end_index": 1},
}
_CITE_B = {
    "type": "url_citation",
    "url_citation": {"url": "https://b", "title": "b", "start_index": 1, "end_index": 2},
}


def c_cited(final: dict[str, Any]) -> list[str]:
    return [a["url_citation"]["url"] for a in final["choices"][0]["message"]["annotations"]]


def c_tools(final: dict[str, Any]) -> list[Any]:
    return [
        (t.get("type"), t["function"]["name"], t["function"]["arguments"])
        for t in final["choices"][0]["message"].get("tool_calls") or []
    ]


# a strict function tool in the request (both SDKs parse its calls' arguments)
C_STRICT = {
    "tools": [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"type": "object", "properties": {}}, "strict": True},
        }
    ]
}
R_STRICT = {
    "tools": [
        {
            "type": "function",
            "name": "f",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
            "strict": True,
        }
    ]
}


# a json_schema text format (openai-python parses the answer with text_format=sdks.Answer)
R_JSON = {
    "text": {
        "format": {"type": "json_schema", "name": "Answer", "schema": sdks.ANSWER_SCHEMA, "strict": True}
    }
}


def c_message(final: dict[str, Any]) -> tuple[str | None, str | None]:
    choice = final["choices"][0]
    return choice["message"]["content"], choice["finish_reason"]


# a json_schema format in the request (the Python SDKs get the model class sdks.Answer for it)
C_JSON = {
    "response_format": {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": sdks.ANSWER_SCHEMA, "strict": True},
    }
}
A_JSON = {"output_config": {"format": {"type": "json_schema", "schema": sdks.ANSWER_SCHEMA}}}


def c_answer(text: str) -> bytes:
    """A Chat stream whose content is ``text`` (events 0..3)."""
    return C_ROLE + _c({"content": text}) + C_STOP + C_DONE


def a_answer(text: str) -> bytes:
    """An Anthropic stream of one text block ``text`` (its stop is event 3)."""
    return (
        _A_S
        + _blk(0, _A_TEXT)
        + _dl(0, {"type": "text_delta", "text": text})
        + _a("content_block_stop", {"index": 0})
        + _A_E
    )


# -- OpenAI Responses -------------------------------------------------------------------------------


def _r(etype: str, seq: int, **body: Any) -> bytes:
    data = json.dumps({"type": etype, "sequence_number": seq, **body}, separators=(",", ":"))
    return f"event: {etype}\ndata: {data}\n\n".encode()


def _resp(status: str, output: list[Any] | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": "m",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "usage": None,
    }
    if output is not None:
        doc["output"] = output
    return doc


_MSG = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Hi", "annotations": []}],
}
R_CREATED = _r("response.created", 0, response=_resp("in_progress", []))
R_ITEM = [
    _r(
        "response.output_item.added", 1, output_index=0, item={**_MSG, "status": "in_progress", "content": []}
    ),
    _r(
        "response.content_part.added",
        2,
        item_id="msg_1",
        output_index=0,
        content_index=0,
        part={"type": "output_text", "text": "", "annotations": []},
    ),
    _r("response.output_text.delta", 3, item_id="msg_1", output_index=0, content_index=0, delta="Hi"),
    _r("response.output_text.done", 4, item_id="msg_1", output_index=0, content_index=0, text="Hi"),
    _r("response.output_item.done", 5, output_index=0, item=_MSG),
]
R_COMPLETED = _r("response.completed", 6, response=_resp("completed", [_MSG]))


def _r_index(event: bytes, form: bytes) -> bytes:
    """The event with its ``output_index`` 0 sent as ``form``."""
    return event.replace(b'"output_index":0', b'"output_index":' + form)


def r_text(final: dict[str, Any]) -> str:
    return "".join(p["text"] for item in final["output"] for p in item.get("content", []))


def _added(seq: int, oi: int | None, item: dict[str, Any]) -> bytes:
    return _r("response.output_item.added", seq, output_index=oi, item=item)


def _done(seq: int, oi: int, item: dict[str, Any]) -> bytes:
    return _r("response.output_item.done", seq, output_index=oi, item=item)


def _part(seq: int, oi: int, ci: int, part: dict[str, Any] | None = None, iid: str = "msg_1") -> bytes:
    part = part or {"type": "output_text", "text": "", "annotations": []}
    return _r("response.content_part.added", seq, item_id=iid, output_index=oi, content_index=ci, part=part)


def _text(seq: int, oi: int, ci: int, iid: str = "msg_1") -> bytes:
    return _r("response.output_text.delta", seq, item_id=iid, output_index=oi, content_index=ci, delta="Hi")


def _text_done(seq: int, oi: int, ci: int) -> bytes:
    return _r("response.output_text.done", seq, item_id="msg_1", output_index=oi, content_index=ci, text="Hi")


def _completed(*output: dict[str, Any], seq: int = 9) -> bytes:
    return _r("response.completed", seq, response=_resp("completed", list(output)))


_MSG_ADDED = {**_MSG, "status": "in_progress", "content": []}
R_PART = {"type": "output_text", "text": "", "annotations": []}
_FC = {
    "id": "fc_1",
    "type": "function_call",
    "call_id": "call_1",
    "name": "f",
    "arguments": "",
    "status": "in_progress",
}
_FC_DONE = {**_FC, "arguments": "{}", "status": "completed"}
_RS = {"id": "rs_1", "type": "reasoning", "summary": []}
_RS_DONE = {**_RS, "summary": [{"type": "summary_text", "text": "t"}]}


def _deep_text(depth: int) -> str:
    """A json_schema answer whose value "b" holds a number inside ``depth`` containers."""
    return '{"a": 1, "b": ' + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "}"


R_DEEP_TEXT = _deep_text(201)  # pydantic's parser stops at 200
# strict tool arguments 1,600 containers deep (openai-python's json.loads stops at 1,497)
R_DEEP_ARGS = '{"x": ' + "[" * 1599 + "]" * 1599 + "}"


def r_call(arguments: str) -> bytes:
    """One call of tool ``f`` whose arguments come in one delta (events 0..4; the end is 5)."""
    return (
        R_CREATED
        + _added(1, 0, _FC)
        + _r("response.function_call_arguments.delta", 2, item_id="fc_1", output_index=0, delta=arguments)
        + _done(3, 0, {**_FC_DONE, "arguments": arguments})
        + _completed({**_FC_DONE, "arguments": arguments}, seq=4)
    )


_R_FAILED = {**_resp("failed", []), "error": {"code": "server_error", "message": "boom"}}
_R_J = json.dumps('{"a": 1}').encode()  # a JSON answer that fits sdks.Answer, as a JSON string
_CITE = {"type": "url_citation", "url": "u", "title": "t", "start_index": 0, "end_index": 2}
_MSG_CITED = {**_MSG, "content": [{**R_PART, "text": "Hi", "annotations": [_CITE]}]}
_WS = {
    "id": "ws_1",
    "type": "web_search_call",
    "status": "completed",
    "action": {"type": "search", "query": "q"},
}


def _r_after(etype: str, seq: int = 7, **body: Any) -> bytes:
    """An event for part 0 of message 0 (``R_ITEM``'s), by default event 7, after ``R_COMPLETED``."""
    return _r(etype, seq, item_id="msg_1", output_index=0, content_index=0, **body)


def r_items(final: dict[str, Any]) -> list[Any]:
    return [(o["type"], o["id"]) for o in final["output"]]


# -- the cases --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    stream: bytes
    found: list[tuple[str, int]]  # (rule, event index) the grammar reports, in order
    python: Callable[[dict[str, Any]], None] | None = None  # the final object's check (no raise)
    node: Callable[[dict[str, Any]], None] | None = None
    rule: str | None = field(default=None)  # the rule whose reactions the SDKs must show
    request: dict[str, Any] | None = None  # what the client's request adds (on the wire; sdks.python)

    @property
    def tested(self) -> str | None:
        return self.rule or (self.found[0][0] if self.found else None)


def _text_is(read: Callable[[dict[str, Any]], Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def check(final: dict[str, Any]) -> None:
        assert read(final) == value

    return check


CASES = [
    Case(
        "anthropic clean",
        "anthropic",
        anthropic_stream(),
        [],
        _text_is(a_text, "Hi there"),
        _text_is(a_text, "Hi there"),
    ),
    Case(
        "anthropic no event lines",
        "anthropic",
        anthropic_stream(unnamed=frozenset(range(7))),
        [
            ("anthropic_messages.unnamed_start", 0),
            ("anthropic_messages.unnamed_event", 1),
            ("anthropic_messages.no_block", 1),
            ("anthropic_messages.no_message_stop", 6),
        ],
    ),
    Case(
        "anthropic message_stop without its event line",
        "anthropic",
        anthropic_stream(unnamed=frozenset({6})),
        [("anthropic_messages.no_message_stop", 6)],
        _text_is(lambda f: (a_text(f), f["stop_reason"]), ("Hi there", "end_turn")),
    ),
    Case(
        "anthropic one delta without its event line",
        "anthropic",
        anthropic_stream(unnamed=frozenset({3})),
        [("anthropic_messages.unnamed_event", 3)],
        _text_is(a_text, "Hi"),  # " there" is lost
        _text_is(a_text, "Hi"),
    ),
    Case(
        "anthropic message_delta without usage",
        "anthropic",
        anthropic_stream(usage=False),
        [("anthropic_messages.message_delta_usage", 5)],
    ),
    Case(
        "anthropic no message_stop",
        "anthropic",
        anthropic_stream(stop=False),
        [("anthropic_messages.no_message_stop", 6)],
        _text_is(lambda f: (a_text(f), f["stop_reason"]), ("Hi there", "end_turn")),
    ),
    Case(
        "anthropic cut after the first delta",
        "anthropic",
        b"event: content_block_delta".join(anthropic_stream().split(b"event: content_block_delta")[:2]),
        [("anthropic_messages.no_message_stop", 3)],
        _text_is(lambda f: (a_text(f), f["stop_reason"]), ("Hi", None)),
    ),
    Case(
        "anthropic a block index gap",
        "anthropic",
        _A_S
        + _blk(1, _A_TEXT)
        + _dl(1, {"type": "text_delta", "text": "Hi"})
        + _a("content_block_stop", {"index": 1})
        + _A_E,
        [("anthropic_messages.block_index", 2)],  # at the delta naming it: the start is appended
        None,
        _text_is(a_text, ""),  # the text found no block
    ),
    Case(
        "anthropic tool input that is not JSON",
        "anthropic",
        _A_S
        + _blk(0, _A_TOOL)
        + _dl(0, {"type": "input_json_delta", "partial_json": "abc"})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.tool_input_json", 3)],
    ),
    Case(
        "anthropic tool input with a control character unescaped in a string",
        "anthropic",
        _A_S
        + _blk(0, _A_TOOL)
        + _dl(0, {"type": "input_json_delta", "partial_json": '{"a": "x\n  y"}'})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.tool_input_json", 3)],
    ),
    Case(
        "anthropic tool input with a word after its object",
        "anthropic",
        a_tool('{"a":', "1}x"),
        [("anthropic_messages.tool_input_trailing", 4)],
        _text_is(a_input, {"a": 1}),  # jiter reads the object and no further
    ),
    Case(
        "anthropic tool input with a second object after its object",
        "anthropic",
        a_tool('{"a":1} {"b":2}'),
        [("anthropic_messages.tool_input_trailing", 3)],
        _text_is(a_input, {"a": 1}),
    ),
    Case(
        "anthropic tool input with a closer that matches nothing after its object",
        "anthropic",
        a_tool('{"a":1}}'),
        [("anthropic_messages.tool_input_trailing", 3)],
        _text_is(a_input, {"a": 1}),
    ),
    Case(
        "anthropic tool input with a number past a double's range (both SDKs read infinity)",
        "anthropic",
        a_tool('{"a":1e4', "00}"),
        [],
        _text_is(a_input, {"a": None}),  # (float("inf"), dumped as JSON: null)
        _text_is(a_input, {"a": None}),  # (Infinity, through JSON.stringify: null)
    ),
    Case(
        "anthropic tool input escaping a lone high surrogate",
        "anthropic",
        a_tool('{"a":"x\\ud8', '00y"}'),
        [("anthropic_messages.tool_input_surrogate", 4)],
        None,
        _text_is(a_input, {"a": "x\ud800y"}),
    ),
    Case(
        "anthropic tool input escaping a lone low surrogate",
        "anthropic",
        a_tool('{"a":["\\udc00"]}'),
        [("anthropic_messages.tool_input_surrogate", 3)],
        None,
        _text_is(a_input, {"a": ["\udc00"]}),
    ),
    Case(
        "anthropic tool input escaping a surrogate pair, and a backslash before u (nothing to say)",
        "anthropic",
        a_tool('{"a":"\\ud83d\\ude00 \\\\ud800"}'),
        [],
        _text_is(a_input, {"a": "\U0001f600 \\ud800"}),
        _text_is(a_input, {"a": "\U0001f600 \\ud800"}),
    ),
    Case(
        "anthropic tool input with a comma after its array (both parsers drop it: a note)",
        "anthropic",
        a_tool("[1]", ","),
        [],
        _text_is(a_input, [1]),
        _text_is(a_input, [1]),
    ),
    Case(
        "anthropic tool input with a number at the end after its object (both parsers drop it)",
        "anthropic",
        a_tool('{"a":1}', "2"),
        [],
        _text_is(a_input, {"a": 1}),
        _text_is(a_input, {"a": 1}),
    ),
    Case(
        "anthropic a tool fragment without its event line: the input the SDKs join is not JSON",
        "anthropic",
        _A_S
        + _blk(0, _A_TOOL)
        + _a(
            "content_block_delta",
            {"index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"'}},
            False,
        )
        + _dl(0, {"type": "input_json_delta", "partial_json": 'a": 1}'})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.unnamed_event", 2), ("anthropic_messages.tool_input_json", 4)],
        rule="anthropic_messages.tool_input_json",
    ),
    Case(
        "anthropic a tool fragment without its event line: the SDKs join the rest, JSON",
        "anthropic",
        _A_S
        + _blk(0, _A_TOOL)
        + _dl(0, {"type": "input_json_delta", "partial_json": '{"a": '})
        + _a(
            "content_block_delta",
            {"index": 0, "delta": {"type": "input_json_delta", "partial_json": "1"}},
            False,
        )
        + _dl(0, {"type": "input_json_delta", "partial_json": "2}"})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.unnamed_event", 3)],
        _text_is(lambda f: f["content"][0]["input"], {"a": 2}),  # the fragment "1" is lost
        _text_is(lambda f: f["content"][0]["input"], {"a": 2}),
    ),
    Case(
        "anthropic the last tool fragment without its event line: the SDKs' input is cut short",
        "anthropic",
        _A_S
        + _blk(0, _A_TOOL)
        + _dl(0, {"type": "input_json_delta", "partial_json": '{"a": 1, "b": '})
        + _a(
            "content_block_delta",
            {"index": 0, "delta": {"type": "input_json_delta", "partial_json": "2}"}},
            False,
        )
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.unnamed_event", 3)],
        _text_is(lambda f: f["content"][0]["input"], {"a": 1}),
        _text_is(lambda f: f["content"][0]["input"], {"a": 1}),
    ),
    Case(
        "anthropic tool input cut short (the partial parsers read it)",
        "anthropic",
        _A_S
        + _blk(0, _A_TOOL)
        + _dl(0, {"type": "input_json_delta", "partial_json": '{"a": "x'})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [],
        _text_is(lambda f: f["content"][0]["input"], {}),
        _text_is(lambda f: f["content"][0]["input"], {}),
    ),
    Case(
        "anthropic tool input whose first fragment is whitespace (Python parses it alone)",
        "anthropic",
        a_tool(" ", '{"a": 1}'),
        [("anthropic_messages.tool_input_partial", 2)],
        None,
        _text_is(a_input, {"a": 1}),
    ),
    Case(
        "anthropic tool input: an empty fragment, then one of whitespace",
        "anthropic",
        a_tool("", "\n", '{"a": 1}'),
        [("anthropic_messages.tool_input_partial", 3)],
        None,
        _text_is(a_input, {"a": 1}),
    ),
    Case(
        "anthropic tool input: an empty first fragment (nothing to parse, nothing to say)",
        "anthropic",
        a_tool("", '{"a": 1}'),
        [],
        _text_is(a_input, {"a": 1}),
        _text_is(a_input, {"a": 1}),
    ),
    Case(
        "anthropic tool input: a fragment of whitespace without its event line (the SDKs skip it)",
        "anthropic",
        _A_S
        + _blk(0, _A_TOOL)
        + _a(
            "content_block_delta",
            {"index": 0, "delta": {"type": "input_json_delta", "partial_json": " "}},
            False,
        )
        + _dl(0, {"type": "input_json_delta", "partial_json": '{"a": 1}'})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.unnamed_event", 2)],
        _text_is(a_input, {"a": 1}),
        _text_is(a_input, {"a": 1}),
    ),
    Case(
        "anthropic tool input that is whitespace alone",
        "anthropic",
        a_tool(" ", "\t"),
        [("anthropic_messages.tool_input_partial", 2), ("anthropic_messages.tool_input_json", 4)],
        rule="anthropic_messages.tool_input_json",
    ),
    Case(
        "anthropic tool input: a top-level literal cut by a fragment",
        "anthropic",
        a_tool("tr", "ue"),
        [("anthropic_messages.tool_input_partial", 2)],
        None,
        _text_is(a_input, True),
    ),
    Case(
        "anthropic tool input: a top-level string cut by a fragment",
        "anthropic",
        a_tool('"ab', 'c"'),
        [("anthropic_messages.tool_input_partial", 2)],
        None,
        _text_is(a_input, "abc"),
    ),
    Case(
        "anthropic tool input: a top-level number cut by a fragment, whitespace after it",
        "anthropic",
        a_tool("1.", "5", " "),
        [("anthropic_messages.tool_input_partial", 2)],
        None,
        _text_is(a_input, 1.5),
    ),
    Case(
        "anthropic tool input: a top-level string cut short at the end",
        "anthropic",
        a_tool('"ab'),
        [("anthropic_messages.tool_input_partial", 2), ("anthropic_messages.tool_input_json", 3)],
        rule="anthropic_messages.tool_input_json",
    ),
    Case(
        "anthropic tool input that ends with a top-level number (Node drops it as unfinished)",
        "anthropic",
        a_tool("1", "2"),
        [("anthropic_messages.tool_input_number", 4)],
        _text_is(a_input, 12),
    ),
    Case(
        "anthropic tool input a top-level number, whitespace after it (nothing to say)",
        "anthropic",
        a_tool("-12", "\n"),
        [],
        _text_is(a_input, -12),
        _text_is(a_input, -12),
    ),
    Case(
        "anthropic content_block_start without content_block",
        "anthropic",
        _A_S + _a("content_block_start", {"index": 0}) + _a("content_block_stop", {"index": 0}) + _A_E,
        [("anthropic_messages.block_start_block", 1)],
        None,
        _text_is(lambda f: f["content"], [{}]),  # an empty block
    ),
    Case(
        "anthropic content_block_start whose content_block is a string, then a text block",
        "anthropic",
        _A_S
        + _a("content_block_start", {"index": 0, "content_block": "x"})
        + _a("content_block_stop", {"index": 0})
        + _blk(1, _A_TEXT)
        + _dl(1, {"type": "text_delta", "text": "Hi"})
        + _a("content_block_stop", {"index": 1})
        + _A_E,
        [("anthropic_messages.block_start_block", 1)],
        None,
        _text_is(a_text, "Hi"),
    ),
    Case(
        "anthropic content_block_delta without delta",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _a("content_block_delta", {"index": 0})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.block_delta_delta", 3)],
    ),
    Case(
        "anthropic content_block_delta with a null delta",
        "anthropic",
        _A_S + _blk(0, _A_TOOL) + _dl(0, None) + _a("content_block_stop", {"index": 0}) + _A_E,
        [("anthropic_messages.block_delta_delta", 2)],
    ),
    Case(
        "anthropic content_block_delta whose delta is a string",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _a("content_block_delta", {"index": 0, "delta": "x"})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.block_delta_object", 3)],
        None,
        _text_is(a_text, "Hi"),
    ),
    Case(
        "anthropic message_delta without delta",
        "anthropic",
        _A_S + _a("message_delta", {"usage": {"output_tokens": 2}}) + _a("message_stop", {}),
        [("anthropic_messages.message_delta_delta", 1)],
    ),
    Case(
        "anthropic a delta of another block's type",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _dl(0, {"type": "input_json_delta", "partial_json": "{}"})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.delta_type", 3)],
        _text_is(a_text, "Hi"),  # the delta is dropped
        _text_is(a_text, "Hi"),
    ),
    Case(
        "anthropic two content_block_start with one index",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _blk(0, _A_TOOL)
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _dl(0, {"type": "input_json_delta", "partial_json": '{"a":1}'})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.duplicate_block_start", 2), ("anthropic_messages.delta_type", 4)],
        _text_is(
            lambda f: [(b["type"], b.get("text"), b.get("input")) for b in f["content"]],
            [("text", "Hi", None), ("tool_use", None, {})],
        ),
        _text_is(
            lambda f: [(b["type"], b.get("text"), b.get("input")) for b in f["content"]],
            [("text", "Hi", None), ("tool_use", None, {})],
        ),
    ),
    Case(
        "anthropic a start repeated, then index 1: the SDKs read its deltas into the repeated block",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _blk(0, _A_TEXT)
        + _blk(1, _A_TOOL)
        + _dl(1, {"type": "input_json_delta"})  # no partial_json: the SDKs' text block skips it
        + _dl(1, {"type": "input_json_delta", "partial_json": '{"a":1}'})
        + _a("content_block_stop", {"index": 1})
        + _A_E,
        [("anthropic_messages.duplicate_block_start", 2), ("anthropic_messages.delta_type", 4)],
        _text_is(
            lambda f: [(b["type"], b.get("input")) for b in f["content"]],
            [("text", None), ("text", None), ("tool_use", {})],
        ),
        _text_is(
            lambda f: [(b["type"], b.get("input")) for b in f["content"]],
            [("text", None), ("text", None), ("tool_use", {})],
        ),
    ),
    Case(
        "anthropic a block without a type: both SDKs keep it and drop its text",
        "anthropic",
        _A_S
        + _blk(0, {"text": ""})
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.delta_type", 2)],
        _text_is(lambda f: [(b["type"], b["text"]) for b in f["content"]], [(None, "")]),
        _text_is(lambda f: f["content"], [{"text": ""}]),
    ),
    Case(
        "anthropic a citation no location model validates, index '0': Python keeps the index a string",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _a(
            "content_block_delta",
            {"index": "0", "delta": {"type": "citations_delta", "citation": {"type": "char_location"}}},
        )
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.index_type_python", 2)],
        None,
        _text_is(lambda f: f["content"][0]["citations"], [{"type": "char_location"}]),
    ),
    Case(
        "anthropic message_start's message without content, and no block: Node maps it at the end",
        "anthropic",
        _a("message_start", {"message": {k: v for k, v in _A_START["message"].items() if k != "content"}})
        + _A_E,
        [("anthropic_messages.message_start_content", 0)],
        _text_is(lambda f: f.get("content"), None),
        rule="anthropic_messages.message_start_content",
    ),
    Case(
        "anthropic message_start's message with content null, then a block: both raise at the block",
        "anthropic",
        _a("message_start", {"message": {**_A_START["message"], "content": None}})
        + _blk(0, _A_TEXT)
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _A_E,
        [("anthropic_messages.message_start_content", 0), ("anthropic_messages.block_start_content", 1)],
        rule="anthropic_messages.block_start_content",
    ),
    Case(
        "anthropic content before message_start",
        "anthropic",
        _blk(0, _A_TEXT) + _dl(0, {"type": "text_delta", "text": "Hi"}) + anthropic_stream(),
        [("anthropic_messages.before_message_start", 0)],
        _text_is(a_text, "Hi there"),  # the first "Hi" is lost
        _text_is(a_text, "Hi there"),
    ),
    Case(
        "anthropic no message_start",
        "anthropic",
        _blk(0, _A_TEXT) + _dl(0, {"type": "text_delta", "text": "Hi"}) + _A_E,
        [("anthropic_messages.before_message_start", 0), ("anthropic_messages.no_message_start", 4)],
        rule="anthropic_messages.no_message_start",
    ),
    Case(
        "anthropic a second message_start",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _A_S
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.second_message_start", 2)],
        _text_is(a_text, "Hi"),
    ),
    Case(
        "anthropic content after message_stop",
        "anthropic",
        anthropic_stream() + _dl(0, {"type": "text_delta", "text": "!"}),
        [("anthropic_messages.after_message_stop", 7)],
        _text_is(a_text, "Hi there!"),  # Python reads it into its message
        _text_is(a_text, "Hi there"),
    ),
    Case(
        "anthropic an error event after message_stop",
        "anthropic",
        anthropic_stream() + _a("error", {"error": {"type": "overloaded_error", "message": "Overloaded"}}),
        [("anthropic_messages.error_after_stop", 7)],
    ),
    Case(
        "anthropic message_delta usage without output_tokens",
        "anthropic",
        _A_S
        + _a("message_delta", {"delta": _A_DELTA_END["delta"], "usage": {"input_tokens": 3}})
        + _a("message_stop", {}),
        [("anthropic_messages.message_delta_output_tokens", 1)],
        _text_is(lambda f: f["usage"]["output_tokens"], None),
        _text_is(lambda f: f["usage"].get("output_tokens"), None),
    ),
    Case(
        "anthropic message_delta without its type",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _a("content_block_stop", {"index": 0})
        + b"event: message_delta\ndata: "
        + json.dumps(_A_DELTA_END).encode()
        + b"\n\n"
        + _a("message_stop", {}),
        [("anthropic_messages.event_type", 4)],
        _text_is(lambda f: (a_text(f), f["stop_reason"]), ("Hi", None)),  # its stop reason is lost
        _text_is(lambda f: (a_text(f), f["stop_reason"]), ("Hi", None)),
    ),
    Case(
        "anthropic content_block_start without its type",
        "anthropic",
        _A_S
        + b'event: content_block_start\ndata: {"index":0,"content_block":{"type":"text","text":""}}\n\n'
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _A_E,
        [("anthropic_messages.event_type", 1), ("anthropic_messages.no_block", 2)],
        rule="anthropic_messages.no_block",
    ),
    Case(
        "anthropic a delta before any block",
        "anthropic",
        _A_S + _dl(0, {"type": "text_delta", "text": "Hi"}) + _A_E,
        [("anthropic_messages.no_block", 1)],
    ),
    Case(
        "anthropic a text block started without text",
        "anthropic",
        _A_S
        + _blk(0, {"type": "text"})
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.text_start", 1)],
        None,
        _text_is(a_text, "Hi"),
    ),
    Case(
        "anthropic a thinking block started without thinking",
        "anthropic",
        _A_S
        + _blk(0, {"type": "thinking"})
        + _dl(0, {"type": "thinking_delta", "thinking": "hm"})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.thinking_start", 1)],
        None,
        _text_is(lambda f: f["content"][0]["thinking"], "undefinedhm"),
    ),
    Case(
        "anthropic a json_schema output format, the text not JSON",
        "anthropic",
        a_answer("Hi"),
        [("anthropic_messages.json_text", 3)],
        None,
        _text_is(a_text, "Hi"),
        request=A_JSON,
    ),
    Case(
        "anthropic a json_schema output format, the JSON 201 levels deep",
        "anthropic",
        a_answer(R_DEEP_TEXT),
        [("anthropic_messages.json_text_depth", 3)],
        None,
        _text_is(a_text, R_DEEP_TEXT),
        request=A_JSON,
    ),
    Case(
        "anthropic a json_schema output format, the JSON 200 levels deep (nothing to say)",
        "anthropic",
        a_answer(_deep_text(200)),
        [],
        _text_is(a_text, _deep_text(200)),
        _text_is(a_text, _deep_text(200)),
        request=A_JSON,
    ),
    Case(
        "anthropic a json_schema output format, the JSON 3,000 levels deep (past both parsers of ProxAI)",
        "anthropic",
        a_answer(_deep_text(3000)),
        [("anthropic_messages.json_text_depth", 3)],
        None,
        _text_is(a_text, _deep_text(3000)),
        request=A_JSON,
    ),
    Case(
        "anthropic a json_schema output format, 2,000 levels deep and not JSON (a bracket left open)",
        "anthropic",
        a_answer(_deep_text(2000)[:-2]),
        [("anthropic_messages.json_text", 3)],
        None,
        _text_is(a_text, _deep_text(2000)[:-2]),
        request=A_JSON,
    ),
    Case(
        "anthropic a json_schema output format, the JSON does not fit the schema",
        "anthropic",
        a_answer('{"a": "x"}'),
        [("anthropic_messages.json_schema", 3)],
        None,
        _text_is(a_text, '{"a": "x"}'),
        request=A_JSON,
    ),
    Case(
        "anthropic a json_schema output format, the text JSON that fits (nothing to say)",
        "anthropic",
        a_answer('{"a": 1}'),
        [],
        _text_is(a_text, '{"a": 1}'),
        _text_is(a_text, '{"a": 1}'),
        request=A_JSON,
    ),
    Case(
        "anthropic message_start without usage",
        "anthropic",
        _a("message_start", {"message": {k: v for k, v in _A_START["message"].items() if k != "usage"}})
        + _A_E,
        [("anthropic_messages.message_start_usage", 1)],
    ),
    Case(
        "anthropic a negative delta index",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _dl(-1, {"type": "text_delta", "text": " there"})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.negative_index", 3)],
        _text_is(a_text, "Hi there"),  # counted from the end: the last block
        _text_is(a_text, "Hi"),
    ),
    Case(
        "anthropic a delta whose index is null: Python TypeError, Node writes it under 'null'",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _a("content_block_delta", {"index": None, "delta": {"type": "text_delta", "text": " there"}})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.index_type", 3)],
        None,
        _text_is(a_text, "Hi"),
    ),
    Case(
        "anthropic a delta without an index (Python TypeError), a delta index 1.5 (Node loses it)",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _a("content_block_delta", {"delta": {"type": "text_delta", "text": "Hi"}})
        + _a("content_block_delta", {"index": 1.5, "delta": {"type": "text_delta", "text": "!"}})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.index_type", 2)],
        None,
        _text_is(a_text, ""),
    ),
    Case(
        "anthropic a delta index [1]: Node reads it as 1, Python raises TypeError",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _blk(1, _A_TEXT)
        + _a("content_block_delta", {"index": [1], "delta": {"type": "text_delta", "text": "Hi"}})
        + _A_E,
        [("anthropic_messages.index_type_python", 3)],
        None,
        _text_is(a_text, "Hi"),
    ),
    Case(
        "anthropic a content_block_stop without an index: Python TypeError, Node reads nothing",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _a("content_block_stop", {})
        + _A_E,
        [("anthropic_messages.index_type_python", 3)],
        None,
        _text_is(a_text, "Hi"),
    ),
    Case(
        "anthropic a delta index '01': Python reads it as 1, Node writes it under '01'",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _blk(1, _A_TEXT)
        + _a("content_block_delta", {"index": "01", "delta": {"type": "text_delta", "text": "Hi"}})
        + _A_E,
        [("anthropic_messages.index_form", 3)],
        _text_is(a_text, "Hi"),
        _text_is(a_text, ""),
    ),
    Case(
        "anthropic a delta index true: Python reads it as 1, Node writes it under 'true'",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _blk(1, _A_TEXT)
        + _a("content_block_delta", {"index": True, "delta": {"type": "text_delta", "text": "Hi"}})
        + _A_E,
        [("anthropic_messages.index_form", 3)],
        _text_is(a_text, "Hi"),
        _text_is(a_text, ""),
    ),
    Case(
        "anthropic block indexes both SDKs read: a start's null, '0', -1 (appended), a delta's '1', "
        "1.0, a stop's '1', ' 0' and -1 (nothing to say)",
        "anthropic",
        _A_S
        + _a("content_block_start", {"index": None, "content_block": _A_TEXT})
        + _a("content_block_start", {"index": "0", "content_block": _A_TEXT})
        + _a("content_block_start", {"index": -1, "content_block": _A_TEXT})
        + _a("content_block_delta", {"index": "1", "delta": {"type": "text_delta", "text": "Hi"}})
        + _a("content_block_delta", {"index": 1.0, "delta": {"type": "text_delta", "text": " there"}})
        + _a("content_block_delta", {"index": 2, "delta": {"type": "text_delta", "text": "!"}})
        + _a("content_block_stop", {"index": "1"})
        + _a("content_block_stop", {"index": " 0"})
        + _a("content_block_stop", {"index": -1})
        + _A_E,
        [],
        _text_is(a_text, "Hi there!"),
        _text_is(a_text, "Hi there!"),
    ),
    Case(
        "anthropic message_stop early (a named start carrying it), then a delta: both raise, no block",
        "anthropic",
        _A_S
        + b'event: content_block_start\ndata: {"type":"message_stop"}\n\n'
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [
            ("anthropic_messages.after_message_stop", 2),
            ("anthropic_messages.no_block", 2),
            ("anthropic_messages.block_index", 3),
        ],
        rule="anthropic_messages.no_block",
    ),
    Case(
        "anthropic a delta after message_stop for a block that never started: Python IndexError",
        "anthropic",
        _A_S
        + _blk(0, _A_TEXT)
        + _dl(0, {"type": "text_delta", "text": "Hi"})
        + _A_E
        + _dl(3, {"type": "text_delta", "text": "x"}),
        [("anthropic_messages.after_message_stop", 5), ("anthropic_messages.block_index", 5)],
        None,
        _text_is(a_text, "Hi"),
        rule="anthropic_messages.block_index",
    ),
    Case(
        "anthropic a tool fragment after message_stop: Python parses the block's input again",
        "anthropic",
        _A_S
        + _blk(0, _A_TOOL)
        + _a("content_block_stop", {"index": 0})
        + _A_E
        + _dl(0, {"type": "input_json_delta", "partial_json": " "}),
        [("anthropic_messages.after_message_stop", 5), ("anthropic_messages.tool_input_after_stop", 5)],
        None,
        _text_is(a_input, {}),
        rule="anthropic_messages.tool_input_after_stop",
    ),
    Case(
        "anthropic a tool fragment without partial_json after message_stop: Python TypeError",
        "anthropic",
        _A_S
        + _blk(0, _A_TOOL)
        + _a("content_block_stop", {"index": 0})
        + _A_E
        + _dl(0, {"type": "input_json_delta"}),
        [
            ("anthropic_messages.after_message_stop", 5),
            ("anthropic_messages.tool_input_missing_after_stop", 5),
        ],
        None,
        _text_is(a_input, {}),
        rule="anthropic_messages.tool_input_missing_after_stop",
    ),
    Case(
        "anthropic a tool fragment with partial_json null after message_stop: Python TypeError",
        "anthropic",
        _A_S
        + _blk(0, _A_TOOL)
        + _a("content_block_stop", {"index": 0})
        + _A_E
        + _dl(0, {"type": "input_json_delta", "partial_json": None}),
        [
            ("anthropic_messages.after_message_stop", 5),
            ("anthropic_messages.tool_input_missing_after_stop", 5),
        ],
        None,
        _text_is(a_input, {}),
        rule="anthropic_messages.tool_input_missing_after_stop",
    ),
    Case(
        "anthropic a tool fragment after a delta typed message_stop, then message_stop: both raise",
        "anthropic",
        _A_S
        + _blk(0, _A_TOOL)
        + _dl(0, {"type": "input_json_delta", "partial_json": ""})
        + _a("content_block_delta", {"type": "message_stop"})  # read by its type
        + _dl(0, {"type": "input_json_delta", "partial_json": 'a"'})
        + _a("content_block_stop", {"index": 0})
        + _A_E,  # Node's final message again: the input parsed whole
        [
            ("anthropic_messages.after_message_stop", 4),
            ("anthropic_messages.tool_input_after_stop", 4),
            ("anthropic_messages.tool_input_json", 7),
        ],
        rule="anthropic_messages.tool_input_json",
    ),
    Case(
        "anthropic message_start without message: Python AttributeError, Node ends without a message",
        "anthropic",
        _a("message_start", {}) + _blk(0, _A_TEXT) + _dl(0, {"type": "text_delta", "text": "Hi"}) + _A_E,
        [("anthropic_messages.message_start_message", 0), ("anthropic_messages.message_start_usage", 3)],
    ),
    Case(
        "anthropic a tool fragment with index -1: Python's json_bufs[-1] parses it alone and raises",
        "anthropic",
        _A_S
        + _blk(0, _A_TOOL)
        + _dl(0, {"type": "input_json_delta", "partial_json": '{"a":1}'})
        + _dl(-1, {"type": "input_json_delta", "partial_json": "ag"})
        + _a("content_block_stop", {"index": 0})
        + _A_E,
        [("anthropic_messages.negative_index", 3), ("anthropic_messages.tool_input_partial", 3)],
        None,
        _text_is(a_input, {"a": 1}),  # Node loses the fragment (written under '-1')
        rule="anthropic_messages.tool_input_partial",
    ),
    Case(
        "anthropic a negative delta index past the first block: Python IndexError",
        "anthropic",
        _A_S + _blk(0, _A_TEXT) + _dl(-2, {"type": "text_delta", "text": "Hi"}) + _A_E,
        [("anthropic_messages.block_index", 2)],
        None,
        _text_is(a_text, ""),
    ),
    Case(
        "anthropic an unknown named event whose payload is not JSON",
        "anthropic",
        _A_S + b"event: future\ndata: not json\n\n" + _A_E,
        [("anthropic_messages.event_json", 1)],
    ),
    Case(
        "anthropic an unknown named event whose payload is an array",
        "anthropic",
        _A_S + b"event: future\ndata: [1]\n\n" + _A_E,
        [("anthropic_messages.event_object", 1)],
        None,
        _text_is(a_text, ""),
    ),
    Case(
        "chat clean",
        "chat",
        C_HI + C_STOP + C_DONE,
        [],
        _text_is(c_message, ("Hi", "stop")),
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "chat first choice index 1",
        "chat",
        _c({"role": "assistant", "content": "Hi"}, index=1) + _c({}, "stop", index=1) + C_DONE,
        [("openai_chat.choice_index", 0)],
    ),
    Case(
        "chat a later choice without index",
        "chat",
        C_HI + _raw(_chunk([{"delta": {"content": "!"}, "finish_reason": None}])) + C_STOP + C_DONE,
        [("openai_chat.choice_no_index", 1)],
        None,
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "chat tool call 1 before tool call 0",
        "chat",
        _c({"role": "assistant", "content": None})
        + _tool(1, "call_b", "f")
        + _tool(0, "call_a", "g")
        + _c({}, "tool_calls")
        + C_DONE,
        [("openai_chat.tool_call_index", 1)],
        None,
        _text_is(
            lambda f: [(t["id"], t["function"]["name"]) for t in f["choices"][0]["message"]["tool_calls"]],
            [("call_a", "g"), ("call_b", "f")],
        ),
    ),
    Case(
        "chat no finish_reason",
        "chat",
        C_HI + C_DONE,
        [("openai_chat.no_finish_reason", 1)],
        _text_is(c_message, ("Hi", None)),
    ),
    Case(
        "chat cut after the first chunk (no finish_reason, no [DONE])",
        "chat",
        C_HI,
        [("openai_chat.no_finish_reason", 1)],
        _text_is(c_message, ("Hi", None)),
    ),
    Case(
        "chat a chunk without object",
        "chat",
        C_HI + _raw(_chunk([_ch({"content": " there"})], drop="object")) + C_STOP + C_DONE,
        [("openai_chat.chunk_object", 1)],
        _text_is(c_message, ("Hi", "stop")),  # " there" is lost
        _text_is(c_message, ("Hi there", "stop")),
    ),
    Case(
        "chat no chunk with object (the Python SDK reads none)",
        "chat",
        _raw(_chunk([_ch({"role": "assistant", "content": "Hi"})], drop="object"))
        + _raw(_chunk([_ch({}, "stop")], drop="object"))
        + C_DONE,
        [("openai_chat.chunk_object", 0), ("openai_chat.no_valid_chunk", 2)],
        None,
        _text_is(c_message, ("Hi", "stop")),
        rule="openai_chat.no_valid_chunk",
    ),
    Case(
        "chat a last chunk chat.completion.done without choices (nothing lost)",
        "chat",
        C_HI + C_STOP + _raw({**_chunk([]), "object": "chat.completion.done"}) + C_DONE,
        [],
        _text_is(c_message, ("Hi", "stop")),
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "chat a chunk without choices",
        "chat",
        C_HI + _raw(_chunk([], drop="choices")) + C_STOP + C_DONE,
        [("openai_chat.no_choices", 1)],
    ),
    Case(
        "chat a choice without delta",
        "chat",
        C_HI + _raw(_chunk([{"index": 0, "finish_reason": None}])) + C_STOP + C_DONE,
        [("openai_chat.choice_delta", 1)],
        None,
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "chat no role",
        "chat",
        _raw(_chunk([_ch({"content": "Hi"})])) + C_STOP + C_DONE,
        [("openai_chat.no_role", 2)],
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "chat a tool call without index",
        "chat",
        C_ROLE
        + _calls({"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}})
        + C_TOOLS_END,
        [("openai_chat.tool_call_no_index", 1)],
        None,
        _text_is(c_tools, []),
    ),
    Case(
        "chat a tool call without type",
        "chat",
        C_ROLE + _calls({"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}) + C_TOOLS_END,
        [("openai_chat.tool_call_type", 2)],
        _text_is(c_tools, [(None, "f", "{}")]),
    ),
    Case(
        "chat a tool call with type null",
        "chat",
        C_ROLE
        + _calls({"index": 0, "id": "a", "type": None, "function": {"name": "f", "arguments": "{}"}})
        + C_TOOLS_END,
        [("openai_chat.tool_call_type", 2)],
        _text_is(c_tools, [(None, "f", "{}")]),
    ),
    Case(
        "chat a function tool call without function",
        "chat",
        C_ROLE + _calls({"index": 0, "id": "a", "type": "function"}) + C_TOOLS_END,
        [("openai_chat.tool_call_function", 1)],
    ),
    Case(
        "chat a later tool-call delta without function",
        "chat",
        C_ROLE
        + _calls({"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": "{"}})
        + _calls({"index": 0})
        + _calls({"index": 0, "function": {"arguments": "}"}})
        + C_TOOLS_END,
        [("openai_chat.tool_call_delta", 2)],
        None,
        _text_is(c_tools, [("function", "f", "{}")]),
    ),
    Case(
        "chat finish_reason length",
        "chat",
        C_HI + _c({}, "length") + C_DONE,
        [("openai_chat.finish_length", 3)],
        None,
        _text_is(c_message, ("Hi", "length")),
    ),
    Case(
        "chat finish_reason content_filter",
        "chat",
        C_HI + _c({}, "content_filter") + C_DONE,
        [("openai_chat.finish_content_filter", 3)],
        None,
        _text_is(c_message, ("Hi", "content_filter")),
    ),
    Case(
        "chat finish_reason length with a strict tool in the request",
        "chat",
        C_HI + _c({}, "length") + C_DONE,
        [("openai_chat.finish_length_strict", 3)],
        request=C_STRICT,
    ),
    Case(
        "chat finish_reason content_filter with a strict tool in the request",
        "chat",
        C_HI + _c({}, "content_filter") + C_DONE,
        [("openai_chat.finish_content_filter_strict", 3)],
        request=C_STRICT,
    ),
    Case(
        "chat a strict tool's arguments that are not JSON",
        "chat",
        C_ROLE
        + _calls({"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": "abc"}})
        + C_TOOLS_END,
        [("openai_chat.strict_tool_arguments", 4)],
        request=C_STRICT,
    ),
    Case(
        "chat a strict tool's arguments cut short",
        "chat",
        C_ROLE
        + _calls(
            {"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": '{"a": '}}
        )
        + C_TOOLS_END,
        [("openai_chat.strict_tool_arguments_cut", 4)],
        request=C_STRICT,
    ),
    Case(
        "chat a strict tool's arguments with text after the JSON",
        "chat",
        C_ROLE
        + _calls({"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": "{} x"}})
        + C_TOOLS_END,
        [("openai_chat.strict_tool_arguments_cut", 4)],
        request=C_STRICT,
    ),
    Case(
        "chat a strict tool's JSON arguments (nothing to say)",
        "chat",
        C_ROLE
        + _calls({"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}})
        + C_TOOLS_END,
        [],
        _text_is(c_tools, [("function", "f", "{}")]),
        _text_is(c_tools, [("function", "f", "{}")]),
        request=C_STRICT,
    ),
    Case(
        "chat a tool not declared strict, arguments not JSON (nothing parses them)",
        "chat",
        C_ROLE
        + _calls({"index": 0, "id": "a", "type": "function", "function": {"name": "g", "arguments": "abc"}})
        + C_TOOLS_END,
        [],
        _text_is(c_tools, [("function", "g", "abc")]),
        _text_is(c_tools, [("function", "g", "abc")]),
        request=C_STRICT,
    ),
    Case(
        "chat a json_schema response_format, the content not JSON",
        "chat",
        c_answer("Hi"),
        [("openai_chat.json_content", 4)],
        None,
        _text_is(c_message, ("Hi", "stop")),
        request=C_JSON,
    ),
    Case(
        "chat a json_schema response_format and a strict tool, the content not JSON",
        "chat",
        c_answer("Hi"),
        [("openai_chat.json_content_strict", 4)],
        request={**C_JSON, **C_STRICT},
    ),
    Case(
        "chat a json_schema response_format, the content JSON cut short",
        "chat",
        c_answer('{"a": '),
        [("openai_chat.json_content_whole", 4)],
        None,
        _text_is(c_message, ('{"a": ', "stop")),
        request=C_JSON,
    ),
    Case(
        "chat a json_schema response_format, the content JSON and text after it",
        "chat",
        c_answer('{"a": 1} ok'),
        [("openai_chat.json_content_whole", 4)],
        None,
        _text_is(c_message, ('{"a": 1} ok', "stop")),
        request=C_JSON,
    ),
    Case(
        "chat a json_schema response_format and a strict tool, the content JSON cut short",
        "chat",
        c_answer('{"a": '),
        [("openai_chat.json_content_whole_strict", 4)],
        request={**C_JSON, **C_STRICT},
    ),
    Case(
        "chat a json_schema response_format, the JSON does not fit the schema",
        "chat",
        c_answer('{"a": "x"}'),
        [("openai_chat.json_schema", 4)],
        None,
        _text_is(c_message, ('{"a": "x"}', "stop")),
        request={**C_JSON, **C_STRICT},
    ),
    Case(
        "chat a json_schema response_format, the content JSON that fits (nothing to say)",
        "chat",
        C_ROLE + _c({"content": '{"a"'}) + _c({"content": ": 1}"}) + C_STOP + C_DONE,
        [],
        _text_is(c_message, ('{"a": 1}', "stop")),
        _text_is(c_message, ('{"a": 1}', "stop")),
        request={**C_JSON, **C_STRICT},
    ),
    Case(
        "chat a custom tool call",
        "chat",
        C_ROLE
        + _calls({"index": 0, "id": "a", "type": "custom", "custom": {"name": "f", "input": "x"}})
        + C_TOOLS_END,
        [("openai_chat.custom_tool_call", 4)],
    ),
    Case(
        "chat event line without data",
        "chat",
        C_HI + b"event: ping\n\n" + C_STOP + C_DONE,
        [("openai_chat.dataless_event", 1)],
    ),
    Case(
        "chat id line alone",
        "chat",
        C_HI + b"id: 7\n\n" + C_STOP + C_DONE,
        [("openai_chat.dataless_block", 1)],
        None,
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "chat retry line alone",
        "chat",
        C_HI + b"retry: 100\n\n" + C_STOP + C_DONE,
        [("openai_chat.dataless_block", 1)],
        None,
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "chat a keepalive comment once an id came",
        "chat",
        b"id: 1\n" + C_HI + b": keepalive\n\n" + C_STOP + C_DONE,
        [("openai_chat.dataless_block", 1)],
        None,
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "chat event line without data after [DONE] (the SDKs stop reading there)",
        "chat",
        C_HI + C_STOP + C_DONE + b"event: ping\n\n",
        [],
        _text_is(c_message, ("Hi", "stop")),
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "responses a message's content_part.done without part: Node reads part.type",
        "responses",
        R_CREATED
        + _added(1, 0, _MSG_ADDED)
        + _part(2, 0, 0)
        + _text(3, 0, 0)
        + _r("response.content_part.done", 4, item_id="msg_1", output_index=0, content_index=0)
        + _done(5, 0, _MSG)
        + _completed(_MSG, seq=6),
        [("openai_responses.node_part_added_part", 4)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a message added without content, no part follows: Node raises at once, Python reads on",
        "responses",
        R_CREATED
        + _added(1, 0, {k: v for k, v in _MSG_ADDED.items() if k != "content"})
        + _done(2, 0, _MSG)
        + _completed(_MSG, seq=3),
        [("openai_responses.message_content", 1)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a message done without content: Node raises, Python reads the completed response",
        "responses",
        R_CREATED
        + _added(1, 0, _MSG_ADDED)
        + _part(2, 0, 0)
        + _text(3, 0, 0)
        + _done(4, 0, {k: v for k, v in _MSG.items() if k != "content"})
        + _completed(_MSG, seq=5),
        [("openai_responses.message_content", 4)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a message without content in response.in_progress: Node raises",
        "responses",
        R_CREATED
        + _r("response.in_progress", 1, response=_resp("in_progress", [{**_MSG_ADDED, "content": None}]))
        + _completed(_MSG, seq=2),
        [("openai_responses.message_content", 1)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses response.completed's message without content: Python loses its text, Node raises",
        "responses",
        R_CREATED
        + _added(1, 0, _MSG_ADDED)
        + _part(2, 0, 0)
        + _text(3, 0, 0)
        + _done(4, 0, _MSG)
        + _completed({k: v for k, v in _MSG.items() if k != "content"}, seq=5),
        [("openai_responses.completed_message_content", 5)],
        _text_is(r_text, ""),
    ),
    Case(
        "responses response.completed's message with a number for content",
        "responses",
        R_CREATED
        + _added(1, 0, _MSG_ADDED)
        + _part(2, 0, 0)
        + _text(3, 0, 0)
        + _done(4, 0, _MSG)
        + _completed({**_MSG, "content": 5}, seq=5),
        [("openai_responses.completed_content_scalar", 5)],
    ),
    Case(
        "responses response.completed's message with true for content",
        "responses",
        R_CREATED
        + _added(1, 0, _MSG_ADDED)
        + _part(2, 0, 0)
        + _text(3, 0, 0)
        + _done(4, 0, _MSG)
        + _completed({**_MSG, "content": True}, seq=5),
        [("openai_responses.completed_content_scalar", 5)],
    ),
    Case(
        "responses response.completed's message with an object for content",
        "responses",
        R_CREATED
        + _added(1, 0, _MSG_ADDED)
        + _part(2, 0, 0)
        + _text(3, 0, 0)
        + _done(4, 0, _MSG)
        + _completed({**_MSG, "content": {"type": "output_text"}}, seq=5),
        [("openai_responses.completed_content_object", 5)],
    ),
    Case(
        "responses response.completed's message with a string for content",
        "responses",
        R_CREATED
        + _added(1, 0, _MSG_ADDED)
        + _part(2, 0, 0)
        + _text(3, 0, 0)
        + _done(4, 0, _MSG)
        + _completed({**_MSG, "content": "Hi"}, seq=5),
        [("openai_responses.completed_content_string", 5)],
    ),
    Case(
        "responses response.completed's message with an empty string for content",
        "responses",
        R_CREATED
        + _added(1, 0, _MSG_ADDED)
        + _part(2, 0, 0)
        + _text(3, 0, 0)
        + _done(4, 0, _MSG)
        + _completed({**_MSG, "content": ""}, seq=5),
        [("openai_responses.completed_content_empty", 5)],
        _text_is(r_items, [("message", "msg_1")]),
    ),
    Case(
        "responses a message added with content null, then a part: both raise",
        "responses",
        R_CREATED
        + _added(1, 0, {**_MSG_ADDED, "content": None})
        + _part(2, 0, 0)
        + _text(3, 0, 0)
        + _done(4, 0, _MSG)
        + _completed(_MSG, seq=5),
        [("openai_responses.message_content", 1), ("openai_responses.message_content_part", 2)],
        rule="openai_responses.message_content_part",
    ),
    Case(
        "responses a message added with a string content (Node iterates it), then a part: both raise",
        "responses",
        R_CREATED
        + _added(1, 0, {**_MSG_ADDED, "content": "x"})
        + _part(2, 0, 0)
        + _done(3, 0, _MSG)
        + _completed(_MSG, seq=4),
        [("openai_responses.message_content_part", 2)],
    ),
    Case(
        "responses clean",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED,
        [],
        _text_is(r_text, "Hi"),
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses no response.created",
        "responses",
        b"".join(R_ITEM) + R_COMPLETED,
        [("openai_responses.created_first", 0)],
    ),
    Case(
        "responses ends with response.incomplete",
        "responses",
        R_CREATED + b"".join(R_ITEM) + _r("response.incomplete", 6, response=_resp("incomplete", [_MSG])),
        [("openai_responses.not_completed", 6)],
        None,
        _text_is(lambda f: (r_text(f), f["status"]), ("Hi", "incomplete")),
    ),
    Case(
        "responses no terminal event",
        "responses",
        R_CREATED + b"".join(R_ITEM),
        [("openai_responses.no_terminal", 6)],
        None,
        _text_is(lambda f: (r_text(f), f["status"]), ("Hi", "in_progress")),
    ),
    Case(
        "responses an event type the Node SDK does not know",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:2])
        + _r("response.future_thing", 9)
        + b"".join(R_ITEM[2:])
        + R_COMPLETED,
        [("openai_responses.unknown_event", 3)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses an event whose payload has no type: Python passes over it, Node raises",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:3])
        + b'event: response.output_text.delta\ndata: {"sequence_number":4,"item_id":"msg_1",'
        + b'"output_index":0,"content_index":0,"delta":" there"}\n\n'
        + b"".join(R_ITEM[3:])
        + R_COMPLETED,
        [("openai_responses.unknown_event", 4)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a response.created whose payload has no type: both raise (no snapshot)",
        "responses",
        R_CREATED.replace(b'"type":"response.created",', b"") + b"".join(R_ITEM) + R_COMPLETED,
        [("openai_responses.unknown_event", 0), ("openai_responses.created_first", 0)],
        rule="openai_responses.created_first",
    ),
    Case(
        "responses response.completed without output",
        "responses",
        R_CREATED + b"".join(R_ITEM) + _r("response.completed", 6, response=_resp("completed", None)),
        [("openai_responses.completed_output", 6)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a content event for an output index never added",
        "responses",
        R_CREATED + R_ITEM[0] + _part(2, 0, 0) + _text(3, 5, 0) + b"".join(R_ITEM[3:]) + R_COMPLETED,
        [("openai_responses.output_index", 3)],
    ),
    Case(
        "responses output indexes with a gap (the first item at 1)",
        "responses",
        R_CREATED
        + _added(1, 1, _MSG_ADDED)
        + _part(2, 1, 0)
        + _text(3, 1, 0)
        + _text_done(4, 1, 0)
        + _done(5, 1, _MSG)
        + R_COMPLETED,
        [("openai_responses.output_position", 2)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses an item added at output_index 1, its events at 0",
        "responses",
        R_CREATED
        + _added(1, 1, _MSG_ADDED)
        + _part(2, 0, 0)
        + _text(3, 0, 0)
        + _text_done(4, 0, 0)
        + _done(5, 0, _MSG)
        + R_COMPLETED,
        [("openai_responses.python_output_index", 2)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a response.in_progress after the items replaces openai-node's snapshot",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:3])
        + _r("response.in_progress", 9, response=_resp("in_progress", []))
        + b"".join(R_ITEM[3:])
        + R_COMPLETED,
        [("openai_responses.output_position", 5)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses two items with one output_index",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:5])
        + _added(6, 0, {**_MSG_ADDED, "id": "msg_2"})
        + _completed(_MSG, {**_MSG, "id": "msg_2"}),
        [("openai_responses.output_index_repeated", 6)],
        None,
        _text_is(r_items, [("message", "msg_1"), ("message", "msg_2")]),
    ),
    Case(
        "responses a text delta before its content_part.added",
        "responses",
        R_CREATED
        + R_ITEM[0]
        + _text(2, 0, 0)
        + _part(3, 0, 0)
        + _text_done(4, 0, 0)
        + R_ITEM[4]
        + R_COMPLETED,
        [("openai_responses.content_index", 2)],
    ),
    Case(
        "responses a text delta without content_index",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:2])
        + _r("response.output_text.delta", 3, item_id="msg_1", output_index=0, delta="Hi")
        + b"".join(R_ITEM[3:])
        + R_COMPLETED,
        [("openai_responses.content_index_type", 3)],
    ),
    Case(
        "responses a summary delta before its summary part",
        "responses",
        R_CREATED
        + _added(1, 0, _RS)
        + _r(
            "response.reasoning_summary_text.delta",
            2,
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            delta="t",
        )
        + _done(3, 0, _RS_DONE)
        + _completed(_RS_DONE),
        [("openai_responses.node_content_index", 2)],
        _text_is(r_items, [("reasoning", "rs_1")]),
    ),
    Case(
        "responses a text delta into a refusal part",
        "responses",
        R_CREATED
        + R_ITEM[0]
        + _part(2, 0, 0, {"type": "refusal", "refusal": ""})
        + _text(3, 0, 0)
        + R_ITEM[4]
        + R_COMPLETED,
        [("openai_responses.text_part_type", 3)],
    ),
    Case(
        "responses a refusal delta into a text part",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:2])
        + _r("response.refusal.delta", 3, item_id="msg_1", output_index=0, content_index=0, delta="no")
        + b"".join(R_ITEM[2:])
        + R_COMPLETED,
        [("openai_responses.node_part_type", 3)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a text part added without its text",
        "responses",
        R_CREATED + R_ITEM[0] + _part(2, 0, 0, {"type": "output_text"}) + b"".join(R_ITEM[2:]) + R_COMPLETED,
        [("openai_responses.part_text", 3)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses content_part.added of a message without its part",
        "responses",
        R_CREATED
        + _added(1, 0, _MSG_ADDED)
        + _r("response.content_part.added", 2, item_id="msg_1", output_index=0, content_index=0)
        + _done(3, 0, {**_MSG, "content": []})
        + _completed({**_MSG, "content": []}, seq=4),
        [("openai_responses.part_added_part", 2)],
    ),
    Case(
        "responses content_part.added of a message whose part is a string",
        "responses",
        R_CREATED
        + _added(1, 0, _MSG_ADDED)
        + _part(2, 0, 0, "x")
        + _done(3, 0, {**_MSG, "content": []})
        + _completed({**_MSG, "content": []}, seq=4),
        [("openai_responses.python_part_added_part", 2)],
        None,
        _text_is(r_items, [("message", "msg_1")]),
    ),
    Case(
        "responses content_part.added of a reasoning item without its part",
        "responses",
        R_CREATED
        + _added(1, 0, _RS)
        + _r("response.content_part.added", 2, item_id="rs_1", output_index=0, content_index=0, part=None)
        + _done(3, 0, _RS_DONE)
        + _completed(_RS_DONE, seq=4),
        [("openai_responses.node_part_added_part", 2)],
        _text_is(r_items, [("reasoning", "rs_1")]),
    ),
    Case(
        "responses a text delta aimed at a function_call item",
        "responses",
        R_CREATED
        + _added(1, 0, _FC)
        + _text(2, 0, 0, iid="fc_1")
        + _done(3, 0, _FC_DONE)
        + _completed(_FC_DONE),
        [("openai_responses.delta_item_type", 2)],
        None,
        _text_is(r_items, [("function_call", "fc_1")]),
    ),
    Case(
        "responses a function_call added without arguments",
        "responses",
        R_CREATED
        + _added(1, 0, {k: v for k, v in _FC.items() if k != "arguments"})
        + _r("response.function_call_arguments.delta", 2, item_id="fc_1", output_index=0, delta="{}")
        + _done(3, 0, _FC_DONE)
        + _completed(_FC_DONE),
        [("openai_responses.call_arguments", 2)],
        None,
        _text_is(lambda f: f["output"][0]["arguments"], "{}"),
    ),
    Case(
        "responses an output_item.done with another call_id",
        "responses",
        R_CREATED
        + _added(1, 0, _FC)
        + _done(2, 0, {**_FC_DONE, "call_id": "call_2"})
        + _completed({**_FC_DONE, "call_id": "call_2"}),
        [("openai_responses.item_identity", 2)],
        None,
        _text_is(lambda f: f["output"][0]["call_id"], "call_2"),
    ),
    Case(
        "responses two function calls with one call_id",
        "responses",
        R_CREATED
        + _added(1, 0, _FC)
        + _done(2, 0, _FC_DONE)
        + _added(3, 1, {**_FC, "id": "fc_2"})
        + _done(4, 1, {**_FC_DONE, "id": "fc_2"})
        + _completed(_FC_DONE, {**_FC_DONE, "id": "fc_2"}),
        [("openai_responses.identity_conflict", 4)],
        None,
        _text_is(r_items, [("function_call", "fc_1"), ("function_call", "fc_2")]),
    ),
    Case(
        "responses a later lifecycle snapshot with two items of one identity",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + _r("response.in_progress", 6, response=_resp("in_progress", [_MSG, _MSG]))
        + _completed(_MSG, seq=7),
        [("openai_responses.snapshot_identity", 6)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a later lifecycle snapshot that gives a done call another id",
        "responses",
        R_CREATED
        + _added(1, 0, _FC)
        + _done(2, 0, _FC_DONE)
        + _r("response.in_progress", 3, response=_resp("in_progress", [{**_FC_DONE, "id": "fc_9"}]))
        + _completed(_FC_DONE, seq=4),
        [("openai_responses.snapshot_identity", 3)],
        None,
        _text_is(r_items, [("function_call", "fc_1")]),
    ),
    Case(
        "responses a later lifecycle snapshot with the items done (nothing to say)",
        "responses",
        R_CREATED
        + _added(1, 0, _FC)
        + _done(2, 0, _FC_DONE)
        + _r("response.in_progress", 3, response=_resp("in_progress", [_FC_DONE]))
        + _completed(_FC_DONE, seq=4),
        [],
        _text_is(r_items, [("function_call", "fc_1")]),
        _text_is(r_items, [("function_call", "fc_1")]),
    ),
    Case(
        "responses response.completed gives a done call another id",
        "responses",
        R_CREATED + _added(1, 0, _FC) + _done(2, 0, _FC_DONE) + _completed({**_FC_DONE, "id": "fc_9"}, seq=3),
        [("openai_responses.completed_identity", 3)],
        None,
        _text_is(r_items, [("function_call", "fc_9")]),
    ),
    Case(
        "responses an item added, never done, absent from response.completed",
        "responses",
        R_CREATED + b"".join(R_ITEM) + _added(6, 1, _FC) + _completed(_MSG),
        [("openai_responses.unfinished_item", 7)],
        None,
        _text_is(r_items, [("message", "msg_1")]),
    ),
    Case(
        "responses an item added, never done, in response.completed (nothing lost)",
        "responses",
        R_CREATED + b"".join(R_ITEM[:4]) + _added(6, 1, _FC) + _completed(_MSG, _FC_DONE),
        [],
        _text_is(r_items, [("message", "msg_1"), ("function_call", "fc_1")]),
        _text_is(r_items, [("message", "msg_1"), ("function_call", "fc_1")]),
    ),
    Case(
        "responses a response.in_progress without response",
        "responses",
        R_CREATED + _r("response.in_progress", 1) + b"".join(R_ITEM) + R_COMPLETED,
        [("openai_responses.lifecycle_response", 1)],
    ),
    Case(
        "responses a response.in_progress whose response has no id",
        "responses",
        R_CREATED
        + _r(
            "response.in_progress",
            1,
            response={k: v for k, v in _resp("in_progress", []).items() if k != "id"},
        )
        + b"".join(R_ITEM)
        + R_COMPLETED,
        [("openai_responses.lifecycle_id", 1)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a response.created without output",
        "responses",
        _r("response.created", 0, response=_resp("in_progress", None)) + b"".join(R_ITEM) + R_COMPLETED,
        [("openai_responses.lifecycle_output", 0)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a reasoning item without summary gets a summary part",
        "responses",
        R_CREATED
        + _added(1, 0, {"id": "rs_1", "type": "reasoning"})
        + _r(
            "response.reasoning_summary_part.added",
            2,
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        )
        + _done(3, 0, _RS_DONE)
        + _completed(_RS_DONE),
        [("openai_responses.reasoning_summary", 2)],
        _text_is(r_items, [("reasoning", "rs_1")]),
    ),
    Case(
        "responses a reasoning item with a null summary gets summary text",
        "responses",
        R_CREATED
        + _added(1, 0, {**_RS, "summary": None})
        + _r(
            "response.reasoning_summary_text.delta",
            2,
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            delta="t",
        )
        + _r(
            "response.reasoning_summary_text.done",
            3,
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            text="t",
        )
        + _done(4, 0, _RS_DONE)
        + _completed(_RS_DONE),
        [("openai_responses.reasoning_summary", 2)],
        _text_is(r_items, [("reasoning", "rs_1")]),
    ),
    Case(
        "responses a reasoning item without summary gets its summary part done",
        "responses",
        R_CREATED
        + _added(1, 0, {"id": "rs_1", "type": "reasoning"})
        + _r(
            "response.reasoning_summary_part.done",
            2,
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            part=_RS_DONE["summary"][0],
        )
        + _done(3, 0, _RS_DONE)
        + _completed(_RS_DONE),
        [("openai_responses.reasoning_summary", 2)],
        _text_is(r_items, [("reasoning", "rs_1")]),
    ),
    Case(
        "responses an output_item.done without item",
        "responses",
        R_CREATED + b"".join(R_ITEM[:4]) + _r("response.output_item.done", 5, output_index=0) + R_COMPLETED,
        [("openai_responses.done_item", 5)],
    ),
    Case(
        "responses an output_item.done with a null item after response.completed",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + R_COMPLETED
        + _r("response.output_item.done", 7, output_index=0, item=None),
        [("openai_responses.done_item", 7)],
    ),
    Case(
        "responses an output_item.done whose item is a string",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:4])
        + _r("response.output_item.done", 5, output_index=0, item="x")
        + R_COMPLETED,
        [("openai_responses.python_item_object", 5)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses an output_item.added whose item is a number after response.completed",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + R_COMPLETED
        + _r("response.output_item.added", 7, output_index=1, item=5),
        [("openai_responses.python_item_object", 7)],
        None,
        _text_is(lambda f: f["output"][1], 5),
    ),
    Case(
        "responses an output_item.added with a null item",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + _r("response.output_item.added", 6, output_index=1, item=None)
        + _completed(_MSG, seq=7),
        [("openai_responses.node_added_item", 6)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses an output_item.added without item after response.completed",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED + _r("response.output_item.added", 7, output_index=1),
        [("openai_responses.node_added_item", 7)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses an annotation for a text part added without annotations",
        "responses",
        R_CREATED
        + R_ITEM[0]
        + _part(2, 0, 0, {"type": "output_text", "text": ""})
        + R_ITEM[2]
        + _r_after("response.output_text.annotation.added", seq=4, annotation_index=0, annotation=_CITE)
        + _text_done(5, 0, 0)
        + _done(6, 0, _MSG_CITED)
        + _completed(_MSG_CITED, seq=7),
        [("openai_responses.part_annotations", 4)],
        _text_is(lambda f: f["output"][0]["content"][0]["annotations"], [_CITE]),
    ),
    Case(
        "responses an annotation for a text part whose annotations are null, after response.completed",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:4])
        + _done(5, 0, {**_MSG, "content": [{**R_PART, "text": "Hi", "annotations": None}]})
        + _completed({**_MSG, "content": [{**R_PART, "text": "Hi", "annotations": None}]}, seq=6)
        + _r_after("response.output_text.annotation.added", annotation_index=0, annotation=_CITE),
        [("openai_responses.part_annotations", 7)],
        _text_is(lambda f: f["output"][0]["content"][0]["annotations"], None),
    ),
    Case(
        "responses a strict tool's arguments that are not JSON",
        "responses",
        R_CREATED
        + _added(1, 0, _FC)
        + _r("response.function_call_arguments.delta", 2, item_id="fc_1", output_index=0, delta="abc")
        + _done(3, 0, {**_FC_DONE, "arguments": "abc"})
        + _completed({**_FC_DONE, "arguments": "abc"}, seq=4),
        [("openai_responses.strict_tool_arguments", 5)],
        request=R_STRICT,
    ),
    Case(
        "responses a json_schema text format, the answer not JSON",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED,
        [("openai_responses.json_text", 7)],
        None,
        _text_is(r_text, "Hi"),
        request=R_JSON,
    ),
    Case(
        "responses a json_schema text format, the answer JSON, its output_text.done with an empty text",
        "responses",
        R_CREATED
        + b"".join(e.replace(b'"Hi"', _R_J) for e in R_ITEM[:3])
        + _r("response.output_text.done", 4, item_id="msg_1", output_index=0, content_index=0, text="")
        + R_ITEM[4].replace(b'"Hi"', _R_J)
        + R_COMPLETED.replace(b'"Hi"', _R_J),
        [("openai_responses.json_text", 7)],
        None,
        _text_is(r_text, '{"a": 1}'),
        request=R_JSON,
    ),
    Case(
        "responses a json_schema text format, the answer JSON, an output_text.done not JSON after the end",
        "responses",
        R_CREATED
        + b"".join(e.replace(b'"Hi"', _R_J) for e in R_ITEM)
        + R_COMPLETED.replace(b'"Hi"', _R_J)
        + _r_after("response.output_text.done", text="Hi"),
        [("openai_responses.done_after_completed", 7), ("openai_responses.json_text", 8)],
        None,
        _text_is(r_text, "Hi"),
        rule="openai_responses.json_text",
        request=R_JSON,
    ),
    Case(
        "responses a json_schema text format, its output_text.done the answer's JSON written otherwise",
        "responses",
        R_CREATED
        + b"".join(e.replace(b'"Hi"', _R_J) for e in R_ITEM[:3])
        + _r("response.output_text.done", 4, item_id="msg_1", output_index=0, content_index=0, text='{"a":1}')
        + R_ITEM[4].replace(b'"Hi"', _R_J)
        + R_COMPLETED.replace(b'"Hi"', _R_J),
        [],
        _text_is(r_text, '{"a": 1}'),
        _text_is(r_text, '{"a": 1}'),
        request=R_JSON,
    ),
    Case(
        "responses a json_schema text format and a strict tool, the answer not JSON",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED,
        [("openai_responses.json_text_strict", 7)],
        request={**R_JSON, **R_STRICT},
    ),
    Case(
        "responses a json_schema text format, the JSON 201 levels deep",
        "responses",
        R_CREATED
        + b"".join(R_ITEM).replace(b'"Hi"', json.dumps(R_DEEP_TEXT).encode())
        + R_COMPLETED.replace(b'"Hi"', json.dumps(R_DEEP_TEXT).encode()),
        [("openai_responses.json_text_depth", 7)],
        None,
        _text_is(r_text, R_DEEP_TEXT),
        request=R_JSON,
    ),
    Case(
        "responses a json_schema text format and a strict tool, the JSON 201 levels deep",
        "responses",
        R_CREATED
        + b"".join(R_ITEM).replace(b'"Hi"', json.dumps(R_DEEP_TEXT).encode())
        + R_COMPLETED.replace(b'"Hi"', json.dumps(R_DEEP_TEXT).encode()),
        [("openai_responses.json_text_depth", 7)],
        None,
        _text_is(r_text, R_DEEP_TEXT),
        request={**R_JSON, **R_STRICT},
    ),
    Case(
        "responses a json_schema text format, the JSON 3,000 levels deep (past both JSON parsers of ProxAI)",
        "responses",
        R_CREATED
        + b"".join(R_ITEM).replace(b'"Hi"', json.dumps(_deep_text(3000)).encode())
        + R_COMPLETED.replace(b'"Hi"', json.dumps(_deep_text(3000)).encode()),
        [("openai_responses.json_text_depth", 7)],
        None,
        _text_is(r_text, _deep_text(3000)),
        request=R_JSON,
    ),
    Case(
        "responses a json_schema text format, 2,000 levels deep and not JSON (a bracket left open)",
        "responses",
        R_CREATED
        + b"".join(R_ITEM).replace(b'"Hi"', json.dumps(_deep_text(2000)[:-1]).encode())
        + R_COMPLETED.replace(b'"Hi"', json.dumps(_deep_text(2000)[:-1]).encode()),
        [("openai_responses.json_text", 7)],
        None,
        _text_is(r_text, _deep_text(2000)[:-1]),
        request=R_JSON,
    ),
    Case(
        "responses a strict tool's arguments 1,600 levels deep",
        "responses",
        r_call(R_DEEP_ARGS),
        [("openai_responses.strict_tool_arguments_depth", 5)],
        None,
        _text_is(lambda f: f["output"][0]["arguments"], R_DEEP_ARGS),
        request=R_STRICT,
    ),
    Case(
        "responses a json_schema text format, the JSON does not fit the schema",
        "responses",
        R_CREATED
        + b"".join(R_ITEM).replace(b'"Hi"', b'"{\\"a\\": \\"x\\"}"')
        + R_COMPLETED.replace(b'"Hi"', b'"{\\"a\\": \\"x\\"}"'),
        [("openai_responses.json_schema", 7)],
        None,
        _text_is(r_text, '{"a": "x"}'),
        request={**R_JSON, **R_STRICT},
    ),
    Case(
        "chat annotations in two chunks, without an index",
        "chat",
        C_ROLE
        + _c({"content": "Hi", "annotations": [_CITE_A]})
        + _c({"annotations": [_CITE_B]})
        + C_STOP
        + C_DONE,
        [("openai_chat.delta_list_index", 2)],
        None,
        _text_is(c_cited, ["https://b"]),  # the first chunk's annotation is lost
    ),
    Case(
        "chat reasoning_details in two chunks, without an index",
        "chat",
        C_ROLE
        + _c({"content": "", "reasoning_details": [{"type": "reasoning.text", "text": "a"}]})
        + _c({"content": "Hi", "reasoning_details": [{"type": "reasoning.text", "text": "b"}]})
        + C_STOP
        + C_DONE,
        [("openai_chat.delta_list_index", 2)],
        None,
        _text_is(
            lambda f: f["choices"][0]["message"]["reasoning_details"],
            [{"type": "reasoning.text", "text": "b"}],
        ),
    ),
    Case(
        "chat content as a list of parts in two chunks, without an index (Mistral reasoning)",
        "chat",
        _c({"role": "assistant"})
        + _c({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "a"}]}]})
        + _c({"content": [{"type": "text", "text": "Hi"}]})
        + C_STOP
        + C_DONE,
        [("openai_chat.content_list_index", 2)],
        None,
        _text_is(lambda f: f["choices"][0]["message"]["content"], "[object Object][object Object]"),
    ),
    Case(
        "chat annotations again, the second list's entry a string",
        "chat",
        C_ROLE
        + _c({"content": "Hi", "annotations": [_CITE_A]})
        + _c({"annotations": ["x"]})
        + C_STOP
        + C_DONE,
        [("openai_chat.delta_list_entry", 2)],
        None,
        _text_is(lambda f: f["choices"][0]["message"]["annotations"], ["x"]),
    ),
    Case(
        "chat annotations again, an index that is a string of digits",
        "chat",
        C_ROLE
        + _c({"content": "Hi", "annotations": [dict(_CITE_A, index=0)]})
        + _c({"annotations": [dict(_CITE_B, index="1")]})
        + C_STOP
        + C_DONE,
        [("openai_chat.delta_list_entry", 2)],
        None,
        _text_is(c_cited, ["https://b"]),
    ),
    Case(
        "chat reasoning_details with indexes, again with a list nested in an entry without indexes",
        "chat",
        C_ROLE
        + _c({"content": "", "reasoning_details": [{"index": 0, "type": "x", "parts": [{"t": "a"}]}]})
        + _c({"content": "Hi", "reasoning_details": [{"index": 0, "parts": [{"t": "b"}]}]})
        + C_STOP
        + C_DONE,
        [("openai_chat.delta_list_index", 2)],
        None,
        _text_is(
            lambda f: f["choices"][0]["message"]["reasoning_details"], [{"index": 0, "parts": [{"t": "b"}]}]
        ),
    ),
    Case(
        "chat a first annotations list with an index on one object only",
        "chat",
        C_ROLE + _c({"content": "Hi", "annotations": [dict(_CITE_A, index=0), _CITE_B]}) + C_STOP + C_DONE,
        [("openai_chat.delta_list_mixed", 1)],
        None,
        _text_is(c_cited, ["https://a", "https://b"]),
    ),
    Case(
        "chat a first annotations list, an indexed object and a string",
        "chat",
        C_ROLE + _c({"content": "Hi", "annotations": [dict(_CITE_A, index=0), "x"]}) + C_STOP + C_DONE,
        [("openai_chat.delta_list_entry_first", 1)],
        None,
        _text_is(lambda f: len(f["choices"][0]["message"]["annotations"]), 2),
    ),
    Case(
        "chat a refusal string, then an object",
        "chat",
        C_ROLE + _c({"refusal": "no"}) + _c({"refusal": {"a": "x"}}) + C_STOP + C_DONE,
        [("openai_chat.refusal_type", 2)],
        _text_is(lambda f: f["choices"][0]["message"]["refusal"], "no"),
        _text_is(lambda f: f["choices"][0]["message"]["refusal"], "no[object Object]"),
    ),
    Case(
        "chat an audio that is a string",
        "chat",
        C_ROLE + _c({"content": "Hi", "audio": "x"}) + C_STOP + C_DONE,
        [("openai_chat.audio_object", 1)],
        _text_is(lambda f: f["choices"][0]["message"]["audio"], "x"),
        _text_is(lambda f: f["choices"][0]["message"]["audio"], {}),
    ),
    Case(
        "chat a function_call without arguments",
        "chat",
        C_ROLE + _c({"function_call": {"name": "f"}}) + C_STOP + C_DONE,
        [("openai_chat.function_call_fields", 3)],
        _text_is(lambda f: f["choices"][0]["message"]["function_call"], {"name": "f", "arguments": None}),
    ),
    Case(
        "chat a function_call beside a tool call",
        "chat",
        C_ROLE + _tool(0, "a", "f") + _c({"function_call": {"name": "g", "arguments": "{}"}}) + C_TOOLS_END,
        [("openai_chat.function_call_beside", 4)],
        _text_is(c_tools, [("function", "f", "{}")]),
        _text_is(c_tools, []),
    ),
    Case(
        "chat annotations in one chunk (nothing to say)",
        "chat",
        C_ROLE + _c({"content": "Hi", "annotations": [_CITE_A, _CITE_B]}) + C_STOP + C_DONE,
        [],
        _text_is(c_cited, ["https://a", "https://b"]),
        _text_is(c_cited, ["https://a", "https://b"]),
    ),
    Case(
        "chat a strict tool's arguments whose first fragment is whitespace",
        "chat",
        c_args(" ", '{"a": 1}'),
        [("openai_chat.strict_tool_arguments_partial", 1)],
        request=C_STRICT,
    ),
    Case(
        "chat a strict tool's arguments: an empty fragment, then one of whitespace",
        "chat",
        c_args("", "\n", '{"a": 1}'),
        [("openai_chat.strict_tool_arguments_partial", 2)],
        request=C_STRICT,
    ),
    Case(
        "chat a strict tool's arguments: a top-level number cut by a fragment",
        "chat",
        c_args("1.", "5"),
        [("openai_chat.strict_tool_arguments_partial", 1)],
        request=C_STRICT,
    ),
    Case(
        "chat a strict tool's arguments that are whitespace alone",
        "chat",
        c_args(" "),
        [("openai_chat.strict_tool_arguments_partial", 1), ("openai_chat.strict_tool_arguments_cut", 4)],
        rule="openai_chat.strict_tool_arguments_partial",
        request=C_STRICT,
    ),
    Case(
        "chat a strict tool's arguments: a top-level literal cut by a fragment",
        "chat",
        c_args("tr", "ue"),
        [("openai_chat.strict_tool_arguments_scalar", 1)],
        None,
        _text_is(c_tools, [("function", "f", "true")]),
        request=C_STRICT,
    ),
    Case(
        "chat a strict tool's arguments: a top-level string cut by a fragment",
        "chat",
        c_args('"ab', 'c"'),
        [("openai_chat.strict_tool_arguments_scalar", 1)],
        None,
        _text_is(c_tools, [("function", "f", '"abc"')]),
        request=C_STRICT,
    ),
    Case(
        "anthropic a tool input 201 arrays deep around a number",
        "anthropic",
        a_tool("[" * 201, "1" + "]" * 201),
        [("anthropic_messages.tool_input_depth", 4)],
        None,
        _text_is(lambda f: json.dumps(a_input(f)), "[" * 201 + "1" + "]" * 201),
    ),
    Case(
        "anthropic a tool input 1,100 arrays deep (past orjson's 1,024: JSON all the same)",
        "anthropic",
        a_tool("[" * 1100, "1" + "]" * 1100),
        [("anthropic_messages.tool_input_depth", 4)],
        None,
        # (sdk_node.mjs gives what lies deeper than 1,000 levels of the final object as a string)
        _text_is(
            lambda f: json.dumps(a_input(f), separators=(",", ":")),
            "[" * 997 + '"(deeper than 1000 levels)"' + "]" * 997,
        ),
    ),
    Case(
        "anthropic a tool input 201 deep whose innermost array is empty (nothing to say)",
        "anthropic",
        a_tool('{"a":' * 100 + "[" * 101, "]" * 101 + "}" * 100),
        [],
        _text_is(
            lambda f: json.dumps(a_input(f), separators=(",", ":")),
            '{"a":' * 100 + "[" * 101 + "]" * 101 + "}" * 100,
        ),
        _text_is(
            lambda f: json.dumps(a_input(f), separators=(",", ":")),
            '{"a":' * 100 + "[" * 101 + "]" * 101 + "}" * 100,
        ),
    ),
    Case(
        "chat a strict tool's arguments 201 objects deep",
        "chat",
        c_args('{"a":' * 201, "1" + "}" * 201),
        [("openai_chat.strict_tool_arguments_depth", 5)],
        None,
        _text_is(c_tools, [("function", "f", '{"a":' * 201 + "1" + "}" * 201)]),
        request=C_STRICT,
    ),
    Case(
        "chat a strict tool's arguments 1,025 arrays deep (whole JSON that orjson refuses for its depth)",
        "chat",
        c_args("[" * 1025, "1" + "]" * 1025),
        [("openai_chat.strict_tool_arguments_depth", 5)],
        None,
        _text_is(c_tools, [("function", "f", "[" * 1025 + "1" + "]" * 1025)]),
        request=C_STRICT,
    ),
    Case(
        "chat a structured answer with a value 201 containers deep",
        "chat",
        c_answer('{"a":1,"b":' + "[" * 200 + "1" + "]" * 200 + "}"),
        [("openai_chat.json_content_depth", 4)],
        None,
        _text_is(c_message, ('{"a":1,"b":' + "[" * 200 + "1" + "]" * 200 + "}", "stop")),
        request=C_JSON,
    ),
    Case(
        "chat a structured answer with a value 200 containers deep (nothing to say)",
        "chat",
        c_answer('{"a":1,"b":' + "[" * 199 + "1" + "]" * 199 + "}"),
        [],
        _text_is(lambda f: f["choices"][0]["message"]["parsed"], {"a": 1}),
        _text_is(c_message, ('{"a":1,"b":' + "[" * 199 + "1" + "]" * 199 + "}", "stop")),
        request=C_JSON,
    ),
    Case(
        "chat a tool's arguments 201 objects deep, the tool not strict (no parse, nothing to say)",
        "chat",
        c_args('{"a":' * 201, "1" + "}" * 201),
        [],
        _text_is(c_tools, [("function", "f", '{"a":' * 201 + "1" + "}" * 201)]),
        _text_is(c_tools, [("function", "f", '{"a":' * 201 + "1" + "}" * 201)]),
    ),
    Case(
        "chat reasoning_content in two chunks (openai-node keeps the last piece)",
        "chat",
        C_ROLE
        + _c({"reasoning_content": "Let"})
        + _c({"reasoning_content": " me"})
        + _c({"content": "Hi"})
        + C_STOP
        + C_DONE,
        [("openai_chat.node_replaced_field", 2)],
        _text_is(lambda f: f["choices"][0]["message"]["reasoning_content"], "Let me"),
        _text_is(lambda f: f["choices"][0]["message"]["reasoning_content"], " me"),
    ),
    Case(
        "chat reasoning, then content beside reasoning: null (DeepSeek's shape: openai-node keeps null)",
        "chat",
        C_ROLE + _c({"reasoning": "Let me"}) + _c({"content": "Hi", "reasoning": None}) + C_STOP + C_DONE,
        [("openai_chat.node_replaced_field", 2)],
        _text_is(lambda f: f["choices"][0]["message"]["reasoning"], "Let me"),
        _text_is(lambda f: f["choices"][0]["message"]["reasoning"], None),
    ),
    Case(
        "chat reasoning in one chunk, null before it (nothing lost, nothing to say)",
        "chat",
        C_ROLE
        + _c({"content": "", "reasoning": None})
        + _c({"reasoning": "Let me"})
        + _c({"content": "Hi"})
        + C_STOP
        + C_DONE,
        [],
        _text_is(lambda f: f["choices"][0]["message"]["reasoning"], "Let me"),
        _text_is(lambda f: f["choices"][0]["message"]["reasoning"], "Let me"),
    ),
    Case(
        "chat annotations with indexes in two chunks (openai-node keeps the last list)",
        "chat",
        C_ROLE
        + _c({"content": "Hi", "annotations": [dict(_CITE_A, index=0)]})
        + _c({"annotations": [dict(_CITE_B, index=1)]})
        + C_STOP
        + C_DONE,
        [("openai_chat.node_replaced_field", 2)],
        _text_is(c_cited, ["https://a", "https://b"]),
        _text_is(c_cited, ["https://b"]),
    ),
    Case(
        "chat an object in a field no SDK models, again with the list nested in it without indexes",
        "chat",
        C_ROLE
        + _c({"content": "Hi", "x_meta": {"items": [{"a": 1}]}})
        + _c({"content": " there", "x_meta": {"items": [{"a": 2}]}})
        + C_STOP
        + C_DONE,
        [("openai_chat.delta_list_index", 2)],
        None,
        _text_is(lambda f: f["choices"][0]["message"]["x_meta"], {"items": [{"a": 2}]}),
    ),
    Case(
        "chat an object with a list with indexes, again (openai-node keeps the last object)",
        "chat",
        C_ROLE
        + _c({"content": "Hi", "x_meta": {"items": [{"index": 0, "a": "x"}]}})
        + _c({"content": " there", "x_meta": {"items": [{"index": 1, "a": "y"}]}})
        + C_STOP
        + C_DONE,
        [("openai_chat.node_replaced_field", 2)],
        _text_is(lambda f: [e["a"] for e in f["choices"][0]["message"]["x_meta"]["items"]], ["x", "y"]),
        _text_is(lambda f: [e["a"] for e in f["choices"][0]["message"]["x_meta"]["items"]], ["y"]),
    ),
    Case(
        "chat an object with a list, then null there (openai-node keeps null)",
        "chat",
        C_ROLE
        + _c({"content": "Hi", "x_meta": {"items": ["a"]}})
        + _c({"content": " there", "x_meta": None})
        + C_STOP
        + C_DONE,
        [("openai_chat.node_replaced_field", 2)],
        _text_is(lambda f: f["choices"][0]["message"]["x_meta"], {"items": ["a"]}),
        _text_is(lambda f: f["choices"][0]["message"]["x_meta"], None),
    ),
    Case(
        "chat a list in a field no SDK models, then an object there (openai-python keeps the list)",
        "chat",
        C_ROLE
        + _c({"content": "Hi", "x_meta": ["a"]})
        + _c({"content": " there", "x_meta": {"b": 1}})
        + C_STOP
        + C_DONE,
        [("openai_chat.node_replaced_field", 2)],
        _text_is(lambda f: f["choices"][0]["message"]["x_meta"], ["a"]),
        _text_is(lambda f: f["choices"][0]["message"]["x_meta"], {"b": 1}),
    ),
    Case(
        "chat choice 1's reasoning_content in two chunks (openai-node keeps the last piece)",
        "chat",
        C_ROLE
        + _c({"role": "assistant", "reasoning_content": "Let"}, index=1)
        + _c({"reasoning_content": " me"}, index=1)
        + _c({"content": "Hi"})
        + _c({"content": "Yo"}, index=1)
        + C_STOP
        + _c({}, "stop", index=1)
        + C_DONE,
        [("openai_chat.node_replaced_field", 2)],
        _text_is(lambda f: f["choices"][1]["message"]["reasoning_content"], "Let me"),
        _text_is(lambda f: f["choices"][1]["message"]["reasoning_content"], " me"),
    ),
    Case(
        "chat choice 1's function_call beside its reasoning_content (openai-node leaves it out)",
        "chat",
        C_ROLE
        + _c({"role": "assistant", "reasoning_content": "Let me"}, index=1)
        + _c({"content": "Hi"})
        + _c({"function_call": {"name": "f", "arguments": "{}"}}, index=1)
        + C_STOP
        + _c({}, "stop", index=1)
        + C_DONE,
        [("openai_chat.function_call_beside", 6)],
        _text_is(lambda f: f["choices"][1]["message"]["reasoning_content"], "Let me"),
        _text_is(lambda f: "reasoning_content" in f["choices"][1]["message"], False),
    ),
    Case(
        "chat annotations, then annotations: null beside the content (openai-node keeps null)",
        "chat",
        C_ROLE
        + _c({"content": "Hi", "annotations": [_CITE_A]})
        + _c({"content": " there", "annotations": None})
        + C_STOP
        + C_DONE,
        [("openai_chat.node_replaced_field", 2)],
        _text_is(c_cited, ["https://a"]),
        _text_is(lambda f: f["choices"][0]["message"]["annotations"], None),
    ),
    Case(
        "chat a list of strings in a field no SDK models, then a string there (openai-node keeps it)",
        "chat",
        C_ROLE + _c({"content": "Hi", "x_parts": ["a", "b"]}) + _c({"x_parts": "c"}) + C_STOP + C_DONE,
        [("openai_chat.node_replaced_field", 2)],
        _text_is(lambda f: f["choices"][0]["message"]["x_parts"], ["a", "b"]),
        _text_is(lambda f: f["choices"][0]["message"]["x_parts"], "c"),
    ),
    Case(
        "chat annotations: null, then a list (nothing lost, nothing to say)",
        "chat",
        C_ROLE
        + _c({"content": "Hi", "annotations": None})
        + _c({"content": " there", "annotations": [_CITE_A]})
        + _c({"content": "!"})
        + C_STOP
        + C_DONE,
        [],
        _text_is(c_cited, ["https://a"]),
        _text_is(c_cited, ["https://a"]),
    ),
    Case(
        "chat a choice that is a number",
        "chat",
        C_HI + _raw(_chunk([1])) + C_STOP + C_DONE,
        [("openai_chat.choice_object", 1)],
        None,
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "chat a choice that is null",
        "chat",
        C_HI + _raw(_chunk([None])) + C_STOP + C_DONE,
        [("openai_chat.choice_null", 1)],
    ),
    Case(
        "chat a choice index that is a string of digits",
        "chat",
        C_HI
        + _raw(_chunk([{"index": "0", "delta": {"content": " there"}, "finish_reason": None}]))
        + C_STOP
        + C_DONE,
        [("openai_chat.choice_index_type", 1)],
        None,
        _text_is(c_message, ("Hi there", "stop")),
    ),
    Case(
        "chat a second choice whose index is an integral float (read as choice 1)",
        "chat",
        C_HI
        + _raw(
            _chunk([{"index": 1.0, "delta": {"role": "assistant", "content": "Yo"}, "finish_reason": None}])
        )
        + _raw(_chunk([_ch({}, "stop"), {"index": 1, "delta": {}, "finish_reason": "stop"}]))
        + C_DONE,
        [("openai_chat.choice_index_type", 1)],
        None,
        _text_is(
            lambda f: [(c["message"]["content"], c["finish_reason"]) for c in f["choices"]],
            [("Hi", "stop"), ("Yo", "stop")],
        ),
    ),
    Case(
        "chat a tool-call delta that is a string",
        "chat",
        C_ROLE + _tool(0, "a", "f") + _calls("x") + C_TOOLS_END,
        [("openai_chat.tool_call_object", 2)],
        None,
        _text_is(c_tools, [("function", "f", "{}")]),
    ),
    Case(
        "chat a tool-call delta that is null",
        "chat",
        C_ROLE + _tool(0, "a", "f") + _calls(None) + C_TOOLS_END,
        [("openai_chat.tool_call_null", 2)],
    ),
    Case(
        "chat a tool call of type x_unknown (openai-node's final completion refuses it)",
        "chat",
        C_ROLE
        + _calls({"index": 0, "id": "a", "type": "x_unknown", "function": {"name": "f", "arguments": "{}"}})
        + C_TOOLS_END,
        [("openai_chat.tool_call_not_function", 3)],
        _text_is(c_tools, [("x_unknown", "f", "{}")]),
    ),
    Case(
        "chat call 0 starts in a chunk openai-python skips, call 1 after it",
        "chat",
        _raw(
            {
                **_chunk(
                    [
                        _ch(
                            {
                                "role": "assistant",
                                "tool_calls": [
                                    {
                                        "index": 0,
                                        "id": "a",
                                        "type": "function",
                                        "function": {"name": "f", "arguments": "{}"},
                                    }
                                ],
                            }
                        )
                    ]
                ),
                "object": "x",
            }
        )
        + C_ROLE
        + _tool(1, "b", "g")
        + C_TOOLS_END,
        [("openai_chat.chunk_object", 0), ("openai_chat.tool_call_index", 2)],
        None,
        _text_is(c_tools, [("function", "f", "{}"), ("function", "g", "{}")]),
        rule="openai_chat.tool_call_index",
    ),
    Case(
        "chat a choice index false (openai-python reads choice 0, openai-node loses the delta)",
        "chat",
        C_HI
        + _raw(_chunk([{"index": False, "delta": {"content": " there"}, "finish_reason": None}]))
        + C_STOP
        + C_DONE,
        [("openai_chat.choice_index_bool", 1)],
        _text_is(c_message, ("Hi there", "stop")),
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "chat a call that starts in a choice with index false, its fragment in choice 0",
        "chat",
        C_ROLE
        + _raw(
            _chunk(
                [
                    {
                        "index": False,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "a",
                                    "type": "function",
                                    "function": {"name": "f", "arguments": "{"},
                                }
                            ]
                        },
                        "finish_reason": None,
                    }
                ]
            )
        )
        + _calls({"index": 0, "function": {"arguments": "}"}})
        + C_TOOLS_END,
        [("openai_chat.choice_index_bool", 1), ("openai_chat.tool_call_type", 3)],
        _text_is(c_tools, [("function", "f", "{}")]),
        rule="openai_chat.tool_call_type",
    ),
    Case(
        "chat a choice whose finish_reason comes with index false",
        "chat",
        C_HI + _raw(_chunk([{"index": False, "delta": {}, "finish_reason": "stop"}])) + C_DONE,
        [("openai_chat.choice_index_bool", 1), ("openai_chat.no_finish_reason", 2)],
        _text_is(c_message, ("Hi", "stop")),
        rule="openai_chat.no_finish_reason",
    ),
    Case(
        "chat a tool call whose index is true (openai-python reads call 1, openai-node loses it)",
        "chat",
        C_ROLE
        + _tool(0, "a", "f")
        + _calls({"index": True, "id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}})
        + C_TOOLS_END,
        [("openai_chat.tool_call_index_bool", 2)],
        _text_is(c_tools, [("function", "f", "{}"), ("function", "g", "{}")]),
        _text_is(c_tools, [("function", "f", "{}")]),
    ),
    Case(
        "chat a later tool-call delta whose index is true, without a type (openai-node raises)",
        "chat",
        C_ROLE
        + _tool(0, "a", "f")
        + _tool(1, "b", "g")
        + _calls({"index": True, "function": {"arguments": ""}})
        + C_TOOLS_END,
        [("openai_chat.tool_call_index_bool", 3), ("openai_chat.tool_call_type", 4)],
        _text_is(c_tools, [("function", "f", "{}"), ("function", "g", "{}")]),
        rule="openai_chat.tool_call_type",
    ),
    Case(
        "chat tool-call indexes a string of digits and an integral float (both SDKs read them, a note)",
        "chat",
        C_ROLE
        + _calls(
            {"index": "0", "id": "a", "type": "function", "function": {"name": "f", "arguments": '{"a"'}}
        )
        + _calls({"index": 0.0, "function": {"arguments": ": 1}"}})
        + C_TOOLS_END,
        [],
        _text_is(c_tools, [("function", "f", '{"a": 1}')]),
        _text_is(c_tools, [("function", "f", '{"a": 1}')]),
    ),
    Case(
        "chat a strict tool's arguments: an empty first fragment (nothing to parse, nothing to say)",
        "chat",
        c_args("", '{"a": 1}'),
        [],
        _text_is(c_tools, [("function", "f", '{"a": 1}')]),
        _text_is(c_tools, [("function", "f", '{"a": 1}')]),
        request=C_STRICT,
    ),
    Case(
        "chat whitespace first in the arguments of a tool not strict (no parse, nothing to say)",
        "chat",
        c_args(" ", '{"a": 1}'),
        [],
        _text_is(c_tools, [("function", "f", ' {"a": 1}')]),
        _text_is(c_tools, [("function", "f", ' {"a": 1}')]),
    ),
    Case(
        "responses a json_schema text format, the answer JSON (nothing to say)",
        "responses",
        R_CREATED
        + b"".join(R_ITEM).replace(b'"Hi"', b'"{\\"a\\": 1}"')
        + R_COMPLETED.replace(b'"Hi"', b'"{\\"a\\": 1}"'),
        [],
        _text_is(r_text, '{"a": 1}'),
        _text_is(r_text, '{"a": 1}'),
        request=R_JSON,
    ),
    Case(
        "responses event line without data",
        "responses",
        R_CREATED + R_ITEM[0] + b"event: keepalive\n\n" + b"".join(R_ITEM[1:]) + R_COMPLETED,
        [("openai_responses.dataless_event", 2)],
    ),
    Case(
        "responses event line without data after response.completed (the SDKs read on)",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED + b"event: keepalive\n\n",
        [("openai_responses.dataless_event", 7)],
    ),
    Case(
        "chat a retry line alone whose value is no retry to the standard (+5: openai-python reads it)",
        "chat",
        C_HI + b"retry: +5\n\n" + C_STOP + C_DONE,
        [("openai_chat.dataless_block", 1)],
        None,
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "responses a retry line alone, -1",
        "responses",
        R_CREATED + R_ITEM[0] + b"retry: -1\n\n" + b"".join(R_ITEM[1:]) + R_COMPLETED,
        [("openai_responses.dataless_block", 2)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "chat a retry line alone that int() does not read (nothing to say)",
        "chat",
        C_HI + b"retry: 5s\n\n" + C_STOP + C_DONE,
        [],
        _text_is(c_message, ("Hi", "stop")),
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "anthropic a UTF-8 byte order mark before the first event: line",
        "anthropic",
        "\ufeff".encode() + anthropic_stream(),
        [("anthropic_messages.bom", 0)],
        None,
        _text_is(a_text, "Hi there"),
    ),
    Case(
        "chat a UTF-8 byte order mark before the first data: line (openai-python loses the chunk)",
        "chat",
        "\ufeff".encode() + C_HI + _c({"content": " there"}) + C_STOP + C_DONE,
        [("openai_chat.bom", 0)],
        _text_is(c_message, (" there", "stop")),
        _text_is(c_message, ("Hi there", "stop")),
    ),
    Case(
        "chat a UTF-8 byte order mark before a comment line (nothing lost, nothing to say)",
        "chat",
        "\ufeff".encode() + b": keep-alive\n\n" + C_HI + C_STOP + C_DONE,
        [],
        _text_is(c_message, ("Hi", "stop")),
        _text_is(c_message, ("Hi", "stop")),
    ),
    Case(
        "responses a UTF-8 byte order mark before the first data: line",
        "responses",
        "\ufeff".encode() + R_CREATED.split(b"\n", 1)[1] + b"".join(R_ITEM) + R_COMPLETED,
        [("openai_responses.bom", 0)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a UTF-8 byte order mark before the first event: line (read by its type, nothing to say)",
        "responses",
        "\ufeff".encode() + R_CREATED + b"".join(R_ITEM) + R_COMPLETED,
        [],
        _text_is(r_text, "Hi"),
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses response.completed's output with a number after the message",
        "responses",
        R_CREATED + b"".join(R_ITEM) + _r("response.completed", 6, response=_resp("completed", [_MSG, 1])),
        [("openai_responses.completed_output_object", 6)],
        None,
        _text_is(lambda f: f["output"][1], 1),
    ),
    Case(
        "responses response.completed's output with null after the message",
        "responses",
        R_CREATED + b"".join(R_ITEM) + _r("response.completed", 6, response=_resp("completed", [_MSG, None])),
        [("openai_responses.completed_output_null", 6)],
    ),
    Case(
        "responses output_index '0' and 0.0 on the added and done item",
        "responses",
        R_CREATED
        + R_ITEM[0].replace(b'"output_index":0', b'"output_index":"0"')
        + b"".join(R_ITEM[1:4])
        + R_ITEM[4].replace(b'"output_index":0', b'"output_index":0.0')
        + R_COMPLETED,
        [],
        _text_is(r_text, "Hi"),
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses output_index 0.0 on an output_text delta",
        "responses",
        R_CREATED + b"".join(R_ITEM[:2]) + _r_index(R_ITEM[2], b"0.0") + b"".join(R_ITEM[3:]) + R_COMPLETED,
        [],
        _text_is(r_text, "Hi"),
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses output_index '0' on an output_text delta without logprobs",
        "responses",
        R_CREATED + b"".join(R_ITEM[:2]) + _r_index(R_ITEM[2], b'"0"') + b"".join(R_ITEM[3:]) + R_COMPLETED,
        [("openai_responses.python_output_index", 3)],
        node=_text_is(r_text, "Hi"),
    ),
    Case(
        "responses content_index '0' on an output_text delta without logprobs",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:2])
        + R_ITEM[2].replace(b'"content_index":0', b'"content_index":"0"')
        + b"".join(R_ITEM[3:])
        + R_COMPLETED,
        [("openai_responses.python_content_index_type", 3)],
        node=_text_is(r_text, "Hi"),
    ),
    Case(
        "responses content_index 0.0 on an output_text done",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:3])
        + R_ITEM[3].replace(b'"content_index":0', b'"content_index":0.0')
        + R_ITEM[4]
        + R_COMPLETED,
        [("openai_responses.python_content_index_type", 4)],
        node=_text_is(r_text, "Hi"),
    ),
    Case(
        "responses output_item.done without output_index",
        "responses",
        R_CREATED + b"".join(R_ITEM[:4]) + _r("response.output_item.done", 5, item=_MSG) + R_COMPLETED,
        [("openai_responses.output_index_missing", 5)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a null entry in response.in_progress's output",
        "responses",
        R_CREATED + _r("response.in_progress", 1, response=_resp("in_progress", [None])) + R_COMPLETED,
        [("openai_responses.lifecycle_output_null", 1)],
    ),
    Case(
        "responses a string entry in response.in_progress's output",
        "responses",
        R_CREATED + _r("response.in_progress", 1, response=_resp("in_progress", ["x"])) + R_COMPLETED,
        [("openai_responses.lifecycle_output_object", 1)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a number entry in response.created's output",
        "responses",
        _r("response.created", 0, response=_resp("in_progress", [5]))
        + _r("response.completed", 1, response=_resp("completed", [_MSG])),
        [("openai_responses.lifecycle_output_object", 0), ("openai_responses.unfinished_item", 1)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a reasoning_text part for a reasoning item whose content is a string",
        "responses",
        R_CREATED
        + _added(1, 0, {**_RS, "content": "abc"})
        + _r(
            "response.content_part.added",
            2,
            item_id="rs_1",
            output_index=0,
            content_index=0,
            part={"type": "reasoning_text", "text": ""},
        )
        + _done(3, 0, {**_RS, "content": [{"type": "reasoning_text", "text": "t"}]})
        + _completed({**_RS, "content": [{"type": "reasoning_text", "text": "t"}]}, seq=4),
        [("openai_responses.reasoning_content", 2)],
        _text_is(r_items, [("reasoning", "rs_1")]),
    ),
    Case(
        "responses a null entry in response.created's output, no item",
        "responses",
        _r("response.created", 0, response=_resp("in_progress", [None]))
        + _r("response.completed", 1, response=_resp("completed", [_MSG])),
        [("openai_responses.lifecycle_output_null", 0), ("openai_responses.unfinished_item", 1)],
    ),
    Case(
        "responses a null part in the done message's content",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:4])
        + _r("response.output_item.done", 5, output_index=0, item={**_MSG, "content": [None]})
        + R_COMPLETED,
        [("openai_responses.item_content_null", 5)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a null part in the added message's content",
        "responses",
        R_CREATED
        + _r("response.output_item.added", 1, output_index=0, item={**_MSG, "content": [None]})
        + b"".join(R_ITEM[4:])
        + R_COMPLETED,
        [("openai_responses.item_content_null", 1)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses id line alone",
        "responses",
        R_CREATED + R_ITEM[0] + b"id: 7\n\n" + b"".join(R_ITEM[1:]) + R_COMPLETED,
        [("openai_responses.dataless_block", 2)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "chat an empty data: line after the finish, no [DONE]",
        "chat",
        C_HI + C_STOP + b"data: \n\n",
        [("openai_chat.tail_json", 2)],
        rule="openai_chat.tail_json",
    ),
    Case(
        "chat a null payload after the finish, no [DONE]",
        "chat",
        C_HI + C_STOP + b"data: null\n\n",
        [("openai_chat.tail_object", 2)],
    ),
    Case("chat [DONE] alone", "chat", C_DONE, [("openai_chat.no_chunk", 0)]),
    Case(
        "chat a usage chunk alone",
        "chat",
        _raw({**_chunk([]), "usage": C_USAGE}) + C_DONE,
        [("openai_chat.no_assistant", 1)],
        _text_is(lambda f: (f["choices"], f["usage"]["total_tokens"]), ([], 3)),
    ),
    Case(
        "chat the role user",
        "chat",
        _c({"role": "user", "content": "Hi"}) + C_STOP + C_DONE,
        [("openai_chat.no_assistant", 2)],
        _text_is(lambda f: (f["choices"][0]["message"]["role"], c_message(f)), ("user", ("Hi", "stop"))),
    ),
    Case(
        "chat the role assistant, then user",
        "chat",
        C_HI + _c({"role": "user"}) + C_STOP + C_DONE,
        [("openai_chat.no_assistant", 3)],
        _text_is(
            lambda f: (f["choices"][0]["message"]["role"], c_message(f)), ("assistantuser", ("Hi", "stop"))
        ),
    ),
    Case(
        "responses a text delta for a part only openai-node's snapshot has (response.in_progress's)",
        "responses",
        R_CREATED
        + _added(1, 0, _MSG_ADDED)
        + _r("response.in_progress", 2, response=_resp("in_progress", [{**_MSG_ADDED, "content": [R_PART]}]))
        + _text(3, 0, 0)
        + _text_done(4, 0, 0)
        + _done(5, 0, _MSG)
        + _completed(_MSG, seq=6),
        [("openai_responses.python_content_index", 3)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "chat tool call 1 alone (no tool call 0)",
        "chat",
        _c({"role": "assistant", "content": None}) + _tool(1, "call_b", "f") + C_TOOLS_END,
        [("openai_chat.tool_call_index", 1), ("openai_chat.tool_call_gap", 3)],
        rule="openai_chat.tool_call_gap",
    ),
    Case(
        "chat tool call 0 gets its type after tool call 1 started",
        "chat",
        C_ROLE
        + _calls({"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}})
        + _tool(1, "b", "g")
        + _calls({"index": 0, "type": "function", "function": {"arguments": ""}})
        + C_TOOLS_END,
        [("openai_chat.tool_call_type", 2)],
        _text_is(c_tools, [("function", "f", "{}"), ("function", "g", "{}")]),
    ),
    Case(
        "chat choice 1 ends with finish_reason length, choice 0 with stop",
        "chat",
        _c({"role": "assistant", "content": "Hi"})
        + _c({"role": "assistant", "content": "Yo"}, index=1)
        + _c({}, "stop")
        + _c({}, "length", index=1)
        + C_DONE,
        [("openai_chat.finish_length", 5)],
        None,
        _text_is(
            lambda f: [(c["message"]["content"], c["finish_reason"]) for c in f["choices"]],
            [("Hi", "stop"), ("Yo", "length")],
        ),
    ),
    Case(
        "responses an empty data: line after response.completed",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED + b"data: \n\n",
        [("openai_responses.tail_json", 7)],
    ),
    Case(
        "responses a number payload after response.completed",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED + b"data: 5\n\n",
        [("openai_responses.tail_object", 7)],
    ),
    Case(
        "responses an unknown event type after response.completed",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED + _r("response.x_unknown", 7),
        [("openai_responses.unknown_event", 7)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses an argument delta without delta after the arguments' done (the property, seed 504)",
        "responses",
        R_CREATED
        + _added(1, 0, _FC)
        + _r("response.function_call_arguments.delta", 2, item_id="fc_1", output_index=0, delta="{}")
        + _r("response.function_call_arguments.done", 3, item_id="fc_1", output_index=0, arguments="{}")
        + _r("response.function_call_arguments.delta", 4, output_index=0, item=_FC_DONE)
        + _completed(_FC_DONE, seq=5),
        [("openai_responses.arguments_delta_type", 4)],
        None,
        _text_is(lambda f: f["output"][0]["arguments"], "{}"),
    ),
    Case(
        "responses an output_text delta whose delta is null",
        "responses",
        R_CREATED
        + _added(1, 0, _MSG_ADDED)
        + _part(2, 0, 0)
        + _r("response.output_text.delta", 3, item_id="msg_1", output_index=0, content_index=0, delta=None)
        + _done(4, 0, _MSG)
        + _completed(_MSG, seq=5),
        [("openai_responses.text_delta_type", 3)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a text delta with a null output_index",
        "responses",
        R_CREATED + b"".join(R_ITEM[:2]) + _r_index(R_ITEM[2], b"null") + b"".join(R_ITEM[3:]) + R_COMPLETED,
        [("openai_responses.output_index", 3)],
    ),
    Case(
        "responses an output_item.done with a null output_index",
        "responses",
        R_CREATED + b"".join(R_ITEM[:4]) + _r_index(R_ITEM[4], b"null") + R_COMPLETED,
        [("openai_responses.output_position", 5)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses an output_item.added with a null output_index",
        "responses",
        R_CREATED + _r_index(R_ITEM[0], b"null") + b"".join(R_ITEM[1:]) + R_COMPLETED,
        [("openai_responses.python_output_index", 2)],
        None,
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses an event with an error after response.completed",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + R_COMPLETED
        + _r("error", 7, error={"type": "server_error", "message": "boom"}),
        [("openai_responses.error_after_completed", 7)],
    ),
    Case(
        "responses a text delta with an empty error object",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:2])
        + _r(
            "response.output_text.delta",
            3,
            item_id="msg_1",
            output_index=0,
            content_index=0,
            delta="Hi",
            error={},
        )
        + b"".join(R_ITEM[3:])
        + R_COMPLETED,
        [("openai_responses.error_empty", 3)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a response.created with an empty error list",
        "responses",
        _r("response.created", 0, response=_resp("in_progress", []), error=[])
        + b"".join(R_ITEM)
        + R_COMPLETED,
        [("openai_responses.error_empty", 0)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses an error event after response.completed",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + R_COMPLETED
        + _r("error", 7, code="server_error", message="boom", param=None),
        [("openai_responses.error_event_after_completed", 7)],
        _text_is(r_text, "Hi"),
    ),
    Case(
        "responses a text delta after response.completed",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED + _text(7, 0, 0),
        [("openai_responses.item_after_completed", 7)],
        _text_is(r_text, "Hi"),
        _text_is(r_text, "HiHi"),
    ),
    Case(
        "responses an output item added after response.completed",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED + _added(7, 1, {**_MSG_ADDED, "id": "msg_2"}),
        [("openai_responses.item_after_completed", 7)],
        _text_is(r_items, [("message", "msg_1")]),
        _text_is(r_items, [("message", "msg_1"), ("message", "msg_2")]),
    ),
    Case(
        "responses response.failed after response.completed",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED + _r("response.failed", 7, response=_R_FAILED),
        [("openai_responses.lifecycle_after_completed", 7)],
        _text_is(r_text, "Hi"),
        _text_is(lambda f: (f["status"], r_text(f), f["error"]["message"]), ("failed", "", "boom")),
    ),
    Case(
        "responses response.in_progress after response.completed",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + R_COMPLETED
        + _r("response.in_progress", 7, response=_resp("in_progress", [])),
        [("openai_responses.lifecycle_after_completed", 7)],
        _text_is(r_text, "Hi"),
        _text_is(lambda f: (f["status"], r_text(f)), ("in_progress", "")),
    ),
    Case(
        "responses response.failed of another response after response.completed",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + R_COMPLETED
        + _r("response.failed", 7, response={**_R_FAILED, "id": "resp_2"}),
        [("openai_responses.lifecycle_after_completed", 7), ("openai_responses.lifecycle_id", 7)],
        None,
        _text_is(lambda f: (f["id"], f["status"], r_text(f)), ("resp_2", "failed", "")),
        rule="openai_responses.lifecycle_id",
    ),
    Case(
        "responses response.failed without output after response.completed",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + R_COMPLETED
        + _r("response.failed", 7, response={k: v for k, v in _R_FAILED.items() if k != "output"}),
        [("openai_responses.lifecycle_after_completed", 7), ("openai_responses.lifecycle_output", 7)],
        _text_is(r_text, "Hi"),
        rule="openai_responses.lifecycle_output",
    ),
    Case(
        "responses an output_text.done with another text after response.completed",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED + _r_after("response.output_text.done", text="Bye"),
        [("openai_responses.done_after_completed", 7)],
        _text_is(r_text, "Hi"),
        _text_is(lambda f: (r_text(f), f["output_text"]), ("Bye", "Bye")),
    ),
    Case(
        "responses an output_text.done without text after response.completed",
        "responses",
        R_CREATED + b"".join(R_ITEM) + R_COMPLETED + _r_after("response.output_text.done"),
        [("openai_responses.done_after_completed", 7)],
        _text_is(r_text, "Hi"),
        _text_is(lambda f: ("text" in f["output"][0]["content"][0], f["output_text"]), (False, "")),
    ),
    Case(
        "responses the same output_text.done, content_part.done, output_item.done after response.completed",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + R_COMPLETED
        + _r_after("response.output_text.done", text="Hi")
        + _r_after("response.content_part.done", seq=8, part=_MSG["content"][0])
        + _done(9, 0, dict(reversed(list(_MSG.items())))),
        [],
        _text_is(r_text, "Hi"),
        _text_is(lambda f: (r_text(f), f["output_text"]), ("Hi", "Hi")),
    ),
    Case(
        "responses a content_part.done with another part after response.completed",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + R_COMPLETED
        + _r_after("response.content_part.done", part={**R_PART, "text": "Bye"}),
        [("openai_responses.done_after_completed", 7)],
        _text_is(r_text, "Hi"),
        _text_is(r_text, "Bye"),
    ),
    Case(
        "responses an output_item.done with another item after response.completed",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + R_COMPLETED
        + _done(7, 0, {**_MSG, "content": [{**R_PART, "text": "Bye"}]}),
        [("openai_responses.done_after_completed", 7)],
        _text_is(r_text, "Hi"),
        _text_is(lambda f: (r_text(f), f["output_text"]), ("Bye", "Bye")),
    ),
    Case(
        "responses the same output_item.done after a response.completed with its own output_text",
        "responses",
        R_CREATED
        + b"".join(R_ITEM)
        + _r("response.completed", 6, response={**_resp("completed", [_MSG]), "output_text": "Hi!"})
        + _done(7, 0, _MSG),
        [("openai_responses.done_after_completed", 7)],
        _text_is(lambda f: f["output_text"], "Hi!"),
        _text_is(lambda f: (r_text(f), f["output_text"]), ("Hi", "Hi")),
    ),
    Case(
        "responses a function_call_arguments.done with other arguments after response.completed",
        "responses",
        r_call("{}")
        + _r("response.function_call_arguments.done", 5, item_id="fc_1", output_index=0, arguments='{"a":1}'),
        [("openai_responses.done_after_completed", 5)],
        _text_is(lambda f: f["output"][0]["arguments"], "{}"),
        _text_is(lambda f: f["output"][0]["arguments"], '{"a":1}'),
    ),
    Case(
        "responses a reasoning_summary_text.done with another text after response.completed",
        "responses",
        R_CREATED
        + _added(1, 0, _RS_DONE)
        + _done(2, 0, _RS_DONE)
        + _completed(_RS_DONE, seq=3)
        + _r(
            "response.reasoning_summary_text.done",
            4,
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            text="u",
        ),
        [("openai_responses.done_after_completed", 4)],
        _text_is(lambda f: f["output"][0]["summary"][0]["text"], "t"),
        _text_is(lambda f: f["output"][0]["summary"][0]["text"], "u"),
    ),
    Case(
        "responses the same annotation added after response.completed",
        "responses",
        R_CREATED
        + b"".join(R_ITEM[:4])
        + _done(5, 0, _MSG_CITED)
        + _completed(_MSG_CITED, seq=6)
        + _r_after("response.output_text.annotation.added", annotation_index=0, annotation=_CITE),
        [],
        _text_is(lambda f: f["output"][0]["content"][0]["annotations"], [_CITE]),
        _text_is(lambda f: f["output"][0]["content"][0]["annotations"], [_CITE]),
    ),
    Case(
        "responses a web_search_call.in_progress after response.completed",
        "responses",
        R_CREATED
        + _added(1, 0, {**_WS, "status": "in_progress"})
        + _done(2, 0, _WS)
        + _completed(_WS, seq=3)
        + _r("response.web_search_call.in_progress", 4, item_id="ws_1", output_index=0)
        + _r("response.web_search_call.completed", 5, item_id="ws_1", output_index=0),
        [("openai_responses.status_after_completed", 4)],
        _text_is(lambda f: f["output"][0]["status"], "completed"),
        _text_is(lambda f: f["output"][0]["status"], "completed"),
    ),
    Case(
        "responses a web_search_call.searching at the end, after response.completed",
        "responses",
        R_CREATED
        + _added(1, 0, {**_WS, "status": "in_progress"})
        + _done(2, 0, _WS)
        + _completed(_WS, seq=3)
        + _r("response.web_search_call.searching", 4, item_id="ws_1", output_index=0),
        [("openai_responses.status_after_completed", 4)],
        _text_is(lambda f: f["output"][0]["status"], "completed"),
        _text_is(lambda f: f["output"][0]["status"], "searching"),
    ),
]

IDS = [c.name for c in CASES]


def test_every_rule_has_a_case() -> None:
    assert {c.tested for c in CASES if c.tested} | {r for c in CASES for r, _ in c.found} == set(RULES)


def _body(case: Case) -> bytes:
    """The request the client sends, as it goes on the wire."""
    hi: dict[str, Any] = (
        {"input": "hi"} if case.kind == "responses" else {"messages": [{"role": "user", "content": "hi"}]}
    )
    return orjson.dumps({"model": "m", "stream": True, **hi, **(case.request or {})})


def _found(case: Case, chunks: list[bytes]) -> list[tuple[str, int]]:
    asked = request_asks(_body(case), KINDS[case.kind])
    obs = StreamObserver(KINDS[case.kind], start=0.0, asked=asked)
    obs.headers(200, 0.0)
    for chunk in chunks:
        obs.observe(chunk, 0.0)
    summary = obs.finish(0.0)
    return [(f["rule"], f["event_index"]) for f in summary.extra.get("conformance", [])]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_grammar_finds_the_rule_at_its_event(case: Case) -> None:
    data = case.stream
    assert _found(case, [data]) == case.found
    assert _found(case, [data[i : i + 1] for i in range(len(data))]) == case.found  # byte by byte
    assert _found(case, [data[i : i + 7] for i in range(0, len(data), 7)]) == case.found


def _check(case: Case, sdk: str, got: sdks.Reaction, check: Callable[[dict[str, Any]], None] | None) -> None:
    rule = RULES.get(case.tested or "")
    reaction: Reaction = Reaction("tolerates")
    if rule is not None:
        reaction = rule.python if sdk.endswith("python") else rule.node
    if reaction.does == "raises":
        assert not got.ok, f"{sdk} returned {got.final!r}"
        assert got.error == reaction.error, got
        assert got.message.startswith(reaction.message), got
        return
    assert got.ok, got
    assert check is not None, f"{case.name}: say what {sdk}'s final object holds ({reaction.text()})"
    check(got.final)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_python_sdk_reacts_as_the_finding_says(case: Case) -> None:
    py_sdk = conformance.SDKS[KINDS[case.kind]][0]
    _check(case, py_sdk, sdks.python(case.kind, case.stream, case.request), case.python)


@pytest.fixture(scope="module")
def node_reactions() -> dict[str, sdks.Reaction]:
    return dict(zip(IDS, sdks.node([(c.kind, c.stream, c.request) for c in CASES]), strict=True))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_node_sdk_reacts_as_the_finding_says(
    case: Case, node_reactions: dict[str, sdks.Reaction]
) -> None:
    node_sdk = conformance.SDKS[KINDS[case.kind]][1]
    _check(case, node_sdk, node_reactions[case.name], case.node)


def test_the_pinned_sdk_versions_are_the_ones_measured() -> None:
    import anthropic
    import openai

    assert anthropic.__version__ == SDK_VERSIONS["anthropic-python"]
    assert openai.__version__ == SDK_VERSIONS["openai-python"]
    for pkg, key in (("openai", "openai-node"), ("@anthropic-ai/sdk", "anthropic-node")):
        installed = sdks.NODE_SDKS / "node_modules" / pkg / "package.json"
        assert installed.is_file(), f"{pkg} for node is needed: run .ci/install-node-sdks"
        meta = json.loads(installed.read_text())
        assert meta["version"] == SDK_VERSIONS[key], pkg


_CATALOGUE_ROW = re.compile(r"\| `(anthropic_messages|openai_chat|openai_responses)\.[a-z_]+` \|")


def test_the_docs_tables_are_the_catalogue() -> None:
    root = Path(__file__).resolve().parents[2] / "docs"
    for page in (root / "conformance.md", root / "design" / "conformance.md"):
        rows = [line for line in page.read_text().splitlines() if _CATALOGUE_ROW.match(line)]
        assert rows == [
            f"| `{r.id}` | {r.requires} | {r.python.text()} | {r.node.text()} |" for r in RULES.values()
        ], page


def test_an_output_index_both_sdks_read_as_an_integer_is_a_note() -> None:
    case = next(c for c in CASES if c.name == "responses output_index '0' and 0.0 on the added and done item")
    obs = StreamObserver(KINDS["responses"], start=0.0, asked=request_asks(_body(case), KINDS["responses"]))
    obs.headers(200, 0.0)
    obs.observe(case.stream, 0.0)
    summary = obs.finish(0.0)
    notes = [(f.rule, f.detail) for f in obs.findings if f.rule == "openai_responses.index_not_integer"]
    assert notes == [
        ("openai_responses.index_not_integer", "response.output_item.added output_index '0' read as 0")
    ]
    assert summary.outcome == "completed"
    assert summary.extra.get("conformance", []) == []
