"""Text rendering of what ProxAI knows about a flow: the flow-list comment and marker, the assembled
response (text, reasoning, tool calls, usage, stop reason, outcome, error / stall details) and the
request's conversation summary.

Issue 6 ("make outcomes visible"); the outcomes are seed 001's (``001_5998ffc26e6ec2b6.txt``:
Completed / Closed / Error / UnfinishedTool) and the neutral stream model is seed 002's
(``002_f5b06fe1d3656e26.txt``). Pure: plain dicts (``flow.metadata["proxai"]``), ``StreamSummary``
objects and parsed JSON in, lists of text lines out. The mitmproxy contentview
(``proxai.mitm.contentview``) and the report CLI (``proxai.cli_report``) both use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from proxai.model import Outcome, StreamSummary

# Markers (mitmproxy emoji short codes, see ``mitmproxy.utils.emoji``) by outcome. A completed flow is
# not marked, so the marked flows are exactly the ones that need a look.
MARKERS: dict[str, str] = {
    Outcome.COMPLETED: "",
    Outcome.CLOSED: ":warning:",
    Outcome.ERROR: ":red_circle:",
    Outcome.UNFINISHED_TOOL: ":hourglass:",
}
GUARD_MARKER = ":hourglass:"  # an error the guard injected (idle timeout): the upstream went silent
GUARD_KINDS = frozenset({"tool_stall", "idle_timeout"})

SHORT_PROTOCOL = {
    "anthropic_messages": "anthropic",
    "openai_chat": "chat",
    "openai_responses": "responses",
}

RULE = "─" * 2
MAX_INLINE = 200  # characters of a tool schema description / metadata value shown inline


def marker_for(outcome: str | None, error_kind: str | None = None) -> str:
    """The ``flow.marked`` value for an outcome ("" = not marked)."""
    if outcome is None:
        return ""
    if outcome == Outcome.ERROR and error_kind in GUARD_KINDS:
        return GUARD_MARKER
    return MARKERS.get(outcome, ":grey_question:")


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def protocol_label(meta: Mapping[str, Any]) -> str:
    """``chat`` or, on a translated flow, ``client<-upstream`` (``anthropic<-chat``)."""
    proto = str(meta.get("protocol") or "?")
    short = SHORT_PROTOCOL.get(proto, proto)
    client = client_protocol(meta)
    if client and client != proto:
        return f"{SHORT_PROTOCOL.get(client, client)}<-{short}"
    return short


def client_protocol(meta: Mapping[str, Any]) -> str | None:
    """The protocol the client spoke, when it differs from the upstream's (a translated flow)."""
    c = meta.get("client_protocol")
    if isinstance(c, str):
        return c
    for key in ("translation", "route"):
        tr = meta.get(key)
        if isinstance(tr, Mapping) and isinstance(tr.get("client_protocol"), str):
            return str(tr["client_protocol"])
    extra = meta.get("extra")
    tr = extra.get("translation") if isinstance(extra, Mapping) else None
    if isinstance(tr, Mapping) and isinstance(tr.get("client"), str):
        return str(tr["client"])
    return None


def comment_line(meta: Mapping[str, Any]) -> str:
    """The one-line ``flow.comment``: protocol, outcome, error, stop reason, tokens, tool calls.

    e.g. ``proxai openai_chat: completed, stop tool_calls, tokens 12 in/30 out, 2 tool calls``;
    a translated flow names both protocols (``anthropic_messages<-openai_chat``), an unfinished tool
    call names the call (``unfinished_tool in get_weather``).
    """
    proto = str(meta.get("protocol") or "?")
    client = client_protocol(meta)
    label = f"{client}<-{proto}" if client and client != proto else proto
    outcome = str(meta.get("outcome") or "?")
    head = f"proxai {label}: {outcome}"
    if outcome == Outcome.UNFINISHED_TOOL:
        names = [
            str(t.get("name") or "?")
            for t in _tool_list(meta)
            if isinstance(t, Mapping) and not t.get("arguments_complete")
        ]
        if names:
            head += " in " + "/".join(names)
    parts = [head]
    err = meta.get("error")
    if isinstance(err, Mapping) and err.get("kind"):
        status = _int(err.get("status"))
        parts.append(f"{err['kind']}" + (f" (HTTP {status})" if status else ""))
    if meta.get("stop_reason"):
        parts.append(f"stop {meta['stop_reason']}")
    usage = meta.get("usage")
    if isinstance(usage, Mapping):
        i, o = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
        if i is not None or o is not None:
            parts.append(f"tokens {'?' if i is None else i} in/{'?' if o is None else o} out")
    n = len(_tool_list(meta))
    if n:
        parts.append(f"{n} tool call{'s' if n != 1 else ''}")
    return ", ".join(parts)


