"""Anthropic Messages source wrapper (seed 000 "Anthropic: per-stream index", seed 001).

Validates the event order of an Anthropic stream and drives a ``Sink``:

- ``message_start`` sets the stream identity; a second one is a ``SemanticStreamError``
  ("duplicate message_start").
- ``content_block_start`` opens a block by its index (a reused index is a duplicate start);
  ``content_block_delta`` must name an open block and carry a delta of the block's type
  (``text_delta`` in text, ``thinking_delta`` / ``signature_delta`` in thinking,
  ``input_json_delta`` in tool_use); ``content_block_stop`` must name an open block.
- ``message_delta`` records stop reason and cumulative usage (terminal signal); ``message_stop``
  ends the stream. Nothing but ``ping`` may follow.
- ``event: error`` is an upstream error: it is translated, never dropped.

Repairs of compatible providers (seed 001 "compatibility normalization", seed 002): a data-only
event (no ``event:`` line) is typed by its payload's ``type``; a missing ``message_delta.usage``
keeps the ``message_start`` usage; non-dense block indexes are re-indexed by the writer; an
empty payload after data arrived is ignored. Lifecycle-free deltas (a delta for a block, or a
message, that never started) are accepted ONLY when ``lifecycle_free`` is set (normalize mode,
seed 004); otherwise they are orphan deltas.

Blocks and deltas the neutral vocabulary does not model (server tool use and its results, MCP
blocks, compaction, tool search results, a document's ``citations_delta``, ...) are handed to the
sink as opaque Anthropic content: normalize mode writes them as they came, another protocol's
writer leaves them out and counts them. A web citation (``citations_delta`` with a
``web_search_result_location``) is a ``Citation``, which every protocol can carry. A message
that arrives whole in ``message_start`` (its content and ``stop_reason`` set, ``message_stop``
with no ``message_delta``: the continuation of a programmatic tool call, which the SDKs accept)
is carried as if its blocks had streamed.
"""

from __future__ import annotations

from typing import Any

import orjson

from proxai.errors import SemanticStreamError, UpstreamProtocolError
from proxai.model import Protocol
from proxai.protocols.machine import as_dict, as_int, as_str
from proxai.translate.stream import stops
from proxai.translate.stream.lifecycle import Lifecycle, Phase, StreamIdentity
from proxai.translate.stream.sink import BlockKind, Citation, DeltaKind, Sink, Stop, TokenUsage

from .common import DEFAULT_MAX_TOOL_ARGS, PayloadValue, ToolArgs, classify, load_object

_DELTA_BLOCK: dict[str, BlockKind] = {
    "text_delta": "text",
    "citations_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "thinking",
    "input_json_delta": "tool",
}
# delta type -> (the payload field it carries, the sink's delta kind)
_DELTA_FIELD: dict[str, tuple[str, DeltaKind]] = {
    "text_delta": ("text", "text"),
    "input_json_delta": ("partial_json", "args"),
    "thinking_delta": ("thinking", "thinking"),
    "signature_delta": ("signature", "signature"),
}
# The hot path of ``_block_delta``: delta type -> (block kind, payload field, sink's delta kind).
_CARRIED: dict[str, tuple[BlockKind, str, DeltaKind]] = {
    dtype: (_DELTA_BLOCK[dtype], field, kind) for dtype, (field, kind) in _DELTA_FIELD.items()
}
_A = Protocol.ANTHROPIC_MESSAGES
_BLOCK_TYPES: dict[str, BlockKind] = {
    "text": "text",
    "thinking": "thinking",
    "redacted_thinking": "redacted_thinking",
    "tool_use": "tool",
}


