"""OpenAI Responses grammar: the one reading of the protocol, streamed and non-streamed.

The rules (docs/design/protocol-grammars.md, "OpenAI Responses"):
``response.created`` -> ``response.output_item.added``
-> ``response.output_text.delta`` / ``response.function_call_arguments.delta`` -> ``*.done`` ->
``response.output_item.done`` -> a terminal event: ``response.completed``,
``response.incomplete`` or ``response.failed`` (each of them means ``completed``; a
failed response also records its ``response.error``, without deciding the outcome). It
records the latest ``sequence_number`` (gaps are counted, ``next_sequence_number`` is what an
injected event must use), the created / terminal snapshots, output items and their tool
calls, and the nested generic error event some providers send (a payload with a top-level
``"error"``). In-flight items are keyed by ``item_id``; a delta for an item that was
never added is a ``SemanticStreamError``. Usage comes from the terminal snapshot:
``input_tokens``, ``output_tokens``, ``total_tokens``, ``input_tokens_details.cached_tokens``
(cache read); Responses has no cache write.

The terminal snapshot is authoritative (the SDK's final object IS the completed
payload): a tool call whose ``*.done`` never came is completed from the snapshot's output.

Lifecycle (Enum + one transition table, ``machine.Machine``): WAITING -> ACTIVE (after
``response.created`` / ``in_progress`` / ``queued``) -> DONE (terminal). Item events before
the response started are a violation; events after the terminal one are not interpreted.

One reading, several consumers: when a stream translator is attached (``out``, a ``Sink``), each
event the grammar has parsed and typed goes first to its writer-facing half (``_Translation``),
then to the summary. That half keys blocks by item id and content part, forwards what a ``.done``
event carries beyond the deltas and rejects one that contradicts them, and hands items and
events the neutral calls do not model (hosted tools, annotations) on as opaque Responses
content. A problem either half finds ends the reading at that event, for the summary and the
client alike (docs/design/translation.md).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import orjson

from proxai.conformance import NODE_RESPONSES_EVENTS
from proxai.error_kind import classify
from proxai.errors import SemanticStreamError, SseLimitError, TranslationError, UpstreamProtocolError
from proxai.model import Protocol, StopClass
from proxai.sse import RawName
from proxai.stream import stops
from proxai.stream.lifecycle import Lifecycle, StreamIdentity
from proxai.stream.sink import BlockKey, Citation, DeltaKind, Phase, Sink, Stop, TokenUsage, WebSearchCall
from proxai.stream.textparts import keep

from .common import Accum, ObserverBase, ToolBuffer, error_fields, nbytes, openai_usage
from .machine import Machine, as_dict, as_int, as_list, as_str


class State(Enum):
    WAITING = "waiting"  # before response.created
    ACTIVE = "active"
    DONE = "done"  # a terminal event (completed / incomplete / failed)
    ERRORED = "errored"


_MACHINE = Machine[State](
    {
        State.WAITING: {"start": State.ACTIVE, "terminal": State.DONE},
        State.ACTIVE: {"start": State.ACTIVE, "item": State.ACTIVE, "terminal": State.DONE},
    },
    "openai_responses: event {event!r} in state {state}",
)

_START = frozenset({"response.created", "response.in_progress", "response.queued"})
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})

# incomplete_details.reason -> class; status -> class
STOP_CLASSES: dict[str, StopClass] = {
    "completed": StopClass.END_TURN,
    "max_output_tokens": StopClass.MAX_TOKENS,
    "content_filter": StopClass.CONTENT_FILTER,
    "failed": StopClass.ERROR,
    "cancelled": StopClass.OTHER,
}

# output item type -> tool kind (items whose arguments stream)
_ARG_TOOLS: dict[str, str] = {"function_call": "function", "custom_tool_call": "custom", "mcp_call": "mcp"}
# the field that holds a tool item's whole argument string
_ARG_FIELD: dict[str, str] = {
    "function_call": "arguments",
    "custom_tool_call": "input",
    "mcp_call": "arguments",
}


# Built-in tool items the CLIENT executes (its answer quotes ``call_id``), and MCP approval
# requests (the client answers with ``approval_request_id`` = the item's ``id``): client calls,
# not server tools. Their arguments are the item's ``action`` / ``operation`` / ``arguments``.
_CLIENT_ITEMS: dict[str, str] = {
    "local_shell_call": "client",
    "shell_call": "client",
    "apply_patch_call": "client",
    "computer_call": "client",
    "mcp_approval_request": "mcp_approval",
}


#: the tool kinds the client must answer (the stop class is then ``tool_use``)
CLIENT_KINDS = frozenset({"function", "custom", "client", "mcp_approval"})


def _server_tool(itype: str) -> bool:
    """Hosted tools that run at the provider and stream no arguments (web_search_call, ...)."""
    return itype.endswith("_call") and itype not in _ARG_TOOLS and itype not in _CLIENT_ITEMS


def _client_item_call(itype: str, item: dict[str, Any]) -> tuple[str | None, str, str]:
    """(the id the client's answer quotes, a name, the arguments as JSON) of a client item."""
    cid = as_str(item.get("id")) if itype == "mcp_approval_request" else as_str(item.get("call_id"))
    args = item.get("arguments")
    if type(args) is not str:
        args = orjson.dumps(item.get("action") or item.get("operation") or {}).decode()
    return cid, as_str(item.get("name")) or itype, args


def usage_in(u: dict[str, Any]) -> TokenUsage:
    """Responses usage -> the writers' neutral usage."""
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
        self.kind = kind  # message | reasoning | function_call | opaque | web_search (an opaque one)
        self.acc: list[str] = []  # function_call arguments / reasoning text, as streamed
        self.started = False  # reasoning: the thinking block was opened
        self.done = False


class _Translation:
    """The writer-facing half of the Responses grammar: what each event means to a ``Sink``. The
    grammar hands it every event it has parsed and typed, before the summary takes it in.

    Items are joined by ``item_id`` (never by arrival order). ``response.created`` starts the
    writer (a second one is a duplicate start). A ``message`` item's content parts become text /
    refusal blocks keyed ``(item_id, content_index)``; a ``function_call`` item is a tool block
    keyed by its item id (the client-visible id is its ``call_id``); a ``reasoning`` item becomes
    a thinking block (``reasoning_text`` and ``reasoning_summary_text`` deltas) whose
    ``encrypted_content`` is the Anthropic signature, or, when it carries no text, a
    ``redacted_thinking`` block whose data is the ``encrypted_content``. ``*.done`` events are
    authoritative: what they carry beyond the deltas is forwarded as a delta, a contradiction is
    a ``SemanticStreamError``. Other item types (hosted tools, MCP, shell and patch calls, ...),
    their events and text annotations are opaque Responses content (``Sink.opaque_start`` /
    ``opaque_event``), except a ``url_citation`` annotation: a ``Citation``, which every protocol
    can carry (its ``cited_text`` the span of the part's text). Kept content is bounded by
    ``max_buffer`` (``SseLimitError``)."""

    __slots__ = (
        "_items",
        "_kept",
        "_open_parts",
        "_refusal",
        "_tools",
        "life",
        "max_buffer",
        "sink",
    )

    def __init__(self, sink: Sink, *, max_buffer: int) -> None:
        self.max_buffer = max_buffer  # streamed content kept to check the .done events (bounded)
        self._kept = 0
        self.sink = sink
        self.life = Lifecycle()
        self._items: dict[str, _Item] = {}
        self._open_parts: dict[tuple[str, int], list[str]] = {}  # (item_id, content_index) -> text
        self._tools = False
        self._refusal = False

    def event(self, etype: str, obj: dict[str, Any]) -> None:
        """One typed event (never an error event: ``error``)."""
        phase = self.life.phase
        if etype in {"response.output_text.delta", "response.refusal.delta"}:
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
        if item.kind in {"opaque", "web_search"}:
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

    def error(self, obj: dict[str, Any]) -> None:
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
            self._items[item_id] = _Item("web_search" if itype == "web_search_call" else "opaque")
            self.sink.opaque_start(item_id, _R, itype, item, neutral=itype == "web_search_call")
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

    def _part_delta(self, obj: dict[str, Any], etype: str) -> None:
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
        if item.kind in {"opaque", "web_search"}:
            self.sink.opaque_event(item_id, _R, {**obj, "type": "response.output_item.done"})
        self._finish_item(item_id, item, data)

    def _finish_item(self, item_id: str, item: _Item, data: dict[str, Any]) -> None:
        sink = self.sink
        if item.kind == "web_search":
            sink.web_search(item_id, _web_search_call(item_id, data))
            sink.block_stop(item_id)
        elif item.kind == "opaque":
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


class ResponsesObserver(ObserverBase):
    protocol = Protocol.OPENAI_RESPONSES

    __slots__ = ("_tx", "items", "last_seq", "state")

    def __init__(self, acc: Accum) -> None:
        super().__init__(acc)
        self.state = State.WAITING
        self.items: dict[str, str] = {}  # item id -> item type
        self.last_seq: int | None = None
        self._tx: _Translation | None = None  # the writer-facing half, while translating

    def _translation(self, out: Sink) -> _Translation:
        tx = self._tx
        if tx is None:
            tx = self._tx = _Translation(out, max_buffer=self.max_buffer)
        return tx

    @property
    def phase(self) -> Phase:
        """The translated stream's phase (``Phase.WAITING`` before the first event)."""
        tx = self._tx
        return Phase.WAITING if tx is None else tx.life.phase

    def translate_eof(self) -> None:
        """The upstream ended: a translated stream that did not reach its terminal event fails."""
        tx = self._tx
        if tx is None or tx.life.phase is not Phase.STOPPED:
            raise UpstreamProtocolError("upstream closed the Responses stream before response.completed")

    @property
    def next_sequence_number(self) -> int:
        return 0 if self.last_seq is None else self.last_seq + 1

    def _transition(self, kind: str, etype: str) -> None:
        self.state = _MACHINE.step(self.state, kind, etype)

    def _fail_state(self) -> None:
        self.state = State.ERRORED

    # -- streamed -------------------------------------------------------------------------------

    def _fast(self, name: RawName, obj: dict[str, Any], now: float) -> bool:
        """A text / reasoning / refusal / argument delta for a known item, with the next
        sequence number: the same effect as ``_event`` without the general checks (the writer's
        half, when translating, gets the event as ``_event`` would give it, before the summary)."""
        if self.state is not State.ACTIVE:
            return False
        etype = obj.get("type")
        if type(etype) is not str:  # (a list is unhashable)
            return False
        kind = _FAST_DELTAS.get(etype)
        if kind is None:
            return False
        seq = obj.get("sequence_number")
        last = self.last_seq
        iid = obj.get("item_id")
        s = obj.get("delta")
        if (
            type(seq) is not int
            or last is None
            or seq != last + 1
            or type(iid) is not str
            or type(s) is not str
            or iid not in self.items
            or obj.get("error") is not None
        ):
            return False
        acc = self.acc
        tb = acc.tools.get(iid) if kind == "args" else None
        if kind == "args" and (tb is None or not tb.has_args or tb.finished):
            return False
        out = self.out
        if out is not None:
            self._translation(out).event(etype, obj)
        if tb is not None:
            acc.tool_args(tb, s, now)
        elif s:
            acc.content_seen = True
            n = len(s) if s.isascii() else nbytes(s)
            if kind == "text":
                acc.text_bytes += n
                if acc.cap_text is not None:
                    acc.capture_text(s)
            elif kind == "reasoning":
                acc.reasoning_bytes += n
                if acc.cap_reasoning is not None:
                    acc.capture_reasoning(s)
            else:
                acc.refusal_bytes += n
                if acc.cap_text is not None:
                    acc.capture_text(s)
        self.last_seq = seq
        return True

    def _event(self, name: str, obj: dict[str, Any], now: float) -> None:
        acc = self.acc
        seq = obj.get("sequence_number")
        if type(seq) is int:
            last = self.last_seq
            if last is not None and seq != last + 1:
                acc.sequence_gaps += 1
            self.last_seq = seq
        etype = obj.get("type")
        if type(etype) is not str or not etype:
            etype = name  # typed by its payload's ``type``, else by the SSE event name
        if etype not in NODE_RESPONSES_EVENTS:
            self.conform("openai_responses.unknown_event", f"event type {etype!r} is unknown to the Node SDK")
        if etype == "error" or (obj.get("error") is not None and not etype.startswith("response.")):
            err = obj.get("error")
            msg, code = error_fields(err if err is not None else obj)
            acc.upstream_error(msg, type=code)
            out = self.out
            if out is not None:
                self._translation(out).error(obj)
            self.upstream_failed()
            return
        if self.state is State.WAITING and etype != "response.created":
            self.conform("openai_responses.created_first", f"{etype} came before response.created")
        out = self.out
        if out is not None:
            # The writer's half first: a problem it finds ends the reading at this event, before
            # the summary takes it in.
            self._translation(out).event(etype, obj)
        if etype in _START:
            self._transition("start", etype)
            self._identity(as_dict(obj.get("response")))
        elif etype in _TERMINAL:
            self._transition("terminal", etype)
            resp = as_dict(obj.get("response"))
            if etype != "response.completed":
                self.conform("openai_responses.not_completed", f"the stream ended with {etype}")
            elif type(resp.get("output")) is not list:
                self.conform("openai_responses.completed_output", "response.completed has no response.output")
            self._snapshot(as_dict(obj.get("response")), streamed=True, now=now)
            acc.terminal = True
        elif etype.startswith("response."):
            self._transition("item", etype)
            handler = _HANDLERS.get(etype)
            if handler is not None:
                handler(self, obj, now)
        # anything else: an unknown event type, ignored (forward compatible)

    def _ended_early(self) -> None:
        if self.state is State.ACTIVE:
            self.acc.event_index = self.events
            self.conform("openai_responses.no_terminal", "the stream ended before response.completed")

    def _identity(self, resp: dict[str, Any]) -> None:
        acc = self.acc
        rid = as_str(resp.get("id"))
        if rid:
            if acc.id is None:
                acc.id = rid
            elif rid != acc.id:
                raise UpstreamProtocolError(f"openai_responses: response id {rid!r} differs from {acc.id!r}")
        model = as_str(resp.get("model"))
        if model and acc.model is None:
            acc.model = model

    def _item_id(self, obj: dict[str, Any], what: str) -> str:
        iid = obj.get("item_id")
        if type(iid) is not str or iid not in self.items:
            raise SemanticStreamError(f"openai_responses: {what} for item {iid!r} that was never added")
        return iid

    def _item_added(self, obj: dict[str, Any], now: float) -> None:
        item = as_dict(obj["item"])
        iid = as_str(item.get("id")) or f"output_{obj.get('output_index')}"
        itype = as_str(item.get("type")) or ""
        if iid in self.items:
            raise SemanticStreamError(f"openai_responses: output item {iid!r} added twice")
        self.items[iid] = itype
        self._tool_from_item(iid, itype, item, now, streamed=True)

    def _tool_from_item(self, iid: str, itype: str, item: dict[str, Any], now: float, streamed: bool) -> None:
        acc = self.acc
        kind = _ARG_TOOLS.get(itype)
        if kind is not None:
            call_id = as_str(item.get("call_id")) if kind != "mcp" else iid
            name = as_str(item.get("name"))
            args = as_str(item.get(_ARG_FIELD[itype]))
            if streamed:
                tb = acc.tool_start(iid, call_id or iid, name, kind, now)
                if args:
                    acc.tool_args(tb, args, now)
            else:
                acc.tool_complete(iid, call_id or iid, name, kind, args or "")
        elif itype in _CLIENT_ITEMS:
            cid, name, args = _client_item_call(itype, item)
            if streamed:
                # the whole call arrives with the item (its .done repeats it): no argument
                # stream for the guard to watch
                acc.tool_start(iid, cid or iid, name, _CLIENT_ITEMS[itype], now, has_args=False)
            else:
                acc.tool_complete(iid, cid or iid, name, _CLIENT_ITEMS[itype], args)
        elif _server_tool(itype):
            if streamed:
                acc.tool_start(iid, iid, itype, "server_tool", now, has_args=False)
            else:
                acc.tool_complete(iid, iid, itype, "server_tool", None)

    def _item_done(self, obj: dict[str, Any], now: float) -> None:
        item = as_dict(obj["item"])
        iid = as_str(item.get("id")) or f"output_{obj.get('output_index')}"
        if iid not in self.items:
            raise SemanticStreamError(
                f"openai_responses: output_item.done for item {iid!r} that was never added"
            )
        tb = self.acc.tools.get(iid)
        if tb is not None and not tb.finished:
            self._finish_from_item(tb, item, now)

    def _finish_from_item(self, tb: ToolBuffer, item: dict[str, Any], now: float) -> None:
        itype = as_str(item.get("type")) or ""
        if itype in _CLIENT_ITEMS:
            cid, _, whole = _client_item_call(itype, item)
            tb.id = cid or tb.id
            self.acc.tool_set(tb, whole, now)
            self.acc.tool_finish(tb)
            return
        field = _ARG_FIELD.get(itype)
        if field is not None:
            args = item.get(field)
            if type(args) is str:
                self.acc.tool_set(tb, args, now)
        if tb.name is None:
            tb.name = as_str(item.get("name"))
        self.acc.tool_finish(tb)

    def _text_delta(self, obj: dict[str, Any], now: float) -> None:
        self._item_id(obj, obj["type"])
        self.acc.text(obj["delta"])

    def _refusal_delta(self, obj: dict[str, Any], now: float) -> None:
        self._item_id(obj, obj["type"])
        self.acc.refusal(obj["delta"])

    def _reasoning_delta(self, obj: dict[str, Any], now: float) -> None:
        self._item_id(obj, obj["type"])
        self.acc.reasoning(obj["delta"])

    def _args_delta(self, obj: dict[str, Any], now: float) -> None:
        iid = self._item_id(obj, obj["type"])
        tb = self.acc.tools.get(iid)
        if tb is None or not tb.has_args:
            raise SemanticStreamError(f"openai_responses: {obj['type']} for a {self.items[iid]} item")
        if tb.finished:
            raise SemanticStreamError(
                f"openai_responses: {obj['type']} after the arguments of {iid!r} were done"
            )
        delta = obj["delta"]
        if type(delta) is not str:
            raise UpstreamProtocolError(f"openai_responses: {obj['type']} delta is not a string")
        self.acc.tool_args(tb, delta, now)

    def _args_done(self, obj: dict[str, Any], now: float) -> None:
        iid = self._item_id(obj, obj["type"])
        tb = self.acc.tools.get(iid)
        if tb is None or not tb.has_args:
            raise SemanticStreamError(f"openai_responses: {obj['type']} for a {self.items[iid]} item")
        if tb.finished:
            return
        whole = obj.get("input" if obj["type"] == "response.custom_tool_call_input.done" else "arguments")
        if type(whole) is str:
            self.acc.tool_set(tb, whole, now)
        name = as_str(obj.get("name"))
        if name and tb.name is None:
            tb.name = name
        self.acc.tool_finish(tb)

    # -- snapshots (terminal events and non-streamed bodies) ------------------------------------

    def _snapshot(self, resp: dict[str, Any], *, streamed: bool, now: float) -> None:
        acc = self.acc
        self._identity(resp)
        status = as_str(resp.get("status"))
        output = as_list(resp.get("output"))
        client_tool = False
        for raw in output:
            item = as_dict(raw)
            itype = as_str(item.get("type")) or ""
            iid = as_str(item.get("id"))
            if itype in _ARG_TOOLS or itype in _CLIENT_ITEMS:
                client_tool = client_tool or itype != "mcp_call"
            if not streamed:
                self._count_item(itype, item)
            if itype not in _ARG_TOOLS and itype not in _CLIENT_ITEMS and not _server_tool(itype):
                continue
            tb = acc.tools.get(iid) if iid is not None else None
            if tb is None:
                key = iid or f"output_{len(acc.tool_order)}"
                if key in acc.tools:
                    continue
                self._tool_from_item(key, itype, item, now, streamed=False)
            elif not tb.finished:
                self._finish_from_item(tb, item, now)
        if streamed:
            client_tool = client_tool or any(t.kind in CLIENT_KINDS for t in acc.tool_order)
        if status == "incomplete":
            reason = as_str(as_dict(resp.get("incomplete_details")).get("reason")) or "incomplete"
            acc.stop(reason, STOP_CLASSES)
        elif status == "completed":
            acc.stop_reason = "completed"
            acc.stop_class = StopClass.TOOL_USE if client_tool else StopClass.END_TURN
        elif status is not None:
            acc.stop(status, STOP_CLASSES)
        if status == "failed":
            err = resp.get("error")
            msg, code = error_fields(err) if err is not None else ("response failed", None)
            acc.upstream_error(msg, type=code, outcome=False)
        u = resp.get("usage")
        if type(u) is dict:
            acc.usage = openai_usage(u, "input", "output")

    def _count_item(self, itype: str, item: dict[str, Any]) -> None:
        acc = self.acc
        if itype == "message":
            for part in as_list(item.get("content")):
                p = as_dict(part)
                ptype = p.get("type")
                if ptype == "output_text":
                    acc.text(as_str(p.get("text")) or "")
                elif ptype == "refusal":
                    acc.refusal(as_str(p.get("refusal")) or "")
        elif itype == "reasoning":
            for part in as_list(item.get("summary")) + as_list(item.get("content")):
                acc.reasoning(as_str(as_dict(part).get("text")) or "")

    def _error_body(self, obj: dict[str, Any]) -> bool:
        # A response object has its own ``error`` field (set when status is "failed").
        return obj.get("error") is not None and obj.get("object") != "response" and "status" not in obj

    def _body(self, obj: dict[str, Any]) -> None:
        if obj.get("object") not in ("response", None):
            raise UpstreamProtocolError(
                f"openai_responses: body object {obj.get('object')!r} is not 'response'"
            )
        self._snapshot(obj, streamed=False, now=0.0)


_FAST_DELTAS: dict[str, str] = {
    "response.output_text.delta": "text",
    "response.reasoning_summary_text.delta": "reasoning",
    "response.reasoning_text.delta": "reasoning",
    "response.refusal.delta": "refusal",
    "response.function_call_arguments.delta": "args",
    "response.custom_tool_call_input.delta": "args",
    "response.mcp_call_arguments.delta": "args",
}

_HANDLERS = {
    "response.output_item.added": ResponsesObserver._item_added,
    "response.output_item.done": ResponsesObserver._item_done,
    "response.output_text.delta": ResponsesObserver._text_delta,
    "response.refusal.delta": ResponsesObserver._refusal_delta,
    "response.reasoning_summary_text.delta": ResponsesObserver._reasoning_delta,
    "response.reasoning_text.delta": ResponsesObserver._reasoning_delta,
    "response.function_call_arguments.delta": ResponsesObserver._args_delta,
    "response.function_call_arguments.done": ResponsesObserver._args_done,
    "response.custom_tool_call_input.delta": ResponsesObserver._args_delta,
    "response.custom_tool_call_input.done": ResponsesObserver._args_done,
    "response.mcp_call_arguments.delta": ResponsesObserver._args_delta,
    "response.mcp_call_arguments.done": ResponsesObserver._args_done,
}


def _web_search_call(item_id: str, item: dict[str, Any]) -> WebSearchCall:
    """A finished ``web_search_call`` in neutral terms: its query (``action.query``, or the
    first of ``action.queries``) and the pages of ``action.sources`` (present when the request
    included them)."""
    action = as_dict(item.get("action"))
    query = as_str(action.get("query"))
    if query is None:
        queries = [q for q in as_list(action.get("queries")) if isinstance(q, str)]
        query = queries[0] if queries else None
    sources = tuple(
        (url, as_str(s.get("title")))
        for s in map(as_dict, as_list(action.get("sources")))
        if (url := as_str(s.get("url")))
    )
    return WebSearchCall(as_str(item.get("id")) or item_id, query, sources, _R)
