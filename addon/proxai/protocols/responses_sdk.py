"""What the official SDKs' Responses stream helpers hold while they read a stream, by index, and the
conformance rules an event breaks there (docs/design/conformance.md, "Responses: the SDKs' indexes").

The grammar keys output items by ``item_id``. The SDKs key them by index: openai-python's
``ResponseStreamState`` by ``output_index`` (a dict seeded with ``response.created``'s output, one
entry per ``output_item.added``), openai-node's ``accumulateResponse`` by position (a list that
each ``output_item.added`` appends to and each lifecycle event replaces with its
``response.output``); both find a content part by ``content_index`` among the parts added so far.
``SdkView.see`` applies one event to a model of each accumulator and says, for each SDK, what it
does with the event (``None``: reads it; else the kind of its failure). The pair of the two names
the rule (``_PAIRS``); a pair no rule names is not reported (only measured reactions are).

The grammar's fast path takes a delta without calling ``see`` only when it carries the indexes the
view put on the item's record (``Out.oi``, ``tci``, ``si``, ``args``): the ones both
accumulators read the delta with. Sans-IO, one view per stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from proxai.core.sse import Payloads
from proxai.protocols.anthropic_index import lax_int, node_place
from proxai.protocols.conformance import NODE_RESPONSES_EVENTS, UNTYPED
from proxai.protocols.responses_after import DONE_RULE, STATUS_RULE, same_annotation, sets

if TYPE_CHECKING:
    from .responses import ResponsesGrammar

_NO: Any = object()  # no delta's index is this object: the fast path declines

_CREATED = "response.created"
_COMPLETED = "response.completed"
_LIFECYCLE = frozenset(
    {
        _CREATED,
        "response.queued",
        "response.in_progress",
        _COMPLETED,
        "response.failed",
        "response.incomplete",
    }
)
# the lifecycle events whose output openai-python matches with its done items (not the first created)
_REPLACING = frozenset({_CREATED, "response.queued", "response.in_progress"})
_TERMINAL = frozenset({_COMPLETED, "response.failed", "response.incomplete"})
_ADDED = "response.output_item.added"
_DONE = "response.output_item.done"
_PART_ADDED = "response.content_part.added"
_TEXT_DONE = "response.output_text.done"
_ANNOTATION = "response.output_text.annotation.added"
_FC_DELTA = "response.function_call_arguments.delta"
# the events openai-python's accumulator finds an item for (``_get_output_item``)
_PY_INDEXED = frozenset({_PART_ADDED, "response.output_text.delta", "response.output_text.done", _FC_DELTA})
# the events openai-node's ``accumulateResponse`` reads without an output item
_NODE_UNINDEXED = frozenset(
    {
        "response.audio.delta",
        "response.audio.done",
        "response.audio.transcript.delta",
        "response.audio.transcript.done",
        "response.image_generation_call.partial_image",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
        "keepalive",
        "error",
    }
)
# the item events openai-node's ``accumulateResponse`` finds an output item for (``getOutput``)
_NODE_INDEXED = NODE_RESPONSES_EVENTS - _LIFECYCLE - _NODE_UNINDEXED - {_ADDED, _DONE}
# the part type each content event of a message needs (openai-node), and its delta's fast kind
_PART_OF = {
    "response.output_text.delta": "output_text",
    "response.output_text.done": "output_text",
    "response.output_text.annotation.added": "output_text",
    "response.refusal.delta": "refusal",
    "response.refusal.done": "refusal",
}
# The keys the grammar's fast path reads, as orjson's own key objects: its key cache hands out one str
# per key, so a parsed event's lookups find them by identity at the first probe (when the cache has
# replaced one, the lookup compares the strings, as for any other key).
FAST_KEYS: tuple[str, ...] = tuple(
    orjson.loads(
        b'{"type":0,"item_id":0,"sequence_number":0,"delta":0,"output_index":0,"content_index":0,"error":0}'
    )
)
_REASONING_TEXT = frozenset({"response.reasoning_text.delta", "response.reasoning_text.done"})
_SUMMARY = frozenset(
    {
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
    }
)
# an item type -> the argument delta both SDKs read inline for it
_ARG_DELTAS = {
    "function_call": _FC_DELTA,
    "custom_tool_call": "response.custom_tool_call_input.delta",
    "mcp_call": "response.mcp_call_arguments.delta",
}
# the item events openai-node applies to its snapshot by adding to it -> the item type it adds to
_NODE_ADDS = {
    "response.output_text.delta": "message",
    "response.refusal.delta": "message",
    "response.output_text.annotation.added": "message",
    _PART_ADDED: "message",
    _FC_DELTA: "function_call",
    "response.custom_tool_call_input.delta": "custom_tool_call",
    "response.mcp_call_arguments.delta": "mcp_call",
    "response.code_interpreter_call_code.delta": "code_interpreter_call",
    "response.reasoning_text.delta": "reasoning",
    "response.reasoning_summary_text.delta": "reasoning",
    "response.reasoning_summary_part.added": "reasoning",
}
# items whose identity in openai-python is their call id, not their id (``_output_identity``)
_CALL_IDENTITY = frozenset({"function_call", "custom_tool_call", "shell_call", "shell_call_output"})

# (openai-python's failure, openai-node's failure) -> the rule
_PAIRS: dict[tuple[str | None, str | None], str] = {
    ("index", "index"): "openai_responses.output_index",
    (None, "index"): "openai_responses.output_position",
    ("index", None): "openai_responses.python_output_index",
    ("duplicate", None): "openai_responses.output_index_repeated",
    ("content", "content"): "openai_responses.content_index",
    ("content", None): "openai_responses.python_content_index",
    ("content_type", "content"): "openai_responses.content_index_type",
    ("content_type", None): "openai_responses.python_content_index_type",
    (None, "content"): "openai_responses.node_content_index",
    ("text_type", "type"): "openai_responses.text_part_type",
    (None, "type"): "openai_responses.node_part_type",
    ("part", "part"): "openai_responses.part_added_part",
    ("part", None): "openai_responses.python_part_added_part",
    (None, "part"): "openai_responses.node_part_added_part",
    ("part_text", None): "openai_responses.part_text",
    ("delta_type", None): "openai_responses.text_delta_type",
    ("args_delta_type", None): "openai_responses.arguments_delta_type",
    ("item_type", None): "openai_responses.delta_item_type",
    ("arguments", None): "openai_responses.call_arguments",
    ("identity", None): "openai_responses.item_identity",
    ("conflict", None): "openai_responses.identity_conflict",
    ("snapshot", None): "openai_responses.snapshot_identity",
    ("final", None): "openai_responses.completed_identity",
    ("lifecycle", "lifecycle"): "openai_responses.lifecycle_response",
    ("lifecycle", None): "openai_responses.lifecycle_id",
    (None, "output"): "openai_responses.lifecycle_output",
    (None, "push"): "openai_responses.reasoning_summary",
    ("item", "item"): "openai_responses.done_item",
    ("item", None): "openai_responses.python_item_object",
    (None, "item"): "openai_responses.node_added_item",
    (None, "annotations"): "openai_responses.part_annotations",
    (None, "reasoning_content"): "openai_responses.reasoning_content",
    (None, "content_list"): "openai_responses.message_content",
    ("message_content", "message_content"): "openai_responses.message_content_part",
}

# a message's ``content`` in response.completed's output, by what the SDKs do with it -> the rule
_FINAL_CONTENT = {
    "none": "openai_responses.completed_message_content",  # absent, null, falsy: openai-python has none
    "scalar": "openai_responses.completed_content_scalar",
    "object": "openai_responses.completed_content_object",
    "string": "openai_responses.completed_content_string",
    "empty": "openai_responses.completed_content_empty",
}

#: every rule ``SdkView`` reports
RULES = (
    frozenset(_PAIRS.values())
    | frozenset(_FINAL_CONTENT.values())
    | {
        "openai_responses.created_first",
        "openai_responses.not_completed",
        "openai_responses.completed_output",
        "openai_responses.completed_output_null",
        "openai_responses.completed_output_object",
        "openai_responses.unfinished_item",
        "openai_responses.output_index_missing",
        "openai_responses.lifecycle_output_null",
        "openai_responses.lifecycle_output_object",
        "openai_responses.item_content_null",
        "openai_responses.lifecycle_after_completed",
        DONE_RULE,  # (``after_terminal``, by ``responses_after.sets``)
        STATUS_RULE,
    }
)
_NONE: Any = object()  # no entry found
_WITHOUT_ITEM, _ITEM_NOT_OBJECT = "without an item", "with an item that is not an object"


def _side_rules(py: str, node: str) -> list[tuple[str, tuple[str | None, str | None]]]:
    """The rules of a pair of failures no rule names together (openai-python's item has no such
    part where openai-node has no item there), each with the side it is for: each SDK's own rule,
    else a rule of both whose reaction of that SDK is its (the other SDK raises too)."""
    out: list[tuple[str, tuple[str | None, str | None]]] = []
    for side, at in (((py, None), 0), ((None, node), 1)):
        rule = _PAIRS.get(side) or next((r for k, r in _PAIRS.items() if k[at] == side[at]), None)
        if rule is not None:
            out.append((rule, side))
    return out


def _text_ok(part: dict[str, Any]) -> bool:
    """The part's text field (``refusal`` for a refusal) is a string."""
    return type(part.get("refusal" if part.get("type") == "refusal" else "text")) is str


