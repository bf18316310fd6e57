"""Anthropic Messages grammar: the one reading of the protocol, streamed and non-streamed.

The rules (docs/design/protocol-grammars.md, "Anthropic Messages"):
``message_start`` -> content blocks (``content_block_start`` / ``content_block_delta`` /
``content_block_stop``) -> ``message_delta`` (stop reason, cumulative usage) -> ``message_stop``
(the terminal event: completed). Content blocks are kept by their place, as the SDKs address
them (``anthropic_index``: in a dense stream a block's place is its ``index``). Usage:
``anthropic_usage``; the tables of event, block and delta types: ``anthropic_tables``.

Liberal where the official SDKs are ("Anthropic Messages: liberal where the SDKs are"): what
both SDKs read is read their way with a note (sparse block indexes, deltas after their block
stopped, blocks after ``message_delta``, an event read by its payload's type); what one SDK
raises on or loses is read as they read it where they agree, and named by a conformance rule
(``conformance.RULES``). Deltas after their block stopped: ``anthropic_quirks``.

One reading, several consumers: every event updates the summary's accumulator and, when a stream
translator is attached (``out``), drives its writer through the neutral ``Sink`` calls. What only a
translation needs (an id for the message and each tool call, a type for each block and delta) is
checked only then, and ends the reading at that event, so the summary never says ``completed``
for a stream whose translation failed. Blocks and deltas the neutral calls do not model (server
and MCP tool use, their results, a document's ``citations_delta``) reach the writer as opaque
Anthropic content; a web citation (``citations_delta`` with a ``web_search_result_location``) is
a ``Citation``. A message that arrives whole in ``message_start`` is read as if its blocks had
streamed. Normalize mode (``normalize``) repairs deltas that arrive without their lifecycle
events (a finding of severity ``repair``).

The lifecycle: an Enum and one transition table (``machine.Machine``); ``error`` ends any live
state (outcome error). Unknown event types are noted, never refused; nothing after ``message_stop`` is read.
"""

from __future__ import annotations

from typing import Any

import orjson

from proxai.core.errors import TruncatedStreamError, UpstreamProtocolError
from proxai.core.errors.kinds import classify_error
from proxai.core.model import Protocol
from proxai.core.sse import Payloads, RawName, event_name
from proxai.stream import stop_reasons
from proxai.stream.sink import Citation, Output, Phase, Stop, TokenUsage, WebSearchCall

from .anthropic_index import delta_index, missing_block, start_key, stop_index
from .anthropic_quirks import (
    after_stop,
    field_missing,
    late_args,
    late_text,
    read_first,
    sdk_join,
    starts_normalized,
    unread_payload,
)
from .anthropic_tables import DELTA_FAMILY, DELTA_FIELD, FAMILIES, KINDS, KNOWN_EVENTS, TOOL_KINDS
from .anthropic_usage import usage_into, usage_summary
from .common import _NOT_JSON, NO_LEAN, Accum, GrammarBase, ToolBuffer, error_fields, json_valid, nbytes
from .fragments import FAULTS, input_fault
from .machine import Machine, StateEnum, as_dict, as_int, as_list, as_str


class State(StateEnum):
    WAITING = "waiting"  # before message_start
    MESSAGE = "message"  # content blocks flowing
    STOPPING = "stopping"  # message_delta seen; message_stop ends the message
    DONE = "done"  # message_stop seen (terminal)
    ERRORED = "errored"


# The fast path's states as module constants (docs/performance.md, "Why the hot code looks so").
_WAITING = State.WAITING
_MESSAGE = State.MESSAGE

_MACHINE = Machine[State](
    {
        State.WAITING: {"message_start": State.MESSAGE, "ping": State.WAITING},
        State.MESSAGE: {
            "content_block_start": State.MESSAGE,
            "content_block_delta": State.MESSAGE,
            "content_block_stop": State.MESSAGE,
            "message_delta": State.STOPPING,
            "message_stop": State.DONE,
            "ping": State.MESSAGE,
        },
        State.STOPPING: {
            # The SDKs read blocks after message_delta as before it (blocks open there are closed).
            "content_block_start": State.STOPPING,
            "content_block_delta": State.STOPPING,
            "content_block_stop": State.STOPPING,
            "message_delta": State.STOPPING,
            "message_stop": State.DONE,
            "ping": State.STOPPING,
        },
    },
    "anthropic: event {event!r} in state {state}",
)

# The grammar's state as a stream translator's phase.
_PHASES = {
    State.WAITING: Phase.WAITING,
    State.MESSAGE: Phase.STREAMING,
    State.STOPPING: Phase.TERMINAL,
    State.DONE: Phase.STOPPED,
    State.ERRORED: Phase.ERRORED,
}