def _tool_list(meta: Mapping[str, Any]) -> list[Any]:
    tools = meta.get("tool_calls")
    return list(tools) if isinstance(tools, list) else []


def _secs(v: Any) -> str:
    return "-" if not isinstance(v, (int, float)) or isinstance(v, bool) else f"{v:.3f}s"


def _dash(v: Any) -> str:
    return "-" if v is None else str(v)


def pretty_json_text(text: str) -> tuple[list[str], bool]:
    """Pretty-printed lines of a JSON document held as text, and whether it parsed."""
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text.splitlines() or [""], False
    return orjson.dumps(parsed, option=orjson.OPT_INDENT_2).decode().splitlines(), True


def _compact(v: Any) -> str:
    try:
        s = orjson.dumps(v, default=str).decode()
    except TypeError:
        s = repr(v)
    return s if len(s) <= MAX_INLINE else s[: MAX_INLINE - 3] + "..."


def _section(title: str) -> str:
    return f"{RULE} {title} {RULE}"


# Keys of the metadata dict that the summary block renders itself; all others go to "details".
_SUMMARY_KEYS = frozenset(
    {
        "schema",
        "protocol",
        "streaming",
        "outcome",
        "id",
        "model",
        "status_code",
        "stop_reason",
        "stop_class",
        "usage",
        "tool_calls",
        "error",
        "timing",
        "counts",
        "text_bytes",
        "reasoning_bytes",
        "refusal_bytes",
        "sequence_gaps",
        "translation",
        "client_protocol",
        "client_request",
    }
)


def summary_lines(meta: Mapping[str, Any]) -> list[str]:
    """The header block: protocol, outcome, identity, stop reason, usage, timing, counts."""
    streamed = "streamed" if meta.get("streaming") else "not streamed"
    lines = [f"ProxAI · {meta.get('protocol', '?')} · {streamed} · outcome: {meta.get('outcome', '?')}"]
    client = client_protocol(meta)
    if client and client != meta.get("protocol"):
        lines.append(f"translated: client speaks {client}, upstream speaks {meta.get('protocol')}")
    lines.append(f"id: {_dash(meta.get('id'))}    model: {_dash(meta.get('model'))}")
    if meta.get("status_code") is not None:
        lines.append(f"status: {meta['status_code']}")
    stop = meta.get("stop_reason")
    if stop is not None or meta.get("stop_class") is not None:
        lines.append(f"stop: {_dash(stop)} ({_dash(meta.get('stop_class'))})")
    usage = meta.get("usage")
    if isinstance(usage, Mapping):
        lines.append(
            "usage: "
            f"input {_dash(usage.get('input_tokens'))} · output {_dash(usage.get('output_tokens'))} · "
            f"total {_dash(usage.get('total_tokens'))} · cache read {_dash(usage.get('cache_read_tokens'))}"
            f" · cache write {_dash(usage.get('cache_write_tokens'))}"
        )
    timing = meta.get("timing")
    if isinstance(timing, Mapping):
        lines.append(
            f"timing: headers {_secs(timing.get('headers_s'))} · first event "
            f"{_secs(timing.get('first_event_s'))} · first token {_secs(timing.get('first_token_s'))}"
            f" · largest gap {_secs(timing.get('largest_gap_s'))} · total {_secs(timing.get('total_s'))}"
        )
    counts = meta.get("counts")
    if isinstance(counts, Mapping):
        lines.append(
            f"counts: {_dash(counts.get('bytes'))} bytes · {_dash(counts.get('chunks'))} chunks · "
            f"{_dash(counts.get('events'))} events"
        )
    sizes = [f"text {meta.get('text_bytes', 0)} bytes", f"reasoning {meta.get('reasoning_bytes', 0)} bytes"]
    if meta.get("refusal_bytes"):
        sizes.append(f"refusal {meta['refusal_bytes']} bytes")
    if meta.get("sequence_gaps"):
        sizes.append(f"sequence gaps {meta['sequence_gaps']}")
    lines.append("sizes: " + " · ".join(sizes))
    return lines


