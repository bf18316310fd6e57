"""A whole agent run, turn by turn: the LLM flows of a flow file as turns, each with the messages
that are new since the request it continues (the conversation's diff), its answer, tool calls,
usage, cost and verdict, and the run's totals (docs/design/run-report.md).

Pure: plain facts of each flow (its summary, its parsed request bodies, the answer as an observer
captured it) in; ``Run`` out, JSON-able through ``to_json``. Every string that came from the
network is redacted on the way in (``_redacted``, with the one redaction engine ``proxai.safety.redact``
and the echo set the caller learned from the flows), so the HTML, JSON and CSV renderings never
see a secret. The three wire protocols' requests are read by ``messages_of``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import orjson

from proxai.outputs import cost as pricing
from proxai.outputs import verdict
from proxai.safety.redact import Redactor

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


# -- reading requests --------------------------------------------------------------------------


def _text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _args(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _content_parts(content: Any) -> list[dict[str, Any]]:
    """Text / image / tool parts of a content value (a string or a list of typed parts)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return [{"type": "text", "text": _text(content)}]
    parts: list[dict[str, Any]] = []
    for p in content:
        if isinstance(p, str):
            parts.append({"type": "text", "text": p})
            continue
        if not isinstance(p, Mapping):
            continue
        kind = p.get("type")
        if kind in ("text", "input_text", "output_text") and isinstance(p.get("text"), str):
            parts.append({"type": "text", "text": p["text"]})
        elif kind in ("thinking", "reasoning_text", "summary_text"):
            parts.append({"type": "reasoning", "text": _text(p.get("thinking") or p.get("text") or "")})
        elif kind == "redacted_thinking":
            parts.append({"type": "reasoning", "text": "(redacted thinking)"})
        elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
            parts.append(
                {
                    "type": "tool_call",
                    "id": p.get("id"),
                    "name": p.get("name"),
                    "arguments": _args(p.get("input")),
                }
            )
        elif kind == "tool_result" or str(kind).endswith("_tool_result"):
            parts.append(
                {
                    "type": "tool_result",
                    "id": p.get("tool_use_id"),
                    "content": _result_text(p.get("content")),
                    "is_error": bool(p.get("is_error")),
                }
            )
        elif kind in ("image", "image_url", "input_image", "document", "input_file", "file"):
            parts.append({"type": "media", "kind": str(kind)})
        elif kind == "refusal":
            parts.append({"type": "text", "text": _text(p.get("refusal") or "")})
        else:
            parts.append({"type": "other", "kind": str(kind)})
    return parts


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        if texts and len(texts) == len(content):
            return "\n".join(str(t) for t in texts)
    return "" if content is None else _text(content)


def _chat_message(m: Mapping[str, Any]) -> Message:
    role = str(m.get("role") or "?")
    parts = _content_parts(m.get("content"))
    if role == "tool":
        return {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_result",
                    "id": m.get("tool_call_id"),
                    "content": _result_text(m.get("content")),
                    "is_error": False,
                }
            ],
        }
    for key in ("reasoning_content", "reasoning"):
        if isinstance(m.get(key), str) and m[key]:
            parts.insert(0, {"type": "reasoning", "text": m[key]})
    calls = m.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, Mapping):
            continue
        fn = call.get("function") if isinstance(call.get("function"), Mapping) else call.get("custom")
        fn = fn if isinstance(fn, Mapping) else {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": fn.get("name"),
                "arguments": _args(fn.get("arguments", fn.get("input", ""))),
            }
        )
    return {"role": role, "parts": parts}


def _responses_items(items: Any) -> list[Message]:
    if isinstance(items, str):
        return [{"role": "user", "parts": [{"type": "text", "text": items}]}]
    out: list[Message] = []
    for it in items if isinstance(items, list) else []:
        if not isinstance(it, Mapping):
            continue
        kind = it.get("type")
        if kind in (None, "message") and "role" in it:
            out.append({"role": str(it.get("role")), "parts": _content_parts(it.get("content"))})
        elif kind in ("function_call", "custom_tool_call"):
            args = it.get("arguments", it.get("input", ""))
            call = {
                "type": "tool_call",
                "id": it.get("call_id"),
                "name": it.get("name"),
                "arguments": _args(args),
            }
            out.append({"role": "assistant", "parts": [call]})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            result = {
                "type": "tool_result",
                "id": it.get("call_id"),
                "content": _result_text(it.get("output")),
                "is_error": False,
            }
            out.append({"role": "tool", "parts": [result]})
        elif kind == "reasoning":
            raw = it.get("summary")
            summary: list[Any] = raw if isinstance(raw, list) else []
            text = "\n".join(str(s.get("text")) for s in summary if isinstance(s, Mapping) and s.get("text"))
            out.append(
                {
                    "role": "assistant",
                    "parts": [{"type": "reasoning", "text": text or "(encrypted)"}],
                }
            )
        else:
            out.append({"role": "item", "parts": [{"type": "other", "kind": str(kind)}]})
    return out


def messages_of(protocol: str | None, body: Any) -> tuple[list[dict[str, Any]], list[Message]]:
    """(system / instructions parts, conversation messages) of a request body, normalized."""
    if not isinstance(body, Mapping):
        return [], []
    if protocol == "anthropic_messages":
        msgs: list[Message] = [
            {"role": str(m.get("role") or "?"), "parts": _content_parts(m.get("content"))}
            for m in _list(body.get("messages"))
            if isinstance(m, Mapping)
        ]
        return _content_parts(body.get("system")), msgs
    if protocol == "openai_responses":
        return _content_parts(body.get("instructions")), _responses_items(body.get("input"))
    msgs = [_chat_message(m) for m in _list(body.get("messages")) if isinstance(m, Mapping)]
    system: list[dict[str, Any]] = []
    for msg in msgs:
        if msg["role"] in ("system", "developer"):
            system.extend(msg["parts"])
    return system, [m for m in msgs if m["role"] not in ("system", "developer")]


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