def _part(raw: object) -> list[Any]:
    """A part as the models hold it: its type, whether its text is a string, whether openai-node can
    set an annotation in its ``annotations`` (an array or an object: a primitive or none raises)."""
    part = raw if type(raw) is dict else {}
    return [part.get("type"), _text_ok(part), type(part.get("annotations")) in (list, dict)]


class Out:
    """One output item as the accumulators hold it: its identity, its content parts (type, whether
    its text is a string), a reasoning item's summary count and reasoning-text parts, whether a
    function call's ``arguments`` is a string; and the indexes a delta for it must carry to be read
    by the grammar's fast path (``_NO``: none is)."""

    __slots__ = (
        "argd",
        "args",
        "call_id",
        "id",
        "iterable",
        "key",
        "listed",
        "null_part",
        "oi",
        "parts",
        "phase",
        "rci",
        "reasoning",
        "rigid",
        "si",
        "summary",
        "tci",
        "type",
    )

    phase: object  # a message's, set only where its output_text.done texts are kept (keep_parsed)

    def __init__(self, item: dict[str, Any]) -> None:
        self.type = item.get("type")
        self.id = item.get("id")
        self.call_id = item.get("call_id")
        content = item.get("content")
        self.parts = [_part(p) for p in content] if type(content) is list else []
        # a message's content as the SDKs take it: a list they append parts to (``listed``), or
        # something openai-node's ``addOutputText`` can iterate (a string too)
        self.listed = type(content) is list
        # a null part: openai-node's ``addOutputText`` reads each part's type (a message's)
        self.null_part = self.listed and self.type == "message" and None in content  # type: ignore[operator]
        self.iterable = self.listed or type(content) is str
        self.reasoning: list[Any] | None = self.parts if type(content) is list else None
        # a content openai-node cannot push a reasoning_text part to (truthy: it makes no array)
        self.rigid = self.reasoning is None and (type(content) is dict or bool(content))  # ({}: truthy)
        summary = item.get("summary")
        self.summary: int | None = len(summary) if type(summary) is list else None
        self.args = type(item.get("arguments")) is str
        # the argument delta type the fast path may read for it (function_call: with its arguments)
        self.argd = _ARG_DELTAS.get(str(self.type)) if self.args or self.type != "function_call" else None
        self.key: Any = _NO  # its output_index in openai-python's dict, if it is there
        self.oi: Any = _NO
        self.tci: Any = _NO  # the content index of its text deltas
        self.si: Any = _NO
        self.rci: Any = _NO

    @property
    def identity(self) -> tuple[object, object, object]:
        return self.type, None if self.type in _CALL_IDENTITY else self.id, self.call_id

    def elsewhere(self, oi: int) -> bool:
        """openai-python keys this item at another ``output_index`` than ``oi`` (not one it never
        keyed: a second item at an index, where it raised)."""
        return type(self.key) is int and self.key != oi

    def compatible(self, other: Out) -> bool:
        """openai-python's ``_compatible_output_id``."""
        return self.id == other.id or (self.id is None and self.type in ("function_call", "custom_tool_call"))


