"""A whole agent run, turn by turn: the LLM flows of a flow file as turns, each with the messages
that are new since the request it continues (the conversation's diff), its answer, tool calls,
usage, cost and verdict, and the run's totals (docs/design/run-report.md).

Pure: plain facts of each flow (its summary, its parsed request bodies, the answer as an observer
captured it) in; ``Run`` out, JSON-able through ``to_json``. Every string that came from the
network is redacted on the way in (``_redacted``, with the one redaction engine ``proxai.safety.redact``
and the echo set the caller learned from the flows), so the HTML, JSON and CSV renderings never
see a secret. Requests are read by their protocol's one reader (``messages_of``,
docs/design/request-reading.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import orjson

from proxai.core.model import Protocol
from proxai.outputs import cost as pricing
from proxai.outputs import verdict
from proxai.safety.redact import Redactor
from proxai.translate import ir
from proxai.translate.request import read_request

MAX_PARENTS = 64  # earlier turns searched for the conversation a request continues
# A turn's usage: the summary's token counts (the cache writes with their split by lifetime).
USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
)
Message = dict[str, Any]  # {"role": str, "parts": [part, ...]}


@dataclass(frozen=True, slots=True)
class FlowInput:
    """What the shell read of one LLM flow."""

    index: int
    flow_id: str
    method: str
    url: str
    status: int | None
    start: float | None  # wall clock, seconds since the epoch
    meta: Mapping[str, Any]
    request: Any = None  # the request sent upstream, parsed JSON
    client_request: Any = None  # a translated flow: the client's own request, parsed JSON
    answer_text: str | None = None
    reasoning: str | None = None
    tool_arguments: Sequence[str | None] = ()
    marked: str = ""


@dataclass(slots=True)
class Turn:
    index: int
    flow_id: str
    method: str
    url: str
    status: int | None
    start: float | None
    offset_s: float | None  # since the run's first request
    protocol: str
    client_protocol: str | None
    model: str | None
    requested_model: str | None
    verdict: str
    outcome: str
    stop_reason: str | None
    error: dict[str, Any] | None
    ttft_s: float | None
    total_s: float | None
    usage: dict[str, int | None]
    cost: dict[str, Any] | None
    notes: list[str]
    system: list[dict[str, Any]]
    messages: list[Message]
    new_from: int  # index in ``messages`` where the new ones start
    continues: int | None  # the turn whose request this one extends
    repeat: bool  # the same messages as the turn ``continues`` (sent again): all shown as new
    answer: Message
    guard: dict[str, Any] | None
    translated: bool
    client_messages: list[Message] | None  # a translated flow: the client's side
    marked: str = ""

    @property
    def new_messages(self) -> list[Message]:
        return self.messages[self.new_from :]

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [p for p in self.answer["parts"] if p["type"] == "tool_call"]

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_IN_JSON}
        out["timing"] = {"first_token_s": out.pop("ttft_s"), "total_s": out.pop("total_s")}
        out["messages_total"] = len(self.messages)
        out["new_messages"] = self.new_messages
        return out


_NOT_IN_JSON = frozenset({"messages", "new_from", "system"})  # the JSON has the new messages only


@dataclass(slots=True)
class Run:
    turns: list[Turn] = field(default_factory=list)

    def totals(self) -> dict[str, Any]:
        verdicts: dict[str, int] = {}
        for t in self.turns:
            verdicts[t.verdict] = verdicts.get(t.verdict, 0) + 1

        def tokens(key: str) -> int:
            return sum(t.usage.get(key) or 0 for t in self.turns)

        starts = [t.offset_s for t in self.turns if t.offset_s is not None]
        ends = [t.offset_s + (t.total_s or 0) for t in self.turns if t.offset_s is not None]
        return {
            "flows": len(self.turns),
            "verdicts": verdicts,
            "input_tokens": tokens("input_tokens"),
            "output_tokens": tokens("output_tokens"),
            "cache_read_tokens": tokens("cache_read_tokens"),
            "cache_write_tokens": tokens("cache_write_tokens"),
            "cache_write_5m_tokens": tokens("cache_write_5m_tokens"),
            "cache_write_1h_tokens": tokens("cache_write_1h_tokens"),
            "tool_calls": sum(len(t.tool_calls) for t in self.turns),
            "cost": pricing.total([None if t.cost is None else t.cost["amount"] for t in self.turns]),
            "duration_s": round(max(ends) - min(starts), 6) if starts else None,
        }

    def to_json(self) -> dict[str, Any]:
        return {"schema": 1, "turns": [t.to_json() for t in self.turns], "totals": self.totals()}


# -- requests, as their protocol's reader reads them ------------------------------------------


def _args(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _part(p: ir.Part) -> dict[str, Any]:
    """One part of the neutral form as the run shows it."""
    match p:
        case ir.TextPart() | ir.RefusalPart():
            return {"type": "text", "text": p.text}
        case ir.ThinkingPart():
            return {"type": "reasoning", "text": p.text}
        case ir.RedactedThinkingPart():
            return {"type": "reasoning", "text": "(redacted thinking)"}
        case ir.ToolCallPart():
            return {"type": "tool_call", "id": p.id, "name": p.name, "arguments": p.arguments}
        case ir.ToolResultPart():
            content = "\n".join(c.text if isinstance(c, ir.TextPart) else f"[{_media(c)}]" for c in p.content)
            return {"type": "tool_result", "id": p.call_id, "content": content, "is_error": bool(p.is_error)}
        case ir.ImagePart() | ir.DocumentPart():
            return {"type": "media", "kind": _media(p)}
        case ir.UnreadPart():
            kind = p.raw.get("type") if isinstance(p.raw, Mapping) else None
            return {"type": "other", "kind": str(kind)}


def _media(p: ir.ImagePart | ir.DocumentPart) -> str:
    return "image" if isinstance(p, ir.ImagePart) else "document"


def _message(m: ir.Message) -> Message:
    """A turn; a tool result that is a message of its own (Chat ``role: tool``, a Responses
    ``function_call_output``) is the tool's turn."""
    return {"role": m.speaker, "parts": [_part(p) for p in m.parts]}


