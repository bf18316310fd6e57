"""Parse a non-streamed Anthropic Messages response into the neutral ``ResponseIR`` (docs/translation.md,
"JSON responses").

Text, thinking (with its signature), redacted thinking and ``tool_use`` blocks map to parts; usage
keeps cache read and cache write (the neutral input count includes both: docs/translation.md, "JSON
responses", usage). A ``refusal`` stop whose ``stop_details.explanation`` repeats the last text
block marks that block as the refusal text (the inverse of the Chat -> Anthropic refusal rule,
docs/translation.md, "JSON responses"), so a refusal survives a round trip. Server-tool blocks
cannot be expressed by the OpenAI APIs and are rejected.
"""

from __future__ import annotations

from typing import Any

from proxai.core.errors import TranslationError, UpstreamProtocolError
from proxai.core.model import StopClass
from proxai.stream import stop_reasons
from proxai.translate import ir
from proxai.translate.checks import dump_arguments, token_count


def parse_response(body: dict[str, Any]) -> ir.ResponseIR:
    content = body.get("content")
    if not isinstance(content, list):
        raise UpstreamProtocolError("an Anthropic message without a content list")
    parts: list[ir.Part] = []
    for i, b in enumerate(content):
        at = f"content[{i}]"
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "text" and isinstance(b.get("text"), str):
            parts.append(ir.TextPart(b["text"], at))
        elif kind == "thinking" and isinstance(b.get("thinking"), str):
            sig = b.get("signature")
            parts.append(ir.ThinkingPart(b["thinking"], sig if isinstance(sig, str) else None, at))
        elif kind == "redacted_thinking" and isinstance(b.get("data"), str):
            parts.append(ir.RedactedThinkingPart(b["data"], at))
        elif kind == "tool_use" and isinstance(b.get("id"), str) and isinstance(b.get("name"), str):
            value = b.get("input", {})
            parts.append(ir.ToolCallPart(b["id"], b["name"], dump_arguments(value), value, at))
        elif isinstance(kind, str):
            raise TranslationError(f"Anthropic content block {kind!r} has no equivalent in OpenAI APIs", at)
        else:
            raise UpstreamProtocolError(f"malformed Anthropic content block at {at}")
    raw_stop = body.get("stop_reason")
    stop = stop_reasons.from_anthropic(raw_stop if isinstance(raw_stop, str) else None)
    details = body.get("stop_details")
    if stop is StopClass.REFUSAL and isinstance(details, dict):
        explanation = details.get("explanation")
        if isinstance(explanation, str) and parts and isinstance(parts[-1], ir.TextPart):
            last = parts[-1]
            if last.text == explanation:
                parts[-1] = ir.RefusalPart(last.text, last.at)
    seq = body.get("stop_sequence")
    return ir.ResponseIR(
        id=str(body.get("id") or "msg_proxai"),
        model=str(body.get("model") or ""),
        parts=parts,
        stop=stop,
        usage=_usage(body.get("usage")),
        stop_sequence=seq if isinstance(seq, str) else None,
    )


def _usage(u: object) -> ir.UsageIR | None:
    if not isinstance(u, dict):
        return None
    read = token_count(u.get("cache_read_input_tokens"))
    write = token_count(u.get("cache_creation_input_tokens"))
    return ir.UsageIR(
        input_tokens=token_count(u.get("input_tokens")) + read + write,
        output_tokens=token_count(u.get("output_tokens")),
        cache_read=read,
        cache_write=write,
    )
