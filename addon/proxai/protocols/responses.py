"""OpenAI Responses observer: the protocol state machine, streamed and non-streamed.

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
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import orjson

from proxai.errors import SemanticStreamError, UpstreamProtocolError
from proxai.model import Protocol, StopClass
from proxai.sse import RawName

from .common import Accum, ObserverBase, ToolBuffer, error_fields, nbytes, openai_usage
from .machine import Machine, as_dict, as_list, as_str


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


class ResponsesObserver(ObserverBase):
    protocol = Protocol.OPENAI_RESPONSES

    __slots__ = ("items", "last_seq", "state")

    def __init__(self, acc: Accum) -> None:
        super().__init__(acc)
        self.state = State.WAITING
        self.items: dict[str, str] = {}  # item id -> item type
        self.last_seq: int | None = None

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
        sequence number: the same effect as ``_event`` without the general checks."""
        if self.state is not State.ACTIVE:
            return False
        etype = obj.get("type")
        kind = _FAST_DELTAS.get(etype) if type(etype) is str else None  # (a list is unhashable)
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
        if kind == "args":
            tb = acc.tools.get(iid)
            if tb is None or not tb.has_args or tb.finished:
                return False
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
        if type(etype) is not str:
            etype = name
        if etype == "error" or (obj.get("error") is not None and not etype.startswith("response.")):
            err = obj.get("error")
            msg, code = error_fields(err if err is not None else obj)
            acc.upstream_error(msg, type=code)
            self.upstream_failed()
            return
        if etype in _START:
            self._transition("start", etype)
            self._identity(as_dict(obj.get("response")))
        elif etype in _TERMINAL:
            self._transition("terminal", etype)
            self._snapshot(as_dict(obj.get("response")), streamed=True, now=now)
            acc.terminal = True
        elif etype.startswith("response."):
            self._transition("item", etype)
            handler = _HANDLERS.get(etype)
            if handler is not None:
                handler(self, obj, now)
        # anything else: an unknown event type, ignored (forward compatible)

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