NO_OUT = Out({})  # the record of an item the view did not model (its fast indexes are ``_NO``)


def _key(oi: object) -> bool:
    """An ``output_index`` the models follow (openai-python keys by it, ``None`` included; not a
    list or an object, which it cannot key by)."""
    return type(oi) not in (list, dict)


# the string fields openai-python's model of each event it keys by ``output_index`` requires (with
# ``sequence_number`` and the indexes): the event validates only with them, and only a validated
# event has its indexes converted (``_models.construct_type``: else the event as it came)
_PY_FIELDS = {
    "response.output_text.delta": ("item_id", "delta"),
    "response.output_text.done": ("item_id", "text"),
    _PART_ADDED: ("item_id",),
    _FC_DELTA: ("item_id", "delta"),
    _ADDED: (),
    _DONE: (),
}
_PY_LOGPROBS = frozenset({"response.output_text.delta", "response.output_text.done"})


def _py_validates(etype: str, obj: dict[str, Any]) -> bool:
    """openai-python's event model validates ``obj`` (the item, the part: an object is taken as
    valid; an ``output_text`` delta or done needs its ``logprobs`` list)."""
    fields = _PY_FIELDS.get(etype)
    if fields is None or any(type(obj.get(f)) is not str for f in fields):
        return False
    if etype in _PY_LOGPROBS and type(obj.get("logprobs")) is not list:
        return False
    idx = (
        ("output_index", "content_index")
        if etype in _PY_LOGPROBS or etype == _PART_ADDED
        else ("output_index",)
    )
    if any(lax_int(obj.get(f)) is None for f in (*idx, "sequence_number")):
        return False
    return etype not in (_ADDED, _DONE) or type(obj.get("item")) is dict


def py_index(etype: str, obj: dict[str, Any], field: str) -> Any:
    """The index ``field`` of ``obj`` as openai-python holds it: the integer pydantic's lax
    validation makes of it when the event validates, else the value as it came (an integral
    float or a boolean keys a dict as its integer)."""
    raw = obj.get(field)
    if type(raw) is int:
        return raw
    if _py_validates(etype, obj):
        n = lax_int(raw)
        if n is not None:
            return n
    if type(raw) is bool or (type(raw) is float and raw.is_integer()):
        return int(raw) if field == "output_index" else raw  # (a list is indexed by an int alone)
    return raw