def error_lines(meta: Mapping[str, Any]) -> list[str]:
    err = meta.get("error")
    if not isinstance(err, Mapping):
        return []
    lines = [_section("error"), f"kind: {_dash(err.get('kind'))}"]
    for key in ("status", "type", "source"):
        if err.get(key) is not None:
            lines.append(f"{key}: {err[key]}")
    lines.append(f"message: {_dash(err.get('message'))}")
    return lines


def guard_info(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The guard's verdict (``extra.guard``): why the stream was cut (stall / idle)."""
    extra = meta.get("extra")
    g = extra.get("guard") if isinstance(extra, Mapping) else meta.get("guard")
    return g if isinstance(g, Mapping) else None


def guard_lines(meta: Mapping[str, Any]) -> list[str]:
    g = guard_info(meta)
    if g is None:
        return []
    lines = [_section("guard"), f"kind: {_dash(g.get('kind'))} · injected: {_dash(g.get('injected'))}"]
    if g.get("message"):
        lines.append(f"message: {g['message']}")
    if g.get("tool_name") is not None or g.get("tool_id") is not None:
        lines.append(
            f"tool call: {_dash(g.get('tool_name'))} (id {_dash(g.get('tool_id'))}) · "
            f"{_dash(g.get('arguments_bytes'))} argument bytes"
        )
    lines.append(
        f"since last delta: {_secs(g.get('since_last_delta_s'))} · idle: {_secs(g.get('idle_s'))} · "
        f"limit: {_secs(g.get('threshold_s'))}"
    )
    return lines


def details_lines(meta: Mapping[str, Any]) -> list[str]:
    """Keys other engineers add (original_url, route, diagnostics, carrier, extra ...), one per line."""
    items: dict[str, Any] = {k: meta[k] for k in meta if k not in _SUMMARY_KEYS}
    extra = items.pop("extra", None)
    if isinstance(extra, Mapping):
        items.update({f"extra.{k}": v for k, v in extra.items() if k != "guard"})
    if not items:
        return []
    lines = [_section("details")]
    for k in sorted(items):
        v = items[k]
        if isinstance(v, Mapping):
            lines.append(f"{k}:")
            lines.extend(f"  {kk}: {_compact(vv)}" for kk, vv in sorted(v.items(), key=lambda kv: str(kv[0])))
        else:
            lines.append(f"{k}: {v if isinstance(v, str) else _compact(v)}")
    return lines


def tool_call_lines(
    meta_tools: Sequence[Any], captured: StreamSummary | None, *, content: bool = True
) -> list[str]:
    """One section per tool call: name, id, flags, size and (``content``) the pretty-printed
    arguments when they were captured. Flags come from the metadata, else from the capture."""
    lines: list[str] = []
    cap = list(captured.tool_calls) if captured is not None else []
    for i in range(max(len(meta_tools), len(cap))):
        c = cap[i] if i < len(cap) else None
        m = meta_tools[i] if i < len(meta_tools) and isinstance(meta_tools[i], Mapping) else None
        info: Mapping[str, Any] = m if m is not None else (c.to_metadata() if c is not None else {})
        flags = [
            "complete" if info.get("arguments_complete") else "UNFINISHED",
            "valid JSON" if info.get("arguments_valid_json") else "invalid JSON",
        ]
        if info.get("kind") not in (None, "function"):
            flags.append(str(info["kind"]))
        lines.append(
            _section(
                f"tool call {i + 1}: {_dash(info.get('name'))} · id {_dash(info.get('id'))} · "
                f"{', '.join(flags)} · {_dash(info.get('arguments_bytes'))} bytes"
            )
        )
        if not content:
            continue
        args = c.arguments if c is not None else None
        if args is None:
            lines.append("(arguments not captured)")
        else:
            pretty, ok = pretty_json_text(args)
            lines.extend(pretty)
            if not ok and args:
                lines.append("(arguments are not valid JSON; shown as received)")
    return lines


def captured_meta(captured: StreamSummary) -> dict[str, Any]:
    """The metadata form of a re-observed body. Timing and chunk counts are dropped: a body read
    back has no clock and is one chunk (the live values are in ``flow.metadata``)."""
    meta = captured.to_metadata()
    meta.pop("timing", None)
    meta.pop("counts", None)
    return meta


def response_lines(
    meta: Mapping[str, Any] | None,
    captured: StreamSummary | None,
    *,
    content: bool = True,
    note: str | None = None,
) -> list[str]:
    """The assembled response: summary, reasoning, text, tool calls, error, details.

    ``meta`` is ``flow.metadata["proxai"]`` (authoritative: it saw the live stream, guard injections
    and aborts included); ``captured`` is the body re-observed with content capture (text, reasoning,
    tool arguments). Either may be missing.
    """
    if meta is None:
        meta = captured_meta(captured) if captured is not None else {}
    lines = summary_lines(meta)
    if note is not None:
        lines.append(note)
    if not content:
        pass
    elif captured is not None:
        if captured.reasoning:
            lines.append(_section("reasoning"))
            lines.extend(captured.reasoning.splitlines() or [""])
        if captured.text:
            lines.append(_section("text"))
            lines.extend(captured.text.splitlines() or [""])
    elif meta.get("text_bytes") or meta.get("reasoning_bytes"):
        lines.append("(content not captured: the body is not available)")
    lines.extend(tool_call_lines(_tool_list(meta), captured, content=content))
    lines.extend(error_lines(meta))
    lines.extend(guard_lines(meta))
    lines.extend(details_lines(meta))
    return lines


# ---- requests -------------------------------------------------------------------------------------


def _content_text(content: Any) -> list[str]:
    """Lines for a message content (a string or a list of typed parts, any of the three protocols)."""
    if content is None:
        return []
    if isinstance(content, str):
        return content.splitlines() or [""]
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, list):
        return [_compact(content)]
    out: list[str] = []
    for part in content:
        out.extend(_part_lines(part))
    return out


