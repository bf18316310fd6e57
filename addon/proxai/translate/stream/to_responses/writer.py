"""The OpenAI Responses target writer: a ``Sink`` that emits typed Responses events.

The Anthropic -> Responses mapping generalized to any source (docs/streaming-translation.md, "Event
mappings"): a block start is ``output_item.added`` (+ ``content_part.added`` for message / reasoning
text), a delta is the matching ``*.delta`` on the item id with ``content_index`` 0, a block stop
emits the ``*.done`` events and ``output_item.done``. Stop reason and usage are held until the
source's stop (the Anthropic ``message_delta`` emits nothing here); then every pending ``*.done`` is
emitted and the terminal ``response.completed`` / ``response.incomplete`` carries the full output. A
failure emits ``error`` + ``response.failed`` (error_shapes); never ``[DONE]``.

Reasoning from another protocol (``reasoning_summary=True``: Anthropic thinking, Chat
``reasoning_content``) is written as the reasoning item's summary (``reasoning_summary_part.added``,
``reasoning_summary_text.delta`` / ``.done``, ``reasoning_summary_part.done``), the part that
Responses clients show by default (Codex shows no ``reasoning_text`` unless asked to). In normalize
mode it stays ``reasoning_text`` content (docs/streaming-translation.md, "Reasoning").

A call of a tool the client declared in another shape (``call_shapes``: freeform, namespaced, its
tool search) goes back in that shape: a namespaced function streams as usual under its own name
and ``namespace``; a freeform call becomes a ``custom_tool_call`` whose input (the function's
``input`` argument) is sent whole at the block's stop (``custom_tool_call_input.delta`` /
``.done``), and a tool search call a ``tool_search_call`` item, because the text inside the JSON
arguments is known only when they are complete.

Opaque Responses content (normalize mode) is written as it came: a hosted-tool, MCP, shell or
other item keeps its id and its events, under the writer's dense ``output_index`` and its own
``sequence_number``; an annotation of a text part (``url_citation``) is re-emitted on the part's
item and kept in the terminal snapshot. Opaque content of another protocol is left out and counted.
"""

from __future__ import annotations

from typing import Any

import orjson
from orjson import Fragment

from proxai.core.errors import SseLimitError
from proxai.core.errors.shapes import openai_error_object
from proxai.core.model import ErrorKind, Protocol
from proxai.stream import stop_reasons
from proxai.stream.limits import DEFAULT_MAX_BUFFER
from proxai.stream.sink import (
    NO_BLOCK,
    BlockKey,
    BlockKind,
    Citation,
    DeltaKind,
    Stop,
    TokenUsage,
    WebSearchCall,
)
from proxai.stream.textparts import ENCODED
from proxai.translate.call_shapes import CallShapes, freeform_input
from proxai.translate.stream.comments import Comments
from proxai.translate.stream.foreign import Foreign

from . import output
from .state import Item, ItemIdAllocator, ResponsesState

_dumps = orjson.dumps
_NO_KEY = object()  # ``ResponsesWriter.cur_key`` before any delta: equal to no block key

_DELTA_EVENTS = {
    "text": "response.output_text.delta",
    "refusal": "response.refusal.delta",
    "thinking": "response.reasoning_text.delta",
}
_DONE_EVENTS = {
    "text": ("response.output_text.done", "text"),
    "refusal": ("response.refusal.done", "refusal"),
    "thinking": ("response.reasoning_text.done", "text"),
}