def usage_in(u: dict[str, Any], into: TokenUsage) -> None:
    """Anthropic usage (cumulative; input excludes cache) -> neutral usage, overwriting given fields."""
    inp = as_int(u.get("input_tokens"))
    cr = as_int(u.get("cache_read_input_tokens"))
    cw = as_int(u.get("cache_creation_input_tokens"))
    out = as_int(u.get("output_tokens"))
    if cr is not None:
        into.cache_read = cr
    if cw is not None:
        into.cache_write = cw
    if inp is not None:
        into.input = inp + (into.cache_read or 0) + (into.cache_write or 0)
    elif (cr is not None or cw is not None) and into.input is not None:
        pass  # cache counts changed without input: keep the previous total
    if out is not None:
        into.output = out


class AnthropicSource:
    protocol_name = "Anthropic"

    __slots__ = (
        "_args",
        "_blocks",
        "_lifecycle_free",
        "_saw_data",
        "_seen",
        "_stop_raw",
        "_usage",
        "life",
        "sink",
    )

    def __init__(
        self, sink: Sink, *, lifecycle_free: bool = False, max_tool_args: int = DEFAULT_MAX_TOOL_ARGS
    ) -> None:
        self.sink = sink
        self.life = Lifecycle()
        self._lifecycle_free = lifecycle_free
        self._blocks: dict[int, BlockKind] = {}  # open blocks by source index
        self._seen: set[int] = set()
        self._usage = TokenUsage()
        self._stop_raw: str | None = None
        self._saw_data = False
        self._args = ToolArgs(max_tool_args)

    # -- events -----------------------------------------------------------------------------

    def event(self, etype: str, value: PayloadValue) -> None:
        """One upstream event: its type and its payload (parsed, or its data)."""
        # ``load_object`` takes a dict as it is: the check inline (``type``: the observer's parse)
        obj = value if type(value) is dict else load_object(value, "Anthropic")
        if obj is None:
            if self._saw_data:
                return  # seed 002: an empty JSON tail after data is tolerated
            raise UpstreamProtocolError("Anthropic event with an empty payload before any data")
        self._saw_data = True
        if etype == "content_block_delta":
            # The hot path: a carried delta of the open block's type while streaming (so not
            # after message_stop). It checks what the general path checks and does what it
            # does; anything else goes there, after the checks every event gets.
            idx = obj.get("index")
            delta = obj.get("delta")
            if type(idx) is int and type(delta) is dict:
                dtype = delta.get("type")
                carried = _CARRIED.get(dtype) if type(dtype) is str else None
                if (
                    carried is not None
                    and self._blocks.get(idx) == carried[0]
                    and self.life.phase is Phase.STREAMING
                ):
                    text = delta.get(carried[1])
                    if type(text) is str:
                        if text:
                            if carried[2] == "args":
                                self._args.add(idx, text)
                            self.sink.delta(idx, carried[2], text)
                        return
        elif etype == "message":  # data-only event: typed by its payload (repair)
            etype = as_str(obj.get("type")) or ""
        if etype == "ping":
            return
        if etype == "error":
            self._error(obj)
            return
        phase = self.life.phase
        if phase is Phase.STOPPED:
            raise SemanticStreamError(f"Anthropic event {etype!r} after message_stop")
        if etype == "content_block_delta":
            self._block_delta(obj)
        elif etype == "content_block_start":
            self._block_start(obj)
        elif etype == "content_block_stop":
            self._block_stop(obj)
        elif etype == "message_start":
            self._message_start(obj)
        elif etype == "message_delta":
            self._message_delta(obj)
        elif etype == "message_stop":
            self._message_stop()
        # unknown event types are ignored, as the SDKs do

    def eof(self) -> None:
        if self.life.phase is not Phase.STOPPED:
            raise UpstreamProtocolError("upstream closed the Anthropic stream before message_stop")

    # -- handlers ---------------------------------------------------------------------------

    def _error(self, obj: dict[str, Any]) -> None:
        err = as_dict(obj.get("error"))
        message = as_str(err.get("message")) or as_str(obj.get("message"))
        if message is None:
            message = "upstream error event: " + orjson.dumps(obj).decode()[:200]
        kind = classify(err.get("type"), None, message)
        self.life.fail()
        self.sink.upstream_error(kind, message)

    def _message_start(self, obj: dict[str, Any]) -> None:
        if self.life.phase is not Phase.WAITING:
            raise SemanticStreamError("duplicate message_start")
        msg = as_dict(obj.get("message"))
        mid = as_str(msg.get("id"))
        if not mid:
            raise UpstreamProtocolError("message_start without message.id")
        model = as_str(msg.get("model")) or ""
        usage_in(as_dict(msg.get("usage")), self._usage)
        self.life.start(StreamIdentity(mid, model))
        start_usage = TokenUsage(self._usage.input, None, self._usage.cache_read, self._usage.cache_write)
        self.sink.start(mid, model, start_usage)
        content = msg.get("content")
        if isinstance(content, list) and content:
            for block in content:
                idx = len(self._seen)
                self._open(idx, as_dict(block))
                self._close(idx)
        self._stop_raw = as_str(msg.get("stop_reason"))

    def _ensure_streaming(self, what: str) -> None:
        phase = self.life.phase
        if phase is Phase.STREAMING:
            return
        if phase is Phase.WAITING:
            if self._lifecycle_free:
                self.life.start(StreamIdentity("msg_proxai_normalized", ""))
                self.sink.start("msg_proxai_normalized", "", None)
                return
            raise SemanticStreamError(f"{what} before message_start")
        raise SemanticStreamError(f"{what} after message_delta")

    def _index(self, obj: dict[str, Any], what: str) -> int:
        idx = as_int(obj.get("index"))
        if idx is None:
            raise UpstreamProtocolError(f"{what} without an integer index")
        return idx

    def _block_start(self, obj: dict[str, Any]) -> None:
        self._ensure_streaming("content_block_start")
        idx = self._index(obj, "content_block_start")
        if idx in self._seen:
            raise SemanticStreamError(f"duplicate content_block_start for index {idx}")
        self._open(idx, as_dict(obj.get("content_block")))

    def _open(self, idx: int, block: dict[str, Any]) -> None:
        """Open block ``idx`` as its start (or a whole message's content) gives it."""
        btype = as_str(block.get("type"))
        if not btype:
            raise UpstreamProtocolError(f"content block {idx} without a type")
        kind = _BLOCK_TYPES.get(btype, "opaque")
        self._seen.add(idx)
        self._blocks[idx] = kind
        sink = self.sink
        if kind == "opaque":
            sink.opaque_start(idx, _A, btype, block)
            return
        if kind == "tool":
            tid = as_str(block.get("id"))
            name = as_str(block.get("name"))
            if not tid or not name:
                raise UpstreamProtocolError(f"tool_use block {idx} without id or name")
            sink.block_start(idx, "tool", id=tid, name=name)
            initial = block.get("input")
            if isinstance(initial, dict) and initial:
                encoded = orjson.dumps(initial).decode()
                self._args.add(idx, encoded)
                sink.delta(idx, "args", encoded)
        elif kind == "redacted_thinking":
            sink.block_start(idx, kind, data=as_str(block.get("data")) or "")
        elif kind == "thinking":
            sink.block_start(idx, kind)
            if text := as_str(block.get("thinking")):
                sink.delta(idx, "thinking", text)
            if sig := as_str(block.get("signature")):
                sink.delta(idx, "signature", sig)
        else:
            sink.block_start(idx, kind)
            if text := as_str(block.get("text")):
                sink.delta(idx, "text", text)

    def _block_delta(self, obj: dict[str, Any]) -> None:
        # Every content_block_delta off the hot path (``event``).
        idx = self._index(obj, "content_block_delta")
        delta = as_dict(obj.get("delta"))
        dtype = as_str(delta.get("type")) or ""
        if not dtype:
            raise UpstreamProtocolError(f"content_block_delta without a delta type (index {idx})")
        want = _DELTA_BLOCK.get(dtype)
        kind = self._blocks.get(idx)
        if kind == "opaque" or (want is None and kind is not None):
            # a delta of an opaque block, or an unmodelled delta of a modelled one
            if self.life.phase is not Phase.STREAMING:
                self._ensure_streaming("content_block_delta")
            self.sink.opaque_event(idx, _A, delta)
            return
        if want is None:
            want = "text"  # an unknown delta for a block that never started: judged below
        if kind is None:
            if self._lifecycle_free and idx not in self._seen and self.life.phase is not Phase.TERMINAL:
                self._ensure_streaming("content_block_delta")
                if want == "tool":
                    raise SemanticStreamError(
                        f"input_json_delta for tool block {idx} that never started (no id/name)"
                    )
                self._seen.add(idx)
                self._blocks[idx] = want
                self.sink.block_start(idx, want)
                kind = want
            elif idx in self._seen:
                raise SemanticStreamError(f"content_block_delta for stopped block {idx}")
            else:
                self._ensure_streaming("content_block_delta")
                raise SemanticStreamError(
                    f"orphan content_block_delta for index {idx} (no content_block_start)"
                )
        elif self.life.phase is not Phase.STREAMING:
            self._ensure_streaming("content_block_delta")
        if kind != want:
            raise SemanticStreamError(f"{dtype} inside a {kind} block (index {idx})")
        carried = _DELTA_FIELD.get(dtype)
        if carried is None:  # citations_delta: a web citation, or another kind (documents)
            cite = as_dict(delta.get("citation"))
            url = as_str(cite.get("url"))
            if cite.get("type") == "web_search_result_location" and url:
                title = as_str(cite.get("title"))
                cited = as_str(cite.get("cited_text")) or ""
                self.sink.citation(idx, Citation(url, title, cited, None, None, _A, delta))
            else:
                self.sink.opaque_event(idx, _A, delta)
        else:
            field, sink_kind = carried
            value = delta.get(field)
            if not isinstance(value, str):
                raise UpstreamProtocolError(f"{dtype} without {field} (index {idx})")
            if value:
                if sink_kind == "args":
                    self._args.add(idx, value)
                self.sink.delta(idx, sink_kind, value)

    def _block_stop(self, obj: dict[str, Any]) -> None:
        idx = self._index(obj, "content_block_stop")
        if idx not in self._blocks:
            if self.life.phase is Phase.WAITING:
                raise SemanticStreamError("content_block_stop before message_start")
            if idx in self._seen:
                raise SemanticStreamError(f"duplicate content_block_stop for index {idx}")
            raise SemanticStreamError(f"content_block_stop without content_block_start (index {idx})")
        self._close(idx)

    def _close(self, idx: int) -> None:
        if self._blocks.pop(idx) == "tool":
            self._args.close(idx, f"tool_use block {idx}")
        self.sink.block_stop(idx)

    def _message_delta(self, obj: dict[str, Any]) -> None:
        if self.life.phase is Phase.WAITING:
            raise SemanticStreamError("message_delta before message_start")
        if self.life.phase is Phase.TERMINAL:
            raise SemanticStreamError("duplicate message_delta")
        delta = as_dict(obj.get("delta"))
        self._stop_raw = as_str(delta.get("stop_reason"))
        usage = obj.get("usage")
        if isinstance(usage, dict):
            usage_in(usage, self._usage)  # cumulative totals overwrite (CLIENTS.md)
        for idx in list(self._blocks):  # a provider that never closed its blocks
            self._close(idx)
        self.life.terminal()

    def _message_stop(self) -> None:
        phase = self.life.phase
        if phase is Phase.WAITING:
            raise SemanticStreamError("message_stop before message_start")
        if phase is Phase.STREAMING:
            # No message_delta (a whole message in message_start, or a provider that skipped it):
            # the SDKs accept it; the stop reason and usage are what message_start gave.
            for idx in list(self._blocks):
                self._close(idx)
            self.life.terminal()
        self.life.stop()
        self.sink.end(Stop(stops.from_anthropic(self._stop_raw), self._stop_raw), self._usage)