class SdkView:
    """The two accumulators' view of one Responses stream: ``see`` each event (not the error events);
    ``added`` is the record of the last ``output_item.added`` (the grammar keeps it on its item)."""

    __slots__ = (
        "_after",
        "_conform",
        "_ended",
        "_final",
        "_live",
        "_node",
        "_py",
        "_py_at",
        "_py_done",
        "_quirk",
        "_rid",
        "_started",
        "added",
        "parsed",
        "room",
        "texts",
    )

    def __init__(
        self, conform: Callable[[str, str], None], quirk: Callable[[str, Any, str], None] | None = None
    ) -> None:
        self._conform = conform
        self._quirk = quirk  # a note (``finding_once``)
        self._started = False
        self._after = False  # the events after response.completed (``after_terminal``)
        self._ended = False  # response.completed came
        self._final: dict[str, Any] | None = None  # its response, with an output (responses_after)
        self._live = True  # False once no SDK has a snapshot (the first event was not response.created)
        self._rid: object = None
        self._py: dict[object, Out] = {}  # openai-python: output_index -> item
        self._py_done: dict[object, Out] = {}  # openai-python: output_index -> its output_item.done item
        self._py_at: dict[object, object] = {}  # openai-python: a done item's identity -> its output_index
        self._node: list[Out] | None = []  # openai-node: the snapshot's output (None: it has none)
        self.added = NO_OUT
        # the output_text of response.completed's final-answer messages (what the parse helpers parse)
        self.texts: list[str] = []
        # the texts of the output_text.done events openai-python parses (``handle_event``:
        # ``parse_text``), kept on a flow whose request asks for a json_schema format (``keep_parsed``)
        self.parsed: list[str] | None = None
        self.room = 0  # the characters they may still take (past it: None, not judged)

    def _report(
        self, py: str | None, node: str | None, detail: str | Callable[[str | None, str | None], str]
    ) -> None:
        """The rule of the pair of failures, or, when both SDKs raise and no rule names them
        together, each one's own (``detail``: the words, or what gives them for a pair)."""
        pair = _PAIRS.get((py, node))
        found = [(pair, (py, node))] if pair is not None else _side_rules(py, node) if py and node else []
        for rule, (p, n) in found:
            self._conform(rule, detail if isinstance(detail, str) else detail(p, n))

    def adds(self, etype: str, obj: dict[str, Any]) -> bool:
        """openai-node adds what ``obj`` carries to its snapshot (an item, a part, a non-empty
        delta to the item at its ``output_index``, of the type the event is for)."""
        if etype == _ADDED:
            return self._node is not None
        kind = _NODE_ADDS.get(etype)
        oi = obj.get("output_index")
        rec = None if kind is None else self._node_at(oi if type(oi) is int else node_place(oi))
        if rec is None or (rec.type != kind and (etype, rec.type) != (_PART_ADDED, "reasoning")):
            return False
        if etype == _ANNOTATION:  # it sets the annotation at its index: the same one changes nothing
            return not same_annotation(self._final, obj)
        return not etype.endswith(".delta") or obj.get("delta") != ""

    def _node_at(self, oi: object) -> Out | None:
        node = self._node
        return node[oi] if node is not None and type(oi) is int and 0 <= oi < len(node) else None

    def _fast(self, rec: Out) -> None:
        """The fast path's indexes of ``rec``: its output index when both SDKs find it there, the
        content part (or summary part) its deltas go to."""
        key = rec.key
        rec.oi = key if key is not _NO and self._py.get(key) is rec and self._node_at(key) is rec else _NO
        rec.tci = rec.rci = rec.si = _NO
        last = rec.parts[-1] if rec.parts else None
        if rec.type == "message" and last is not None and last[0] == "output_text" and last[1]:
            rec.tci = len(rec.parts) - 1
        elif rec.type == "reasoning":
            if rec.reasoning and rec.reasoning[-1][0] == "reasoning_text":
                rec.rci = len(rec.reasoning) - 1
            if rec.summary:
                rec.si = rec.summary - 1

    def see(self, etype: str, obj: dict[str, Any]) -> None:
        """One event as both accumulators read it."""
        self.added = NO_OUT
        if not self._started:
            self._started = True
            if etype != _CREATED:
                self._live = False  # neither SDK has a snapshot: both raise here
                self._conform("openai_responses.created_first", f"{etype} came before response.created")
            else:
                self._created(obj)
        elif not self._live:
            return
        elif etype in _LIFECYCLE:
            self._lifecycle(etype, obj)
        elif etype == _ADDED:
            self._item_added(obj)
        elif etype == _DONE:
            self._item_done(obj)
        elif etype in _NODE_INDEXED:
            self._content(etype, obj)

    # -- lifecycle ------------------------------------------------------------------------------

    def _created(self, obj: dict[str, Any]) -> None:
        resp = obj.get("response")
        resp = resp if type(resp) is dict else {}
        self._rid = resp.get("id")
        output = resp.get("output")
        recs = [Out(i if type(i) is dict else {}) for i in output] if type(output) is list else []
        self._py = dict(enumerate(recs))  # (openai-python: a created without output has none)
        for oi, rec in enumerate(recs):
            rec.key = oi
        if type(output) is list:
            self._null_entry(_CREATED, output)
            self._node = list(recs)
            for rec in recs:
                self._fast(rec)
            self._listless(_CREATED, recs)
        else:
            self._node = None
            self._report(None, "output", "response.created has no response.output")

    def _lifecycle(self, etype: str, obj: dict[str, Any]) -> None:
        resp = obj.get("response")
        output = resp.get("output") if type(resp) is dict else None
        py = None if type(resp) is dict and resp.get("id") == self._rid else "lifecycle"
        node = None
        if type(resp) is not dict:
            node = "lifecycle"
        elif type(output) is not list:
            node = "output"
            self._node = None
        else:  # openai-node's snapshot is the event's response from here on
            self._node = [Out(i if type(i) is dict else {}) for i in output]
            for rec in self._py.values():
                self._fast(rec)
            if etype == _COMPLETED:
                _final_content(self._conform, output)
            else:
                self._listless(etype, self._node)
        if self._after and etype != _COMPLETED:  # openai-node's final response is this one's
            self._final = None  # (what later events set is not judged against it)
            self._conform("openai_responses.lifecycle_after_completed", f"{etype} after response.completed")
        elif etype in _TERMINAL and etype != _COMPLETED:
            self._conform("openai_responses.not_completed", f"the stream ended with {etype}")
        if (py, node) == (None, "output") and etype == _COMPLETED:
            self._conform("openai_responses.completed_output", "response.completed has no response.output")
        elif py is not None:
            what = "has no response" if node else "has another response.id than response.created"
            self._report(py, node, f"{etype} {what}")
        else:
            self._report(py, node, f"{etype} has no response.output")
        if py is None and type(output) is list and etype in _REPLACING:
            self._null_entry(etype, output)
            self._replaced(etype, output)
        if etype == _COMPLETED and py is None:
            self._ended = True
            self._final = resp if type(output) is list else None
            if (
                type(output) is list
                and (bad := next((i for i in output if type(i) is not dict), _NONE)) is not _NONE
            ):
                # openai-python reads each entry's type (AttributeError); openai-node a null one's
                what = f"response.completed's output has an entry that is {str(bad)[:40]}"
                if bad is None:
                    self._conform("openai_responses.completed_output_null", what)
                else:
                    self._conform("openai_responses.completed_output_object", what)
            if not self._final_identity(output if type(output) is list else []):
                self._unfinished(output if type(output) is list else [])
            self.texts = _final_texts(output if type(output) is list else [])

    def _null_entry(self, etype: str, output: list[Any]) -> None:
        """A null entry of a lifecycle event's output before the end: openai-node's
        ``addOutputText`` reads each entry's type, openai-python's snapshot each item's; another
        entry that is not an object: openai-python reads its identity (``_output_identity``, at a
        later lifecycle event, at ``response.completed`` for ``response.created``'s)."""
        if None in output:
            self._conform("openai_responses.lifecycle_output_null", f"{etype}'s output has a null entry")
        else:
            for i in output:
                if type(i) is not dict:
                    what = f"{etype}'s output has an entry that is not an object"
                    self._conform("openai_responses.lifecycle_output_object", what)
                    return

    def _listless(self, etype: str, recs: list[Out]) -> None:
        """A lifecycle event's output with a message whose content openai-node cannot iterate (its
        ``addOutputText`` lists every message's text)."""
        at = next((k for k, r in enumerate(recs) if r.type == "message" and not r.iterable), None)
        if at is not None:
            self._report(None, "content_list", f"{etype}'s message {at} has no content array")

    def _replaced(self, etype: str, output: list[Any]) -> None:
        """openai-python's ``accumulate_event`` at a ``response.created`` / ``queued`` /
        ``in_progress`` after the first: the snapshot's items by identity, which must be one item
        each; a done item of that identity takes the snapshot's item, whose id must be its own."""
        seen: dict[object, Out] = {}
        for rec in (Out(i) for i in output if type(i) is dict):
            if rec.identity in seen:
                what = f"{etype}'s output has two {rec.type} items of one identity"
                self._report("snapshot", None, what)
                return
            seen[rec.identity] = rec
        for identity, rec in seen.items():
            oi = self._py_at.get(identity)
            if oi is None:
                continue
            if not self._py_done[oi].compatible(rec):
                self._report("snapshot", None, f"{etype}'s output gives done item {oi} another id")
                return
            self._py_done[oi] = rec

    def _final_identity(self, output: list[Any]) -> bool:
        """openai-python at ``response.completed``: each done item of an identity the final output
        has must keep its id there (True: one did not). A done item whose identity a later one
        took is left out: openai-python raised there (``identity_conflict``)."""
        final = {r.identity: r for r in (Out(i) for i in output if type(i) is dict)}
        for oi, rec in self._py_done.items():
            got = final.get(rec.identity)
            if got is not None and not rec.compatible(got) and self._py_at.get(rec.identity) == oi:
                self._report("final", None, f"response.completed gives done item {oi} another id")
                return True
        return False

    def _unfinished(self, output: list[Any]) -> None:
        """openai-python completes a response only when every item it has got its
        ``output_item.done`` or is in ``response.completed``'s output."""
        final = {r.identity: r for r in (Out(i) for i in output if type(i) is dict)}
        for oi, rec in self._py.items():
            got = final.get(rec.identity)
            if oi not in self._py_done and (got is None or not rec.compatible(got)):
                self._conform(
                    "openai_responses.unfinished_item",
                    f"output item {oi} ({rec.type}) got no output_item.done and response.completed lacks it",
                )
                return

    # -- items ----------------------------------------------------------------------------------

    def _item_added(self, obj: dict[str, Any]) -> None:
        item, oi = obj.get("item"), obj.get("output_index")
        if type(item) is not dict:  # openai-python skips a null one and reads another's type;
            # openai-node pushes it and reads its type (a null one's raises)
            what = _WITHOUT_ITEM if item is None else _ITEM_NOT_OBJECT
            py, node = (None, "item") if item is None else ("item", None)
            self._report(py, node, f"output_item.added at output_index {oi} {what}")
            return
        if not _key(oi):
            return
        if type(oi) is not int:
            oi = self._form(_ADDED, obj)
        rec = self.added = Out(item)
        if self.parsed is not None:  # (openai-python parses a message's text done without a phase)
            rec.phase = item.get("phase")
        if oi in self._py:
            self._report("duplicate", None, f"a second output item with output_index {oi}")
        else:
            self._py[oi] = rec
            rec.key = oi
        if self._node is not None:
            self._node.append(rec)
            if rec.type == "message" and not rec.iterable:  # addOutputText: for (c of output.content)
                self._report(None, "content_list", f"message item {oi} added without a content array")
            elif rec.null_part:
                self._conform(
                    "openai_responses.item_content_null", f"message item {oi} added with a null part"
                )
        self._fast(rec)

    def _item_done(self, obj: dict[str, Any]) -> None:
        item, oi = obj.get("item"), obj.get("output_index")
        if type(item) is not dict:  # openai-python reads its type; openai-node a null one's
            what = _WITHOUT_ITEM if item is None else _ITEM_NOT_OBJECT
            self._report(
                "item", "item" if item is None else None, f"output_item.done at output_index {oi} {what}"
            )
            return
        if not _key(oi):
            return
        place: object = oi
        if type(oi) is not int:
            oi, place = self._form(_DONE, obj), node_place(oi)
        rec = Out(item)
        py = None
        added = self._py.get(oi)
        if added is not None:
            added.oi = _NO  # what comes for an item after its end is read the slow way
            if added.identity != rec.identity or not added.compatible(rec):
                py = "identity"
        at = self._py_at.get(rec.identity, oi)
        if py is None and at != oi:
            py = "conflict"  # the same identity done at another index
        previous = self._py_done.get(oi)
        if previous is not None:
            self._py_at.pop(previous.identity, None)
        self._py_done[oi] = rec
        self._py_at[rec.identity] = oi
        node = None
        if self._node is not None:
            old = self._node_at(place)
            if old is None:
                node = "index"
            else:
                old.oi = _NO
                self._node[place] = rec  # type: ignore[call-overload]
                if rec.type == "message" and not rec.iterable:  # addOutputText, as at the added item
                    self._report(None, "content_list", f"message item {oi} done without a content array")
                elif rec.null_part:
                    self._conform(
                        "openai_responses.item_content_null", f"message item {oi} done with a null part"
                    )
        if node and (py is None or (py, node) not in _PAIRS):
            if "output_index" not in obj:
                self._conform("openai_responses.output_index_missing", "output_item.done has no output_index")
            else:
                self._report(
                    None, node, f"output_item.done at output_index {oi}, which openai-node does not have"
                )
            node = None  # (openai-python's reason on its own, below)
        if py == "conflict":
            self._report(py, node, f"output_item.done at output_index {oi} repeats the identity of item {at}")
        elif py:
            self._report(py, node, f"output_item.done at output_index {oi} is not the item added there")

    # -- content --------------------------------------------------------------------------------

    def _form(self, etype: str, obj: dict[str, Any]) -> object:
        """openai-python's key for an ``output_index`` that is not an integer; a note when both
        SDKs read it as the integer it is (``"0"``, ``0.0``: openai-node's array place)."""
        raw = obj.get("output_index")
        py = py_index(etype, obj, "output_index")
        if self._quirk is not None and type(py) is int and node_place(raw) == py:
            self._quirk(
                "openai_responses.index_not_integer", "quirk", f"{etype} output_index {raw!r} read as {py}"
            )
        return py

    def _content(self, etype: str, obj: dict[str, Any]) -> None:
        oi = obj.get("output_index")
        if not _key(oi):
            return
        place: object = oi
        if type(oi) is not int:
            oi, place = self._form(etype, obj) if etype in _PY_FIELDS else oi, node_place(oi)
        rec_p = self._py.get(oi)
        rec_n = self._node_at(place) if self._node is not None else NO_OUT
        py = node = None
        if etype in _PY_INDEXED:
            py = "index" if rec_p is None else _python(etype, obj, rec_p)
        if rec_n is None:
            node = "index"
        elif rec_n is not NO_OUT:
            node = _node(etype, obj, rec_n)
        if etype == _PART_ADDED:
            self._part_added(obj, rec_p, rec_n)
        elif py is None and self.parsed is not None and etype == _TEXT_DONE:
            self._parsed(obj, rec_p)
        if (py, node) == (None, "index") and "output_index" not in obj:
            self._conform("openai_responses.output_index_missing", f"{etype} has no output_index")
        elif py or node:
            self._report(py, node, lambda p, n: _detail(etype, obj, p, n))

    def _parsed(self, obj: dict[str, Any], rec: Out | None) -> None:
        """An ``output_text.done`` openai-python reads: its text, which it parses with the client's
        ``text_format`` for a message without a ``phase`` or a final answer (an absent text raises
        as one that is not JSON)."""
        if rec is None or getattr(rec, "phase", None) not in (None, "final_answer") or self.parsed is None:
            return
        text = obj.get("text")
        text = text if type(text) is str else ""
        self.room -= len(text)
        if self.room < 0:
            self.parsed = None  # more than the limit kept: not judged
        elif text not in self.parsed:
            self.parsed.append(text)

    def answers(self) -> list[str]:
        """The texts a parse helper parses: response.completed's final answers, then each other
        text an ``output_text.done`` gave (``keep_parsed``)."""
        parsed = self.parsed
        if not parsed:
            return self.texts
        return self.texts + [t for t in parsed if t not in self.texts]

    def _part_added(self, obj: dict[str, Any], rec_p: Out | None, rec_n: Out | None) -> None:
        part = _part(obj.get("part"))
        if rec_p is not None and rec_p.type == "message":
            rec_p.parts.append(part)  # openai-python appends any part to a message
        if (
            rec_n is not None
            and rec_n is not rec_p
            and rec_n.type == "message"
            and part[0] != "reasoning_text"
        ):
            rec_n.parts.append(part)
        if rec_n is not None and rec_n.type == "reasoning" and part[0] == "reasoning_text":
            if rec_n.reasoning is None:
                rec_n.reasoning = []
            rec_n.reasoning.append(part)
        for rec in (rec_p, rec_n):
            if rec is not None and rec is not NO_OUT:
                self._fast(rec)