class ResponsesWriter:
    protocol = Protocol.OPENAI_RESPONSES

    __slots__ = (
        "by_key",
        "call_shapes",
        "comments",
        "created_at",
        "cur_buf",
        "cur_fmt",
        "cur_key",
        "foreign",
        "limit",
        "max_buffer",
        "out",
        "reasoning_summary",
        "room",
        "seq",
        "st",
    )

    def __init__(
        self,
        *,
        created_at: int = 0,
        max_buffer: int = DEFAULT_MAX_BUFFER,
        reasoning_summary: bool = False,
        call_shapes: CallShapes | None = None,
        strict: bool = False,
    ) -> None:
        self.foreign = Foreign(strict=strict)
        self.reasoning_summary = reasoning_summary
        self.call_shapes = call_shapes or {}
        self.max_buffer = max_buffer  # content kept for the terminal snapshot (bounded memory)
        # Bytes kept (``kept``: ``Item.encoded``'s lengths, signatures and a constant per item);
        # a bytearray holds at most 9/8 of its length plus that constant, so ``limit`` bounds
        # what is really held. The item started last (``cur_*``: its key, bytearray and delta
        # format; deltas mostly go to it) counts by its bytearray's own length, the rest in
        # ``room`` (``limit`` less all of it): ``len(cur_buf) > room`` is ``kept > limit``.
        self.limit = max_buffer - max_buffer // 9
        self.room = self.limit
        self.cur_key: object = _NO_KEY  # (none yet: a key no block key equals, an empty buffer)
        self.cur_buf = bytearray()
        self.cur_fmt = b""
        self.seq = 0  # the next ``sequence_number``
        self.out: list[bytes] = []
        self.comments = Comments()  # comment lines that wait for the end (``.comments``)
        self.st = ResponsesState()
        self.by_key = self.st.by_key  # items by source key
        self.created_at = created_at

    @property
    def kept(self) -> int:
        """The bytes counted against ``limit`` (``max_buffer`` less its over-allocation)."""
        return self.limit - self.room + len(self.cur_buf)

    def take(self) -> bytes:
        out = self.out
        data = b"".join(out)
        out.clear()
        return data

    def _emit(self, etype: str, **fields: object) -> None:
        seq = self.seq
        self.seq = seq + 1
        self.out.append(output.event(etype, seq, fields))

    def start(self, id: str, model: str, usage: TokenUsage | None) -> None:
        st = self.st
        st.response_id, st.model, st.ids = id, model, ItemIdAllocator(id)
        snap = output.response(id, model, self.created_at, "in_progress", [])
        self._emit("response.created", response=snap)
        self._emit("response.in_progress", response=snap)

    def block_start(
        self,
        key: BlockKey,
        kind: BlockKind,
        *,
        id: str | None = None,
        name: str | None = None,
        data: str | None = None,
    ) -> None:
        item = self.st.add(key, kind, id, name, data)
        self.room -= ENCODED
        if kind == "tool":
            shape = item.shape = self.call_shapes.get(name or "")
            item.held = shape is not None and shape.item != "function_call"
            item.delta_format = output.delta_format("response.function_call_arguments.delta", item)
        elif kind == "thinking" and self.reasoning_summary:
            item.summary = True
            item.delta_format = output.delta_format("response.reasoning_summary_text.delta", item)
        elif kind in _DELTA_EVENTS:
            item.delta_format = output.delta_format(_DELTA_EVENTS[kind], item)
        self._current(key, None if item.held else item)
        self._emit(
            "response.output_item.added", output_index=item.output_index, item=output.item_json(item, False)
        )
        if item.summary:
            self._emit(
                "response.reasoning_summary_part.added",
                item_id=item.item_id,
                output_index=item.output_index,
                summary_index=0,
                part=output.part(item, False),
            )
        elif kind in _DELTA_EVENTS:
            self._emit(
                "response.content_part.added",
                item_id=item.item_id,
                output_index=item.output_index,
                content_index=0,
                part=output.part(item, False),
            )

    def _current(self, key: BlockKey, item: Item | None) -> None:
        """Deltas of ``key`` go to ``item`` without a lookup (None: no item is current; a held
        call never is, its deltas are not streamed)."""
        buf = bytearray() if item is None else item.encoded
        self.room += len(buf) - len(self.cur_buf)  # its bytes leave the rest, the previous one's join it
        self.cur_key = _NO_KEY if item is None else key
        self.cur_buf = buf
        self.cur_fmt = b"" if item is None else item.delta_format

    def delta(self, key: BlockKey, kind: DeltaKind, text: str) -> None:
        # The current item's delta without a lookup; another item's (interleaved tool calls)
        # looks it up.
        # Each is kept as its delta event carries it, JSON-encoded (``textparts.encoded_text``).
        if key == self.cur_key and kind != "signature":
            enc = _dumps(text)
            buf = self.cur_buf
            buf += enc
            if len(buf) > self.room:
                raise SseLimitError("Responses output kept for the terminal snapshot", self.max_buffer)
            fmt = self.cur_fmt
        else:
            item = self.by_key[key]
            if kind == "signature":  # kept for the item's ``encrypted_content``, not streamed
                self.room -= len(text)
                item.signature = (item.signature or "") + text
                return
            enc = _dumps(text)
            item.encoded += enc
            self.room = room = self.room - len(enc)
            if len(self.cur_buf) > room:
                raise SseLimitError("Responses output kept for the terminal snapshot", self.max_buffer)
            if item.held:  # a custom or tool search call: its input is whole only at its stop
                return
            fmt = item.delta_format
        seq = self.seq
        self.seq = seq + 1
        self.out.append(fmt % (seq, enc))

    def opaque_start(
        self, key: BlockKey, protocol: Protocol, what: str, payload: dict[str, Any], *, neutral: bool = False
    ) -> None:
        if protocol is not Protocol.OPENAI_RESPONSES:
            self.foreign.start(key, what, counted=not neutral)
            return
        item = self.st.add(key, "opaque", str(payload.get("id") or key), None, None)
        if key == self.cur_key:  # (no delta comes for an opaque item: ``key`` names it now)
            self._current(key, None)
        item.raw = payload
        self._emit("response.output_item.added", output_index=item.output_index, item=payload)

    def opaque_event(self, key: BlockKey, protocol: Protocol, payload: dict[str, Any]) -> None:
        etype = str(payload.get("type"))
        fields = {k: v for k, v in payload.items() if k not in ("type", "sequence_number")}
        if key == NO_BLOCK and protocol is Protocol.OPENAI_RESPONSES:
            self._emit(etype, **fields)  # an event of no item (normalize): as it came
            return
        item = self.by_key.get(key) if protocol is Protocol.OPENAI_RESPONSES else None
        if item is None or key in self.foreign.keys:
            self.foreign.event(key, payload)
            return
        if "output_index" in fields:
            fields["output_index"] = item.output_index
        if "item_id" in fields:
            fields["item_id"] = item.item_id
        if item.kind == "opaque":
            if etype == "response.output_item.done":
                item.raw = as_item(fields.get("item"), item.raw)
                item.done = True
        elif etype == "response.output_text.annotation.added":
            fields["content_index"] = 0  # one part per message item here
            fields["annotation_index"] = len(item.annotations)
            item.annotations.append(fields.get("annotation"))
        self._emit(etype, **fields)

    def web_search(self, key: BlockKey, call: WebSearchCall) -> None:
        """Another protocol's web search as a ``web_search_call`` item: added, its progress
        events, done with the query and the pages found (``action.sources``)."""
        if call.protocol is Protocol.OPENAI_RESPONSES:
            return  # written as it came
        action: dict[str, Any] = {"type": "search", "query": call.query or ""}
        running = {"id": call.id, "type": "web_search_call", "status": "in_progress", "action": action}
        item = self.st.add(f"web_search {call.id}", "opaque", call.id, None, None)
        self._emit("response.output_item.added", output_index=item.output_index, item=running)
        loc = {"output_index": item.output_index, "item_id": call.id}
        for step in ("in_progress", "searching", "completed"):
            self._emit(f"response.web_search_call.{step}", **loc)
        sources = [{"type": "url", "url": url} for url, _ in call.sources]
        item.raw = {**running, "status": "completed", "action": {**action, "sources": sources}}
        item.done = True
        self._emit("response.output_item.done", output_index=item.output_index, item=item.raw)

    def citation(self, key: BlockKey, citation: Citation) -> None:
        """A ``url_citation`` of the text part: as it came from Responses; from another protocol
        at the part's end, when its text (and so a whole-block span) is known."""
        if citation.protocol is Protocol.OPENAI_RESPONSES:
            self.opaque_event(key, citation.protocol, citation.raw)
        else:
            self.by_key[key].citations.append(citation)

    def block_stop(self, key: BlockKey) -> None:
        if self.foreign.stop(key):
            return
        item = self.st.by_key[key]
        if item.kind == "opaque":
            if not item.done:  # the upstream never sent its .done: close it as it stands
                item.done = True
                self._emit("response.output_item.done", output_index=item.output_index, item=item.raw)
            return
        self._finish(item)

    def _finish(self, item: Item) -> None:
        if item.done:
            return
        item.done = True
        loc = {"item_id": item.item_id, "output_index": item.output_index}
        shape = item.shape
        if item.kind == "tool" and shape is not None and shape.item == "custom_tool_call":
            text = freeform_input(item.text())
            if text:
                self._emit("response.custom_tool_call_input.delta", **loc, delta=text)
            self._emit("response.custom_tool_call_input.done", **loc, input=text)
        elif item.kind == "tool" and item.held:
            pass  # a tool search call has no argument events: output_item.done carries them
        elif item.kind == "tool":
            name = item.name if shape is None else shape.name
            arguments = Fragment(item.json())
            self._emit("response.function_call_arguments.done", **loc, name=name, arguments=arguments)
        elif item.summary:
            summary = Fragment(item.json())
            self._emit("response.reasoning_summary_text.done", **loc, summary_index=0, text=summary)
            self._emit(
                "response.reasoning_summary_part.done", **loc, summary_index=0, part=output.part(item, True)
            )
        elif item.kind in _DONE_EVENTS:
            etype, field = _DONE_EVENTS[item.kind]
            for c in item.citations:
                note = {
                    "type": "url_citation",
                    "url": c.url,
                    "title": c.title or "",
                    "start_index": 0 if c.start is None else c.start,
                    "end_index": len(item.text()) if c.end is None else c.end,
                }
                self._emit(
                    "response.output_text.annotation.added",
                    **loc,
                    content_index=0,
                    annotation_index=len(item.annotations),
                    annotation=note,
                )
                item.annotations.append(note)
            extra: dict[str, object] = {"logprobs": []} if item.kind == "text" else {}
            self._emit(etype, **loc, content_index=0, **{field: Fragment(item.json())}, **extra)
            self._emit("response.content_part.done", **loc, content_index=0, part=output.part(item, True))
        self._emit(
            "response.output_item.done", output_index=item.output_index, item=output.item_json(item, True)
        )

    def comment(self, lines: bytes, *, hold: bool = False) -> None:
        self.comments.add(self.out, lines, hold=hold)

    def end(self, stop: Stop, usage: TokenUsage) -> None:
        st = self.st
        for item in st.pending():
            self._finish(item)
        status, reason = stop_reasons.to_responses_streamed(stop.cls, has_refusal=st.refusal_streamed)
        final = [output.item_json(i, True) for i in st.items]
        snap = output.response(st.response_id, st.model, self.created_at, status, final, usage, reason)
        self._emit("response.completed" if status == "completed" else "response.incomplete", response=snap)
        self.comments.flush(self.out)

    def upstream_error(self, kind: ErrorKind, message: str) -> None:
        self.fail(kind, message)

    def fail(self, kind: ErrorKind, message: str) -> None:
        """``error`` (a top-level ``error`` object: the Python SDK raises at once), then
        ``response.failed`` carrying the output so far (unfinished items are ``incomplete``) as a
        full Response object (the SDK's typed model requires every field)."""
        st = self.st
        err = openai_error_object(kind, message)
        message = err["message"]  # redacted there: an upstream's message can quote its key
        self._emit("error", code=err["code"], message=message, param=None, error=err)
        items = []
        for item in st.items:
            snap = output.item_json(item, True)
            if not item.done:
                snap["status"] = "incomplete"
            items.append(snap)
        rid = st.response_id or "resp_proxai_error"  # failed before response.created
        snap_resp = output.response(rid, st.model or "unknown", self.created_at, "failed", items)
        # response.error.code is a closed set in the SDK types: server_error / rate_limit_exceeded
        code = "rate_limit_exceeded" if kind is ErrorKind.RATE_LIMITED else "server_error"
        snap_resp["error"] = {"code": code, "message": message}
        self._emit("response.failed", response=snap_resp)

    def metadata(self) -> dict[str, object]:
        return self.foreign.metadata()


def as_item(value: object, default: dict[str, Any] | None) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else default
