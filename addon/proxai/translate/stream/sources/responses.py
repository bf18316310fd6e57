"""OpenAI Responses source wrapper (seed 000 "Responses: global item_id + sequence_number").

Items are joined by ``item_id`` (never by arrival order). ``response.created`` sets the identity
(a second one is a duplicate start). A ``message`` item's content parts become text / refusal
blocks keyed ``(item_id, content_index)``; a ``function_call`` item is a tool block keyed by its
item id (the client-visible id is its ``call_id``); a ``reasoning`` item becomes a thinking block
(``reasoning_text`` and ``reasoning_summary_text`` deltas) whose ``encrypted_content`` is the
Anthropic signature, or, when it carries no text, a ``redacted_thinking`` block whose data is the
``encrypted_content`` (issue 5: thinking+signature <-> reasoning, redacted_thinking <->
encrypted_content).

``*.done`` events are authoritative: when they carry more than the deltas did (arguments sent
only in ``.done``) the missing suffix is forwarded as a delta; when they contradict the deltas,
that is a ``SemanticStreamError``. ``response.completed`` / ``response.incomplete`` end the
stream; ``error`` and ``response.failed`` are upstream errors. Other item types (hosted tools,
MCP, shell and patch calls, compaction, ...), their events, and the annotations of text parts are
handed to the sink as opaque Responses content: normalize mode writes them as they came, another
protocol's writer leaves them out and counts them; a ``url_citation`` annotation is a
``Citation``, which every protocol can carry (its ``cited_text`` the span of the part's text).
"""

from __future__ import annotations

from typing import Any

import orjson

from proxai.errors import SemanticStreamError, SseLimitError, TranslationError, UpstreamProtocolError
from proxai.model import Protocol
from proxai.protocols.machine import as_dict, as_int, as_str
from proxai.stream.sink import BlockKey, Citation, DeltaKind, Sink, Stop, TokenUsage
from proxai.translate.stream import stops
from proxai.translate.stream.lifecycle import Lifecycle, Phase, StreamIdentity
from proxai.translate.stream.textparts import keep

from .common import DEFAULT_MAX_BUFFER, PayloadValue, classify, load_object


def usage_in(u: dict[str, Any]) -> TokenUsage:
    return TokenUsage(
        input=as_int(u.get("input_tokens")),
        output=as_int(u.get("output_tokens")),
        cache_read=as_int(as_dict(u.get("input_tokens_details")).get("cached_tokens")),
        cache_write=as_int(as_dict(u.get("input_tokens_details")).get("cache_write_tokens")),
        reasoning=as_int(as_dict(u.get("output_tokens_details")).get("reasoning_tokens")),
    )


_R = Protocol.OPENAI_RESPONSES


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


class _Item:
    __slots__ = ("acc", "done", "kind", "started")

    def __init__(self, kind: str) -> None:
        self.kind = kind  # message | reasoning | function_call
        self.acc: list[str] = []  # function_call arguments / reasoning text, as streamed
        self.started = False  # reasoning: the thinking block was opened
        self.done = False


