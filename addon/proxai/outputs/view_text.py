"""Text rendering of what ProxAI knows about a flow, for the "ProxAI" view: the assembled response
(verdict first, then reasoning, answer, tool calls, error, usage and timing, details last and only when
they add something) and the request's conversation (``proxai.outputs.view_request``, which reads it
with translate's request reader: imported with the first request view, so a proxy whose requests
nobody views never imports it, docs/design/footprint.md); on a translated flow both sides.

Rules in docs/design/visibility.md ("The view"). Pure: plain dicts (``flow.metadata["proxai"]``),
``StreamSummary`` objects, body bytes and parsed JSON in, lists of text lines out, wrapped to
``WIDTH`` columns (mitmweb does not wrap a view's lines). The mitmproxy contentview
(``proxai.mitm.contentview``) and the report CLI use it; the one-line verdict is ``proxai.outputs.verdict``'s.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from proxai.core.errors import ProxaiError
from proxai.core.model import StreamSummary
from proxai.core.sse import SseScanner
from proxai.outputs import cost
from proxai.outputs.verdict import (
    TERMINAL_EVENT_LONG,
    Verdict,
    client_protocol,
    terminal_safe,
    truncation_text,
    verdict,
    verdict_text,
)
from proxai.protocols import conformance

RULE = "─" * 2
MAX_INLINE = 200  # characters of a tool schema description / metadata value shown inline
WIDTH = 100  # columns the view's lines are wrapped to
LAST_EVENTS = 4  # events of a closed stream shown


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


def wrap(lines: Sequence[str], width: int = WIDTH, *, hang: bool = True) -> list[str]:
    """Lines longer than ``width`` broken at spaces (or hard, for a long word), continuation lines
    indented like their first line (plus two spaces with ``hang``: prose reads better without)."""
    out: list[str] = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" "))]
        if len(indent) > width // 2:
            indent = indent[: width // 2]
        out.extend(
            textwrap.wrap(
                line,
                width,
                subsequent_indent=indent + ("  " if hang else ""),
                break_on_hyphens=False,
                replace_whitespace=False,
                drop_whitespace=True,
            )
            or [line[:width]]
        )
    return out


def _tool_list(meta: Mapping[str, Any]) -> list[Any]:
    tools = meta.get("tool_calls")
    return list(tools) if isinstance(tools, list) else []


# Keys of the metadata the view renders itself, or that say nothing a reader needs (the request view
# shows the URL and route). Every other key, whoever adds it, goes to "details".
_SHOWN_KEYS = frozenset(
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
        "detected_by",
        "original_url",
        "route",
        "carrier",
        "body_not_kept",
        "last_events",
        "extra",
        "reads",  # when each read left (up to 1,024 offsets and seconds): what a replay plays, not to read
    }
)


def _explanation(meta: Mapping[str, Any]) -> list[str]:
    """One sentence under the verdict for anything but a plain success."""
    v = verdict(meta)
    if v is Verdict.TRUNCATED:
        return [f"The answer was cut by {truncation_text(meta)}: the client got a partial answer."]
    if v is Verdict.CLOSED:
        terminal = TERMINAL_EVENT_LONG.get(str(meta.get("protocol")), "its terminal event")
        return [f"The stream ended before its terminal event: {terminal} never came."]
    if v is Verdict.UNFINISHED_TOOL:
        return ["The stream ended while a tool call's arguments were still streaming."]
    return []


def verdict_lines(meta: Mapping[str, Any], *, side: str | None = None) -> list[str]:
    """The verdict line (and its explanation): ``ProxAI · truncated (max_tokens) · anthropic_messages
    claude-sonnet-4-5 · streamed``."""
    streamed = "streamed" if meta.get("streaming") else "not streamed"
    model = meta.get("model")
    who = str(meta.get("protocol") or "?") + (f" {model}" if isinstance(model, str) and model else "")
    lead = "ProxAI" if side is None else side
    text = verdict_text(meta, upstream_side=side == "upstream")
    lines = [f"{lead} · {text} · {terminal_safe(who)} · {streamed}"]
    lines.extend(_explanation(meta))
    if isinstance(meta.get("body_not_kept"), str):
        lines.append(f"({meta['body_not_kept']}; the summary comes from the live stream)")
    return lines


def usage_lines(meta: Mapping[str, Any]) -> list[str]:
    """Usage and timing: tokens, timings, sizes, identity."""
    lines = [_section("usage and timing")]
    usage = meta.get("usage")
    if isinstance(usage, Mapping):
        tokens = [
            f"input {_dash(usage.get('input_tokens'))}",
            f"output {_dash(usage.get('output_tokens'))}",
            f"total {_dash(usage.get('total_tokens'))}",
        ]
        if usage.get("cache_read_tokens") is not None:
            tokens.append(f"cache read {usage['cache_read_tokens']}")
        if usage.get("cache_write_tokens") is not None:
            lifetimes = cost.lifetimes_text(usage)
            split = f" ({lifetimes})" if lifetimes else ""
            tokens.append(f"cache write {usage['cache_write_tokens']}{split}")
        lines.append("tokens: " + " · ".join(tokens))
    if "cost" in meta:
        lines.append("cost: " + cost_text(meta))
    timing = meta.get("timing")
    if isinstance(timing, Mapping) and any(v is not None for v in timing.values()):
        lines.append(
            f"timing: headers {_secs(timing.get('headers_s'))} · first token "
            f"{_secs(timing.get('first_token_s'))} · largest gap {_secs(timing.get('largest_gap_s'))}"
            f" · total {_secs(timing.get('total_s'))}"
        )
    sizes = [f"text {meta.get('text_bytes', 0)} bytes"]
    if meta.get("reasoning_bytes"):
        sizes.append(f"reasoning {meta['reasoning_bytes']} bytes")
    if meta.get("refusal_bytes"):
        sizes.append(f"refusal {meta['refusal_bytes']} bytes")
    counts = meta.get("counts")
    if isinstance(counts, Mapping) and counts.get("events"):
        sizes.append(f"{_dash(counts.get('events'))} events in {_dash(counts.get('bytes'))} bytes")
    if meta.get("sequence_gaps"):
        sizes.append(f"sequence gaps {meta['sequence_gaps']}")
    lines.append("size: " + " · ".join(sizes))
    ident = [f"id {_dash(meta.get('id'))}"]
    if meta.get("status_code") is not None:
        ident.append(f"HTTP {meta['status_code']}")
    stop = meta.get("stop_reason")
    if stop is not None or meta.get("stop_class") is not None:
        ident.append(f"stop {_dash(stop)} ({_dash(meta.get('stop_class'))})")
    lines.append(" · ".join(ident))
    return lines


def cost_text(meta: Mapping[str, Any]) -> str:
    """``$0.000345 (anthropic claude-sonnet-4-5, genai-prices 0.2.3)``, or ``- (why)`` unpriced."""
    c = meta.get("cost")
    amount = cost.amount(meta)
    if amount is None or not isinstance(c, Mapping):
        why = cost.note(meta)
        return "-" + (f" ({terminal_safe(why)})" if why else "")
    source = " ".join(str(c[k]) for k in ("source", "version") if c.get(k))
    who = " ".join(str(c[k]) for k in ("provider", "model") if c.get(k))
    return terminal_safe(f"{cost.format_amount(amount)} ({who}, {source})")


def error_lines(meta: Mapping[str, Any]) -> list[str]:
    err = meta.get("error")
    if not isinstance(err, Mapping):
        return []
    head = [f"kind {_dash(err.get('kind'))}"]
    if err.get("status") is not None:
        head.append(f"HTTP {err['status']}")
    if err.get("type") is not None:
        head.append(f"type {err['type']}")
    if err.get("source") is not None:
        head.append(f"from {err['source']}")
    return [_section("error"), " · ".join(head), f"message: {_dash(err.get('message'))}"]


def guard_info(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The guard's verdict (``extra.guard``): why the stream was cut (stall / idle)."""
    extra = meta.get("extra")
    g = extra.get("guard") if isinstance(extra, Mapping) else meta.get("guard")
    return g if isinstance(g, Mapping) else None


