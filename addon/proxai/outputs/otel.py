"""One OpenTelemetry span per LLM flow, in the GenAI semantic conventions (docs/design/otlp.md).

Pure: a flow's summary (``flow.metadata["proxai"]``) and a few plain facts of the flow (its id,
the upstream URL, the request body, wall-clock start and end, a ``traceparent`` header) go in; a
``Span`` with its attributes, ids and times comes out. ``proxai.mitm.otel_sdk`` hands it to the
OpenTelemetry SDK, which encodes and sends it. Secrets never reach an attribute: URLs, error messages and
(when content export is on) every message go through ``proxai.safety.redact``; message content is only
exported when asked for.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from proxai.core.model import Protocol
from proxai.safety.redact import Redactor, redact_json_value, redact_text, redact_url
from proxai.translate import ir
from proxai.translate.request import read_request

AttrValue = str | bool | int | float | list[str]

# The most characters one content attribute keeps (a whole conversation can be megabytes).
MAX_CONTENT_CHARS = 64 * 1024
MAX_MESSAGE_CHARS = 2000
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
_PROVIDER_BY_PROTOCOL = {
    "anthropic_messages": "anthropic",
    "openai_chat": "openai",
    "openai_responses": "openai",
}


@dataclass(frozen=True, slots=True)
class FlowFacts:
    """What the shell knows of a flow besides its summary."""

    flow_id: str
    url: str  # where the request went upstream
    start_ns: int  # wall clock, nanoseconds since the epoch
    end_ns: int
    request_body: Any = None  # the upstream request, parsed JSON
    traceparent: str | None = None  # the client's W3C trace context header, if any


@dataclass(frozen=True, slots=True)
class Span:
    trace_id: bytes  # 16 bytes
    span_id: bytes  # 8 bytes
    parent_span_id: bytes | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    error: bool = False
    status_message: str = ""


def span_ids(flow_id: str, traceparent: str | None) -> tuple[bytes, bytes, bytes | None]:
    """(trace id, span id, parent span id). A valid ``traceparent`` puts the span in the client's
    trace, under the client's span; otherwise the flow starts its own trace. Both ids are derived
    from the flow id, so exporting the same flow twice gives the same span."""
    digest = hashlib.sha256(flow_id.encode()).digest()
    span_id = digest[:8]
    if traceparent:
        m = _TRACEPARENT.match(traceparent.strip().lower())
        if m and set(m.group(1)) != {"0"} and set(m.group(2)) != {"0"}:
            return bytes.fromhex(m.group(1)), span_id, bytes.fromhex(m.group(2))
    return digest[8:24], span_id, None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def provider_name(meta: Mapping[str, Any]) -> str:
    """``gen_ai.system``: the provider whose address the upstream is (as priced), else the maker
    of the upstream's protocol."""
    c = _map(meta.get("cost"))
    if c.get("matched_by") == "api_url" and isinstance(c.get("provider"), str):
        return str(c["provider"])
    return _PROVIDER_BY_PROTOCOL.get(str(meta.get("protocol")), "unknown")


def _request_attrs(req: ir.RequestIR | None, attrs: dict[str, AttrValue]) -> None:
    if req is None:
        return
    if req.model is not None:
        attrs["gen_ai.request.model"] = req.model
    limit = _int(req.max_tokens)
    if limit is not None:
        attrs["gen_ai.request.max_tokens"] = limit
    for name, value in (("temperature", req.temperature), ("top_p", req.top_p)):
        v = _num(value)
        if v is not None:
            attrs[f"gen_ai.request.{name}"] = v


def _usage_attrs(meta: Mapping[str, Any], attrs: dict[str, AttrValue]) -> None:
    usage = _map(meta.get("usage"))
    inp = _int(usage.get("input_tokens"))
    out = _int(usage.get("output_tokens"))
    read = _int(usage.get("cache_read_tokens"))
    write = _int(usage.get("cache_write_tokens"))
    if inp is not None:
        if meta.get("protocol") == "anthropic_messages":
            inp += (read or 0) + (write or 0)  # the conventions count cached input inside
        attrs["gen_ai.usage.input_tokens"] = inp
        attrs["llm.token_count.prompt"] = inp
    if out is not None:
        attrs["gen_ai.usage.output_tokens"] = out
        attrs["llm.token_count.completion"] = out
    if inp is not None or out is not None:
        attrs["llm.token_count.total"] = (inp or 0) + (out or 0)
    if read is not None:
        attrs["gen_ai.usage.cache_read.input_tokens"] = read
    if write is not None:
        attrs["gen_ai.usage.cache_creation.input_tokens"] = write


