"""OpenAI Responses grammar: the one reading of the protocol, streamed and non-streamed.

The rules (docs/design/protocol-grammars.md, "OpenAI Responses"):
``response.created`` -> ``response.output_item.added``
-> ``response.output_text.delta`` / ``response.function_call_arguments.delta`` -> ``*.done`` ->
``response.output_item.done`` -> a terminal event: ``response.completed`` or
``response.incomplete`` (``completed``), or ``response.failed``: an in-band upstream error, like
Anthropic's ``error`` event (outcome ``error``, its ``response.error`` the summary's error,
``stop_reason`` ``failed``). It
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

One reading, several consumers: every event updates the summary's accumulator and, when a
stream translator is attached (``out``, a ``Sink``), drives its writer, in the same handlers
(``ResponsesGrammar``). The writer keys blocks by item id and content part, gets what a ``.done``
event carries beyond the deltas (one that contradicts them is a violation) and gets items and
events the neutral calls do not model (hosted tools, annotations) as opaque Responses content.
A problem found while reading an event ends the reading at that event, for the summary and the
client alike (docs/design/translation.md)."""

from __future__ import annotations

from typing import Any

from proxai.core.errors import (
    SemanticStreamError,
    SseLimitError,
    TranslationError,
    TruncatedStreamError,
    UpstreamProtocolError,
)
from proxai.core.errors.kinds import classify
from proxai.core.model import Protocol, StopClass
from proxai.core.sse import RawName
from proxai.protocols.conformance import NODE_RESPONSES_EVENTS, UNTYPED
from proxai.stream import stop_reasons
from proxai.stream.sink import (
    NO_BLOCK,
    BlockKey,
    Citation,
    DeltaKind,
    Output,
    Phase,
    Sink,
    Stop,
)
from proxai.stream.textparts import ENCODED

from .common import Accum, GrammarBase, ToolBuffer, error_fields, json_valid, openai_usage
from .machine import Machine, StateEnum, as_dict, as_int, as_list, as_str
from .responses_items import (
    ARG_FIELD,
    ARG_TOOLS,
    CLIENT_ITEMS,
    CLIENT_KINDS,
    MUST_REACH,
    cannot_reach,
    client_item_call,
    delta_not_string,
    final_text,
    hosted_call,
    item_seen,
    open_item,
    server_tool,
    unanswered_hosted,
    web_search_call,
)
from .responses_sdk import FAST_KEYS, NO_OUT, SdkView, after_terminal
from .responses_usage import USAGE_FIELDS, usage_in


class State(StateEnum):
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


_R = Protocol.OPENAI_RESPONSES


class _Item:
    """One output item, as both consumers need it: its ``type`` (the summary's), the writer's
    ``kind`` of it, and what the writer keeps to check its ``.done`` events."""

    __slots__ = ("acc", "done", "id", "kind", "part", "part_ci", "part_key", "sdk", "started", "tb", "type")

    def __init__(self, iid: str, itype: str) -> None:
        self.id = iid  # as added: one object, so the writer's lookups by it can be by identity
        self.type = itype
        # the writer's kind: message | reasoning | function_call | web_search | opaque
        self.kind = _WRITER_KINDS.get(itype, "opaque")
        self.tb: ToolBuffer | None = None  # the summary's tool call of this item, if any
        self.acc = bytearray()  # function_call arguments, as streamed (UTF-8)
        self.started = False  # reasoning: the thinking block was opened
        self.done = False  # output_item.done came (or the terminal event closed it)
        self.sdk = NO_OUT  # the item as the SDKs' accumulators hold it (responses_sdk)
        # message: the content part added last, while it is open (its deltas come one after
        # another): its content index, its key in ``_parts`` and its kept text. The delta's index
        # is compared by identity: CPython has one object per small int, so ``is`` is the type and
        # value check in one, and any other index takes the lookup in ``_parts``. Set only by
        # ``_part_added`` (a message item not done) and cleared when the part closes, which a
        # message's parts all do before the item is done (``_finish_item``, ``_completed``).
        self.part_ci: object = _NO_PART
        self.part_key = _NO_KEY
        self.part = _NO_TEXT


_NO_PART = object()  # (no delta's index is this object)
_NO_KEY: tuple[str, int] = ("", -1)
_NO_TEXT = bytearray()  # (never read nor written: only with ``_NO_PART``)
_WRITER_KINDS = {
    "message": "message",
    "reasoning": "reasoning",
    "function_call": "function_call",
    "web_search_call": "web_search",
}
_NO_ITEM = _Item("", "")  # (never read: only with ``_NO_PART`` as its id)
_TEXT_DELTA = "response.output_text.delta"
_K_TYPE, _K_ITEM_ID, _K_SEQUENCE_NUMBER, _K_DELTA, _K_OUTPUT_INDEX, _K_CONTENT_INDEX, _K_ERROR = FAST_KEYS
_TEXT = "text"  # the fast path's kind of text delta, compared by identity
_FC_DELTA = "response.function_call_arguments.delta"
_FC_DONE = "response.function_call_arguments.done"