def _final_texts(output: list[Any]) -> list[str]:
    """The text of each ``output_text`` part of the messages openai-python's ``parse_text`` parses
    (no ``phase``, or ``final_answer``)."""
    texts: list[str] = []
    for item in output:
        if (
            type(item) is dict
            and item.get("type") == "message"
            and item.get("phase") in (None, "final_answer")
        ):
            content = item.get("content")
            for p in content if type(content) is list else []:
                if type(p) is dict and p.get("type") == "output_text" and type(p.get("text")) is str:
                    texts.append(p["text"])
    return texts


def _final_content(conform: Callable[[str, str], None], output: list[Any]) -> None:
    """``response.completed``'s messages whose ``content`` is no list: openai-node's
    ``addOutputText`` iterates it (a string passes) and its final parse (``maybeParseResponse``)
    maps it; openai-python's ``parse_response`` iterates ``content or []`` (a falsy one has no
    parts, a number raises, a string or an object gives strings for parts)."""
    for k, item in enumerate(output):
        if type(item) is not dict or item.get("type") != "message":
            continue
        content = item.get("content")
        kind = (
            None
            if type(content) is list
            else ("string" if content else "empty")
            if type(content) is str
            else "none"
            if not content
            else "object"
            if type(content) is dict
            else "scalar"
            if type(content) in (int, float, bool)
            else None
        )
        if kind is not None:
            conform(_FINAL_CONTENT[kind], f"response.completed's message {k} has no content array")
            return