def _outcome_attrs(meta: Mapping[str, Any], attrs: dict[str, AttrValue]) -> tuple[bool, str]:
    outcome = str(meta.get("outcome") or "unknown")
    attrs["proxai.outcome"] = outcome
    for key in ("protocol", "client_protocol", "stop_class"):
        if isinstance(meta.get(key), str):
            attrs[f"proxai.{key}"] = str(meta[key])
    if isinstance(meta.get("streaming"), bool):
        attrs["proxai.streaming"] = bool(meta["streaming"])
    timing = _map(meta.get("timing"))
    for key, name in (("first_token_s", "time_to_first_token_s"), ("total_s", "duration_s")):
        v = _num(timing.get(key))
        if v is not None:
            attrs[f"proxai.{name}"] = v
    tools = [t for t in meta.get("tool_calls") or [] if isinstance(t, Mapping)]
    if tools:
        attrs["proxai.tool_calls"] = [str(t.get("name") or "?") for t in tools]
        unfinished = sum(1 for t in tools if not t.get("arguments_complete"))
        if unfinished:
            attrs["proxai.tool_calls.unfinished"] = unfinished
    guard = _map(_map(meta.get("extra")).get("guard"))
    if guard:
        attrs["proxai.guard.kind"] = str(guard.get("kind") or "?")
        attrs["proxai.guard.injected"] = bool(guard.get("injected"))
    c = _map(meta.get("cost"))
    amount = _num(c.get("amount"))
    if amount is not None:
        attrs["proxai.cost.amount"] = amount
        attrs["proxai.cost.currency"] = str(c.get("currency") or "USD")
        attrs["proxai.cost.source"] = f"{c.get('source')} {c.get('version')}"
    err = _map(meta.get("error"))
    message = redact_text(_clip(str(err.get("message") or ""), MAX_MESSAGE_CHARS))
    if err.get("kind"):
        attrs["proxai.error.kind"] = str(err["kind"])
        attrs["error.type"] = str(err["kind"])
    if message:
        attrs["proxai.error.message"] = message
    failed = outcome != "completed" or bool(err)
    if failed and "error.type" not in attrs:
        attrs["error.type"] = outcome
    return failed, message or ("" if not failed else f"the stream ended {outcome}")


def _input_part(p: ir.Part) -> dict[str, Any]:
    """A part of the neutral form in the conventions' message parts."""
    match p:
        case ir.TextPart() | ir.RefusalPart():
            return {"type": "text", "content": p.text}
        case ir.ThinkingPart():
            return {"type": "reasoning", "content": p.text}
        case ir.RedactedThinkingPart():
            return {"type": "reasoning", "content": ""}
        case ir.ToolCallPart():
            return {"type": "tool_call", "id": p.id, "name": p.name, "arguments": p.input}
        case ir.ToolResultPart():
            texts = [c.text for c in p.content if isinstance(c, ir.TextPart)]
            return {"type": "tool_call_response", "id": p.call_id, "response": "\n".join(texts)}
        case ir.ImagePart() | ir.DocumentPart():
            return {"type": "image" if isinstance(p, ir.ImagePart) else "document"}
        case ir.UnreadPart():
            return {"type": "unread", "content": p.raw}


def _input_message(m: ir.Message) -> dict[str, Any]:
    return {"role": m.speaker, "parts": [_input_part(p) for p in m.parts]}