class ResponsesGrammar(GrammarBase):
    """The Responses grammar. Each event is read once, in one set of handlers that update the
    summary (``Accum``) and, while a stream translator is attached (``out``), drive its writer.

    The writer's view: ``response.created`` starts it (a second one is a duplicate start; item
    events before it end a translation). A ``message`` item's content parts become text / refusal
    blocks keyed ``(item_id, content_index)``; a ``function_call`` item is a tool block keyed by
    its item id (the client-visible id is its ``call_id``, which it must carry, with its name); a
    ``reasoning`` item becomes a thinking block (``reasoning_text`` and
    ``reasoning_summary_text`` deltas) whose ``encrypted_content`` is the Anthropic signature, or,
    when it carries no text, a ``redacted_thinking`` block whose data is the
    ``encrypted_content``. ``*.done`` events are authoritative: what they carry beyond the deltas
    is forwarded as a delta, a contradiction is a ``SemanticStreamError``. Other item types
    (hosted tools, MCP, shell and patch calls, ...), their events and text annotations are opaque
    Responses content (``Sink.opaque_start`` / ``opaque_event``), except a ``url_citation``
    annotation: a ``Citation``, which every protocol can carry (its ``cited_text`` the span of the
    part's text). Content kept for the ``.done`` checks is bounded by ``max_buffer``
    (``SseLimitError``)."""

    protocol = Protocol.OPENAI_RESPONSES
    state: State
    _after_end = after_terminal  # what the SDKs do with the events after the terminal one

    __slots__ = (
        "_custom",
        "_last_iid",
        "_last_item",
        "_parts",
        "_refusal",
        "_rid",
        "_room",
        "_sdk",
        "_started_by",
        "_stopped",
        "_tools",
        "_unanswered",
        "items",
        "next_seq",
        "resumed",
        "state",
    )

    def __init__(
        self, acc: Accum, output: Output | None = None, custom_tools: frozenset[str] = frozenset()
    ) -> None:
        super().__init__(acc, output)
        self.state = State.WAITING
        self._custom = custom_tools  # the client's custom tools: a custom_tool_call of another name ran
        self._unanswered = False  # such a call came and no message content after it
        self.items: dict[str, _Item] = {}  # every added item by its id
        # the item id of the last fast delta and its item (none yet: an id no parse gives)
        self._last_iid: object = _NO_PART
        self._last_item = _NO_ITEM
        # the sequence number the next event should carry (None: no event carried one yet)
        self.next_seq: int | None = None
        # The writer's: the id of ``response.created`` (None: not started), the open content
        # parts and their text ((item_id, content_index) -> its UTF-8), the room left for kept
        # bytes (a bytearray holds at most 9/8 of its length plus ``ENCODED``: ``_keep``), whether a
        # function_call / a refusal part came, whether the stream ended with success.
        self._rid: str | None = None
        self._started_by = ""  # the start event that started the writer
        self.resumed = False  # the stream began mid-way (``_resume``)
        self._parts: dict[tuple[str, int], bytearray] = {}
        self._room = 0  # the bytes that may still be kept (set at ``response.created``)
        self._tools = False
        self._refusal = False
        self._stopped = False
        self._sdk = SdkView(self.conform, self.acc.finding_once)  # the SDKs' accumulators (conformance)

    @property
    def phase(self) -> Phase:
        """The grammar's state as a stream translator's phase."""
        state = self.state
        if state is State.ACTIVE:
            return Phase.WAITING if self._rid is None else Phase.STREAMING
        if state is State.WAITING:
            return Phase.WAITING
        return Phase.STOPPED if self._stopped else Phase.ERRORED

    def translate_eof(self) -> None:
        """The upstream ended: a translated stream that did not reach its terminal event fails."""
        if not self._stopped:
            raise TruncatedStreamError("upstream closed the Responses stream before response.completed")

    @property
    def final_texts(self) -> list[str]:
        """The output text of ``response.completed``'s messages, as the SDKs' parse helpers read it."""
        return self._sdk.answers()

    @property
    def next_sequence_number(self) -> int:
        return 0 if self.next_seq is None else self.next_seq

    def _transition(self, kind: str, etype: str) -> None:
        self.state = _MACHINE.step(self.state, kind, etype)

    def _fail_state(self) -> None:
        self.state = State.ERRORED

    # -- streamed -------------------------------------------------------------------------------

    def _fast(self, name: RawName, obj: dict[str, Any], now: float) -> bool:
        """A text / reasoning / argument delta for a known item, with the next sequence number
        (and, while translating, of an open part or item of its kind): the same effect as
        ``_event`` without the general checks. No state test: an item is known only once the
        stream started, and the loop reads nothing after the terminal event or an error. A
        refusal delta (rare) goes the general way.

        The fields every delta has are read by subscript inside one ``try``; a missing key or an
        unhashable type or id declines the event, and the general path judges it, as it reads a
        delta with an ``error`` (a truthy one is the upstream's error). Two string comparisons
        come before the lookups they spare (each new string from the parse is hashed by its
        first lookup): the type with the most frequent one, the item id with the last delta's
        (deltas come in runs of one item; an item, once added, is never replaced). A delta whose
        indexes are not the ones both official SDKs read it with (``SdkView``) takes the general
        path, which judges them."""
        try:
            etype = obj[_K_TYPE]
            kind = _TEXT if etype == _TEXT_DELTA else _FAST_DELTAS.get(etype)
            if kind is None:
                return False
            iid = obj[_K_ITEM_ID]
            if iid == self._last_iid:
                item = self._last_item
            else:
                item = self._last_item = self.items[iid]
                self._last_iid = iid
            seq = obj[_K_SEQUENCE_NUMBER]
            s, oi = obj[_K_DELTA], obj[_K_OUTPUT_INDEX]  # (no tuple: two stores)
        except (KeyError, TypeError):
            return False
        if type(seq) is not int or seq != self.next_seq or type(s) is not str or _K_ERROR in obj:
            return False
        sdk = item.sdk  # the indexes both SDKs read it with (responses_sdk), else the slow way
        if oi is not sdk.oi:
            return False
        acc = self.acc
        out = self.out
        # one branch per kind, most frequent first, each with its own end (fewer tests per event)
        if kind is _TEXT:
            try:
                ci = obj[_K_CONTENT_INDEX]
            except KeyError:
                return False
            if ci is not sdk.tci:
                return False
            if out is not None:
                if ci is item.part_ci:  # its open part: so a message item, and not done
                    key = item.part_key
                    parts = item.part
                else:
                    if item.done or item.kind != "message" or type(ci) is not int:
                        return False
                    key = (iid, ci)
                    found = self._parts.get(key)
                    if found is None:
                        return False
                    parts = found
                if s:
                    b = s.encode()  # ``_keep`` inline; its size is the summary's too
                    parts += b
                    n = len(b)
                    self._room = room = self._room - n
                    if room < 0:
                        raise SseLimitError("Responses content kept for .done checks", self.max_buffer)
                    out.delta(key, "text", s)
            elif s:
                n = len(s) if s.isascii() else len(s.encode())  # (no surrogate comes from orjson)
            if s:
                acc.content_seen = True
                acc.text_bytes += n
                if acc.cap_text is not None:
                    acc.capture_text(s)
            self.next_seq = seq + 1
            return True
        if kind == "reasoning":
            rt = etype == "response.reasoning_text.delta"
            if obj.get("content_index" if rt else "summary_index") is not (sdk.rci if rt else sdk.si):
                return False
            if out is not None:
                if item.done or item.kind != "reasoning":
                    return False
                if not item.started:
                    item.started = True
                    out.block_start(item.id, "thinking")
                if s:
                    out.delta(item.id, "thinking", s)
            if s:
                acc.content_seen = True
                acc.reasoning_bytes += len(s) if s.isascii() else len(s.encode())
                if acc.cap_reasoning is not None:
                    acc.capture_reasoning(s)
            self.next_seq = seq + 1
            return True
        tb = item.tb  # an argument delta
        if tb is None or not tb.has_args or tb.finished or etype != sdk.argd:
            return False
        if out is not None:
            if obj[_K_TYPE] != _FC_DELTA or item.kind != "function_call" or item.done:
                return False
            if s:
                self._keep(item.acc, s)
                out.delta(item.id, "args", s)
        acc.tool_args(tb, s, now)
        self.next_seq = seq + 1
        return True

    def _event(self, name: str, obj: dict[str, Any], now: float) -> None:
        acc = self.acc
        seq = obj.get("sequence_number")
        if type(seq) is int:
            want = self.next_seq
            if want is not None and seq != want:
                acc.sequence_gaps += 1
            self.next_seq = seq + 1
        etype = obj.get("type")
        if type(etype) is not str or not etype:
            etype = UNTYPED  # the SDKs read an event by its payload's ``type`` alone
        if etype not in NODE_RESPONSES_EVENTS:
            self.conform("openai_responses.unknown_event", f"event type {etype!r} is unknown to the Node SDK")
        out = self.out
        err = obj.get("error")  # truthy on any event: both SDKs' stream layers raise it
        if etype == "error" or (err is not None and (bool(err) or not etype.startswith("response."))):
            msg, code = error_fields(err if err is not None else obj)
            acc.upstream_error(msg, type=code)
            self.upstream_failed()
            if out is not None:
                nested = as_dict(err)
                message = (
                    as_str(obj.get("message")) or as_str(nested.get("message")) or "upstream error event"
                )
                kind = classify(nested.get("type"), obj.get("code") or nested.get("code"), message)
                out.upstream_error(kind, message)
            return
        if err is not None and type(err) in (dict, list):  # ``{}``, ``[]``: truthy in JavaScript
            self.conform("openai_responses.error_empty", f"an empty error field on {etype}")
        self._sdk.see(etype, obj)
        if self.state is State.WAITING and etype in _HANDLERS:
            self._resume(etype, seq)
        if etype in _START:
            if out is not None:
                self._created(out, obj, etype)
            self._transition("start", etype)
            self._identity(as_dict(obj.get("response")))
        elif etype in _TERMINAL:
            if out is not None:
                if etype == "response.failed":
                    self._failed(out, obj)
                else:
                    self._completed(out, obj, etype)
            self._transition("terminal", etype)
            self._snapshot(as_dict(obj.get("response")), streamed=True, now=now, etype=etype)
            acc.reach_terminal()
            if etype == "response.failed":
                self.upstream_failed()
        elif (handler := _HANDLERS.get(etype)) is not None:
            self._transition("item", etype)
            if not self.resumed or not _before(self.items, obj, etype):
                handler(self, obj, etype, now)
        elif etype == UNTYPED or ("item_id" not in obj and "item" not in obj):
            self._itemless(out, obj, etype)
        elif out is not None:
            # anything else: an event the grammar does not model, ignored (forward compatible),
            # in any state; a translation hands an opaque item's own events on
            self._other(out, obj, etype)

    def _itemless(self, out: Sink | None, obj: dict[str, Any], etype: str) -> None:
        """An event of no item that the grammar does not model (``keepalive``, a gateway's own
        type), or one whose payload has no type (``UNTYPED``, of an item or not): noted once per
        type, never a refusal. Normalize mode carries it as it came when the Node SDK knows its
        type (the Python SDK reads none of it; Node raises on a type it does not know); a
        translation leaves it out."""
        keep = out is not None and self.normalize and etype in NODE_RESPONSES_EVENTS
        how = "carried as it came" if keep else "left out" if out is not None else "not read"
        what = f"event {etype!r} of no item" if etype != UNTYPED else "an event whose payload has no type"
        self.acc.finding_once(
            f"openai_responses.unmodelled.{etype}", "quirk", f"{what} is not modelled: {how}"
        )
        if keep:
            assert out is not None
            out.opaque_event(NO_BLOCK, _R, obj)

    def _resume(self, etype: str, seq: object) -> None:
        """The first event is an item's: a background response resumed mid-way (``GET
        .../responses/{id}?stream=true&starting_after=N``). Read on: the events of items added
        before it are not read (their content comes from the terminal snapshot), the rest as
        usual. A translation cannot be written whole from it: a typed refusal."""
        if self.out is not None:
            raise TranslationError(
                f"the stream starts mid-way ({etype}, sequence_number {seq}): a resumed background"
                " response has no beginning to translate",
                "starting_after",
            )
        self.acc.finding("openai_responses.resumed", "quirk", f"the stream starts mid-way at {etype}")
        self.resumed = True
        self.state = State.ACTIVE

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

    def _item(self, obj: dict[str, Any], etype: str) -> tuple[str, _Item]:
        """The item an event names by ``item_id``. With ``item_id`` null or empty, naming an item
        added without an id, naming no item added or another item than the one added at its
        ``output_index``, the item added there, as both SDKs read every item event (noted); an
        event no item was added for is refused."""
        iid = obj.get("item_id")
        item = self.items.get(iid) if type(iid) is str else None
        if type(oi := obj.get("output_index")) is int and (item is None or item.sdk.elsewhere(oi)):
            at = next((i for i in self.items.values() if i.sdk.key == oi), None)
            if at is not None and (item is None or at.type == item.type):  # (else the SDKs skip it)
                null = not iid or at.id == f"output_{oi}"
                rule = "item_id_null" if null else "item_id_unknown" if item is None else "item_id_other"
                rule = "openai_responses." + rule
                msg = f"{etype} with item_id {iid!r}: read as item {at.id!r}, the one at its output_index"
                self.acc.finding_once(rule, "quirk", msg)
                return at.id, at
        if item is None:
            raise SemanticStreamError(f"openai_responses: {etype} for item {iid!r} that was never added")
        assert type(iid) is str
        return iid, item

    def _keep(self, acc: bytearray, text: str) -> None:
        """Keep ``text`` (UTF-8) in ``acc``; the count bounds the bytes really held."""
        b = text.encode()
        acc += b
        self._room -= len(b)
        if self._room < 0:
            raise SseLimitError("Responses content kept for .done checks", self.max_buffer)

    # -- lifecycle (the writer's) ----------------------------------------------------------------

    def _created(self, out: Sink, obj: dict[str, Any], etype: str) -> None:
        """A start event: the first starts the writer (``response.queued`` or ``in_progress``
        first: a background response), a second ``response.created`` is a duplicate."""
        if self._rid is not None:
            if etype == "response.created" == self._started_by:
                raise SemanticStreamError("duplicate response.created")
            if etype == "response.created":
                self._started_by = etype
            return
        resp = as_dict(obj.get("response"))
        rid = as_str(resp.get("id"))
        if not rid:
            raise UpstreamProtocolError("response.created without response.id")
        self._rid, self._started_by = rid, etype
        # nothing is kept before: room for 8/9 of ``max_buffer`` counted (``_keep``)
        self._room = self.max_buffer * 8 // 9
        out.start(rid, as_str(resp.get("model")) or "", None)

    def _failed(self, out: Sink, obj: dict[str, Any]) -> None:
        err = as_dict(as_dict(obj.get("response")).get("error"))
        message = as_str(err.get("message")) or "the upstream response failed"
        out.upstream_error(classify(None, err.get("code"), message), message)

    def _completed(self, out: Sink, obj: dict[str, Any], etype: str) -> None:
        if self._rid is None:
            raise SemanticStreamError(f"{etype} before response.created")
        resp = as_dict(obj.get("response"))
        rid = as_str(resp.get("id"))
        if rid is not None and rid != self._rid:
            raise SemanticStreamError(
                f"terminal response id {rid!r} differs from response.created {self._rid!r}"
            )
        if not self.normalize:  # an item only the snapshot has is lost as surely as a streamed one
            for it in map(as_dict, as_list(resp.get("output"))):
                itype = as_str(it.get("type")) or ""
                hosted = hosted_call(itype, as_str(it.get("name")), self._custom)
                if itype in MUST_REACH and as_str(it.get("id")) not in self.items and not hosted:
                    cannot_reach(itype)
            if self._unanswered:
                raise unanswered_hosted()
        # items the upstream never finished: close them (their content is what was streamed)
        for key in list(self._parts):
            self._close_part(out, key)
        for iid, item in self.items.items():
            if not item.done and item.kind != "message":
                self._finish_item(out, iid, item, {})
        status = as_str(resp.get("status")) or (
            "incomplete" if etype == "response.incomplete" else "completed"
        )
        reason = as_str(as_dict(resp.get("incomplete_details")).get("reason"))
        raw = as_dict(resp.get("usage"))
        usage = usage_in(raw)
        if self.normalize:  # (a gateway's cost, ...: written as it came)
            usage.extra = {k: v for k, v in raw.items() if k not in USAGE_FIELDS} or None
        self._stopped = True
        cls = stop_reasons.from_responses(
            status, reason, has_tool_calls=self._tools, has_refusal=self._refusal
        )
        out.end(Stop(cls, status if reason is None else f"{status}:{reason}"), usage)

    # -- items ----------------------------------------------------------------------------------

    def _item_added(self, obj: dict[str, Any], etype: str, now: float) -> None:
        out = self.out
        if obj.get("item") is None:  # openai-python skips it; openai-node raises (node_added_item)
            msg = f"{etype} without an item (absent or null): skipped"
            self.acc.finding_once("openai_responses.added_without_item", "quirk", msg)
            return
        item = as_dict(obj["item"])
        given = as_str(item.get("id"))
        itype = as_str(item.get("type")) or ""
        if out is not None and not given:
            raise UpstreamProtocolError(f"output item of type {itype!r} without an id")
        iid = given or f"output_{obj.get('output_index')}"
        if iid in self.items:
            raise SemanticStreamError(f"openai_responses: output item {iid!r} added twice")
        rec = _Item(iid, itype)
        rec.sdk = self._sdk.added
        call_id = name = None
        if out is not None:
            if itype == "function_call":
                call_id = as_str(item.get("call_id"))
                name = as_str(item.get("name"))
                if not call_id or not name:
                    raise UpstreamProtocolError(f"function_call item {iid!r} without call_id or name")
            elif not itype:
                raise UpstreamProtocolError(f"output item {iid!r} without a type")
        self.items[iid] = rec
        self._tool_from_item(iid, itype, item, now, streamed=True)
        rec.tb = self.acc.tools.get(iid)
        if out is None:
            return
        kind = rec.kind
        if kind == "function_call":
            self._tools = True
            out.block_start(iid, "tool", id=call_id, name=name)
            self._room -= ENCODED
            if args := as_str(item.get("arguments")):
                self._keep(rec.acc, args)
                out.delta(iid, "args", args)
        elif kind in {"opaque", "web_search"}:
            if itype in MUST_REACH and not self.normalize:
                if not hosted_call(itype, as_str(item.get("name")), self._custom):
                    cannot_reach(itype)
                self._unanswered = True  # left out with a note if an answer follows
            out.opaque_start(iid, _R, itype, item, neutral=kind == "web_search")

    def _tool_from_item(self, iid: str, itype: str, item: dict[str, Any], now: float, streamed: bool) -> None:
        acc = self.acc
        kind = ARG_TOOLS.get(itype)
        if kind == "custom" and hosted_call(itype, as_str(item.get("name")), self._custom):
            kind = "server_tool"  # a call the server ran: not the client's
        if kind is not None:
            call_id = as_str(item.get("call_id")) if kind != "mcp" else iid
            name = as_str(item.get("name"))
            args = as_str(item.get(ARG_FIELD[itype]))
            if streamed:
                tb = acc.tool_start(iid, call_id or iid, name, kind, now)
                if args:
                    acc.tool_args(tb, args, now)
            else:
                acc.tool_complete(iid, call_id or iid, name, kind, args or "")
        elif itype in CLIENT_ITEMS:
            cid, name, args = client_item_call(itype, item)
            if streamed:
                # the whole call arrives with the item (its .done repeats it): no argument
                # stream for the guard to watch
                acc.tool_start(iid, cid or iid, name, CLIENT_ITEMS[itype], now, has_args=False)
            else:
                acc.tool_complete(iid, cid or iid, name, CLIENT_ITEMS[itype], args)
        elif server_tool(itype):
            if streamed:
                acc.tool_start(iid, iid, itype, "server_tool", now, has_args=False)
            else:
                acc.tool_complete(iid, iid, itype, "server_tool", None)

    def _item_done(self, obj: dict[str, Any], etype: str, now: float) -> None:
        out = self.out
        data = as_dict(obj["item"] if out is None else obj.get("item"))
        iid = as_str(data.get("id")) or f"output_{obj.get('output_index')}"
        item = self.items.get(iid)
        if item is None:  # (an item added without an id: the one at its output_index, else refused)
            at = {"item_id": iid, "output_index": obj.get("output_index")}
            iid, item = self._item(at, "output_item.done")
        if out is not None:
            if item.done:
                raise SemanticStreamError(f"duplicate response.output_item.done for item {iid!r}")
            if item.kind in {"opaque", "web_search"}:
                out.opaque_event(iid, _R, {**obj, "type": "response.output_item.done"})
            self._finish_item(out, iid, item, data)
        tb = self.acc.tools.get(iid)
        if tb is not None and not tb.finished:
            self._finish_from_item(tb, data, now)

    def _finish_item(self, out: Sink, iid: str, item: _Item, data: dict[str, Any]) -> None:
        """The writer's end of an item (``data``: the item as its ``output_item.done`` gives it)."""
        kind = item.kind
        if kind == "web_search":
            out.web_search(iid, web_search_call(iid, data))
            out.block_stop(iid)
        elif kind == "opaque":
            out.block_stop(iid)
        elif kind == "message":
            for key in [k for k in self._parts if k[0] == iid]:
                self._close_part(out, key)
        elif kind == "function_call":
            if (args := as_str(data.get("arguments"))) is not None:
                self._catch_up(out, iid, item.acc, args, "response.output_item.done")
            raw = item.acc
            if raw and not json_valid(raw.decode()):  # (JSON at any depth: orjson stops at 1,024)
                raise UpstreamProtocolError(
                    f"function_call {iid!r}: the streamed arguments are not valid JSON"
                )
            out.block_stop(iid)
        else:
            encrypted = as_str(data.get("encrypted_content"))
            if not item.started:
                parts = [p for f in ("content", "summary") for p in as_list(data.get(f))]
                text = "".join(as_str(as_dict(p).get("text")) or "" for p in parts)
                if text:
                    item.started = True
                    out.block_start(iid, "thinking")
                    out.delta(iid, "thinking", text)
                elif encrypted:
                    out.block_start(iid, "redacted_thinking", data=encrypted)
                    out.block_stop(iid)
                    item.done = True
                    return
                else:
                    item.done = True  # an empty reasoning item: nothing any target can show
                    return
            if encrypted:
                out.delta(iid, "signature", encrypted)
            out.block_stop(iid)
        item.done = True

    def _finish_from_item(self, tb: ToolBuffer, item: dict[str, Any], now: float) -> None:
        itype = as_str(item.get("type")) or ""
        if itype in CLIENT_ITEMS:
            cid, _, whole = client_item_call(itype, item)
            tb.id = cid or tb.id
            self.acc.tool_set(tb, whole, now)
            self.acc.tool_finish(tb)
            return
        field = ARG_FIELD.get(itype)
        if field is not None:
            args = item.get(field)
            if type(args) is str:
                self.acc.tool_set(tb, args, now)
        if tb.name is None:
            tb.name = as_str(item.get("name"))
        self.acc.tool_finish(tb)

    # -- content parts (the writer's; the summary counts their deltas) ---------------------------

    def _part_added(self, obj: dict[str, Any], etype: str, now: float) -> None:
        out = self.out
        if out is None:
            return item_seen(self, obj, etype)
        iid, item = self._item(obj, etype)
        part = as_dict(obj.get("part"))
        ptype = as_str(part.get("type")) or ""
        if ptype == "reasoning_text":
            open_item(iid, item, "reasoning", etype)
            if not item.started:
                item.started = True
                out.block_start(iid, "thinking")
            return
        open_item(iid, item, "message", etype)
        self._unanswered = False
        ci = as_int(obj.get("content_index")) or 0
        key = (iid, ci)
        if key in self._parts:
            raise SemanticStreamError(f"duplicate response.content_part.added for {iid!r} part {ci}")
        if ptype == "output_text":
            out.block_start(key, "text")
            initial = as_str(part.get("text"))
        elif ptype == "refusal":
            self._refusal = True
            out.block_start(key, "refusal")
            initial = as_str(part.get("refusal"))
        else:
            raise TranslationError(
                f"message content part type {ptype!r} cannot be translated", "content[].type"
            )
        parts = self._parts[key] = item.part = bytearray()
        item.part_ci, item.part_key = ci, key
        self._room -= ENCODED
        if initial:
            self._keep(parts, initial)
            out.delta(key, "text", initial)

    def _part_key(self, obj: dict[str, Any], etype: str) -> tuple[str, int]:
        iid, item = self._item(obj, etype)
        open_item(iid, item, "message", etype)
        key = (iid, as_int(obj.get("content_index")) or 0)
        if key not in self._parts:
            raise SemanticStreamError(f"{etype} for {iid!r} part {key[1]} without content_part.added")
        return key

    def _part_text_done(self, obj: dict[str, Any], etype: str, now: float) -> None:
        out = self.out
        if out is None:
            return item_seen(self, obj, etype)
        key = self._part_key(obj, etype)
        final = as_str(obj.get("text" if etype == "response.output_text.done" else "refusal"))
        if final is not None:
            self._catch_up(out, key, self._parts[key], final, etype)

    def _part_done(self, obj: dict[str, Any], etype: str, now: float) -> None:
        out = self.out
        if out is None:
            return item_seen(self, obj, etype)
        part = as_dict(obj.get("part"))
        if as_str(part.get("type")) == "reasoning_text":
            return
        key = self._part_key(obj, etype)
        final = as_str(part.get("text")) if part.get("type") == "output_text" else as_str(part.get("refusal"))
        if final is not None:
            self._catch_up(out, key, self._parts[key], final, etype)
        self._close_part(out, key)

    def _close_part(self, out: Sink, key: tuple[str, int]) -> None:
        del self._parts[key]
        item = self.items[key[0]]
        if item.part_key == key:
            item.part_ci, item.part_key, item.part = _NO_PART, _NO_KEY, _NO_TEXT
        out.block_stop(key)

    def _catch_up(self, out: Sink, key: BlockKey, acc: bytearray, final: str, what: str) -> None:
        """Forward what a ``.done`` event carries beyond the deltas; reject contradictions."""
        so_far = acc.decode()
        if final == so_far:
            return
        if not final.startswith(so_far):
            raise SemanticStreamError(f"{what} contradicts the streamed deltas")
        rest = final[len(so_far) :]
        self._keep(acc, rest)
        kind: DeltaKind = (
            "args" if isinstance(key, str) and self.items[key].kind == "function_call" else "text"
        )
        out.delta(key, kind, rest)

    # -- deltas ---------------------------------------------------------------------------------

    def _text_delta(self, obj: dict[str, Any], etype: str, now: float) -> None:
        """``output_text.delta`` / ``refusal.delta`` (off the fast path)."""
        out = self.out
        text = obj.get("delta")
        if type(text) is not str:
            return delta_not_string(self, self._item(obj, etype), etype)
        if out is not None:
            key = self._part_key(obj, etype)
            if text:
                self._keep(self._parts[key], text)
                out.delta(key, "text", text)
        else:
            self._item(obj, etype)
        if etype == "response.refusal.delta":
            self.acc.refusal(text)
        else:
            self.acc.text(text)

    def _reasoning_delta(self, obj: dict[str, Any], etype: str, now: float) -> None:
        iid, item = self._item(obj, etype)
        out = self.out
        text = obj.get("delta")
        if type(text) is not str:
            return delta_not_string(self, (iid, item), etype)
        if out is not None:
            open_item(iid, item, "reasoning", etype)
            if not item.started:
                item.started = True
                out.block_start(iid, "thinking")
            if text:
                out.delta(iid, "thinking", text)  # (no .done event of reasoning is checked)
        self.acc.reasoning(text)

    def _args_delta(self, obj: dict[str, Any], etype: str, now: float) -> None:
        iid, item = self._item(obj, etype)
        tb = self.acc.tools.get(iid)
        if tb is None or not tb.has_args:
            raise SemanticStreamError(f"openai_responses: {etype} for a {item.type} item")
        if tb.finished:  # both SDKs read it; their final object is response.completed's: not read, noted
            msg = f"{etype} after the arguments of {iid!r} were done: not read (the done's arguments stand)"
            self.acc.finding_once("openai_responses.delta_after_done", "quirk", msg)
            return
        delta = obj.get("delta")
        if type(delta) is not str:
            raise UpstreamProtocolError(f"openai_responses: {etype} delta is not a string")
        out = self.out
        if out is not None:
            if etype == _FC_DELTA:
                open_item(iid, item, "function_call", etype)
                if delta:
                    self._keep(item.acc, delta)
                    out.delta(iid, "args", delta)
            else:
                self._other(out, obj, etype)
        self.acc.tool_args(tb, delta, now)

    def _args_done(self, obj: dict[str, Any], etype: str, now: float) -> None:
        iid, item = self._item(obj, etype)
        tb = self.acc.tools.get(iid)
        if tb is None or not tb.has_args:
            raise SemanticStreamError(f"openai_responses: {etype} for a {item.type} item")
        whole = obj.get("input" if etype == "response.custom_tool_call_input.done" else "arguments")
        out = self.out
        if out is not None:
            if etype == _FC_DONE:
                open_item(iid, item, "function_call", etype)
                if type(whole) is str:
                    self._catch_up(out, iid, item.acc, whole, etype)
            else:
                self._other(out, obj, etype)
        if tb.finished:
            return
        if type(whole) is str:
            self.acc.tool_set(tb, whole, now)
        name = as_str(obj.get("name"))
        if name and tb.name is None:
            tb.name = name
        self.acc.tool_finish(tb)

    def _other(self, out: Sink, obj: dict[str, Any], etype: str) -> None:
        """An event no handler above reads, for the writer: an opaque item's own event (web search
        progress, code interpreter code, MCP arguments, ...) or a text part's annotation goes to
        the sink as it came; anything else carries nothing a client needs."""
        iid = obj.get("item_id")
        if type(iid) is not str:
            return
        item = self.items.get(iid)
        if item is None or item.done:
            return
        if item.kind in {"opaque", "web_search"}:
            out.opaque_event(iid, _R, obj)
        elif etype == "response.output_text.annotation.added":
            key = (iid, as_int(obj.get("content_index")) or 0)
            parts = self._parts.get(key)
            if parts is not None:
                note = as_dict(obj.get("annotation"))
                url = as_str(note.get("url"))
                if note.get("type") == "url_citation" and url:
                    start, end = as_int(note.get("start_index")), as_int(note.get("end_index"))
                    text = parts.decode()
                    cited = text[start:end] if start is not None and end is not None else ""
                    out.citation(key, Citation(url, as_str(note.get("title")), cited, start, end, _R, obj))
                else:
                    out.opaque_event(key, _R, obj)

    # -- snapshots (terminal events and non-streamed bodies) ------------------------------------

    def _snapshot(self, resp: dict[str, Any], *, streamed: bool, now: float, etype: str = "") -> None:
        acc = self.acc
        self._identity(resp)
        # (a response.failed whose response lost its status failed all the same: both SDKs raise)
        status = as_str(resp.get("status")) or ("failed" if etype == "response.failed" else None)
        output = as_list(resp.get("output"))
        client_tool = False
        for pos, raw in enumerate(output):
            item = as_dict(raw)
            itype = as_str(item.get("type")) or ""
            iid = as_str(item.get("id"))
            if streamed and iid not in self.items and f"output_{pos}" in self.items:
                iid = f"output_{pos}"  # the item was added without its id
            if itype in ARG_TOOLS or itype in CLIENT_ITEMS:
                hosted = itype == "mcp_call" or hosted_call(itype, as_str(item.get("name")), self._custom)
                client_tool = client_tool or not hosted
            if not streamed or (self.resumed and iid not in self.items):
                self._count_item(itype, item)  # (resumed: an item added before the stream began)
            if itype not in ARG_TOOLS and itype not in CLIENT_ITEMS and not server_tool(itype):
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
            final_text(acc, output)
        if status == "incomplete":
            reason = as_str(as_dict(resp.get("incomplete_details")).get("reason")) or "incomplete"
            acc.stop(reason, stop_reasons.RESPONSES)
        elif status == "completed":
            acc.stop_reason = "completed"
            acc.stop_class = StopClass.TOOL_USE if client_tool else StopClass.END_TURN
        elif status is not None:
            acc.stop(status, stop_reasons.RESPONSES)
        if status == "failed":
            err = resp.get("error")
            msg, code = error_fields(err) if err is not None else ("response failed", None)
            # an in-band upstream error, as Anthropic's ``error`` event and a Chat error chunk
            # are: the outcome is ``error`` (docs/design/outcomes.md)
            acc.upstream_error(msg, type=code)
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
    "response.output_text.delta": _TEXT,
    "response.reasoning_summary_text.delta": "reasoning",
    "response.reasoning_text.delta": "reasoning",
    "response.function_call_arguments.delta": "args",
    "response.custom_tool_call_input.delta": "args",
    "response.mcp_call_arguments.delta": "args",
}