def _python(etype: str, obj: dict[str, Any], rec: Out) -> str | None:
    """What openai-python's ``accumulate_event`` and ``handle_event`` do with a content event for
    ``rec`` (an item it has)."""
    if etype == _PART_ADDED:  # ``output.content.append(part.to_dict())`` for a message
        if rec.type != "message":
            return None
        return "message_content" if not rec.listed else "part" if type(obj.get("part")) is not dict else None
    if etype == _FC_DELTA:
        if rec.type != "function_call":
            return "item_type"  # handle_event: assert output.type == "function_call"
        if not rec.args:
            return "arguments"  # None += str
        return None if type(obj.get("delta")) is str else "args_delta_type"  # str += None
    if rec.type != "message":
        return "item_type"  # handle_event: assert output.type == "message"
    ci = py_index(etype, obj, "content_index")
    if type(ci) is not int:
        return "content_type"  # content[None], content["0"]: a TypeError
    if not 0 <= ci < len(rec.parts):
        return "content"
    ptype, ok, _annotations = rec.parts[ci]
    if ptype != "output_text":
        return "text_type"
    if etype != "response.output_text.delta":
        return None
    return "part_text" if not ok else None if type(obj.get("delta")) is str else "delta_type"


def _node(etype: str, obj: dict[str, Any], rec: Out) -> str | None:
    """What openai-node's ``accumulateResponse`` does with a content event for ``rec``."""
    if etype == _PART_ADDED:  # a message's or reasoning item's part: ``part.type`` is read
        part = obj.get("part")
        if rec.type in ("message", "reasoning") and part is None:
            return "part"
        kind = part.get("type") if type(part) is dict else None  # (a string's type is undefined)
        if rec.type == "reasoning" and kind == "reasoning_text" and rec.rigid:
            return "reasoning_content"  # ``output.content.push``
        return (
            "message_content"
            if rec.type == "message" and not rec.listed and kind != "reasoning_text"
            else None
        )
    ptype_needed = _PART_OF.get(etype)
    if ptype_needed is not None:
        if rec.type != "message":
            return None
        found = _at(rec.parts, obj.get("content_index"))
        if found is None:
            return "content"
        if found[0] != ptype_needed:
            return "type"
        return "annotations" if etype == _ANNOTATION and not found[2] else None
    if etype == "response.content_part.done":
        if obj.get("part") is None and rec.type in ("message", "reasoning"):
            return "part"  # ``part.type`` is read for a message's and a reasoning item's part
        part = _part(obj.get("part"))
        parts = (
            rec.parts
            if rec.type == "message" and part[0] != "reasoning_text"
            else rec.reasoning
            if rec.type == "reasoning" and part[0] == "reasoning_text"
            else None
        )
        if parts is None:
            return None if rec.type != "reasoning" or part[0] != "reasoning_text" else "content"
        ci = obj.get("content_index")
        if _at(parts, ci) is None:
            return "content"
        parts[ci if type(ci) is int else node_place(ci)] = part  # type: ignore[index]
        return None
    if etype in _REASONING_TEXT:
        if rec.type != "reasoning":
            return None
        found = _at(rec.reasoning or [], obj.get("content_index"))
        if found is None:
            return "content"
        return None if found[0] == "reasoning_text" else "type"
    if rec.type == "reasoning" and etype == "response.reasoning_summary_part.added":
        if rec.summary is None:
            return "push"
        rec.summary += 1
        rec.si = rec.summary - 1
        return None
    if rec.type == "reasoning" and etype in _SUMMARY:
        if rec.summary is None:
            return "push"  # ``getContent(output.summary, ...)``: it reads an index of no array
        si = obj.get("summary_index")
        return None if type(si) is int and 0 <= si < rec.summary else "content"
    return None