_NORMALIZED_ID = "msg_proxai_normalized"
_A = Protocol.ANTHROPIC_MESSAGES
# Raw event types (``sse.RawName``) the fast path takes: a named delta, or a data-only event (typed
# by its payload); and a named ping.
_DELTA_NAMES: frozenset[object] = frozenset(
    {None, b"", b"message", "message", b"content_block_delta", "content_block_delta"}
)
_PING_NAMES: frozenset[object] = frozenset({b"ping", "ping"})
_DATA_ONLY: frozenset[object] = frozenset({None, b"", b"message", "message"})  # no ``event:`` line
_UNNAMED = "anthropic_messages.unnamed_event"
_NO_CONTENT = "anthropic_messages.message_start_content"
_DELTA_RAW = b"content_block_delta"  # a named delta's event type as the scanner gives it
_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_TEXT_PREFIX = b'{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":'
_THINKING_PREFIX = b'{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":'


Key = int | tuple[str, int]  # a block's place, or a start kept apart (``anthropic_index.start_key``)


class _Block:
    __slots__ = ("family", "fragments", "initial", "neg", "opaque", "open", "skipped", "tool")

    def __init__(self, family: str, tool: ToolBuffer | None, opaque: bool = False) -> None:
        self.family = family
        self.tool = tool
        self.opaque = opaque  # handed to the writer as Anthropic content (``Sink.opaque_start``)
        self.open = True
        # A tool block's input given in its start, as JSON: its arguments unless a fragment
        # comes (the SDKs then read the fragments alone), taken when the block stops.
        self.initial = ""
        self.fragments = False  # it stopped with input_json_delta text (the SDKs' buffer)
        self.skipped: list[tuple[int, int]] = []  # its fragments the SDKs skip (``unnamed_delta``)
        self.neg: dict[int, str] = {}  # fragments by negative index (``anthropic_index.missing_block``)