_HANDLERS = {
    "response.output_item.added": ResponsesGrammar._item_added,
    "response.output_item.done": ResponsesGrammar._item_done,
    "response.content_part.added": ResponsesGrammar._part_added,
    "response.content_part.done": ResponsesGrammar._part_done,
    "response.output_text.delta": ResponsesGrammar._text_delta,
    "response.refusal.delta": ResponsesGrammar._text_delta,
    "response.output_text.done": ResponsesGrammar._part_text_done,
    "response.refusal.done": ResponsesGrammar._part_text_done,
    "response.reasoning_summary_text.delta": ResponsesGrammar._reasoning_delta,
    "response.reasoning_text.delta": ResponsesGrammar._reasoning_delta,
    "response.function_call_arguments.delta": ResponsesGrammar._args_delta,
    "response.function_call_arguments.done": ResponsesGrammar._args_done,
    "response.custom_tool_call_input.delta": ResponsesGrammar._args_delta,
    "response.custom_tool_call_input.done": ResponsesGrammar._args_done,
    "response.mcp_call_arguments.delta": ResponsesGrammar._args_delta,
    "response.mcp_call_arguments.done": ResponsesGrammar._args_done,
}


def _before(items: dict[str, _Item], obj: dict[str, Any], etype: str) -> bool:
    """A resumed stream's event of an item added before the stream began."""
    iid = obj.get("item_id", as_dict(obj.get("item")).get("id"))
    return etype != "response.output_item.added" and type(iid) is str and iid not in items
