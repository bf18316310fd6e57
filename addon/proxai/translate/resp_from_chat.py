"""Parse a non-streamed Chat Completions response into the neutral ``ResponseIR`` (docs/translation.md,
"JSON responses").

Exactly one choice: ``choices[]`` are alternative answers, not content blocks, so a multi-choice
response is rejected, never merged and never cut to the first choice. ``message.content`` -> text,
``message.refusal`` -> refusal, ``tool_calls`` -> tool calls (arguments parsed strictly when the
target needs an object), the non-standard ``reasoning_content`` / ``reasoning`` of vLLM-style
servers -> thinking. A message with nothing representable is rejected. Usage: ``prompt_tokens``
already includes ``cached_tokens``; ``cache_write_tokens`` (OpenRouter's convention, also what
ProxAI emits) is read when present.
"""

from __future__ import annotations

from typing import Any

from proxai.core.errors import TranslationError, UpstreamProtocolError
from proxai.stream import stop_reasons
from proxai.translate import ir
from proxai.translate.checks import arguments_object, openai_usage


def parse_response(body: dict[str, Any]) -> ir.ResponseIR:
    choices = body.get("choices")
    if not isinstance(choices, list):
        raise UpstreamProtocolError("a Chat completion without a choices list")
    if len(choices) != 1:
        raise TranslationError(
            f"the upstream returned {len(choices)} choices; exactly one can be translated "
            "(alternative choices are never merged or truncated)",
            "choices",
        )
    choice = choices[0]
    msg = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(msg, dict):
        raise UpstreamProtocolError("a Chat choice without a message")
    parts: list[ir.Part] = []
    reasoning = msg.get("reasoning_content") or msg.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append(ir.ThinkingPart(reasoning, None, "choices[0].message.reasoning_content"))
    content = msg.get("content")
    if isinstance(content, str):
        parts.append(ir.TextPart(content, "choices[0].message.content"))
    refusal = msg.get("refusal")
    if isinstance(refusal, str) and refusal:
        parts.append(ir.RefusalPart(refusal, "choices[0].message.refusal"))
    for j, tc in enumerate(msg.get("tool_calls") or []):
        at = f"choices[0].message.tool_calls[{j}]"
        if not isinstance(tc, dict) or not isinstance(tc.get("id"), str):
            raise UpstreamProtocolError(f"malformed tool call at {at}")
        if tc.get("type", "function") == "function" and isinstance(tc.get("function"), dict):
            fn = tc["function"]
            args = fn.get("arguments")
            if not isinstance(fn.get("name"), str) or not isinstance(args, str):
                raise UpstreamProtocolError(f"malformed function tool call at {at}")
            parts.append(ir.ToolCallPart(tc["id"], fn["name"], args, arguments_object(args), at))
        elif tc.get("type") == "custom" and isinstance(tc.get("custom"), dict):
            c = tc["custom"]
            text = str(c.get("input", ""))
            parts.append(ir.ToolCallPart(tc["id"], str(c.get("name", "")), text, text, at, kind="custom"))
        else:
            raise TranslationError(f"tool call type {tc.get('type')!r} cannot be translated", at)
    if not any(isinstance(p, ir.TextPart | ir.RefusalPart | ir.ToolCallPart) for p in parts):
        raise TranslationError(
            "the Chat message has no text, refusal or tool call to translate", "choices[0].message"
        )
    finish = choice.get("finish_reason")
    stop = stop_reasons.from_chat(
        finish if isinstance(finish, str) else None,
        has_refusal=any(isinstance(p, ir.RefusalPart) for p in parts),
    )
    created = body.get("created")
    return ir.ResponseIR(
        id=str(body.get("id") or "chatcmpl-proxai"),
        model=str(body.get("model") or ""),
        parts=parts,
        stop=stop,
        usage=openai_usage(body.get("usage"), "prompt_tokens", "completion_tokens"),
        created=created if isinstance(created, int) else None,
    )