class ResponsesSource:
    protocol_name = "Responses"

    __slots__ = (
        "_items",
        "_kept",
        "_open_parts",
        "_refusal",
        "_saw_data",
        "_tools",
        "life",
        "max_buffer",
        "sink",
    )

    def __init__(self, sink: Sink, *, max_buffer: int = DEFAULT_MAX_BUFFER) -> None:
        self.max_buffer = max_buffer  # streamed content kept to check the .done events (bounded)
        self._kept = 0
        self.sink = sink
        self.life = Lifecycle()
        self._items: dict[str, _Item] = {}
        self._open_parts: dict[tuple[str, int], list[str]] = {}  # (item_id, content_index) -> text
        self._tools = False
        self._refusal = False
        self._saw_data = False

    def event(self, etype: str, value: PayloadValue) -> None:
        """One upstream event: its type and its payload (parsed, or its data); the payload's
        ``type`` names it when present."""
        obj = value if type(value) is dict else load_object(value, "Responses")  # (it takes a dict as is)
        if obj is None:
            if self._saw_data:
                return
            raise UpstreamProtocolError("Responses event with an empty payload before any data")
        self._saw_data = True
        t = obj.get("type")
        # ``as_str(t) or etype`` without the call (``type``: the parse's str; else as before)
        etype = t if (type(t) is str or isinstance(t, str)) and t else etype
        if etype == "error" or (
            etype != "response.failed" and "type" not in obj and isinstance(obj.get("error"), dict)
        ):
            self._error(obj)
            return
        phase = self.life.phase
        if phase is Phase.STOPPED:
            raise SemanticStreamError(f"Responses event {etype!r} after the terminal event")
        if etype in {"response.output_text.delta", "response.refusal.delta"}:
            # The hot path: a string delta of an open part (what the general path checks, in one
            # step); anything else goes to ``_part_delta``.
            item_id = obj.get("item_id")
            ci = obj.get("content_index")
            text = obj.get("delta")
            if type(text) is str and type(ci) is int and type(item_id) is str and phase is Phase.STREAMING:
                item = self._items.get(item_id)  # ``_live(item_id, "message")`` inline
                if item is not None and item.kind == "message" and not item.done:
                    key = (item_id, ci)
                    parts = self._open_parts.get(key)
                    if parts is not None:
                        if text:
                            self._kept = kept = self._kept + keep(parts, text)  # ``_keep`` inline
                            if kept > self.max_buffer:
                                raise SseLimitError(
                                    "Responses content kept for .done checks", self.max_buffer
                                )
                            self.sink.delta(key, "text", text)
                        return
            self._part_delta(obj, etype)
        elif etype == "response.function_call_arguments.delta":
            self._args_delta(obj)
        elif etype in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            self._reasoning_delta(obj)
        elif etype == "response.output_item.added":
            self._item_added(obj)
        elif etype == "response.content_part.added":
            self._part_added(obj)
        elif etype in {"response.output_text.done", "response.refusal.done"}:
            self._part_text_done(obj, "text" if etype == "response.output_text.done" else "refusal")
        elif etype == "response.content_part.done":
            self._part_done(obj)
        elif etype == "response.function_call_arguments.done":
            self._args_done(as_str(obj.get("item_id")) or "", as_str(obj.get("arguments")))
        elif etype == "response.output_item.done":
            self._item_done(obj)
        elif etype == "response.created":
            self._created(obj)
        elif etype in ("response.completed", "response.incomplete"):
            self._completed(obj)
        elif etype == "response.failed":
            self._failed(obj)
        elif phase is Phase.WAITING and etype not in ("response.queued", "response.in_progress"):
            raise SemanticStreamError(f"Responses event {etype!r} before response.created")
        else:
            self._other(obj, etype)
        # in_progress, summary/reasoning part and text .done events carry nothing new

    def _other(self, obj: dict[str, Any], etype: str) -> None:
        """An event none of the above reads: an opaque item's own event (web search progress,
        code interpreter code, MCP arguments, ...) or a text part's annotation goes to the sink as
        it came; anything else carries nothing a client needs."""
        item_id = obj.get("item_id")
        if type(item_id) is not str or self.life.phase is not Phase.STREAMING:
            return
        item = self._items.get(item_id)
        if item is None or item.done:
            return
        if obj.get("type") != etype:
            obj = {**obj, "type": etype}  # typed by its event name
        if item.kind == "opaque":
            self.sink.opaque_event(item_id, _R, obj)
        elif etype == "response.output_text.annotation.added":
            key = (item_id, as_int(obj.get("content_index")) or 0)
            if key in self._open_parts:
                note = as_dict(obj.get("annotation"))
                url = as_str(note.get("url"))
                if note.get("type") == "url_citation" and url:
                    start, end = as_int(note.get("start_index")), as_int(note.get("end_index"))
                    text = "".join(self._open_parts[key])
                    cited = text[start:end] if start is not None and end is not None else ""
                    self.sink.citation(
                        key, Citation(url, as_str(note.get("title")), cited, start, end, _R, obj)
                    )
                else:
                    self.sink.opaque_event(key, _R, obj)

    def _keep(self, acc: list[str], text: str) -> None:
        self._kept += keep(acc, text)  # bytes really held (proxai.translate.stream.textparts)
        if self._kept > self.max_buffer:
            raise SseLimitError("Responses content kept for .done checks", self.max_buffer)

    def eof(self) -> None:
        if self.life.phase is not Phase.STOPPED:
            raise UpstreamProtocolError("upstream closed the Responses stream before response.completed")

    # -- lifecycle ----------------------------------------------------------------------------

    def _created(self, obj: dict[str, Any]) -> None:
        if self.life.phase is not Phase.WAITING:
            raise SemanticStreamError("duplicate response.created")
        resp = as_dict(obj.get("response"))
        rid = as_str(resp.get("id"))
        if not rid:
            raise UpstreamProtocolError("response.created without response.id")
        model = as_str(resp.get("model")) or ""
        self.life.start(StreamIdentity(rid, model))
        self.sink.start(rid, model, None)

    def _streaming(self, what: str) -> None:
        if self.life.phase is not Phase.STREAMING:
            raise SemanticStreamError(f"{what} before response.created")

    def _error(self, obj: dict[str, Any]) -> None:
        nested = as_dict(obj.get("error"))
        message = as_str(obj.get("message")) or as_str(nested.get("message")) or "upstream error event"
        code = obj.get("code") or nested.get("code")
        self.life.fail()
        self.sink.upstream_error(classify(nested.get("type"), code, message), message)

    def _failed(self, obj: dict[str, Any]) -> None:
        resp = as_dict(obj.get("response"))
        err = as_dict(resp.get("error"))
        message = as_str(err.get("message")) or "the upstream response failed"
        self.life.fail()
        self.sink.upstream_error(classify(None, err.get("code"), message), message)

    def _completed(self, obj: dict[str, Any]) -> None:
        self._streaming(as_str(obj.get("type")) or "response.completed")
        resp = as_dict(obj.get("response"))
        rid = as_str(resp.get("id"))
        ident = self.life.identity
        if rid is not None and ident is not None and rid != ident.id:
            raise SemanticStreamError(
                f"terminal response id {rid!r} differs from response.created {ident.id!r}"
            )
        # items the upstream never finished: close them (their content is what was streamed)
        for key in list(self._open_parts):
            self._close_part(key)
        for item_id, item in self._items.items():
            if not item.done and item.kind != "message":
                self._finish_item(item_id, item, {})
        status = as_str(resp.get("status")) or (
            "incomplete" if obj.get("type") == "response.incomplete" else "completed"
        )
        reason = as_str(as_dict(resp.get("incomplete_details")).get("reason"))
        usage = usage_in(as_dict(resp.get("usage")))
        self.life.terminal()
        self.life.stop()
        cls = stops.from_responses(status, reason, tool_calls=self._tools, refusal_streamed=self._refusal)
        raw = status if reason is None else f"{status}:{reason}"
        self.sink.end(Stop(cls, raw), usage)

    # -- items --------------------------------------------------------------------------------

    def _item_added(self, obj: dict[str, Any]) -> None:
        self._streaming("response.output_item.added")
        item = as_dict(obj.get("item"))
        item_id = as_str(item.get("id"))
        itype = as_str(item.get("type")) or ""
        if not item_id:
            raise UpstreamProtocolError(f"output item of type {itype!r} without an id")
        if item_id in self._items:
            raise SemanticStreamError(f"duplicate response.output_item.added for item {item_id!r}")
        if itype == "function_call":
            call_id = as_str(item.get("call_id"))
            name = as_str(item.get("name"))
            if not call_id or not name:
                raise UpstreamProtocolError(f"function_call item {item_id!r} without call_id or name")
            rec = _Item("function_call")
            self._items[item_id] = rec
            self._tools = True
            self.sink.block_start(item_id, "tool", id=call_id, name=name)
            if args := as_str(item.get("arguments")):
                self._keep(rec.acc, args)
                self.sink.delta(item_id, "args", args)
        elif itype in {"message", "reasoning"}:
            self._items[item_id] = _Item(itype)
        elif itype:
            self._items[item_id] = _Item("opaque")
            self.sink.opaque_start(item_id, _R, itype, item)
        else:
            raise UpstreamProtocolError(f"output item {item_id!r} without a type")

    def _item(self, item_id: str | None, kind: str, what: str) -> _Item:
        self._streaming(what)
        item = self._items.get(item_id or "")
        if item is None:
            raise SemanticStreamError(f"{what} for unknown item {item_id!r} (no output_item.added)")
        if item.kind != kind:
            raise SemanticStreamError(f"{what} inside a {item.kind} item ({item_id!r})")
        if item.done:
            raise SemanticStreamError(f"{what} for item {item_id!r} after output_item.done")
        return item

    def _part_added(self, obj: dict[str, Any]) -> None:
        item_id = as_str(obj.get("item_id")) or ""
        part = as_dict(obj.get("part"))
        ptype = as_str(part.get("type")) or ""
        if ptype == "reasoning_text":
            self._reasoning_open(item_id, self._item(item_id, "reasoning", "response.content_part.added"))
            return
        self._item(item_id, "message", "response.content_part.added")
        ci = as_int(obj.get("content_index")) or 0
        key = (item_id, ci)
        if key in self._open_parts:
            raise SemanticStreamError(f"duplicate response.content_part.added for {item_id!r} part {ci}")
        if ptype == "output_text":
            self.sink.block_start(key, "text")
            initial = as_str(part.get("text"))
        elif ptype == "refusal":
            self._refusal = True
            self.sink.block_start(key, "refusal")
            initial = as_str(part.get("refusal"))
        else:
            raise TranslationError(
                f"message content part type {ptype!r} cannot be translated", "content[].type"
            )
        self._open_parts[key] = []
        if initial:
            self._keep(self._open_parts[key], initial)
            self.sink.delta(key, "text", initial)

    def _part_key(self, obj: dict[str, Any], what: str) -> tuple[str, int]:
        item_id = as_str(obj.get("item_id")) or ""
        self._item(item_id, "message", what)
        key = (item_id, as_int(obj.get("content_index")) or 0)
        if key not in self._open_parts:
            raise SemanticStreamError(f"{what} for {item_id!r} part {key[1]} without content_part.added")
        return key

    def _live(self, item_id: str, kind: str) -> _Item | None:
        """The hot paths' lookup: the open item ``item_id`` of ``kind`` while streaming, else
        None (then the general path checks again and raises its own error)."""
        if self.life.phase is not Phase.STREAMING:
            return None
        item = self._items.get(item_id)
        if item is None or item.kind != kind or item.done:
            return None
        return item

    def _part_delta(self, obj: dict[str, Any], etype: str) -> None:
        # A part delta off the hot path (``event``).
        key = self._part_key(obj, etype)
        text = obj.get("delta")
        if not isinstance(text, str):
            raise UpstreamProtocolError(f"{etype} without a string delta")
        if text:
            self._keep(self._open_parts[key], text)
            self.sink.delta(key, "text", text)

    def _part_text_done(self, obj: dict[str, Any], field: str) -> None:
        what = "response.output_text.done" if field == "text" else "response.refusal.done"
        key = self._part_key(obj, what)
        final = as_str(obj.get(field))
        if final is not None:
            self._catch_up(key, self._open_parts[key], final, what)

    def _catch_up(self, key: BlockKey, acc: list[str], final: str, what: str) -> None:
        """Forward what a ``.done`` event carries beyond the deltas; reject contradictions."""
        so_far = "".join(acc)
        if final == so_far:
            return
        if not final.startswith(so_far):
            raise SemanticStreamError(f"{what} contradicts the streamed deltas")
        rest = final[len(so_far) :]
        self._keep(acc, rest)
        kind: DeltaKind = (
            "args" if isinstance(key, str) and self._items[key].kind == "function_call" else "text"
        )
        self.sink.delta(key, kind, rest)

    def _part_done(self, obj: dict[str, Any]) -> None:
        item_id = as_str(obj.get("item_id")) or ""
        part = as_dict(obj.get("part"))
        if as_str(part.get("type")) == "reasoning_text":
            return
        key = self._part_key(obj, "response.content_part.done")
        final = as_str(part.get("text")) if part.get("type") == "output_text" else as_str(part.get("refusal"))
        if final is not None:
            self._catch_up(key, self._open_parts[key], final, "response.content_part.done")
        self._close_part(key)
        del item_id

    def _close_part(self, key: tuple[str, int]) -> None:
        del self._open_parts[key]
        self.sink.block_stop(key)

    def _args_delta(self, obj: dict[str, Any]) -> None:
        text = obj.get("delta")
        item_id = obj.get("item_id")
        if type(text) is str and type(item_id) is str:  # the hot path: an open call's string fragment
            live = self._live(item_id, "function_call")
            if live is not None:
                if text:
                    self._keep(live.acc, text)
                    self.sink.delta(item_id, "args", text)
                return
        item_id = as_str(obj.get("item_id")) or ""
        item = self._item(item_id, "function_call", "response.function_call_arguments.delta")
        text = obj.get("delta")
        if not isinstance(text, str):
            raise UpstreamProtocolError("function_call_arguments.delta without a string delta")
        if text:
            self._keep(item.acc, text)
            self.sink.delta(item_id, "args", text)

    def _args_done(self, item_id: str, final: str | None) -> None:
        item = self._item(item_id, "function_call", "response.function_call_arguments.done")
        if final is not None:
            self._catch_up(item_id, item.acc, final, "response.function_call_arguments.done")

    def _reasoning_open(self, item_id: str, item: _Item) -> None:
        if not item.started:
            item.started = True
            self.sink.block_start(item_id, "thinking")

    def _reasoning_delta(self, obj: dict[str, Any]) -> None:
        text = obj.get("delta")
        item_id = obj.get("item_id")
        if type(text) is str and type(item_id) is str:  # the hot path: an open item's string delta
            live = self._live(item_id, "reasoning")
            if live is not None:
                if not live.started:  # ``_reasoning_open`` inline
                    self._reasoning_open(item_id, live)
                if text:
                    self._keep(live.acc, text)
                    self.sink.delta(item_id, "thinking", text)
                return
        item_id = as_str(obj.get("item_id")) or ""
        item = self._item(item_id, "reasoning", as_str(obj.get("type")) or "reasoning delta")
        self._reasoning_open(item_id, item)
        text = obj.get("delta")
        if not isinstance(text, str):
            raise UpstreamProtocolError("reasoning delta without a string delta")
        if text:
            self._keep(item.acc, text)
            self.sink.delta(item_id, "thinking", text)

    def _item_done(self, obj: dict[str, Any]) -> None:
        data = as_dict(obj.get("item"))
        item_id = as_str(data.get("id")) or ""
        self._streaming("response.output_item.done")
        item = self._items.get(item_id)
        if item is None:
            raise SemanticStreamError(f"response.output_item.done for unknown item {item_id!r}")
        if item.done:
            raise SemanticStreamError(f"duplicate response.output_item.done for item {item_id!r}")
        if item.kind == "opaque":
            self.sink.opaque_event(item_id, _R, {**obj, "type": "response.output_item.done"})
        self._finish_item(item_id, item, data)

    def _finish_item(self, item_id: str, item: _Item, data: dict[str, Any]) -> None:
        sink = self.sink
        if item.kind == "opaque":
            sink.block_stop(item_id)
        elif item.kind == "message":
            for key in [k for k in self._open_parts if k[0] == item_id]:
                self._close_part(key)
        elif item.kind == "function_call":
            if (args := as_str(data.get("arguments"))) is not None:
                self._catch_up(item_id, item.acc, args, "response.output_item.done")
            raw = "".join(item.acc)
            if raw:
                try:
                    orjson.loads(raw)
                except orjson.JSONDecodeError:
                    raise UpstreamProtocolError(
                        f"function_call {item_id!r}: the streamed arguments are not valid JSON"
                    ) from None
            sink.block_stop(item_id)
        else:
            encrypted = as_str(data.get("encrypted_content"))
            if not item.started:
                parts = [p for f in ("content", "summary") for p in _list(data.get(f))]
                text = "".join(as_str(as_dict(p).get("text")) or "" for p in parts)
                if text:
                    self._reasoning_open(item_id, item)
                    sink.delta(item_id, "thinking", text)
                elif encrypted:
                    sink.block_start(item_id, "redacted_thinking", data=encrypted)
                    sink.block_stop(item_id)
                    item.done = True
                    return
                else:
                    item.done = True  # an empty reasoning item: nothing any target can show
                    return
            if encrypted:
                sink.delta(item_id, "signature", encrypted)
            sink.block_stop(item_id)
        item.done = True
