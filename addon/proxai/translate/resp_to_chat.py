"""Render a neutral ``ResponseIR`` as a non-streamed Chat ``chat.completion`` (docs/translation.md,
"JSON responses").

One choice. Text -> ``message.content``; refusal text -> ``message.refusal`` (finish reason
``stop``, as OpenAI sends it); tool calls -> ``tool_calls`` with the argument JSON text.
Thinking text -> ``message.reasoning_content`` (the field DeepSeek, vLLM and xAI use, as the
stream translator writes it); Chat has no slot for a signature or for redacted thinking: those
are dropped and counted in ``dropped`` with the stream translator's keys (the mitm layer puts the
counts in the metadata). Usage: ``prompt_tokens``
includes cached tokens; a cache write goes into
``prompt_tokens_details.cache_write_tokens`` (OpenRouter's convention) so it is not lost.
"""

from __future__ import annotations

from typing import Any

from proxai.stream import stop_reasons
from proxai.translate import ir


def render_response(resp: ir.ResponseIR, created: int) -> dict[str, Any]:
    text: list[str] = []
    refusal: list[str] = []
    calls: list[dict[str, Any]] = []
    reasoning: list[str] = []
    for p in resp.parts:
        match p:
            case ir.TextPart():
                text.append(p.text)
            case ir.RefusalPart():
                refusal.append(p.text)
            case ir.ToolCallPart():
                if p.kind == "custom":
                    calls.append(
                        {"id": p.id, "type": "custom", "custom": {"name": p.name, "input": p.arguments}}
                    )
                else:
                    calls.append(
                        {
                            "id": p.id,
                            "type": "function",
                            "function": {"name": p.name, "arguments": p.arguments},
                        }
                    )
            case ir.ThinkingPart():
                reasoning.append(p.text)
                if p.signature:
                    dropped = resp.dropped
                    dropped["signature_chars"] = dropped.get("signature_chars", 0) + len(p.signature)
            case ir.RedactedThinkingPart():
                ir.count_dropped(resp.dropped, p)
            case _:
                pass
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(text) if text or not (calls or refusal) else None,
        "refusal": "".join(refusal) if refusal else None,
    }
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    finish = stop_reasons.to_chat(resp.stop, has_refusal=bool(refusal))
    body: dict[str, Any] = {
        "id": resp.id,
        "object": "chat.completion",
        "created": resp.created if resp.created is not None else created,
        "model": resp.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
    }
    if resp.usage is not None:
        body["usage"] = usage_json(resp.usage)
    return body


def usage_json(u: ir.UsageIR) -> dict[str, Any]:
    prompt: dict[str, Any] = {"cached_tokens": u.cache_read}
    if u.cache_write:
        prompt["cache_write_tokens"] = u.cache_write
    out: dict[str, Any] = {
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
        "prompt_tokens_details": prompt,
    }
    if u.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": u.reasoning_tokens}
    return out
