"""Anthropic Messages streams the official SDKs read although the protocol does not send them, each
through the addon's real ``Carrier`` in every mode (observe-only, normalize, to Chat, to
Responses). The summary is the SDKs' reading of the original stream (their final message), with
the note or the conformance rule that names the quirk; the client's bytes are read back by the
official Python SDK's stream helper (``corpus.sdk``) and, for the normalized Anthropic stream and
the original, by the Node SDK (``tests/conformance/sdks``). The rules:
docs/design/protocol-grammars.md, "Anthropic Messages: liberal where the SDKs are"; the SDKs'
reactions: docs/conformance.md.

No recording in ``tests/fixtures/real`` shows these streams; the bodies are written from what the
SDKs' accumulators (``accumulate_event`` in the Python SDK, ``MessageStream`` in the Node SDK)
accept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from corpus import run as corpus_run
from corpus import sdk
from corpus.streams import Stream

from proxai.core.model import Outcome, Protocol
from tests.conformance import sdks

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES


def ev(etype: str, **body: Any) -> bytes:
    data = json.dumps({"type": etype, **body}, separators=(",", ":"))
    return f"event: {etype}\ndata: {data}\n\n".encode()


def named(name: str, etype: str, **body: Any) -> bytes:
    """An event whose ``event:`` line names another type than its payload."""
    data = json.dumps({"type": etype, **body}, separators=(",", ":"))
    return f"event: {name}\ndata: {data}\n\n".encode()


MSG = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [],
    "stop_reason": None,
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 1},
}
START = ev("message_start", message=MSG)
TEXT = {"type": "text", "text": ""}
TOOL = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
THINK = {"type": "thinking", "thinking": "", "signature": ""}


def bs(i: int, block: dict[str, Any]) -> bytes:
    return ev("content_block_start", index=i, content_block=block)


def td(i: int, text: str) -> bytes:
    return ev("content_block_delta", index=i, delta={"type": "text_delta", "text": text})


def jd(i: int, part: str) -> bytes:
    return ev("content_block_delta", index=i, delta={"type": "input_json_delta", "partial_json": part})


def th(i: int, text: str) -> bytes:
    return ev("content_block_delta", index=i, delta={"type": "thinking_delta", "thinking": text})


def st(i: int) -> bytes:
    return ev("content_block_stop", index=i)


def md(stop: str = "end_turn", usage: Any = None) -> bytes:
    u = {"output_tokens": 2} if usage is None else usage
    return ev("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage=u)


MS = ev("message_stop")
END = md() + MS
USAGE_A = (3, 2, None, None)  # (input, output, cache read, cache write) as the Anthropic SDK reads it
USAGE_C = (3, 2, None, None)
USAGE_R = (3, 2, 0, None)


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    # The SDKs' reading of the original (corpus.sdk: verdict, stop, text, calls, reasoning), which
    # the summary and every client must show, and Node's (text, calls), or the error it raises.
    reading: tuple[Any, ...]
    node: tuple[Any, ...] | str
    rules: list[str]  # the conformance rules the summary names, in order
    notes: list[str] = field(default_factory=list)  # notes the summary must have
    usage: tuple[Any, ...] = USAGE_A
    # what a client reads where it differs from ``reading`` (mode -> (verdict, stop, text, calls))
    clients: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    outcome: Outcome = Outcome.COMPLETED


def at(etype: str, index: Any, **body: Any) -> bytes:
    """An event with this ``index`` value as it goes on the wire (``...``: no index at all)."""
    return ev(etype, **({} if index is ... else {"index": index}), **body)


# a tool block that stopped with its start's input, then a fragment (both SDKs read it alone)
LATE_INPUT = START + bs(0, TOOL) + st(0) + jd(0, '{"a":1}') + md("tool_use") + MS

CASES = [
    Case(
        "a: two content_block_start with one index: a second block; the deltas go to the first",
        START + bs(0, TEXT) + td(0, "Hi") + bs(0, TEXT) + td(0, " there") + st(0) + END,
        ("accepted", "end_turn", "Hi there", [], ""),
        ("Hi there", []),
        ["anthropic_messages.duplicate_block_start"],
        ["content block 0 started again: the SDKs append it as block 1"],
    ),
    Case(
        "a: a tool_use started again at a text block's index: its input goes to the text (dropped)",
        START + bs(0, TEXT) + td(0, "Hi") + st(0) + bs(0, TOOL) + jd(0, '{"a":1}') + st(0) + END,
        ("accepted", "end_turn", "Hi", [("t1", "f", "{}")], ""),
        ("Hi", [("t1", "f", {})]),
        ["anthropic_messages.duplicate_block_start", "anthropic_messages.delta_type"],
        ["input_json_delta in a text block (index 0): dropped", "content block 0 stopped again"],
        clients={
            "chat": ("accepted", "stop", "Hi", [("t1", "f", "")]),  # no fragment: no arguments
            "responses": ("accepted", "completed", "Hi", [("t1", "f", "")]),
        },
    ),
    Case(
        "a: a start repeated, then index 1: the SDKs read index 1 at place 1, the repeated block",
        START
        + bs(0, TEXT)
        + td(0, "Hi")
        + bs(0, TEXT)
        + bs(1, TOOL)
        + td(1, " there")
        + jd(2, '{"a":1}')
        + st(0)
        + st(1)
        + st(2)
        + md("tool_use")
        + MS,
        ("accepted", "tool_use", "Hi there", [("t1", "f", '{"a":1}')], ""),
        ("Hi there", [("t1", "f", {"a": 1})]),
        ["anthropic_messages.duplicate_block_start"],
        [
            "content block 0 started again: the SDKs append it as block 1",
            "content_block_start index 1 is block 2 in the content: blocks are read by place, as the "
            "SDKs read them",
            "content_block_delta index 1: read as the block at that place in the content (a repeated "
            "start's block), as the SDKs read it",
        ],
    ),
    Case(
        "a: a start repeated, then a tool at 1: its fragments go to the repeated text block",
        START
        + bs(0, TEXT)
        + bs(0, TEXT)
        + td(0, "Hi")
        + st(0)
        + bs(1, TOOL)
        + ev("content_block_delta", index=1, delta={"type": "input_json_delta"})
        + jd(1, '{"a":1}')
        + st(1)
        + st(2)
        + md("tool_use")
        + MS,
        ("accepted", "tool_use", "Hi", [("t1", "f", "{}")], ""),
        ("Hi", [("t1", "f", {})]),
        ["anthropic_messages.duplicate_block_start", "anthropic_messages.delta_type"],
        ["input_json_delta in a text block (index ('duplicate', 1)): dropped"],
        clients={
            "chat": ("accepted", "tool_calls", "Hi", [("t1", "f", "")]),  # no fragment: no arguments
            "responses": ("accepted", "completed", "Hi", [("t1", "f", "")]),
        },
    ),
    Case(
        "a: starts 1 then 0: each block read by its place, as the SDKs read them",
        START
        + bs(1, TEXT)
        + bs(0, TOOL)
        + td(0, "Hi")
        + jd(1, '{"a":1}')
        + st(0)
        + st(1)
        + md("tool_use")
        + MS,
        ("accepted", "tool_use", "Hi", [("t1", "f", '{"a":1}')], ""),
        ("Hi", [("t1", "f", {"a": 1})]),
        [],
        [
            "content_block_start index 1 is block 0 in the content: blocks are read by place, as the "
            "SDKs read them",
            "content_block_delta index 0: read as the block at that place in the content (started "
            "with index 1), as the SDKs read it",
        ],
    ),
    Case(
        "b: a block without a type: the SDKs keep it as it came and drop its text",
        START + bs(0, {"text": ""}) + td(0, "Hi") + st(0) + bs(1, TEXT) + td(1, " there") + st(1) + END,
        ("accepted", "end_turn", " there", [], ""),
        (" there", []),
        ["anthropic_messages.delta_type"],
        ["text_delta in a other block (index 0): dropped"],
    ),
    Case(
        "j: a text_delta without text and without its event: line: skipped, as the SDKs skip it",
        START
        + bs(0, TEXT)
        + td(0, "Hi")
        + ev("content_block_delta", index=0, delta={"type": "text_delta"}).replace(
            b"event: content_block_delta\n", b""
        )
        + st(0)
        + END,
        ("accepted", "end_turn", "Hi", [], ""),
        ("Hi", []),
        ["anthropic_messages.unnamed_event"],
        ["an unnamed 'text_delta' delta without its text: skipped"],
    ),
    Case(
        "b: input_json_delta, thinking_delta and signature_delta on a text block: dropped",
        START
        + bs(0, TEXT)
        + td(0, "Hi")
        + jd(0, '{"a":1}')
        + th(0, "hmm")
        + ev("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "s"})
        + st(0)
        + END,
        ("accepted", "end_turn", "Hi", [], ""),
        ("Hi", []),
        ["anthropic_messages.delta_type"],
        ["input_json_delta in a text block (index 0): dropped"],
    ),
    Case(
        "b: a text_delta on a tool_use block and on a thinking block: dropped",
        START
        + bs(0, THINK)
        + th(0, "hmm")
        + td(0, "x")
        + st(0)
        + bs(1, TOOL)
        + td(1, "Hi")
        + jd(1, '{"a":1}')
        + st(1)
        + md("tool_use")
        + MS,
        ("accepted", "tool_use", "", [("t1", "f", '{"a":1}')], "hmm"),
        ("", [("t1", "f", {"a": 1})]),
        ["anthropic_messages.delta_type"],
        ["text_delta in a thinking block (index 0): dropped"],
    ),
    Case(
        "c: a text delta after its block's content_block_stop, and the block stopped again",
        START + bs(0, TEXT) + td(0, "Hi") + st(0) + td(0, " there") + st(0) + END,
        ("accepted", "end_turn", "Hi there", [], ""),
        ("Hi there", []),
        [],
        ["text_delta after its block 0 stopped: read", "content block 0 stopped again"],
    ),
    Case(
        "c: an empty input_json_delta after its tool block stopped: the input is the same",
        START + bs(0, TOOL) + jd(0, '{"a":1}') + st(0) + jd(0, "") + md("tool_use") + MS,
        ("accepted", "tool_use", "", [("t1", "f", '{"a":1}')], ""),
        ("", [("t1", "f", {"a": 1})]),
        [],
        ["input_json_delta after its tool block 0 stopped: read"],
    ),
    Case(
        "c: a tool block stopped with its start's input, then a fragment: the SDKs read it alone",
        LATE_INPUT,
        ("accepted", "tool_use", "", [("t1", "f", '{"a":1}')], ""),
        ("", [("t1", "f", {"a": 1})]),
        [],
        ["input_json_delta after its tool block 0 stopped: read"],
        # every client has the call whole at its stop: the late input is an error naming it
        clients={"anthropic": ("rejected",), "chat": ("rejected",), "responses": ("rejected",)},
    ),
    Case(
        "c: a tool block stopped with its JSON cut short, the rest after the stop: the SDKs join them",
        START + bs(0, TOOL) + jd(0, '{"a":') + st(0) + jd(0, "1}") + md("tool_use") + MS,
        ("accepted", "tool_use", "", [("t1", "f", '{"a":1}')], ""),
        ("", [("t1", "f", {"a": 1})]),
        [],
        ["input_json_delta after its tool block 0 stopped: read"],
        # a client's call ends at its stop, where its arguments are not JSON
        clients={"anthropic": ("rejected",), "chat": ("rejected",), "responses": ("rejected",)},
    ),
    Case(
        "c: a content_block_stop for a block that never started (Python raises IndexError)",
        START + bs(0, TEXT) + td(0, "Hi") + st(0) + st(1) + END,
        ("rejected",),
        ("Hi", []),
        ["anthropic_messages.block_index"],
        clients={
            "anthropic": ("accepted", "end_turn", "Hi", []),
            "chat": ("accepted", "stop", "Hi", []),
            "responses": ("accepted", "completed", "Hi", []),
        },
    ),
    Case(
        "c: a block after message_delta, and a delta after it",
        START + bs(0, TEXT) + td(0, "Hi") + md() + td(0, ",") + bs(1, TEXT) + td(1, " there") + st(1) + MS,
        ("accepted", "end_turn", "Hi, there", [], ""),
        ("Hi, there", []),
        [],
        [
            "content block 0 was not stopped before the message ended",
            "text_delta after its block 0 stopped: read",
            "a block after message_delta",
        ],
    ),
    Case(
        "d: content before message_start: the SDKs read nothing before it",
        bs(0, TEXT) + td(0, "Hi") + st(0) + md() + START + bs(0, TEXT) + td(0, " there") + st(0) + END,
        ("accepted", "end_turn", " there", [], ""),
        (" there", []),
        ["anthropic_messages.before_message_start"],
        # normalize mode starts the message at the content (a repair): the client gets it all
        clients={"anthropic": ("accepted", "end_turn", "Hi there", [])},
    ),
    Case(
        "d: no message_start at all: both SDKs raise",
        bs(0, TEXT) + td(0, "Hi") + st(0) + END,
        ("rejected",),
        "AnthropicError: request ended without sending any chunks",
        ["anthropic_messages.before_message_start", "anthropic_messages.no_message_start"],
        usage=(None, None, None, None),
        clients={"anthropic": ("accepted", "end_turn", "Hi", [])},  # normalize's repair
        outcome=Outcome.CLOSED,
    ),
    Case(
        "d: a second message_start mid-stream: Python ignores it, Node raises",
        START + bs(0, TEXT) + td(0, "Hi") + START + td(0, " there") + st(0) + END,
        ("accepted", "end_turn", "Hi there", [], ""),
        'AnthropicError: Unexpected event order, got message_start before receiving "message_stop"',
        ["anthropic_messages.second_message_start"],
    ),
    Case(
        "e: a delta with a negative index: Python counts it from the end, Node loses it",
        START + bs(0, TEXT) + td(0, "Hi") + td(-1, " there") + st(0) + END,
        ("accepted", "end_turn", "Hi there", [], ""),
        ("Hi", []),
        ["anthropic_messages.negative_index"],
        clients={  # normalize opens the block the delta names (a repair): the client reads it all
            "anthropic": ("accepted", "end_turn", "Hi there", []),
            "chat": ("accepted", "stop", "Hi", []),
            "responses": ("accepted", "completed", "Hi", []),
        },
    ),
    Case(
        "h: block indexes both SDKs read: a start's null and '0' (appended), a delta's '1' and 1.0, "
        "a stop's ' 0' and -1",
        START
        + at("content_block_start", None, content_block=TEXT)
        + at("content_block_start", "0", content_block=TEXT)
        + at("content_block_delta", "1", delta={"type": "text_delta", "text": "Hi"})
        + at("content_block_delta", 1.0, delta={"type": "text_delta", "text": " there"})
        + at("content_block_stop", " 0")
        + at("content_block_stop", -1)
        + END,
        ("accepted", "end_turn", "Hi there", [], ""),
        ("Hi there", []),
        [],
        [
            "content_block_start index None: the SDKs append the block, read as block 0",
            "content_block_stop index -1: read as the block at that place in the content (block 1), "
            "as the SDKs read it",
        ],
    ),
    Case(
        "h: a delta index '00': Python reads it as 0, Node loses it",
        START
        + bs(0, TEXT)
        + td(0, "Hi")
        + at("content_block_delta", "00", delta={"type": "text_delta", "text": " there"})
        + st(0)
        + END,
        ("accepted", "end_turn", "Hi there", [], ""),
        ("Hi", []),
        ["anthropic_messages.index_form"],
        ["content_block_delta index '00': anthropic-python reads it as 0, anthropic-node loses it"],
    ),
    Case(
        "h: a delta index null: Python TypeError, Node loses it; no client gets a reading",
        START
        + bs(0, TEXT)
        + td(0, "Hi")
        + at("content_block_delta", None, delta={"type": "text_delta", "text": " there"})
        + st(0)
        + END,
        ("rejected",),
        ("Hi", []),
        ["anthropic_messages.index_type"],
        ["content_block_delta index None: no SDK reads it"],
        clients={"anthropic": ("rejected",), "chat": ("rejected",), "responses": ("rejected",)},
    ),
    Case(
        "h: a content_block_stop without an index: Python TypeError, Node reads nothing",
        START + bs(0, TEXT) + td(0, "Hi") + at("content_block_stop", ...) + END,
        ("rejected",),
        ("Hi", []),
        ["anthropic_messages.index_type_python"],
        ["content block 0 was not stopped before the message ended"],
        clients={
            "anthropic": ("accepted", "end_turn", "Hi", []),
            "chat": ("accepted", "stop", "Hi", []),
            "responses": ("accepted", "completed", "Hi", []),
        },
    ),
    Case(
        "h: a tool fragment whose index is [0]: Node reads it as 0, Python TypeError",
        START
        + bs(0, TOOL)
        + at("content_block_delta", [0], delta={"type": "input_json_delta", "partial_json": '{"a":1}'})
        + st(0)
        + md("tool_use")
        + MS,
        ("rejected",),
        ("", [("t1", "f", {"a": 1})]),
        ["anthropic_messages.index_type_python"],
        ["content_block_delta index [0]: anthropic-node reads it as 0"],
        clients={
            "anthropic": ("accepted", "tool_use", "", [("t1", "f", '{"a":1}')]),
            "chat": ("accepted", "tool_calls", "", [("t1", "f", '{"a":1}')]),
            "responses": ("accepted", "completed", "", [("t1", "f", '{"a":1}')]),
        },
    ),
    Case(
        "i: a signature_delta whose signature is missing: the SDKs set it as it came",
        START
        + bs(0, THINK)
        + th(0, "hm")
        + ev("content_block_delta", index=0, delta={"type": "signature_delta", "thinking": "x"})
        + st(0)
        + bs(1, TEXT)
        + td(1, "Hi")
        + st(1)
        + END,
        ("accepted", "end_turn", "Hi", [], "hm"),
        ("Hi", []),
        [],
        ["a signature_delta whose signature is None (index 0): left out"],
    ),
    Case(
        "f: content after message_stop: Python reads it into the message, Node does not",
        START + bs(0, TEXT) + td(0, "Hi") + st(0) + END + td(0, " there") + md("max_tokens"),
        ("accepted", "max_tokens", "Hi there", [], ""),
        ("Hi", []),
        ["anthropic_messages.after_message_stop"],
        clients={
            "anthropic": ("accepted", "end_turn", "Hi", []),
            "chat": ("accepted", "stop", "Hi", []),
            "responses": ("accepted", "completed", "Hi", []),
        },
    ),
    Case(
        "g: message_delta usage without output_tokens: the SDKs set it to None",
        START + bs(0, TEXT) + td(0, "Hi") + st(0) + md(usage={"input_tokens": 5}) + MS,
        ("accepted", "end_turn", "Hi", [], ""),
        ("Hi", []),
        ["anthropic_messages.message_delta_output_tokens"],
        usage=(5, 1, None, None),
        clients={  # what we emit carries the output tokens we know
            "anthropic": ("accepted", "end_turn", "Hi", []),
        },
    ),
    Case(
        "g: message_start without usage: both SDKs raise at message_delta",
        ev("message_start", message={k: v for k, v in MSG.items() if k != "usage"})
        + bs(0, TEXT)
        + td(0, "Hi")
        + st(0)
        + END,
        ("rejected",),
        "AnthropicError: Cannot set properties of undefined (setting 'output_tokens')",
        ["anthropic_messages.message_start_usage"],
        usage=(None, 2, None, None),
        clients={
            "anthropic": ("accepted", "end_turn", "Hi", []),
            "chat": ("accepted", "stop", "Hi", []),
            "responses": ("accepted", "completed", "Hi", []),
        },
    ),
    Case(
        "h: an unknown delta type and an unknown block type: kept, not read",
        START
        + bs(0, {"type": "future_tool_result", "tool_use_id": "s1", "content": {"a": 1}})
        + ev("content_block_delta", index=0, delta={"type": "future_delta", "x": 1})
        + st(0)
        + bs(1, TEXT)
        + td(1, "Hi")
        + ev("content_block_delta", index=1, delta={"type": "future_delta", "x": 1})
        + st(1)
        + END,
        ("accepted", "end_turn", "Hi", [], ""),
        ("Hi", []),
        [],
    ),
    Case(
        "i: an event named otherwise than its payload's type is read by the type",
        START
        + bs(0, TEXT)
        + named("foo", "content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"})
        + st(0)
        + END,
        ("accepted", "end_turn", "Hi", [], ""),
        ("Hi", []),
        [],
        ["event 'foo' carries a 'content_block_delta': read by its type"],
    ),
    Case(
        "i: a block index sent as a string or a float: the SDKs read it as the integer",
        START
        + bs(0, TEXT)
        + ev("content_block_delta", index="0", delta={"type": "text_delta", "text": "Hi"})
        + ev("content_block_delta", index=0.0, delta={"type": "text_delta", "text": " there"})
        + ev("content_block_stop", index="0")
        + END,
        ("accepted", "end_turn", "Hi there", [], ""),
        ("Hi there", []),
        [],
        ["content_block_delta index '0' read as 0"],
    ),
    Case(
        "i: a tool_use with input in its start and fragments: the fragments are its input",
        START
        + bs(0, {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}})
        + jd(0, '{"b":2}')
        + st(0)
        + md("tool_use")
        + MS,
        ("accepted", "tool_use", "", [("t1", "f", '{"b":2}')], ""),
        ("", [("t1", "f", {"b": 2})]),
        [],
        ["tool block 0: input in its start and fragments (the fragments are its input)"],
    ),
    Case(
        "j: a tool fragment without its event: line: the SDKs lose it, their input is not JSON",
        START
        + bs(0, TOOL)
        + jd(0, '{"').replace(b"event: content_block_delta\n", b"")
        + jd(0, 'a":1}')
        + st(0)
        + md("tool_use")
        + MS,
        ("rejected",),
        'AnthropicError: Unexpected token \'a\', "a":1}" is not valid JSON',
        ["anthropic_messages.unnamed_event", "anthropic_messages.tool_input_json"],
        # every client gets the call whole: the fragment is read (normalize names every event)
        clients={
            "anthropic": ("accepted", "tool_use", "", [("t1", "f", '{"a":1}')]),
            "chat": ("accepted", "tool_calls", "", [("t1", "f", '{"a":1}')]),
            "responses": ("accepted", "completed", "", [("t1", "f", '{"a":1}')]),
        },
    ),
]
IDS = [c.name.split(":")[0] + ":" + c.name.split(":")[1][:60] for c in CASES]

CHAT_STOPS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def _carry(tmp: Path, body: bytes, client: Protocol | None) -> corpus_run.Carried:
    path = tmp / "s.sse"
    path.write_bytes(body)
    got = corpus_run.carry(Stream("anthropic/s.sse", path, A, "test", "test", False), client)
    assert not got.bugs
    return got


def _client(case: Case, mode: str) -> tuple[Any, ...]:
    """What the client of ``mode`` reads (verdict, stop, text, calls): the case's, or the SDKs'
    reading of the original in that protocol."""
    if mode in case.clients:
        return case.clients[mode]
    if case.reading[0] == "rejected":
        return ("rejected",)
    verdict, stop, text, calls, _ = case.reading
    if mode == "chat":
        return (verdict, CHAT_STOPS[stop], text, calls)
    if mode == "responses":
        return (verdict, "completed", text, calls)
    return (verdict, stop, text, calls)


Reads = tuple[sdks.Reaction, sdks.Reaction, sdks.Reaction, sdks.Reaction]


@pytest.fixture(scope="module")
def node_reads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Reads]:
    """The Node SDKs' reading of each original stream and of what each client gets (normalized,
    to Chat, to Responses), in one node run."""
    tmp = tmp_path_factory.mktemp("node")
    cases: list[tuple[str, bytes]] = []
    for c in CASES:
        cases.append(("anthropic", c.body))
        cases += [
            (kind, _carry(tmp, c.body, p).out)
            for kind, p in (("anthropic", A), ("chat", C), ("responses", R))
        ]
    got = sdks.node(cases)
    return {c.name: (got[4 * i], got[4 * i + 1], got[4 * i + 2], got[4 * i + 3]) for i, c in enumerate(CASES)}


def _node_view(r: sdks.Reaction) -> tuple[Any, ...] | str:
    if not r.ok:
        return f"{r.error}: {r.message}"
    content = r.final["content"]
    text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    calls = [(b["id"], b["name"], b["input"]) for b in content if b.get("type") == "tool_use"]
    return (text, calls)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_sdks_reading_in_every_mode(case: Case, tmp_path: Path, node_reads: dict[str, Reads]) -> None:
    # the SDKs' reading of the original
    ref = sdk.read(A, case.body)
    assert (ref.verdict, ref.stop, ref.text, ref.calls, ref.reasoning)[: len(case.reading)] == case.reading
    original, normalized, to_chat, to_responses = node_reads[case.name]
    view = _node_view(original)
    if isinstance(case.node, str):
        assert isinstance(view, str) and view.startswith(case.node), view
    else:
        assert view == case.node
    # observe-only: the upstream's bytes, the summary the SDKs' reading
    got = _carry(tmp_path, case.body, None)
    assert got.out == case.body
    s = got.summary
    assert [c["rule"] for c in s.extra.get("conformance", [])] == case.rules
    notes = s.extra.get("notes", [])
    assert all(n in notes for n in case.notes), notes
    assert s.outcome is case.outcome
    assert s.error is None
    u = s.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == case.usage
    if ref.verdict == "accepted" and "anthropic" not in case.clients:
        assert s.text_bytes == len(ref.text.encode())
        assert s.reasoning_bytes == len(ref.reasoning.encode())
        assert [(t.id, t.name, t.arguments) for t in s.tool_calls] == ref.calls
        assert s.stop_reason == ref.stop
    # every client: its SDK accepts what we emit, with the content of the SDKs' reading
    for mode, client in (("anthropic", A), ("chat", C), ("responses", R)):
        back = sdk.read(client, _carry(tmp_path, case.body, client).out)
        want = _client(case, mode)
        if want[0] == "rejected":  # no reading to carry: the client gets an error or nothing
            assert back.verdict in ("error_event", "rejected"), back
            continue
        assert (back.verdict, back.stop, back.text, back.calls) == want, mode
    # the Node SDKs read what we emit as Python does
    want = _client(case, "anthropic")
    if want[0] == "accepted":
        assert _node_view(normalized) == (want[2], [(i, n, json.loads(a)) for i, n, a in want[3]])
    for mode, got_node in (("chat", to_chat), ("responses", to_responses)):
        want = _client(case, mode)
        if want[0] == "accepted":
            assert got_node.ok, got_node
            final = got_node.final
            if mode == "chat":
                message = final["choices"][0]["message"]
                calls = [
                    (t["id"], t["function"]["name"], t["function"]["arguments"])
                    for t in message.get("tool_calls") or []
                ]
                assert (message["content"] or "", calls) == (want[2], want[3]), mode
            else:
                text = "".join(
                    p.get("text", "") for o in final["output"] if o["type"] == "message" for p in o["content"]
                )
                calls = [
                    (o["call_id"], o["name"], o["arguments"])
                    for o in final["output"]
                    if o["type"] == "function_call"
                ]
                assert (text, calls) == (want[2], want[3]), mode


LATE = "input_json_delta for tool block 0 after its content_block_stop changes the input"


def test_a_late_fragment_that_changes_a_finished_call_ends_every_client_with_an_error(
    tmp_path: Path, node_reads: dict[str, Reads]
) -> None:
    """The client was told the call ended at its content_block_stop (docs/design/protocol-grammars.md,
    "A tool input after its block stopped"): what we emit never gives it more arguments. Each
    client's stream ends with its protocol's error naming the late delta, which both its SDKs
    raise; an empty or blank late fragment changes nothing and is left out, with a note."""
    case = next(c for c in CASES if c.body == LATE_INPUT)
    original, *clients = node_reads[case.name]
    assert original.ok and original.final["content"][0]["input"] == {"a": 1}
    # observe-only: the upstream's bytes, the summary has the SDKs' input
    seen = _carry(tmp_path, case.body, None)
    assert seen.out == case.body and seen.summary.outcome is Outcome.COMPLETED
    assert [(t.arguments, t.arguments_valid_json) for t in seen.summary.tool_calls] == [('{"a":1}', True)]
    last = {
        A: b'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"' + LATE.encode(),
        C: b'data: {"error":{"message":"' + LATE.encode(),
        R: b'event: response.failed\ndata: {"type":"response.failed"',
    }
    for (client, prefix), node in zip(last.items(), clients, strict=True):
        got = _carry(tmp_path, case.body, client)
        assert got.summary.error is not None and got.summary.error.message.startswith(LATE)
        tail = got.out.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
        assert tail.startswith(prefix), tail
        assert LATE.encode() in tail
        back = sdk.read(client, got.out)
        assert back.verdict == "error_event" and LATE in back.detail, back
        assert not node.ok and LATE in node.message, node


def test_a_blank_late_fragment_is_left_out_for_every_client(tmp_path: Path) -> None:
    body = START + bs(0, TOOL) + jd(0, '{"a":1}') + st(0) + jd(0, " \n") + md("tool_use") + MS
    for client in (A, C, R):
        got = _carry(tmp_path, body, client)
        notes = got.summary.extra["notes"]
        assert "input_json_delta after its tool block 0 stopped: left out (the input is unchanged)" in notes
        assert got.summary.outcome is Outcome.COMPLETED
        assert b'" \\n"' not in got.out
        back = sdk.read(client, got.out)
        assert (back.verdict, back.calls) == ("accepted", [("t1", "f", '{"a":1}')]), back


def test_a_start_at_the_index_of_a_block_normalize_opened_is_a_second_block(tmp_path: Path) -> None:
    """Normalize opens a text block for a delta without a start (a repair), kept by the delta's
    index; a start with that index later is a second block (``duplicate_block_start``), never
    one that replaces the first: the client reads both texts."""
    body = START + td(1, "Hi") + bs(1, TEXT) + td(1, " there") + END
    got = _carry(tmp_path, body, A)
    rules = [c["rule"] for c in got.summary.extra.get("conformance", [])]
    assert rules == ["anthropic_messages.duplicate_block_start"]
    assert "content_block_delta for index 1 without content_block_start" in got.summary.extra["notes"]
    back = sdk.read(A, got.out)
    assert (back.verdict, back.text) == ("accepted", "Hi there")
    assert got.out.count(b"event: content_block_start") == 2