def _output_messages(meta: Mapping[str, Any], captured: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if isinstance(captured.get("reasoning"), str) and captured["reasoning"]:
        parts.append({"type": "reasoning", "content": captured["reasoning"]})
    if isinstance(captured.get("text"), str) and captured["text"]:
        parts.append({"type": "text", "content": captured["text"]})
    args = captured.get("tool_arguments")
    for i, t in enumerate(t for t in meta.get("tool_calls") or [] if isinstance(t, Mapping)):
        part: dict[str, Any] = {"type": "tool_call", "id": t.get("id"), "name": t.get("name")}
        if isinstance(args, Sequence) and i < len(args) and isinstance(args[i], str):
            part["arguments"] = args[i]
        parts.append(part)
    return [{"role": "assistant", "parts": parts, "finish_reason": meta.get("stop_reason")}]


def _json_attr(value: Any) -> str:
    return _clip(orjson.dumps(redact_json_value(value)).decode(), MAX_CONTENT_CHARS)


def _content_attrs(
    meta: Mapping[str, Any],
    req: ir.RequestIR | None,
    captured: Mapping[str, Any],
    attrs: dict[str, AttrValue],
) -> None:
    if req is not None:
        if req.system:
            attrs["gen_ai.system_instructions"] = _json_attr([_input_part(t) for t in req.system])
        conversation = [_input_message(m) for m in req.messages]
        attrs["gen_ai.input.messages"] = attrs["input.value"] = _json_attr(conversation)
    attrs["gen_ai.output.messages"] = attrs["output.value"] = _json_attr(_output_messages(meta, captured))


def build_span(
    meta: Mapping[str, Any],
    facts: FlowFacts,
    *,
    content: bool = False,
    captured: Mapping[str, Any] | None = None,
    redactor: Redactor | None = None,
) -> Span:
    """The span of one LLM flow. ``captured``: ``text``, ``reasoning`` and ``tool_arguments`` (a
    list, in the order of ``tool_calls``) as the observer captured them; used only with
    ``content``. ``redactor``: the flow's redaction engine; every text attribute and the status
    message go through it last (its echo set: a value the flow carried as a credential, in a header
    or a secret-named field, is removed wherever else it appears, keys without a known shape too)."""
    protocol = str(meta.get("protocol"))
    req = (
        read_request(facts.request_body, Protocol(protocol), strict=False)
        if protocol in _PROVIDER_BY_PROTOCOL
        else None
    )
    provider = provider_name(meta)
    attrs: dict[str, AttrValue] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": provider,
        "gen_ai.provider.name": provider,
        "openinference.span.kind": "LLM",
        "llm.provider": provider,
        "proxai.flow_id": facts.flow_id,
    }
    _request_attrs(req, attrs)
    if isinstance(meta.get("model"), str):
        attrs["gen_ai.response.model"] = attrs["llm.model_name"] = str(meta["model"])
    elif "gen_ai.request.model" in attrs:
        attrs["llm.model_name"] = attrs["gen_ai.request.model"]
    if isinstance(meta.get("id"), str):
        attrs["gen_ai.response.id"] = str(meta["id"])
    if meta.get("stop_reason") is not None:
        attrs["gen_ai.response.finish_reasons"] = [str(meta["stop_reason"])]
    _usage_attrs(meta, attrs)
    url = urlsplit(facts.url)
    if url.hostname:
        attrs["server.address"] = url.hostname
    if url.port or url.scheme in ("http", "https"):
        attrs["server.port"] = url.port or (443 if url.scheme == "https" else 80)
    attrs["url.full"] = redact_url(facts.url)
    status = _int(meta.get("status_code"))
    if status is not None:
        attrs["http.response.status_code"] = status
    failed, message = _outcome_attrs(meta, attrs)
    if content:
        _content_attrs(meta, req, captured or {}, attrs)
    if redactor is not None:
        attrs = redacted_attributes(attrs, redactor)
        message = redactor.text(message)
    trace_id, span_id, parent = span_ids(facts.flow_id, facts.traceparent)
    model = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model")
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=f"chat {model}" if model else "chat",
        start_ns=facts.start_ns,
        end_ns=max(facts.end_ns, facts.start_ns),
        attributes=attrs,
        error=failed,
        status_message=message,
    )


def redacted_attributes(attrs: Mapping[str, AttrValue], red: Redactor) -> dict[str, AttrValue]:
    """Every text value (and each text of a list) through ``red.text``; numbers and flags as they are.
    Attribute names are ours, not secret names (``llm.token_count.prompt`` is a count)."""
    out: dict[str, AttrValue] = {}
    for name, value in attrs.items():
        if isinstance(value, str):
            out[name] = red.text(value)
        elif isinstance(value, list):
            out[name] = [red.text(v) for v in value]
        else:
            out[name] = value
    return out