def _at(parts: list[Any], ci: object) -> list[Any] | None:
    """openai-node's ``parts[ci]`` (``"0"``, ``0.0`` read as place 0)."""
    if type(ci) is not int:
        ci = node_place(ci)
    return parts[ci] if type(ci) is int and 0 <= ci < len(parts) else None


def _detail(etype: str, obj: dict[str, Any], py: str | None, node: str | None) -> str:
    oi, ci = obj.get("output_index"), obj.get("content_index")
    if "index" in (py, node):
        who = "no item was added" if py and node else f"openai-{'node' if node else 'python'} has no item"
        return f"{etype} for output_index {oi}, where {who}"
    if py == "content_type":
        return f"{etype} for output item {oi} without an integer content_index"
    if "content" in (py, node):
        return f"{etype} for content_index {ci} of output item {oi}, which has no such part"
    if "type" in (py, node) or py == "text_type":
        return f"{etype} for content part {ci} of output item {oi}, a part of another type"
    if py == "args_delta_type":
        return f"{etype} for output item {oi} without a string delta"
    if py == "delta_type":
        return f"{etype} for content part {ci} of output item {oi} without a string delta"
    if py == "part_text":
        return f"{etype} for content part {ci} of output item {oi}, added without its text"
    if py == "item_type":
        return f"{etype} for output item {oi}, an item of another type"
    if "part" in (py, node):
        return f"{etype} for output item {oi} without a part object"
    if py == "arguments":
        return f"{etype} for output item {oi}, a function_call added without arguments"
    if node == "reasoning_content":
        return f"{etype} for output item {oi}, a reasoning item whose content is no array"
    if node == "annotations":
        return f"{etype} for content part {ci} of output item {oi}, a part without an annotations array"
    return f"{etype} for output item {oi}, a reasoning item without summary"


