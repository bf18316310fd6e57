"""Anthropic Messages: a delta that comes after its content block stopped, read as both official
SDKs read it (docs/design/protocol-grammars.md, "Anthropic Messages: liberal where the SDKs are",
and "A tool input after its block stopped").

Both stream helpers (``accumulate_event`` in the Python SDK's ``lib/streaming/_messages.py``,
``MessageStream#accumulateMessage`` in the Node SDK) look a delta's block up by its index whether it
stopped or not, and append the delta to it: late text and thinking grow the block, a late
``input_json_delta`` grows the tool block's buffer of fragments, whose parse is the block's input.
A client of ours was told the block ended when it stopped, so what we emit never reopens it (every
SDK must read what we emit as a finished call): late text or thinking goes in a block of its own; a
late fragment that leaves the input as the client got it is left out, one that changes it ends the
client's stream with an error naming it. The summary reads it as the SDKs do.

And a payload that is not a JSON object in an event the SDKs do not parse (``unread_payload``: a
``ping``, an event without an ``event:`` line, a named event with empty data): skipped, as they skip
it (docs/design/protocol-grammars.md, "Anthropic Messages").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from proxai.core.errors import SemanticStreamError

from .anthropic_index import key_at, lax_int
from .anthropic_tables import DELTA_FAMILY, DELTA_FIELD, KINDS, KNOWN_EVENTS
from .common import json_valid
from .fragments import FAULTS, input_fault, python_refuses

if TYPE_CHECKING:
    from .anthropic import AnthropicGrammar, Key, _Block


def late_text(g: AnthropicGrammar, family: str, delta: dict[str, Any], dtype: str) -> None:
    """A text or thinking delta of a stopped block, translating: the writer's block is closed, so
    it goes in a block of its own (the client reads the same text; a signature or citation is left
    out). The summary reads it as any delta (the caller)."""
    carried = DELTA_FIELD.get(dtype)
    value = delta.get(carried[0]) if carried is not None else None
    if carried is None or carried[1] not in ("text", "thinking") or type(value) is not str or not value:
        return
    out, key = g.out, ("after_stop", g.acc.event_index)
    assert out is not None
    out.block_start(key, KINDS[family])
    out.delta(key, carried[1], value)
    out.block_stop(key)


def field_missing(g: AnthropicGrammar, blk: _Block, idx: Key, kind: str, value: object) -> bool:
    """A delta without the string its type carries, which both SDKs read on (True: a note, never
    a violation): a ``signature_delta`` (they set the block's signature as it came, none to carry),
    or an ``input_json_delta`` in an ``mcp_tool_use`` block (they keep a tool input from fragments
    only in ``tool_use`` and ``server_tool_use`` blocks: ``TRACKS_TOOL_INPUT`` in the Python SDK's
    ``lib/streaming/_messages.py``, ``tracksToolInput`` in the Node SDK's ``MessageStream``)."""
    if kind == "signature":
        what = f"a signature_delta whose signature is {value!r} (index {idx}): left out"
        g.acc.finding_once("anthropic.signature_not_string", "quirk", what)
        return True
    if kind == "args" and blk.tool is not None and blk.tool.kind == "mcp":
        what = f"an input_json_delta without partial_json in an mcp_tool_use block (index {idx}): not read"
        g.acc.finding_once("anthropic.untracked_tool_input", "quirk", what)
        return True
    return False


def late_args(g: AnthropicGrammar, blk: _Block, idx: Key, value: str, now: float) -> None:
    """An ``input_json_delta`` fragment (``value``) of a tool block that stopped. The SDKs' input is
    the parse of the block's fragments so far, this one appended (a block that stopped with the
    input of its start, or with none, has no fragment: the late one is alone, and an empty one
    changes nothing)."""
    tb = blk.tool
    assert tb is not None
    before = tb.final if blk.fragments else ""  # the SDKs' buffer (None: past max_tool_args)
    if g.out is not None:  # the client has the call whole: its input, JSON (the stop judged it)
        if before is None or not _same_input(tb.final, before + value):
            raise SemanticStreamError(
                f"input_json_delta for tool block {idx} after its content_block_stop changes the "
                "input of a call the client already has whole"
            )
        g.acc.finding_once(
            "anthropic.args_after_stop",
            "quirk",
            f"input_json_delta after its tool block {idx} stopped: left out (the input is unchanged)",
        )
        return
    g.acc.finding_once(
        "anthropic.args_after_stop", "quirk", f"input_json_delta after its tool block {idx} stopped: read"
    )
    if not value:
        return  # the SDKs' buffer is the same: the input too
    acc = g.acc
    acc.tool_reopen(tb)
    if before is None:
        acc.tool_args(tb, value, now)  # past the limit already: counted, not kept
    else:
        acc.tool_set(tb, before + value, now)
    blk.fragments = True
    g._tool_input_conforms(idx, blk)
    acc.tool_finish(tb)


def _same_input(got: str | None, buffer: str) -> bool:
    """The SDKs' parse of ``buffer`` is the input ``got`` the client has (an empty or blank buffer
    leaves the input the block stopped with)."""
    if got is None:
        return False
    if not buffer.strip(" \t\r\n"):
        return True
    if not json_valid(buffer):
        return False
    try:
        return bool(orjson.loads(buffer) == orjson.loads(got))
    except orjson.JSONDecodeError:  # deeper than orjson reads: the same text, whitespace around it
        return buffer.strip(" \t\r\n") == got.strip(" \t\r\n")


def read_first(g: AnthropicGrammar, name: str, etype: str, obj: dict[str, Any], now: float) -> bool:
    """A known event off the fast path, before the grammar's state machine: a ``content_block_delta``
    is read here (True; one without an ``event:`` line the SDKs skip, ``unnamed_delta``); a named
    ``content_block_start`` without a ``content_block`` object makes anthropic-python raise
    (``event.content_block.to_dict()``), where anthropic-node keeps an empty block."""
    if etype == "content_block_delta":
        (unnamed_delta if name == "message" else named_delta)(g, obj, now)
        return True
    if etype == "content_block_start" and name != "message" and type(obj.get("content_block")) is not dict:
        g.conform(
            "anthropic_messages.block_start_block",
            f"content_block_start {obj.get('index')!r} without a block",
        )
    return False


def named_delta(g: AnthropicGrammar, obj: dict[str, Any], now: float) -> None:
    """A ``content_block_delta`` off the fast path with its ``event:`` line: both SDKs read its
    ``delta``'s type, so one without a ``delta`` (or a null one) makes both raise, and one that is
    not an object anthropic-python (Node reads no type in it)."""
    delta = obj.get("delta")
    if type(delta) is not dict:
        rule = (
            "anthropic_messages.block_delta_delta"
            if delta is None
            else "anthropic_messages.block_delta_object"
        )
        g.conform(rule, f"content_block_delta for block {obj.get('index')!r} without a delta object")
    g._block_delta(obj, now)


def unnamed_delta(g: AnthropicGrammar, obj: dict[str, Any], now: float) -> None:
    """A ``content_block_delta`` without an ``event:`` line. Both SDKs skip it; it is read (a
    translation's client, normalize's too, gets the block whole: the liberal reading), and a tool
    fragment's place in the block's buffer is kept, so the input is judged as the SDKs join it
    (``sdk_join``: without it, the rule ``tool_input_json`` when that is not JSON). One without its
    type or the string its type carries has nothing to read: skipped, a note, never a violation."""
    delta = obj.get("delta")
    dtype = delta.get("type") if type(delta) is dict else None
    carried = DELTA_FIELD.get(dtype) if type(dtype) is str else None
    if (
        type(delta) is not dict
        or type(dtype) is not str
        or (carried is not None and carried[1] != "signature" and type(delta.get(carried[0])) is not str)
    ):  # nothing to read, and the SDKs skip it: never a violation
        what = f"an unnamed {dtype!r} delta without its {carried[0] if carried else 'type'}: skipped"
        g.acc.finding_once("anthropic.unnamed_unread", "quirk", what)
        return
    idx = obj.get("index")
    key = key_at(g, idx) if type(idx) is int else None
    blk = g.blocks.get(key) if key is not None else None
    buf = blk.tool.buf if blk is not None and blk.open and blk.tool is not None else None
    start = buf.tell() if buf is not None else 0
    tb = blk.tool if blk is not None else None
    lead = None
    if tb is not None:  # a fragment their parse after each fragment never sees (``fragments``)
        lead, tb.lead = tb.lead, None
    g._block_delta(obj, now)
    if tb is not None:
        tb.lead = lead
    if blk is not None and buf is not None and tb is not None and tb.buf is buf and buf.tell() > start:
        blk.skipped.append((start, buf.tell()))


def sdk_join(text: str, skipped: list[tuple[int, int]]) -> str:
    """A tool block's input ``text`` as the SDKs join it: without the spans of the fragments they
    skipped (in order, each a fragment's start and end in ``text``)."""
    parts, at = [], 0
    for start, end in skipped:
        parts.append(text[at:start])
        at = end
    parts.append(text[at:])
    return "".join(parts)


def unread_payload(g: AnthropicGrammar, name: str, data: str, not_json: bool) -> bool:
    """A payload that is not a JSON object (``not_json``: not JSON at all) in an event the SDKs do not
    read as one: both stream helpers (``Stream.__stream__`` in the Python SDK's ``_streaming.py``,
    ``Stream.fromSSEResponse`` in the Node SDK's ``core/streaming.js``) skip a ``ping`` and an event
    without an ``event:`` line whatever its payload, and a named event whose data is empty (``if not
    sse.data: continue``) but an ``error`` (both raise on it); a named type we do not know they
    parse as JSON and raise on (rules ``event_json``, ``event_object``). A quirk, never a violation;
    False: the payload is judged (a known event's, or an ``error``'s)."""
    unnamed = name == "message"
    empty = not data and name != "error"
    if name != "ping" and not unnamed and not empty and (name in KNOWN_EVENTS or name == "error"):
        return False
    if unnamed:
        what = "an event without an event: line whose payload is not a JSON object (the SDKs skip it)"
    elif name in KNOWN_EVENTS:
        what = f"a {name!r} event with an empty payload (the SDKs skip it)"
    else:
        what = f"a {name!r} event whose payload is not a JSON object"
    g.acc.finding("anthropic.unread_payload", "quirk", f"ignored {what}")
    if data and not unnamed and name != "ping" and name not in KNOWN_EVENTS:
        rule = "event_json" if not_json else "event_object"
        g.conform(f"anthropic_messages.{rule}", f"a {name!r} event whose payload is not an object")
    return True


def starts_normalized(etype: str, obj: dict[str, Any]) -> bool:
    """Whether an event before ``message_start`` starts the message in normalize mode (a repair): a
    block's start, or a delta that opens its block (text or thinking). Any other event there, a
    tool fragment or a delta of a type no block takes, is read as the observe-only reading reads
    it, as the SDKs read nothing before ``message_start`` (``before_message_start``): the two
    readings differ only where normalize repairs."""
    if etype == "content_block_start":
        return True
    delta = obj.get("delta")
    dtype = delta.get("type") if type(delta) is dict else None
    return (
        etype == "content_block_delta"
        and type(dtype) is str
        and DELTA_FAMILY.get(dtype) in ("text", "thinking")
    )


def after_stop(g: AnthropicGrammar, name: str, data: str | bytes) -> None:
    """A named event after ``message_stop``, read by its payload's type as both SDKs read on into
    their message (Python ``accumulate_event``, Node ``#accumulateMessage``): a block started there
    is one more place; a delta before any block makes both raise (``no_block``: Python IndexError,
    Node reads the last block's type), a delta or stop whose index names no place makes Python
    raise (``block_index``), a tool fragment Python appends to its block's input and parses
    (``late_fragment``), and another ``message_stop`` makes Node's final message again, each tool
    input parsed whole (``tool_input_json``, ``tool_input_number``). Judged event by event, so any
    cut of the stream into reads finds the same."""
    try:
        obj = orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        obj = None
    etype = obj.get("type") if type(obj) is dict else None
    if etype == "content_block_start":
        assert type(obj) is dict
        block = obj.get("content_block")
        btype = block.get("type") if type(block) is dict else None
        g.late.append("" if btype in ("tool_use", "server_tool_use") else None)
        return
    if etype == "message_stop":
        for idx, text in g.late_input.items():
            if (fault := input_fault(text, json_valid(text))) in ("json", "number", "trailing"):
                g.conform(
                    f"anthropic_messages.tool_input_{fault}",
                    f"tool block {idx} after a second message_stop: the input {FAULTS[fault]}",
                )
        return
    if etype not in ("content_block_delta", "content_block_stop"):
        return
    assert type(obj) is dict
    n = len(g.blocks) + len(g.late)
    at = lax_int(obj.get("index"))
    if etype == "content_block_delta" and not n:
        g.conform("anthropic_messages.no_block", "a delta after message_stop, before any block")
    elif at is not None and not -n <= at < n:
        g.conform("anthropic_messages.block_index", f"{etype} for block {at} after message_stop")
    elif etype == "content_block_delta" and at is not None and at >= 0:
        late_fragment(g, at, obj.get("delta"))


def late_fragment(g: AnthropicGrammar, idx: int, delta: object) -> None:
    """An ``input_json_delta`` after ``message_stop`` for the block at place ``idx``: anthropic-python
    appends it to that block's fragments (``json_bufs[index]``, in a ``tool_use`` or
    ``server_tool_use`` block) and parses them (``fragments.python_refuses``: the rule
    ``tool_input_after_stop``); anthropic-node's final message is the one of ``message_stop``.
    Without a string ``partial_json`` anthropic-python's ``bytes(partial_json, "utf-8")`` raises
    TypeError (``tool_input_missing_after_stop``) and anthropic-node appends ``undefined`` /
    ``null`` to the block's text, parsed at a later ``message_stop``."""
    if type(delta) is not dict or delta.get("type") != "input_json_delta":
        return
    part = delta.get("partial_json")
    n = len(g.blocks)
    if idx < n:
        blk = g.blocks[list(g.blocks)[idx]]
        tb = blk.tool
        if tb is None or tb.kind not in ("function", "server_tool"):
            return
        if not (blk.fragments if not blk.open else tb.nbytes > 0):  # (a start's input is not in it)
            before = ""
        elif tb.buf is None:  # past max_tool_args: not kept
            return
        else:
            before = sdk_join(tb.buf.getvalue(), blk.skipped) if blk.skipped else tb.buf.getvalue()
    elif (late := g.late[idx - n]) is None:
        return
    else:
        before = late
    if type(part) is not str:  # anthropic-python's bytes(partial_json, "utf-8") raises TypeError
        if part is None:  # missing or null: anthropic-node appends it as JavaScript writes it
            tail = "null" if "partial_json" in delta else "undefined"
            g.late_input[idx] = g.late_input.get(idx, before) + tail
        g.conform(
            "anthropic_messages.tool_input_missing_after_stop",
            f"an input_json_delta for block {idx} after message_stop without a string partial_json",
        )
        return
    text = g.late_input[idx] = g.late_input.get(idx, before) + part
    if text and python_refuses(text):
        g.conform(
            "anthropic_messages.tool_input_after_stop",
            f"an input_json_delta for block {idx} after message_stop: anthropic-python parses {text[:40]!r}",
        )