def guard_lines(meta: Mapping[str, Any]) -> list[str]:
    """Why the guard cut the stream; its message only when the error section does not say it."""
    g = guard_info(meta)
    if g is None:
        return []
    lines = [_section("guard"), f"kind {_dash(g.get('kind'))} · injected {_dash(g.get('injected'))}"]
    err = meta.get("error")
    said = err.get("message") if isinstance(err, Mapping) else None
    if g.get("message") and g.get("message") != said:
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


def _interesting(key: str, value: Any) -> bool:
    if value is None or value in ({}, []):
        return False
    return not (key == "detected_by" and value == "path")


_OWN_SECTIONS = frozenset({"guard", "conformance"})  # extra keys with a section of their own


def conformance_lines(meta: Mapping[str, Any]) -> list[str]:
    """What the official SDKs do with this stream, one entry per rule it broke
    (docs/design/conformance.md): the rule, the event, what the SDKs require, each SDK's reaction."""
    found = conformance.findings_of(meta)
    if not found:
        return []
    lines = [_section("official SDKs")]
    for f in found:
        lines.append(terminal_safe(f"{f.get('rule')} at event {f.get('event_index')}: {f.get('detail')}"))
        lines.append(terminal_safe(f"  requires {f.get('requires')}"))
        sdks = f.get("sdks")
        for name, text in sorted(sdks.items()) if isinstance(sdks, Mapping) else ():
            lines.append(terminal_safe(f"  {name}: {text}"))
    return lines


