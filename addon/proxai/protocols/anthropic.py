"""Anthropic Messages observer: the protocol state machine, streamed and non-streamed.

The rules (docs/design/protocol-grammars.md, "Anthropic Messages"):
``message_start`` -> ``content_block_start`` /
``content_block_delta`` / ``content_block_stop`` -> ``message_delta`` (stop_reason, cumulative
usage) -> ``message_stop`` (the terminal event: completed). Content blocks are keyed
by the stream's ``index``; a duplicate start, an orphan delta, a stop without start, or a delta
whose type does not match its block is a ``SemanticStreamError``. Usage is
``input_tokens`` / ``output_tokens`` / ``cache_read_input_tokens`` (cache read) /
``cache_creation_input_tokens`` (cache write); ``message_delta`` usage values are cumulative
and overwrite earlier ones; total = input + output + cache write + cache read.

The lifecycle is an Enum and one transition table (``machine.Machine``). ``error`` is
accepted in every live state (the upstream's own error: outcome error). Unknown event types
are ignored (forward compatibility); events after ``message_stop`` are not interpreted.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import orjson

from proxai.errors import SemanticStreamError, UpstreamProtocolError
from proxai.model import Protocol, StopClass
from proxai.sse import RawName

from .common import Accum, ObserverBase, ToolBuffer, error_fields, nbytes
from .machine import Machine, as_dict, as_int, as_list, as_str


class State(Enum):
    WAITING = "waiting"  # before message_start
    MESSAGE = "message"  # content blocks flowing
    STOPPING = "stopping"  # message_delta seen; only message_stop (or more deltas) may follow
    DONE = "done"  # message_stop seen (terminal)
    ERRORED = "errored"


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
        State.STOPPING: {"message_delta": State.STOPPING, "message_stop": State.DONE, "ping": State.STOPPING},
    },
    "anthropic: event {event!r} in state {state}",
)

KNOWN_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
    }
)

STOP_CLASSES: dict[str, StopClass] = {
    "end_turn": StopClass.END_TURN,
    "max_tokens": StopClass.MAX_TOKENS,
    "model_context_window_exceeded": StopClass.MAX_TOKENS,
    "tool_use": StopClass.TOOL_USE,
    "stop_sequence": StopClass.STOP_SEQUENCE,
    "refusal": StopClass.REFUSAL,
    "pause_turn": StopClass.PAUSE_TURN,
}

# content block type -> (block family, tool kind)
_TOOL_KINDS: dict[str, str] = {
    "tool_use": "function",
    "server_tool_use": "server_tool",
    "mcp_tool_use": "mcp",
}

# delta type -> the block family it belongs to
_DELTA_FAMILY: dict[str, str] = {
    "text_delta": "text",
    "citations_delta": "text",
    "input_json_delta": "tool",
    "thinking_delta": "thinking",
    "signature_delta": "thinking",
}


class _Block:
    __slots__ = ("family", "input", "open", "tool")

    def __init__(self, family: str, tool: ToolBuffer | None, input: Any = None) -> None:
        self.family = family
        self.tool = tool
        self.input = input  # a tool block's ``input`` at its start (kept only when non-empty)
        self.open = True


class AnthropicObserver(ObserverBase):
    protocol = Protocol.ANTHROPIC_MESSAGES

    __slots__ = ("blocks", "state")

    def __init__(self, acc: Accum) -> None:
        super().__init__(acc)
        self.state = State.WAITING
        self.blocks: list[_Block] = []

    def _transition(self, etype: str) -> None:
        self.state = _MACHINE.step(self.state, etype)

    def _fail_state(self) -> None:
        self.state = State.ERRORED

    # -- streamed -------------------------------------------------------------------------------

    def _fast(self, name: RawName, obj: dict[str, Any], now: float) -> bool:
        """``content_block_delta`` of an open block with a matching delta type, and ``ping``:
        the same effect as ``_event``, without the general checks' cost."""
        etype = obj.get("type")
        if etype != "content_block_delta":
            # Allowed in every live state, changes nothing; before ``message_start`` the general
            # path takes it (it is then the first JSON object: ``Accum.received``).
            return etype == "ping" and self.state is not State.WAITING
        if self.state is not State.MESSAGE:
            return False
        index = obj.get("index")
        delta = obj.get("delta")
        blocks = self.blocks
        if type(index) is not int or type(delta) is not dict or not 0 <= index < len(blocks):
            return False
        blk = blocks[index]
        if not blk.open:
            return False
        dtype = delta.get("type")
        family = blk.family
        acc = self.acc
        if dtype == "text_delta" and family == "text":
            s = delta.get("text")
            if type(s) is not str:
                return False
            if s:
                acc.content_seen = True
                acc.text_bytes += len(s) if s.isascii() else nbytes(s)
                if acc.cap_text is not None:
                    acc.capture_text(s)
            return True
        if dtype == "thinking_delta" and family == "thinking":
            s = delta.get("thinking")
            if type(s) is not str:
                return False
            if s:
                acc.content_seen = True
                acc.reasoning_bytes += len(s) if s.isascii() else nbytes(s)
                if acc.cap_reasoning is not None:
                    acc.capture_reasoning(s)
            return True
        if dtype == "input_json_delta" and family == "tool":
            s = delta.get("partial_json")
            tb = blk.tool
            if type(s) is not str or tb is None:
                return False
            acc.tool_args(tb, s, now)
            return True
        return dtype == "signature_delta" and family == "thinking"

    def _event(self, name: str, obj: dict[str, Any], now: float) -> None:
        etype = obj.get("type")
        if type(etype) is not str:
            etype = name
        if etype == "error" or (etype not in KNOWN_EVENTS and obj.get("error") is not None):
            msg, errtype = error_fields(obj.get("error"))
            self.acc.upstream_error(msg, type=errtype)
            self.upstream_failed()
            return
        if etype not in KNOWN_EVENTS:
            return
        self._transition(etype)
        handler = _HANDLERS.get(etype)
        if handler is not None:
            handler(self, obj, now)

    def _message_start(self, obj: dict[str, Any], now: float) -> None:
        msg = as_dict(obj["message"])
        acc = self.acc
        acc.id = as_str(msg.get("id"))
        acc.model = as_str(msg.get("model"))
        # A message that arrives whole in ``message_start`` (the continuation of a programmatic
        # tool call: its content and stop_reason already set, no block events, no
        # ``message_delta``): its blocks take the first indexes, as the SDK's accumulator counts.
        for block in as_list(msg.get("content")):
            self.blocks.append(self._whole_block(len(self.blocks), as_dict(block)))
        reason = as_str(msg.get("stop_reason"))
        if reason is not None:
            acc.stop(reason, STOP_CLASSES)
        self._usage(as_dict(msg.get("usage")))

    def _whole_block(self, index: int, b: dict[str, Any]) -> _Block:
        """A content block given whole (a non-streamed body, or ``message_start`` content)."""
        acc = self.acc
        btype = as_str(b.get("type")) or ""
        kind = _TOOL_KINDS.get(btype)
        family = "other"
        if kind is not None:
            inp = b.get("input")
            args = orjson_dumps(inp) if inp is not None else "{}"
            acc.tool_complete(index, as_str(b.get("id")), as_str(b.get("name")), kind, args)
            family = "tool"
        elif btype == "text":
            acc.text(as_str(b.get("text")) or "")
            family = "text"
        elif btype == "thinking":
            acc.reasoning(as_str(b.get("thinking")) or "")
            family = "thinking"
        elif btype == "redacted_thinking":
            acc.extra["redacted_thinking_blocks"] = acc.extra.get("redacted_thinking_blocks", 0) + 1
            family = "redacted"
        blk = _Block(family, None)
        blk.open = False
        return blk

    def _block_start(self, obj: dict[str, Any], now: float) -> None:
        index = obj["index"]
        block = as_dict(obj["content_block"])
        if type(index) is not int:
            raise UpstreamProtocolError(f"anthropic: content_block_start index {index!r} is not an integer")
        if index < len(self.blocks):
            raise SemanticStreamError(f"anthropic: duplicate content_block_start for index {index}")
        if index != len(self.blocks):
            raise SemanticStreamError(
                f"anthropic: content_block_start index {index}, expected {len(self.blocks)} (dense, in order)"
            )
        btype = as_str(block.get("type")) or ""
        acc = self.acc
        kind = _TOOL_KINDS.get(btype)
        if kind is not None:
            tb = acc.tool_start(index, as_str(block.get("id")), as_str(block.get("name")), kind, now)
            inp = block.get("input")
            self.blocks.append(_Block("tool", tb, inp if inp else None))
            return
        if btype == "text":
            self.blocks.append(_Block("text", None))
            acc.text(as_str(block.get("text")) or "")
        elif btype == "thinking":
            self.blocks.append(_Block("thinking", None))
            acc.reasoning(as_str(block.get("thinking")) or "")
        elif btype == "redacted_thinking":
            self.blocks.append(_Block("redacted", None))
            acc.extra["redacted_thinking_blocks"] = acc.extra.get("redacted_thinking_blocks", 0) + 1
        else:
            self.blocks.append(_Block("other", None))

    def _block(self, obj: dict[str, Any], what: str) -> _Block:
        index = obj["index"]
        if type(index) is not int or not 0 <= index < len(self.blocks):
            raise SemanticStreamError(f"anthropic: {what} for index {index!r} without content_block_start")
        blk = self.blocks[index]
        if not blk.open:
            raise SemanticStreamError(f"anthropic: {what} for index {index} after its content_block_stop")
        return blk

    def _block_delta(self, obj: dict[str, Any], now: float) -> None:
        blk = self._block(obj, "content_block_delta")
        delta = as_dict(obj["delta"])
        dtype = as_str(delta.get("type")) or ""
        family = _DELTA_FAMILY.get(dtype)
        if family is None:
            return  # a delta type we do not know: forward compatible
        if family != blk.family:
            raise SemanticStreamError(f"anthropic: {dtype} for a {blk.family} block (index {obj['index']})")
        acc = self.acc
        if dtype == "text_delta":
            acc.text(delta["text"])
        elif dtype == "input_json_delta":
            assert blk.tool is not None
            acc.tool_args(blk.tool, delta["partial_json"], now)
        elif dtype == "thinking_delta":
            acc.reasoning(delta["thinking"])

    def _block_stop(self, obj: dict[str, Any], now: float) -> None:
        blk = self._block(obj, "content_block_stop")
        blk.open = False
        if blk.tool is not None:
            tb = blk.tool
            if tb.nbytes == 0 and not tb.overflow:
                # No input_json_delta at all: the block's input is what its start gave (a
                # programmatic tool call carries it there), else the empty object.
                self.acc.tool_set(tb, "{}" if blk.input is None else orjson_dumps(blk.input), now)
            self.acc.tool_finish(tb)

    def _message_delta(self, obj: dict[str, Any], now: float) -> None:
        delta = as_dict(obj.get("delta"))
        reason = as_str(delta.get("stop_reason"))
        if reason is not None:
            self.acc.stop(reason, STOP_CLASSES)
        self._usage(as_dict(obj.get("usage")))

    def _message_stop(self, obj: dict[str, Any], now: float) -> None:
        self.acc.terminal = True

    def _usage(self, u: dict[str, Any]) -> None:
        """Cumulative: every value present overwrites the earlier one."""
        if not u:
            return
        usage = self.acc.usage
        v = as_int(u.get("input_tokens"))
        if v is not None:
            usage.input_tokens = v
        v = as_int(u.get("output_tokens"))
        if v is not None:
            usage.output_tokens = v
        v = as_int(u.get("cache_read_input_tokens"))
        if v is not None:
            usage.cache_read_tokens = v
        v = as_int(u.get("cache_creation_input_tokens"))
        if v is not None:
            usage.cache_write_tokens = v
        parts = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
        usage.total_tokens = sum(p for p in parts if p is not None)

    # -- non-streamed ---------------------------------------------------------------------------

    def _body(self, obj: dict[str, Any]) -> None:
        if obj.get("type") not in ("message", None):
            raise UpstreamProtocolError(f"anthropic: body type {obj.get('type')!r} is not 'message'")
        acc = self.acc
        acc.id = as_str(obj.get("id"))
        acc.model = as_str(obj.get("model"))
        for i, block in enumerate(as_list(obj.get("content"))):
            self._whole_block(i, as_dict(block))
        acc.stop(as_str(obj.get("stop_reason")), STOP_CLASSES)
        self._usage(as_dict(obj.get("usage")))


def orjson_dumps(v: Any) -> str:
    return orjson.dumps(v).decode()


_HANDLERS = {
    "message_start": AnthropicObserver._message_start,
    "content_block_start": AnthropicObserver._block_start,
    "content_block_delta": AnthropicObserver._block_delta,
    "content_block_stop": AnthropicObserver._block_stop,
    "message_delta": AnthropicObserver._message_delta,
    "message_stop": AnthropicObserver._message_stop,
}