def _part_lines(part: Any) -> list[str]:
    if isinstance(part, str):
        return part.splitlines() or [""]
    if not isinstance(part, Mapping):
        return [_compact(part)]
    t = part.get("type")
    if t in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
        return part["text"].splitlines() or [""]
    if t == "refusal":
        return [f"[refusal] {part.get('refusal', '')}"]
    if t in ("thinking", "redacted_thinking", "reasoning"):
        text = part.get("thinking")
        if isinstance(text, str):
            return [f"[{t}]", *text.splitlines()]
        return [f"[{t}]"]
    if t in ("image", "image_url", "input_image", "document", "input_file", "input_audio", "file"):
        return [f"[{t}]"]
    if t in ("tool_use", "server_tool_use"):
        return [f"[{t} {part.get('name')} id={part.get('id')}] {_compact(part.get('input'))}"]
    if t == "tool_result":
        head = f"[tool_result id={part.get('tool_use_id')}{' error' if part.get('is_error') else ''}]"
        return [head, *_indent(_content_text(part.get("content")))]
    return [f"[{t}] {_compact(part)}"]


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _indent(lines: list[str], by: str = "  ") -> list[str]:
    return [by + line for line in lines]


def _chat_message(msg: Mapping[str, Any]) -> list[str]:
    role = msg.get("role", "?")
    head = f"{role}:"
    if role == "tool":
        head = f"tool (tool_call_id={msg.get('tool_call_id')}):"
    body = _content_text(msg.get("content"))
    for tc in _list(msg.get("tool_calls")):
        if isinstance(tc, Mapping):
            fn: Mapping[str, Any] = tc["function"] if isinstance(tc.get("function"), Mapping) else {}
            body.append(f"[tool_call {fn.get('name')} id={tc.get('id')}] {fn.get('arguments', '')}")
    return [head, *_indent(body)]