def after_terminal(g: ResponsesGrammar, payloads: Payloads, base: int) -> None:
    """The events after the terminal event (the first at ``base``), which both SDKs read on to the
    end of the stream (openai ``_streaming.py`` ``Stream.__stream__`` and openai-node
    ``core/streaming.js`` stop at ``[DONE]`` alone): a payload that is not JSON, or not an object,
    makes both raise (``tail_json``, ``tail_object``), and so does one with an ``error`` (both
    stream layers raise it: ``error_after_completed``); openai-node's ``accumulateResponse`` raises
    on a type it does not know (``unknown_event``), its ``ResponseStream`` on an ``error`` event
    (``error_event_after_completed``). After ``response.completed`` every other event goes to the
    SDKs' view as they read it (``SdkView.see``: a lifecycle event replaces openai-node's final
    response, ``lifecycle_after_completed``; an item event that adds to it, ``SdkView.adds``,
    changes it, ``item_after_completed``; a ``.done`` or a call's status event that sets a field of
    it to another value than ``response.completed``'s response has, ``responses_after.sets``:
    ``done_after_completed``, ``status_after_completed``); the grammar does not interpret it."""
    view = g._sdk
    view._after = view._ended
    for k, (_name, data) in enumerate(payloads):
        if data[:6] in (b"[DONE]", "[DONE]"):
            return
        g.acc.event_index = base + k
        text = data if isinstance(data, str) else data.decode("utf-8", "replace")
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            g.conform(
                "openai_responses.tail_json", f"a payload that is not JSON after the end: {text[:80]!r}"
            )
            return
        if type(obj) is not dict:
            g.conform(
                "openai_responses.tail_object",
                f"a payload that is not an object after the end: {text[:80]!r}",
            )
            return
        etype = obj.get("type")
        if type(etype) is not str or not etype:
            etype = UNTYPED
        if obj.get("error"):  # openai-python's test (openai-node's, ``data.error``, holds then too)
            g.conform("openai_responses.error_after_completed", f"{etype} with an error after the end")
            return
        if etype not in NODE_RESPONSES_EVENTS:
            g.conform(
                "openai_responses.unknown_event",
                f"event type {etype!r} after the end is unknown to the Node SDK",
            )
        elif etype == "error":  # openai-node rejects with the event itself; openai-python reads on
            g.conform("openai_responses.error_event_after_completed", "an error event after the end")
        elif view._after:
            adds, found = view.adds(etype, obj), len(g.broken or ())
            setting = None if adds else sets(view._final, etype, obj)
            view.see(etype, obj)
            if len(g.broken or ()) != found:
                continue  # (an SDK raised on it)
            if adds:
                g.conform("openai_responses.item_after_completed", f"{etype} after response.completed")
            elif setting is not None:
                g.conform(
                    setting, f"{etype} after response.completed sets another value than its response has"
                )


def keep_parsed(g: ResponsesGrammar, limit: int) -> None:
    """On a flow whose request asks for a ``json_schema`` format and declares no strict tool: keep
    the text of each ``output_text.done`` openai-python parses (``parse_text`` in ``handle_event``,
    before ``response.completed`` and after it), at most ``limit`` characters in all, for
    ``conformance.at_end`` to judge beside the final answers (``SdkView.answers``). With a strict
    tool openai-node parses the final response alone, and the rules name both SDKs: not judged."""
    g._sdk.parsed, g._sdk.room = [], limit