def messages_of(protocol: str | None, body: Any) -> tuple[list[dict[str, Any]], list[Message]]:
    """(system / instructions parts, conversation messages) of a request body, read liberally by
    its protocol's one reader (docs/design/request-reading.md)."""
    if protocol not in _PROTOCOLS:
        return [], []
    req = read_request(body, Protocol(protocol), strict=False)
    return [_part(t) for t in req.system], [_message(m) for m in req.messages]


_PROTOCOLS = frozenset(str(p) for p in Protocol)


def _key(m: Message) -> bytes:
    return orjson.dumps(m, option=orjson.OPT_SORT_KEYS)


def _common_prefix(a: Sequence[bytes], b: Sequence[bytes]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# -- turns -------------------------------------------------------------------------------------


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _answer(inp: FlowInput) -> Message:
    parts: list[dict[str, Any]] = []
    if inp.reasoning:
        parts.append({"type": "reasoning", "text": inp.reasoning})
    if inp.answer_text:
        parts.append({"type": "text", "text": inp.answer_text})
    tools = [t for t in _list(inp.meta.get("tool_calls")) if isinstance(t, Mapping)]
    for i, t in enumerate(tools):
        args = inp.tool_arguments[i] if i < len(inp.tool_arguments) else None
        parts.append(
            {
                "type": "tool_call",
                "id": t.get("id"),
                "name": t.get("name"),
                "arguments": args if isinstance(args, str) else None,
                "complete": bool(t.get("arguments_complete")),
            }
        )
    return {"role": "assistant", "parts": parts}


def _error(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    err = meta.get("error")
    if not isinstance(err, Mapping):
        return None
    return {
        "kind": err.get("kind"),
        "message": str(err.get("message") or ""),
        "status": err.get("status"),
        "type": err.get("type"),
    }


def _redacted(inp: FlowInput, red: Redactor) -> FlowInput:
    """The input with every string that came from the network through the redaction engine."""
    return replace(
        inp,
        url=red.url(inp.url),
        meta=red.metadata(dict(inp.meta)),
        request=red.json_value(inp.request),
        client_request=red.json_value(inp.client_request),
        answer_text=None if inp.answer_text is None else red.text(inp.answer_text),
        reasoning=None if inp.reasoning is None else red.text(inp.reasoning),
        tool_arguments=tuple(None if a is None else red.text(a) for a in inp.tool_arguments),
        marked=red.text(inp.marked),
    )


def build_run(inputs: Sequence[FlowInput], red: Redactor | None = None) -> Run:
    """The run of these flows, in the order given (the flow file's order). ``red``: the redaction
    engine with the secrets learned from the flows (their headers, URLs and bodies); without one,
    the name and value rules alone."""
    red = Redactor() if red is None else red
    inputs = [_redacted(i, red) for i in inputs]
    starts = [i.start for i in inputs if i.start is not None]
    t0 = min(starts) if starts else None
    run = Run()
    keys: list[list[bytes]] = []
    for inp in inputs:
        meta = inp.meta
        protocol = str(meta.get("protocol") or "")
        system, msgs = messages_of(protocol, inp.request)
        mine = [_key(m) for m in msgs]
        best, parent, whole = 0, None, False
        for j in range(len(keys) - 1, max(-1, len(keys) - 1 - MAX_PARENTS), -1):
            n = _common_prefix(mine, keys[j])
            extends = n > 0 and n == len(keys[j])
            if (extends, n) > (whole, best):  # a whole earlier request first; the latest wins a tie
                best, parent, whole = n, j, extends
        keys.append(mine)
        repeat = parent is not None and best == len(mine)
        client = verdict.client_protocol(meta)
        translated = verdict.is_translated(meta)
        client_msgs = None
        if translated and inp.client_request is not None:
            client_msgs = messages_of(client, inp.client_request)[1]
        usage = meta.get("usage") if isinstance(meta.get("usage"), Mapping) else {}
        assert isinstance(usage, Mapping)
        timing = meta.get("timing") if isinstance(meta.get("timing"), Mapping) else {}
        assert isinstance(timing, Mapping)
        extra = meta.get("extra") if isinstance(meta.get("extra"), Mapping) else {}
        assert isinstance(extra, Mapping)
        notes = [str(n) for n in _list(extra.get("notes"))]
        guard = extra.get("guard")
        cost = meta.get("cost")
        requested = inp.request.get("model") if isinstance(inp.request, Mapping) else None
        run.turns.append(
            Turn(
                index=inp.index,
                flow_id=inp.flow_id,
                method=inp.method,
                url=inp.url,
                status=inp.status,
                start=inp.start,
                offset_s=None if inp.start is None or t0 is None else round(inp.start - t0, 6),
                protocol=protocol,
                client_protocol=client if translated else None,
                model=meta.get("model") if isinstance(meta.get("model"), str) else None,
                requested_model=requested if isinstance(requested, str) else None,
                verdict=str(verdict.verdict(meta) or meta.get("outcome") or "?"),
                outcome=str(meta.get("outcome") or "?"),
                stop_reason=None if meta.get("stop_reason") is None else str(meta["stop_reason"]),
                error=_error(meta),
                ttft_s=_num(timing.get("first_token_s")),
                total_s=_num(timing.get("total_s")),
                usage={k: _int(usage.get(k)) for k in USAGE_KEYS},
                cost=dict(cost)
                if isinstance(cost, Mapping) and _num(cost.get("amount")) is not None
                else None,
                notes=notes,
                system=system,
                messages=msgs,
                new_from=0 if repeat else best,
                repeat=repeat,
                continues=None if parent is None else run.turns[parent].index,
                answer=_answer(inp),
                guard=dict(guard) if isinstance(guard, Mapping) else None,
                translated=translated,
                client_messages=client_msgs,
                marked=inp.marked,
            )
        )
    return run