def _responses_item(item: Any) -> list[str]:
    if isinstance(item, str):
        return ["user:", *_indent(item.splitlines())]
    if not isinstance(item, Mapping):
        return [_compact(item)]
    t = item.get("type", "message")
    if t == "message" or ("role" in item and "type" not in item):
        return [f"{item.get('role', '?')}:", *_indent(_content_text(item.get("content")))]
    if t == "function_call":
        return [
            f"[function_call {item.get('name')} call_id={item.get('call_id')}] {item.get('arguments', '')}"
        ]
    if t == "function_call_output":
        out = item.get("output")
        return [f"[function_call_output call_id={item.get('call_id')}]", *_indent(_content_text(out))]
    if t == "reasoning":
        summ = [str(s.get("text", "")) for s in _list(item.get("summary")) if isinstance(s, Mapping)]
        return ["[reasoning]", *_indent([line for s in summ for line in s.splitlines()])]
    return [f"[{t}] {_compact(item)}"]


def _tool_decl(tool: Any) -> str:
    if not isinstance(tool, Mapping):
        return _compact(tool)
    fn: Mapping[str, Any] = tool["function"] if isinstance(tool.get("function"), Mapping) else tool
    name = fn.get("name") or tool.get("type") or "?"
    desc = fn.get("description")
    line = f"{name}"
    if tool.get("type") not in (None, "function"):
        line += f" ({tool.get('type')})"
    if isinstance(desc, str) and desc:
        first = desc.splitlines()[0]
        line += f": {first[:MAX_INLINE]}"
    return line


def request_lines(protocol: str | None, body: Any, meta: Mapping[str, Any] | None = None) -> list[str]:
    """The conversation summary of a request body (parsed JSON) in one of the three protocols."""
    if not isinstance(body, Mapping):
        return [f"ProxAI request · {protocol or '?'}", "(the body is not a JSON object)"]
    head = [f"ProxAI request · {protocol or '?'}"]
    head.append(f"model: {_dash(body.get('model'))} · stream: {'true' if body.get('stream') else 'false'}")
    params = [
        f"{k} {body[k]}"
        for k in (
            "max_tokens",
            "max_completion_tokens",
            "max_output_tokens",
            "temperature",
            "top_p",
            "previous_response_id",
        )
        if body.get(k) is not None
    ]
    if isinstance(body.get("tool_choice"), (str, Mapping)):
        params.append(f"tool_choice {_compact(body['tool_choice'])}")
    if isinstance(body.get("reasoning"), Mapping):
        params.append(f"reasoning {_compact(body['reasoning'])}")
    if isinstance(body.get("thinking"), Mapping):
        params.append(f"thinking {_compact(body['thinking'])}")
    if params:
        head.append("params: " + " · ".join(params))
    if meta:
        client = client_protocol(meta)
        if client and client != protocol:
            head.append(f"translated: client speaks {client}, upstream speaks {protocol}")
    lines = head
    system: list[str] = []
    if protocol == "anthropic_messages":
        system = _content_text(body.get("system"))
    elif protocol == "openai_responses":
        system = _content_text(body.get("instructions"))
    if system:
        lines += [_section("system"), *system]
    messages: list[list[str]] = []
    if protocol == "openai_responses":
        inp = body.get("input")
        items = [inp] if isinstance(inp, str) else (inp if isinstance(inp, list) else [])
        messages = [_responses_item(it) for it in items]
    else:
        for m in _list(body.get("messages")):
            if not isinstance(m, Mapping):
                messages.append([_compact(m)])
            elif protocol == "anthropic_messages":
                messages.append([f"{m.get('role', '?')}:", *_indent(_content_text(m.get("content")))])
            else:
                messages.append(_chat_message(m))
    lines.append(_section(f"messages ({len(messages)})"))
    for i, msg in enumerate(messages, 1):
        first, *rest = msg or [""]
        lines.append(f"[{i}] {first}")
        lines.extend(rest)
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        lines.append(_section(f"tools ({len(tools)})"))
        lines.extend(_tool_decl(t) for t in tools)
    return lines