def _without_finding_notes(extra: Mapping[str, Any]) -> Mapping[str, Any]:
    """``extra`` without the notes that the official SDKs' section already says."""
    said = {f.get("detail") for f in conformance.findings_of({"extra": extra})}
    notes = extra.get("notes")
    if not said or not isinstance(notes, list):
        return extra
    return {**extra, "notes": [n for n in notes if n not in said]}


def details_lines(meta: Mapping[str, Any]) -> list[str]:
    """What else the metadata holds that a reader may need (diagnostics file, notes, observe and
    translation errors, what the translation dropped ...), one per line; nothing when there is none."""
    items: dict[str, Any] = {k: meta[k] for k in meta if k not in _SHOWN_KEYS and _interesting(k, meta[k])}
    if meta.get("detected_by") not in (None, "path"):
        items["detected_by"] = meta["detected_by"]
    extra = meta.get("extra")
    if isinstance(extra, Mapping):
        extra = _without_finding_notes(extra)
        items.update(
            {f"extra.{k}": v for k, v in extra.items() if k not in _OWN_SECTIONS and _interesting(k, v)}
        )
    tr = meta.get("translation")
    if isinstance(tr, Mapping):
        items.update(
            {f"translation.{k}": v for k, v in tr.items() if k in ("dropped", "error") and _interesting(k, v)}
        )
    if not items:
        return []
    lines = [_section("details")]
    for k in sorted(items):
        v = items[k]
        if isinstance(v, Mapping):
            lines.append(f"{k}:")
            lines.extend(f"  {kk}: {_compact(vv)}" for kk, vv in sorted(v.items(), key=lambda kv: str(kv[0])))
        elif isinstance(v, list) and all(isinstance(x, str) for x in v):
            lines.append(f"{k}:")
            lines.extend(f"  - {x}" for x in v)
        else:
            lines.append(f"{k}: {v if isinstance(v, str) else _compact(v)}")
    return lines