class AnthropicGrammar(GrammarBase):
    protocol = Protocol.ANTHROPIC_MESSAGES
    state: State

    __slots__ = (
        "_lean_index",
        "_lean_prefix",
        "_lean_text",
        "_searches",
        "_start_usage",
        "_stop_raw",
        "_usage",
        "blocks",
        "late",
        "late_input",
        "state",
    )

    def __init__(self, acc: Accum, output: Output | None = None) -> None:
        super().__init__(acc, output)
        self.state = State.WAITING
        self.blocks: dict[Key, _Block] = {}  # every started block by its place (open or stopped)
        self._usage = TokenUsage()  # the writers' usage (only kept while translating)
        self._stop_raw: str | None = None
        self._start_usage = True  # message_start carried usage (the SDKs update it at message_delta)
        # web searches by block index (translating only): the server_tool_use id, its input JSON
        self._searches: dict[Key, tuple[str, list[str]]] = {}
        self._lean_prefix = b""  # the armed block's payload up to its delta's string (``_lean``)
        self._lean_index = 0
        self._lean_text = True
        # after message_stop (``anthropic_quirks.after_stop``): each block started there ("" where
        # anthropic-python keeps its tool input, else None), and its tool text by place
        self.late: list[str | None] = []
        self.late_input: dict[int, str] = {}

    @property
    def phase(self) -> Phase:
        return _PHASES[self.state]

    def _fail_state(self) -> None:
        self.state = State.ERRORED

    def _not_object(self, name: str, data: str, obj: object) -> None:
        """A payload that is not a JSON object (``GrammarBase`` decides when it is a tolerated
        tail), in this protocol's words, unless the SDKs do not parse it (``unread_payload``)."""
        if unread_payload(self, name, data, obj is _NOT_JSON):
            return
        if not data or data.isspace():
            bad = "Anthropic event with an empty payload before any data"
            if self.acc.received:
                bad = f"Anthropic event {name!r} with an empty payload"
        elif obj is _NOT_JSON:
            bad = f"Anthropic event payload is not JSON: {data[:80]!r}"
        else:
            bad = f"Anthropic event payload is not a JSON object: {data[:80]!r}"
        self._judge_bad(bad)

    # -- streamed -------------------------------------------------------------------------------

    def _fast(self, name: RawName, obj: dict[str, Any], now: float) -> bool:
        """``content_block_delta`` of an open block with a matching, carried delta type, and
        ``ping``: the same effect as ``_event``, without the general checks' cost."""
        # The tests' forms are chosen by cost (docs/performance.md, "Why the hot code looks so"):
        # the type's bytes first, then the block; a missing key is a shape ``_event`` reports, so
        # it falls through. Equivalence: tests/observe/test_payload_reuse.py (fast paths off).
        if name != _DELTA_RAW:
            if name not in _DELTA_NAMES:
                # A ping is allowed in every live state and changes nothing; before
                # ``message_start`` the general path takes it (it is then the first JSON object:
                # ``Accum.received``).
                return name in _PING_NAMES and self.state is not _WAITING
            if name in _DATA_ONLY and (self.broken is None or _UNNAMED not in self.broken):
                return False  # the first event without an ``event:`` line: ``_event`` finds it
        if self.state is not _MESSAGE:
            return False
        try:
            if obj["type"] != "content_block_delta":
                return False
            index = obj["index"]
            delta = obj["delta"]
            if type(index) is not int or type(delta) is not dict:
                return False
            blk = self.blocks[index]
            dtype = delta["type"]
        except KeyError:
            return False
        if not blk.open:
            return False
        family = blk.family
        if dtype == "text_delta" and family == "text":
            s = delta.get("text")
            if type(s) is not str:
                return False
            if name == _DELTA_RAW and self.lean_name is NO_LEAN:
                self._arm(index, True)
            if s:
                self._text(index, s)
            return True
        if dtype == "thinking_delta" and family == "thinking":
            s = delta.get("thinking")
            if type(s) is not str:
                return False
            if name == _DELTA_RAW and self.lean_name is NO_LEAN:
                self._arm(index, False)
            if s:
                self._thinking(index, s)
            return True
        if dtype == "input_json_delta" and family == "tool":
            s = delta.get("partial_json")
            tb = blk.tool
            if type(s) is not str or tb is None or blk.opaque or name in _DATA_ONLY or tb.lead is not None:
                return False  # (an unnamed fragment: ``_event`` keeps its place; a start to judge)
            self._args(blk, index, s, now)
            return True
        if dtype == "signature_delta" and family == "thinking":
            s = delta.get("signature")
            if type(s) is not str:
                return False
            out = self.out
            if s and out is not None:
                out.delta(index, "signature", s)
            return True
        return False

    def _arm(self, index: int, text: bool) -> None:
        """A named text or thinking delta of open block ``index`` came in the message state: the
        next ones are read lean (``_lean``) until an event off the fast paths (``_general``)."""
        self.lean_name = _DELTA_RAW
        self._lean_prefix = (_TEXT_PREFIX if text else _THINKING_PREFIX) % index
        self._lean_index = index
        self._lean_text = text

    def _lean(self, data: bytes, now: float) -> bool:
        """``{"type":"content_block_delta","index":I,"delta":{"type":"text_delta","text":S}W}`` of
        the armed block (or its thinking twin), byte for byte but for the value ``S`` and the
        padding ``W`` (spaces and tabs: the API pads some deltas there): ``S`` alone is parsed.
        When it is one JSON string, the whole payload parses to exactly that object, so the
        effect is ``_fast``'s for it; anything else (another index, key order or spacing, more
        keys, a value that is not a string) goes the usual way."""
        # A result equal to its input removed nothing: not this shape. Equivalence:
        # tests/observe/test_lean_reading.py.
        rest = data.removeprefix(self._lean_prefix)
        if rest == data:
            return False
        value = rest.removesuffix(b"}}")
        if value == rest:  # padded between the braces, or not the shape
            value = rest.removesuffix(b"}")
            if value == rest:
                return False
            inner = value.rstrip(b" \t")
            value = inner.removesuffix(b"}")
            if value == inner:
                return False
        try:
            s = _loads(value)
        except _JSONDecodeError:
            return False
        if type(s) is not str:
            return False
        if s:
            if self._lean_text:
                self._text(self._lean_index, s)
            else:
                self._thinking(self._lean_index, s)
        return True

    def _text(self, index: int, s: str) -> None:
        """A non-empty text delta of open block ``index`` (the fast paths' one effect for it)."""
        acc = self.acc
        acc.content_seen = True
        acc.text_bytes += len(s) if s.isascii() else nbytes(s)
        if acc.cap_text is not None:
            acc.capture_text(s)
        out = self.out
        if out is not None:
            out.delta(index, "text", s)

    def _thinking(self, index: int, s: str) -> None:
        """A non-empty thinking delta of open block ``index`` (the fast paths' one effect for it)."""
        acc = self.acc
        acc.content_seen = True
        acc.reasoning_bytes += len(s) if s.isascii() else nbytes(s)
        if acc.cap_reasoning is not None:
            acc.capture_reasoning(s)
        out = self.out
        if out is not None:
            out.delta(index, "thinking", s)

    def _event(self, name: str, obj: dict[str, Any], now: float) -> None:
        # The SDKs skip a named ping, raise on a named error, read any other event by its data's type.
        if name == "ping":
            return
        etype = as_str(obj.get("type")) or ("" if name == "message" else name)
        if etype == name and name in KNOWN_EVENTS and obj.get("type") != name:  # both skip it
            self.conform("anthropic_messages.event_type", f"{name} without a type: skipped")
            return
        if name == "message":
            if etype != "ping":
                self._unnamed(etype)  # the SDKs skip an event without an ``event:`` line
        elif etype != name and etype in KNOWN_EVENTS and name != "error":
            self.acc.finding_once(
                "anthropic.event_name", "quirk", f"event {name!r} carries a {etype!r}: read by its type"
            )
        if etype == "ping" or (name == "message" and etype not in KNOWN_EVENTS):  # (both SDKs skip it)
            return
        if etype == "error" and name in ("error", "message"):
            self._error(obj)
            return
        state = self.state
        if etype not in KNOWN_EVENTS:  # both SDKs read it by its name, after message_start only
            keep = self.normalize and obj.get("type") == name and state is not State.WAITING
            self._unmodelled(f"anthropic.unmodelled.{etype}", keep, obj)
            return
        if state is State.WAITING and etype != "message_start":
            if not self.normalize or not starts_normalized(etype, obj):
                # The SDKs read nothing before message_start.
                self.conform("anthropic_messages.before_message_start", f"{etype} before message_start")
                return
            if etype == "content_block_start":
                self._start_normalized()
        elif etype == "message_start" and state is not State.WAITING:
            self._restart(obj, now)
            return
        if read_first(self, name, etype, obj, now):  # a delta, judged by its block (unnamed: skipped)
            return
        self.state = _MACHINE.step(self.state, etype)
        _HANDLERS[etype](self, obj, now)

    def _restart(self, obj: dict[str, Any], now: float) -> None:
        """Another ``message_start``: Python ignores it, Node raises. After normalize mode started the
        message for content that came first, it is its identity and usage, its blocks follow."""
        if self.acc.id is None and self.normalize:
            msg = as_dict(obj.get("message"))
            self.acc.id, self.acc.model = as_str(msg.get("id")), as_str(msg.get("model"))
            usage_summary(self.acc.usage, as_dict(msg.get("usage")))
            for idx, blk in self.blocks.items():
                if blk.open:
                    self._close(idx, blk, now)
            self.blocks.clear()
            return
        self.conform("anthropic_messages.second_message_start", "a second message_start")

    def _error(self, obj: dict[str, Any]) -> None:
        msg, errtype = error_fields(obj.get("error"))
        self.acc.upstream_error(msg, type=errtype)
        out = self.out
        if out is not None:
            err = as_dict(obj.get("error"))
            message = as_str(err.get("message")) or as_str(obj.get("message"))
            if message is None:
                message = "upstream error event: " + orjson.dumps(obj).decode()[:200]
            kind = classify_error(message, type=as_str(err.get("type")))
            self.upstream_failed()
            out.upstream_error(kind, message)
            return
        self.upstream_failed()

    def _start_normalized(self) -> None:
        """Normalize mode: content before ``message_start`` starts a message (a repair)."""
        self.acc.finding("anthropic.no_message_start", "repair", "content arrived before message_start")
        self.state = State.MESSAGE
        if self.out is not None:
            self.out.start(_NORMALIZED_ID, "", None)

    def _unnamed(self, etype: str) -> None:
        """An event without an ``event:`` line: both SDKs skip it (docs/design/conformance.md)."""
        if etype == "message_start":
            self.conform("anthropic_messages.unnamed_start", "message_start has no event: line")
        elif etype == "message_stop":  # Python ends there anyway, Node never sees the end
            self.conform("anthropic_messages.no_message_stop", "message_stop has no event: line")
        else:
            self.conform(_UNNAMED, f"{etype} has no event: line")
        if etype == "content_block_start":  # both skip it: its deltas find no block
            self.conform("anthropic_messages." + ("block_index" if self.blocks else "no_block"), "unnamed")

    def _ended_early(self) -> None:
        self.acc.event_index = self.events
        if self.state is not State.WAITING:
            self.conform("anthropic_messages.no_message_stop", "the stream ended before message_stop")
        elif self.acc.received and "anthropic_messages.unnamed_start" not in (self.broken or ()):
            self.conform("anthropic_messages.no_message_start", "the stream ended without message_start")

    def _after_end(self, payloads: Payloads, base: int) -> None:
        """Events after ``message_stop``: the SDKs read on (Python into its message; Node raises on
        a ``message_start`` and keeps its message otherwise). Not interpreted here but the first
        named one of each read, and each content event against the SDKs' blocks (``after_stop``)."""
        first = True
        for k, (name, data) in enumerate(payloads):
            if name in _DATA_ONLY or name in _PING_NAMES:
                continue
            self.acc.event_index = base + k
            if first:
                first = False
                if name in (b"error", "error"):  # both SDKs raise it
                    self.conform("anthropic_messages.error_after_stop", "an error event after message_stop")
                elif name in (b"message_start", "message_start"):
                    self.conform(
                        "anthropic_messages.second_message_start", "message_start after message_stop"
                    )
                else:
                    self.conform(
                        "anthropic_messages.after_message_stop", f"{event_name(name)} after message_stop"
                    )
            after_stop(self, event_name(name), data)

    def _message_start(self, obj: dict[str, Any], now: float) -> None:
        if obj.get("message") is None:  # Python: None.to_dict(); Node: no message to end with
            self.conform("anthropic_messages.message_start_message", "message_start without message")
        msg = as_dict(obj.get("message"))
        if msg and type(msg.get("content")) is not list:  # Node maps it at the end, both append to it
            self.conform(_NO_CONTENT, f"message_start's message with content {msg.get('content')!r:.40}")
        acc = self.acc
        acc.id = as_str(msg.get("id"))
        acc.model = as_str(msg.get("model"))
        usage = as_dict(msg.get("usage"))
        self._start_usage = "usage" in msg and type(msg["usage"]) is dict
        usage_summary(self.acc.usage, usage)
        out = self.out
        if out is not None:
            mid = acc.id
            if not mid:
                raise UpstreamProtocolError("message_start without message.id")
            usage_into(usage, self._usage)
            u = self._usage
            out.start(
                mid,
                acc.model or "",
                TokenUsage(
                    u.input,
                    None,
                    u.cache_read,
                    u.cache_write,
                    cache_write_5m=u.cache_write_5m,
                    cache_write_1h=u.cache_write_1h,
                ),
            )
        # A message that arrives whole in ``message_start`` (the continuation of a programmatic
        # tool call: content and stop_reason set, no block events, often no ``message_delta``):
        # its blocks take the first indexes, as the SDK's accumulator counts, and are read as if
        # they had streamed.
        for block in as_list(msg.get("content")):
            idx = len(self.blocks)
            blk = self._open(idx, as_dict(block), now)
            self._close(idx, blk, now)
        reason = as_str(msg.get("stop_reason"))
        if reason is not None:
            acc.stop(reason, stop_reasons.ANTHROPIC)
            self._stop_raw = reason

    def _block_start(self, obj: dict[str, Any], now: float) -> None:
        if (broken := self.broken) is not None and _NO_CONTENT in broken:  # Python appends to it
            self.conform(
                "anthropic_messages.block_start_content", "a block, and no content list to add it to"
            )
        # Its place in the SDKs' content, which a dense stream's index is; else ``start_key``.
        key = obj.get("index")
        if type(key) is not int or key != len(self.blocks) or key in self.blocks:
            key = start_key(self, obj)  # (a block normalize opened may hold that index)
        if self.state is State.STOPPING:
            self.acc.finding_once(
                "anthropic.block_after_message_delta", "quirk", "a block after message_delta"
            )
        self._open(key, as_dict(obj.get("content_block")), now)

    def _open(self, idx: Key, block: dict[str, Any], now: float) -> _Block:
        """Block ``idx`` as its start (or a whole message's content) gives it. A block type the
        neutral calls do not model (server and MCP tool use, their results, ...) reaches a writer
        as Anthropic content (``opaque_start``); the summary still counts a tool call in it."""
        btype = as_str(block.get("type")) or ""
        acc = self.acc
        out = self.out
        kind = TOOL_KINDS.get(btype)
        family = "tool" if kind is not None else FAMILIES.get(btype, "other")
        opaque = False
        if out is not None:
            opaque = family == "other" or kind not in (None, "function")
        if kind is not None:
            tid = as_str(block.get("id"))
            name = as_str(block.get("name"))
            if out is not None and not opaque and (not tid or not name):
                raise UpstreamProtocolError(f"tool_use block {idx} without id or name")
            tb = acc.tool_start(idx, tid, name, kind, now)
            blk = self.blocks[idx] = _Block("tool", tb, opaque)
            initial = block.get("input")
            if type(initial) is dict and initial:
                blk.initial = orjson.dumps(initial).decode()
            if out is not None:
                if opaque:
                    self._opaque_start(idx, btype, block)
                else:
                    out.block_start(idx, "tool", id=tid, name=name)
            return blk
        blk = self.blocks[idx] = _Block(family, None, opaque)
        if family in ("text", "thinking") and type(block.get(family)) is not str:  # Python adds to it
            self.conform(f"anthropic_messages.{family}_start", f"a {btype} block without its {family}")
        if opaque:
            self._opaque_start(idx, btype, block)
        elif family == "text":
            text = as_str(block.get("text")) or ""
            acc.text(text)
            if out is not None:
                out.block_start(idx, "text")
                if text:
                    out.delta(idx, "text", text)
        elif family == "thinking":
            text = as_str(block.get("thinking")) or ""
            acc.reasoning(text)
            if out is not None:
                out.block_start(idx, "thinking")
                if text:
                    out.delta(idx, "thinking", text)
                if sig := as_str(block.get("signature")):
                    out.delta(idx, "signature", sig)
        elif family == "redacted":
            acc.extra["redacted_thinking_blocks"] = acc.extra.get("redacted_thinking_blocks", 0) + 1
            if out is not None:
                out.block_start(idx, "redacted_thinking", data=as_str(block.get("data")) or "")
        return blk

    def _opaque_start(self, idx: Key, btype: str, block: dict[str, Any]) -> None:
        """An opaque block for the writer; a web search's blocks are also given as one neutral
        ``WebSearchCall`` (when its result block arrives)."""
        out = self.out
        assert out is not None
        call = self._web_search(idx, btype, block)
        out.opaque_start(idx, _A, btype, block, neutral=call is not None or idx in self._searches)
        if call is not None:
            out.web_search(idx, call)

    def _web_search(self, idx: Key, btype: str, block: dict[str, Any]) -> WebSearchCall | None:
        """A ``server_tool_use`` of ``web_search`` is remembered (its query streams as its input);
        its ``web_search_tool_result`` completes the search: the neutral call, with the pages
        found (an error result finds none)."""
        if btype == "server_tool_use" and block.get("name") == "web_search":
            sid = as_str(block.get("id")) or f"srvtoolu_{idx}"
            initial = block.get("input")
            self._searches[idx] = (
                sid,
                [orjson.dumps(initial).decode()] if isinstance(initial, dict) and initial else [],
            )
            return None
        if btype != "web_search_tool_result":
            return None
        tid = as_str(block.get("tool_use_id"))
        found = [(k, v) for k, v in self._searches.items() if v[0] == tid]
        if not found:
            return None
        del self._searches[found[0][0]]
        query = _query("".join(found[0][1][1]))
        content = block.get("content")
        pages = content if isinstance(content, list) else []
        sources = tuple(
            (url, as_str(p.get("title")))
            for p in map(as_dict, pages)
            if p.get("type") == "web_search_result" and (url := as_str(p.get("url")))
        )
        return WebSearchCall(found[0][1][0], query, sources, _A)

    def _args(self, blk: _Block, idx: Key, s: str, now: float) -> None:
        """A fragment of a tool call's arguments (bounded by ``max_tool_args``: past it a
        translation cannot check the whole, and ends). An opaque block's fragments reach the
        writer as its events (``opaque_event``), not here."""
        if blk.initial:
            blk.initial = ""
            self.acc.finding_once(
                "anthropic.start_input_replaced",
                "quirk",
                f"tool block {idx}: input in its start and fragments (the fragments are its input)",
            )
        tb = blk.tool
        assert tb is not None
        self.acc.tool_args(tb, s, now)
        if self.out is not None and s and not blk.opaque:
            if tb.overflow:
                raise UpstreamProtocolError(
                    f"tool call arguments exceed the limit of {self.acc.limits_tool_args} bytes"
                )
            self.out.delta(idx, "args", s)

    def _block_delta(self, obj: dict[str, Any], now: float) -> None:
        # Every content_block_delta off the fast path, read as the SDKs read it: the block it
        # names takes it when its type is the block's, stopped or not; any other is dropped.
        idx = delta_index(self, obj)
        if idx is None:
            return
        delta = as_dict(obj.get("delta"))
        dtype = as_str(delta.get("type")) or ""
        out = self.out
        if not dtype and out is not None:
            raise UpstreamProtocolError(f"content_block_delta without a delta type (index {idx})")
        want = DELTA_FAMILY.get(dtype)
        blk = self.blocks.get(idx)
        if blk is None:
            if self.normalize and want in ("text", "thinking") and type(idx) is int:
                blk = self._open_normalized(idx, want)
            else:  # Python IndexError (negative: from the end); Node drops it, or raises on no block
                return missing_block(self, idx, want, delta)
        family = blk.family
        if want is not None and want != family:
            self.conform(
                "anthropic_messages.delta_type",
                f"{dtype} in a {family} block (index {idx}): dropped",
            )
            return
        if not blk.open:  # the SDKs append it: anthropic_quirks
            if want is None:
                return  # nothing the SDKs read, for a block the writer closed
            if want == "tool" and type(value := delta.get("partial_json")) is str:
                return late_args(self, blk, idx, value, now)
            self.acc.finding_once(
                "anthropic.delta_after_stop", "quirk", f"{dtype} after its block {idx} stopped: read"
            )
            if out is not None:  # the writer's block is closed: the rest goes in a block of its own
                late_text(self, family, delta, dtype)
                out = None
        if blk.opaque or want is None:
            # A delta of an opaque block, or one the neutral calls do not model in a modelled
            # block: Anthropic content for the writer. The summary counts an opaque tool call's
            # arguments; any other delta in a block of a type it does not know is not judged.
            if want == "tool":
                value = delta.get("partial_json")
                if type(value) is str:
                    self._args(blk, idx, value, now)
                elif not field_missing(self, blk, idx, "args", value):
                    raise UpstreamProtocolError(f"{dtype} without partial_json (index {idx})")
            if out is not None:
                search = self._searches.get(idx)
                if search is not None and type(delta.get("partial_json")) is str:
                    search[1].append(delta["partial_json"])
                out.opaque_event(idx, _A, delta)
            return
        carried = DELTA_FIELD.get(dtype)
        if carried is None:  # citations_delta: a web citation, or another kind (documents)
            if out is not None:
                cite = as_dict(delta.get("citation"))
                url = as_str(cite.get("url"))
                if cite.get("type") == "web_search_result_location" and url:
                    title = as_str(cite.get("title"))
                    cited = as_str(cite.get("cited_text")) or ""
                    out.citation(idx, Citation(url, title, cited, None, None, _A, delta))
                else:
                    out.opaque_event(idx, _A, delta)
            return
        field, kind = carried
        value = delta.get(field)
        if type(value) is not str:
            if field_missing(self, blk, idx, kind, value):
                return
            raise UpstreamProtocolError(f"{dtype} without {field} (index {idx})")
        acc = self.acc
        if kind == "text":
            acc.text(value)
        elif kind == "thinking":
            acc.reasoning(value)
        elif kind == "args":
            self._args(blk, idx, value, now)
            return
        if value and out is not None:
            out.delta(idx, kind, value)

    def _open_normalized(self, idx: int, family: str) -> _Block:
        """Normalize mode: a delta for a block that never started opens it (a repair)."""
        if self.state is State.WAITING:
            self._start_normalized()
        self.acc.finding(
            "anthropic.no_block_start",
            "repair",
            f"content_block_delta for index {idx} without content_block_start",
        )
        blk = self.blocks[idx] = _Block(family, None)
        if self.out is not None:
            self.out.block_start(idx, KINDS[family])
        return blk

    def _block_stop(self, obj: dict[str, Any], now: float) -> None:
        idx = stop_index(self, obj)
        if idx is None:
            return
        blk = self.blocks.get(idx)
        if blk is None:  # Python raises IndexError, Node reads nothing
            self.conform(
                "anthropic_messages.block_index", f"content_block_stop for block {idx}, never started"
            )
        elif not blk.open:
            self.acc.finding_once("anthropic.stopped_again", "quirk", f"content block {idx} stopped again")
        else:
            self._close(idx, blk, now)

    def _close(self, idx: Key, blk: _Block, now: float) -> None:
        blk.open = False
        tb = blk.tool
        if tb is not None:
            acc = self.acc
            blk.fragments = tb.nbytes > 0
            if blk.initial:  # the input given in the start, and no fragment came
                initial, blk.initial = blk.initial, ""
                self._args(blk, idx, initial, now)
            elif tb.nbytes == 0 and not tb.overflow:
                # No input_json_delta at all: the block's input is the empty object.
                acc.tool_set(tb, "{}", now)
            self._tool_input_conforms(idx, blk)
            acc.tool_finish(tb)
            if self.out is not None and not tb.valid:
                raise UpstreamProtocolError(
                    f"tool_use block {idx}: the streamed arguments are not valid JSON"
                )
        if self.out is not None:
            self.out.block_stop(idx)

    def _tool_input_conforms(self, idx: Key, blk: _Block) -> None:
        """The whole input as the SDKs join it, without the fragments they skip (``sdk_join``):
        ``fragments.input_fault`` (each fragment's start was judged as it came, ``fragments.torn``)."""
        if (tb := blk.tool) is None or (buf := tb.buf) is None:
            return
        text = sdk_join(buf.getvalue(), blk.skipped) if blk.skipped else buf.getvalue()
        if (fault := input_fault(text, json_valid(text))) is not None:
            how = "as the SDKs join it (without its unnamed fragments) " if blk.skipped else ""
            detail = f"tool_use block {idx}: the input {how}{FAULTS[fault]}"
            if fault == "after":  # both SDKs read the value alone: a note
                self.acc.finding_once("anthropic.input_after_value", "quirk", detail)
            else:
                self.conform(f"anthropic_messages.tool_input_{fault}", detail)

    def _close_open(self, now: float) -> None:
        """The end of the message with blocks still open: a block whose content is complete is
        closed there (a quirk); a tool call whose arguments are not complete JSON stays open
        (the summary's ``unfinished_tool``; a translation cannot go on)."""
        for idx, blk in self.blocks.items():
            if not blk.open:
                continue
            tb = blk.tool
            if tb is not None and tb.nbytes and (tb.buf is None or not json_valid(tb.buf.getvalue())):
                self._tool_input_conforms(idx, blk)
                if self.out is not None:
                    raise UpstreamProtocolError(
                        f"tool_use block {idx}: the streamed arguments are not valid JSON"
                    )
                continue
            self.acc.finding(
                "anthropic.block_not_stopped",
                "quirk",
                f"content block {idx} was not stopped before the message ended",
            )
            self._close(idx, blk, now)

    def _message_delta(self, obj: dict[str, Any], now: float) -> None:
        if type(obj.get("delta")) is not dict:
            self.conform("anthropic_messages.message_delta_delta", "message_delta without delta")
        delta = as_dict(obj.get("delta"))
        reason = as_str(delta.get("stop_reason"))
        if reason is not None:
            self.acc.stop(reason, stop_reasons.ANTHROPIC)
        usage = obj.get("usage")
        if type(usage) is not dict:
            self.conform("anthropic_messages.message_delta_usage", "message_delta without usage")
        elif as_int(usage.get("output_tokens")) is None:  # the SDKs set it: to None
            self.conform(
                "anthropic_messages.message_delta_output_tokens", "message_delta usage without output_tokens"
            )
        if not self._start_usage:
            self.conform("anthropic_messages.message_start_usage", "message_start without usage")
        usage_summary(self.acc.usage, as_dict(usage))
        if self.out is not None:
            self._stop_raw = as_str(delta.get("stop_reason"))
            if type(usage) is dict:
                usage_into(usage, self._usage)  # cumulative totals overwrite
        self._close_open(now)

    def _message_stop(self, obj: dict[str, Any], now: float) -> None:
        self._close_open(now)
        self.acc.reach_terminal()
        out = self.out
        if out is not None:
            for idx, (sid, parts) in self._searches.items():  # a search whose results never came
                out.web_search(idx, WebSearchCall(sid, _query("".join(parts)), (), _A))
            self._searches.clear()
            out.end(Stop(stop_reasons.from_anthropic(self._stop_raw), self._stop_raw), self._usage)

    def translate_eof(self) -> None:
        """The upstream ended: a translated stream that did not reach ``message_stop`` fails."""
        if self.state is not State.DONE:
            raise TruncatedStreamError("upstream closed the Anthropic stream before message_stop")

    # -- non-streamed ---------------------------------------------------------------------------

    def _body(self, obj: dict[str, Any]) -> None:
        if obj.get("type") not in ("message", None):
            raise UpstreamProtocolError(f"anthropic: body type {obj.get('type')!r} is not 'message'")
        acc = self.acc
        acc.id = as_str(obj.get("id"))
        acc.model = as_str(obj.get("model"))
        for i, block in enumerate(as_list(obj.get("content"))):
            b = as_dict(block)
            btype = as_str(b.get("type")) or ""
            kind = TOOL_KINDS.get(btype)
            if kind is not None:
                inp = b.get("input")
                args = orjson.dumps(inp).decode() if inp is not None else "{}"
                acc.tool_complete(i, as_str(b.get("id")), as_str(b.get("name")), kind, args)
            elif btype == "text":
                acc.text(as_str(b.get("text")) or "")
            elif btype == "thinking":
                acc.reasoning(as_str(b.get("thinking")) or "")
            elif btype == "redacted_thinking":
                acc.extra["redacted_thinking_blocks"] = acc.extra.get("redacted_thinking_blocks", 0) + 1
        acc.stop(as_str(obj.get("stop_reason")), stop_reasons.ANTHROPIC)
        usage_summary(self.acc.usage, as_dict(obj.get("usage")))


_HANDLERS = {
    "message_start": AnthropicGrammar._message_start,
    "content_block_start": AnthropicGrammar._block_start,
    "content_block_stop": AnthropicGrammar._block_stop,
    "message_delta": AnthropicGrammar._message_delta,
    "message_stop": AnthropicGrammar._message_stop,
}


def _query(input_json: str) -> str | None:
    """The ``query`` of a web search's input JSON (``None`` when it is not one)."""
    try:
        return as_str(as_dict(orjson.loads(input_json or "{}")).get("query"))
    except orjson.JSONDecodeError:
        return None