# ---- whole flows (both sides of a translated flow) ------------------------------------------------

BANNER = "═" * 2
NOT_STORED = (
    "(the response body was not stored: streamed bodies are kept only with "
    "`--set store_streamed_bodies=true`; the summary above comes from the live stream)"
)


def _banner(title: str) -> str:
    return f"{BANNER} {title} {BANNER}"


def _translation_info(meta: Mapping[str, Any] | None) -> Mapping[str, Any]:
    tr = meta.get("translation") if meta is not None else None
    return tr if isinstance(tr, Mapping) else {}


def _client_request_body(meta: Mapping[str, Any] | None) -> Any:
    """The client's original request (before translation), when the translation kept it."""
    tr = _translation_info(meta)
    for holder in (tr, meta or {}):
        body = holder.get("client_request")
        if isinstance(body, (str, bytes)):
            try:
                return orjson.loads(body)
            except orjson.JSONDecodeError:
                return None
        if isinstance(body, Mapping):
            return body
    return None


def flow_response_lines(
    meta: Mapping[str, Any] | None, captured: StreamSummary | None, body_protocol: str
) -> list[str]:
    """A response as the ProxAI view shows it. ``captured`` is the stored body re-observed in
    ``body_protocol`` (the client's protocol: on a translated flow the body holds the client bytes)."""
    client = client_protocol(meta) if meta is not None else None
    upstream = str(meta.get("protocol")) if meta is not None else body_protocol
    if meta is None or not client or client == upstream:
        if captured is None and meta is not None:
            return response_lines(meta, None, content=False, note=NOT_STORED)
        return response_lines(meta, captured)
    lines = [
        f"ProxAI · translated flow: the client speaks {client}, the upstream speaks {upstream}",
        _banner(f"client side ({client}: the response as the client received it)"),
    ]
    if captured is not None:
        lines.extend(response_lines(None, captured))
    else:
        lines.append(NOT_STORED.replace("the summary above", "the upstream side below"))
    lines.append(_banner(f"upstream side ({upstream}: as observed from the upstream)"))
    lines.extend(response_lines(meta, None, content=False))
    return lines


def flow_request_lines(meta: Mapping[str, Any] | None, upstream_protocol: str, body: Any) -> list[str]:
    """A request as the ProxAI view shows it: on a translated flow, the client's request (when the
    translation kept it) and the request sent upstream (the flow's request)."""
    client = client_protocol(meta) if meta is not None else None
    extra: list[str] = []
    if meta is not None:
        if isinstance(meta.get("original_url"), str):
            extra.append(f"original_url: {meta['original_url']}")
        route = meta.get("route")
        if isinstance(route, Mapping):
            target = f" -> {route['target_url']}" if route.get("target_url") else ""
            extra.append(f"route: {_dash(route.get('name'))}{target}")
        elif route is not None:
            extra.append(f"route: {route if isinstance(route, str) else _compact(route)}")
    if not client or client == upstream_protocol:
        return request_lines(upstream_protocol or None, body) + extra
    lines = [
        f"ProxAI · translated flow: the client speaks {client}, the upstream speaks {upstream_protocol}",
        *extra,
        _banner(f"client side ({client}: the request the client sent)"),
    ]
    client_body = _client_request_body(meta)
    if client_body is not None:
        lines.extend(request_lines(client, client_body))
    else:
        lines.append("(the client's original request is not kept in the metadata)")
    lines.append(_banner(f"upstream side ({upstream_protocol}: the request sent upstream)"))
    lines.extend(request_lines(upstream_protocol, body))
    return lines