def tool_call_lines(
    meta_tools: Sequence[Any], captured: StreamSummary | None, *, content: bool = True
) -> list[str]:
    """One section per tool call: name, id, state, size and (``content``) the pretty-printed
    arguments when they were captured. Flags come from the metadata, else from the capture."""
    lines: list[str] = []
    cap = list(captured.tool_calls) if captured is not None else []
    for i in range(max(len(meta_tools), len(cap))):
        c = cap[i] if i < len(cap) else None
        m = meta_tools[i] if i < len(meta_tools) and isinstance(meta_tools[i], Mapping) else None
        info: Mapping[str, Any] = m if m is not None else (c.to_metadata() if c is not None else {})
        if not info.get("arguments_complete"):
            state = "UNFINISHED"
        elif info.get("arguments_valid_json"):
            state = "complete"
        else:
            state = "complete, arguments not valid JSON"
        if info.get("kind") not in (None, "function"):
            state += f", {info['kind']}"
        lines.append(
            _section(
                f"tool call {i + 1}: {_dash(info.get('name'))} · id {_dash(info.get('id'))} · "
                f"{state} · {_dash(info.get('arguments_bytes'))} bytes"
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


# Keys every event of a stream repeats: left out of a closed stream's last events.
_REPEATED_KEYS = frozenset(
    {"id", "object", "created", "model", "service_tier", "system_fingerprint", "obfuscation"}
)


def _pruned(v: Any) -> Any:
    """``v`` without null members (a chunk's ``"logprobs": null`` and the like say nothing)."""
    if isinstance(v, dict):
        return {k: _pruned(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_pruned(x) for x in v]
    return v


def _event_digest(name: str, data: str) -> str:
    """One line for an SSE event: its name (or JSON ``type``) and what changes from one event to the
    next (identity keys every chunk repeats are left out)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = None
    if name == "message":  # the SSE default: the stream named no event
        name = ""
    if not isinstance(doc, dict):
        text = data
        label = name or "data"
    else:
        label = name or (str(doc["type"]) if isinstance(doc.get("type"), str) else "data")
        rest = {k: v for k, v in doc.items() if k not in _REPEATED_KEYS and not (k == "type" and v == label)}
        text = _compact(_pruned(rest))
    if len(text) > MAX_INLINE:
        text = text[: MAX_INLINE - 3] + "..."
    return terminal_safe(f"{label}: {text}")


def _event_name(name: str, data: str) -> str:
    """What an event is, without its content: its SSE name or JSON ``type``; a Chat chunk by what
    it carries (``delta.content``, ``finish_reason stop``, ``usage``)."""
    if name and name != "message":
        return terminal_safe(name)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return "data" if data.strip() != "[DONE]" else "[DONE]"
    if not isinstance(doc, dict):
        return "data"
    if isinstance(doc.get("type"), str):
        return terminal_safe(doc["type"])
    parts: list[str] = []
    choices = doc.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        delta = choices[0].get("delta")
        if isinstance(delta, dict):
            parts.extend(f"delta.{k}" for k, v in delta.items() if v not in (None, "", []))
        if isinstance(choices[0].get("finish_reason"), str):
            parts.append(f"finish_reason {choices[0]['finish_reason']}")
    if doc.get("usage"):
        parts.append("usage")
    if "error" in doc:
        parts.append("error")
    return terminal_safe("chunk" + (f" ({', '.join(parts)})" if parts else ""))


def last_event_names(tail: bytes, n: int = LAST_EVENTS) -> list[str]:
    """The names of the last ``n`` complete events in the stream's recent ``tail`` (its first event
    may be cut by the tail's start, so it is left out when there are more), then ``(unfinished)``
    when the tail ends inside an event. No content: metadata holds none."""
    scanner = SseScanner()
    try:
        events = scanner.feed(tail)
    except ProxaiError:
        return []
    names = [_event_name(ev.event, ev.data) for ev in (events[1:] if len(events) > n else events)]
    return names[-n:] + (["(unfinished)"] if scanner.pending_bytes else [])


def last_event_lines(meta: Mapping[str, Any], body: bytes | None) -> list[str]:
    """For a ``closed`` stream: its last events, from the body when there is one (else the event
    names the addon recorded), and an unfinished event left at the end."""
    if verdict(meta) is not Verdict.CLOSED:
        return []
    lines = [_section("how the stream ended")]
    if body:
        scanner = SseScanner()
        try:
            events = scanner.feed(body)
            pending = scanner.pending_bytes
            events += scanner.close()
        except ProxaiError:
            return []
        shown = events[-LAST_EVENTS:]
        lines.append(f"last {len(shown)} of {len(events)} events:")
        lines.extend(f"  {_event_digest(ev.event, ev.data)}" for ev in shown)
        if pending:
            lines.append(f"then {pending} bytes of an unfinished event (dropped by every SSE client)")
        return lines
    names = meta.get("last_events")
    if isinstance(names, list) and names:
        lines.append("last events: " + ", ".join(str(n) for n in names))
        return lines
    return []


def response_lines(
    meta: Mapping[str, Any] | None,
    captured: StreamSummary | None,
    *,
    content: bool = True,
    body: bytes | None = None,
    side: str | None = None,
) -> list[str]:
    """The assembled response: verdict, reasoning, answer, tool calls, error, guard, how a closed
    stream ended, usage and timing, details.

    ``meta`` is ``flow.metadata["proxai"]`` (authoritative: it saw the live stream, guard injections
    and aborts included); ``captured`` is the body re-observed with content capture (text, reasoning,
    tool arguments). Either may be missing.
    """
    if meta is None:
        meta = captured_meta(captured) if captured is not None else {}
    lines = verdict_lines(meta, side=side)
    if not content:
        pass
    elif captured is not None:
        if captured.reasoning:
            lines.append(_section("reasoning"))
            lines.extend(wrap(captured.reasoning.splitlines() or [""], hang=False))
        if captured.text:
            lines.append(_section("answer"))
            lines.extend(wrap(captured.text.splitlines() or [""], hang=False))
    elif (meta.get("text_bytes") or meta.get("reasoning_bytes")) and "body_not_kept" not in meta:
        lines.append("(the answer is not shown: the body was not stored)")
    lines.extend(tool_call_lines(_tool_list(meta), captured, content=content))
    lines.extend(error_lines(meta))
    lines.extend(conformance_lines(meta))
    lines.extend(guard_lines(meta))
    lines.extend(last_event_lines(meta, body))
    lines.extend(usage_lines(meta))
    lines.extend(details_lines(meta))
    return lines


# ---- whole flows (both sides of a translated flow) ------------------------------------------------

BANNER = "═" * 2
NOT_STORED = "(the response body was not stored: the summary comes from the live stream)"


def _banner(title: str) -> str:
    return f"{BANNER} {title} {BANNER}"


def _translation_info(meta: Mapping[str, Any] | None) -> Mapping[str, Any]:
    tr = meta.get("translation") if meta is not None else None
    return tr if isinstance(tr, Mapping) else {}


def client_request_body(meta: Mapping[str, Any] | None) -> Any:
    """The client's original request body (before translation), when the translation kept it:
    ``client_request`` is ``{"url": ..., "body": <JSON text>}`` (or the body itself, as text or
    parsed), in the metadata or its ``translation``."""
    tr = _translation_info(meta)
    for holder in (tr, meta or {}):
        body = holder.get("client_request")
        if isinstance(body, Mapping) and "body" in body:
            body = body["body"]
        if isinstance(body, (str, bytes)):
            try:
                return orjson.loads(body)
            except orjson.JSONDecodeError:
                return None
        if isinstance(body, Mapping):
            return body
    return None


def _client_request_url(meta: Mapping[str, Any] | None) -> str | None:
    kept = (meta or {}).get("client_request")
    url = kept.get("url") if isinstance(kept, Mapping) else None
    return url if isinstance(url, str) else None


def flow_response_lines(
    meta: Mapping[str, Any] | None,
    captured: StreamSummary | None,
    body_protocol: str,
    body: bytes | None = None,
) -> list[str]:
    """A response as the ProxAI view shows it, wrapped. ``captured`` is the stored body re-observed in
    ``body_protocol`` (the client's protocol: on a translated flow the body holds the client bytes),
    ``body`` its bytes (decoded)."""
    client = client_protocol(meta) if meta is not None else None
    upstream = str(meta.get("protocol")) if meta is not None else body_protocol
    if meta is None or not client or client == upstream:
        if captured is None and meta is not None:
            lines = response_lines(meta, None, content=False, body=body)
            if "body_not_kept" not in meta:
                lines.insert(len(verdict_lines(meta)), NOT_STORED)
            return wrap(lines)
        return wrap(response_lines(meta, captured, body=body))
    lines = [
        f"ProxAI · translated flow: the client speaks {client}, the upstream speaks {upstream}",
        _banner(f"as the client received it ({client})"),
    ]
    if captured is not None:
        client_meta = captured_meta(captured)
        if isinstance(meta.get("timing"), Mapping):
            client_meta["timing"] = meta["timing"]  # one clock for both sides: the live stream's
        lines.extend(response_lines(client_meta, captured, body=body, side="client"))
    elif isinstance(meta.get("body_not_kept"), str):
        lines.append(f"({meta['body_not_kept']})")
    else:
        lines.append("(the response body was not stored)")
    lines.append(_banner(f"as the upstream sent it ({upstream})"))
    upstream_meta = {k: v for k, v in meta.items() if k not in ("client_protocol", "body_not_kept")}
    lines.extend(response_lines(upstream_meta, None, content=False, side="upstream"))
    return wrap(lines)


def flow_request_lines(meta: Mapping[str, Any] | None, upstream_protocol: str, body: Any) -> list[str]:
    """A request as the ProxAI view shows it, wrapped: on a translated flow, the client's request
    (when the translation kept it) and the request sent upstream (the flow's request)."""
    from proxai.outputs.view_request import request_lines  # the request reader, with the first view

    client = client_protocol(meta) if meta is not None else None
    extra: list[str] = []
    if meta is not None:
        if isinstance(meta.get("original_url"), str):
            extra.append(f"original_url: {meta['original_url']}")
        elif _client_request_url(meta):
            extra.append(f"original_url: {_client_request_url(meta)}")
        route = meta.get("route")
        if isinstance(route, Mapping):
            target = f" -> {route['target_url']}" if route.get("target_url") else ""
            extra.append(f"route: {_dash(route.get('name'))}{target}")
        elif route is not None:
            extra.append(f"route: {route if isinstance(route, str) else _compact(route)}")
    if not client or client == upstream_protocol:
        return wrap(request_lines(upstream_protocol or None, body) + extra)
    lines = [
        f"ProxAI · translated flow: the client speaks {client}, the upstream speaks {upstream_protocol}",
        *extra,
        _banner(f"as the client sent it ({client})"),
    ]
    client_body = client_request_body(meta)
    if client_body is not None:
        lines.extend(request_lines(client, client_body))
    else:
        lines.append("(the client's original request was not kept)")
    lines.append(_banner(f"as sent upstream ({upstream_protocol})"))
    lines.extend(request_lines(upstream_protocol, body))
    return wrap(lines)
