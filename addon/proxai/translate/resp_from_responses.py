"""Parse a non-streamed Responses response into the neutral ``ResponseIR`` (docs/translation.md,
"JSON responses").

``output[]`` items flatten into parts: message items give text and refusal parts, reasoning
items give thinking (text + ``encrypted_content`` as signature) or redacted thinking
(``encrypted_content`` alone), function calls and the client's custom tool calls give tool
calls. The stop class comes from ``status`` / ``incomplete_details`` (``stop_reasons``). Items of
hosted tools, which the other APIs cannot express, are left out and counted (``left_out``), a
``custom_tool_call`` of a tool the client did not declare among them; a response that ends on such
a call with no message content after it is refused (docs/design/translation.md, "xAI's
custom_tool_call": the rule the streaming grammar applies too, ``responses_items.hosted_call``).
"""

from __future__ import annotations

from typing import Any

from proxai.core.errors import TranslationError, UpstreamProtocolError
from proxai.protocols.responses_items import hosted_call, unanswered_hosted
from proxai.stream import stop_reasons
from proxai.translate import ir
from proxai.translate.checks import arguments_object, openai_usage


def parse_response(body: dict[str, Any], custom_tools: frozenset[str] = frozenset()) -> ir.ResponseIR:
    """``custom_tools``: the custom tools the client's request declared (its calls are the client's)."""
    output = body.get("output")
    if not isinstance(output, list):
        raise UpstreamProtocolError("a Responses response without an output list")
    parts: list[ir.Part] = []
    left_out: dict[str, int] = {}
    unanswered = False  # a hosted custom_tool_call came, and no message content after it
    for i, item in enumerate(output):
        at = f"output[{i}]"
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            unanswered = unanswered and not item.get("content")
            for j, c in enumerate(item.get("content") or []):
                cat = f"{at}.content[{j}]"
                ctype = c.get("type") if isinstance(c, dict) else None
                if ctype == "output_text" and isinstance(c.get("text"), str):
                    parts.append(ir.TextPart(c["text"], cat))
                elif ctype == "refusal" and isinstance(c.get("refusal"), str):
                    parts.append(ir.RefusalPart(c["refusal"], cat))
                else:
                    raise TranslationError(f"message content {ctype!r} cannot be translated", cat)
        elif kind == "reasoning":
            texts = [c.get("text") for c in item.get("content") or [] if isinstance(c, dict)]
            if not any(isinstance(t, str) for t in texts):
                texts = [c.get("text") for c in item.get("summary") or [] if isinstance(c, dict)]
            text = "".join(t for t in texts if isinstance(t, str))
            enc = item.get("encrypted_content")
            if text:
                parts.append(ir.ThinkingPart(text, enc if isinstance(enc, str) else None, at))
            elif isinstance(enc, str) and enc:
                parts.append(ir.RedactedThinkingPart(enc, at))
        elif kind == "function_call":
            args = item.get("arguments")
            if not isinstance(item.get("call_id"), str) or not isinstance(item.get("name"), str):
                raise UpstreamProtocolError(f"malformed function_call at {at}")
            if not isinstance(args, str):
                raise UpstreamProtocolError(f"function_call arguments are not a string at {at}")
            parts.append(ir.ToolCallPart(item["call_id"], item["name"], args, arguments_object(args), at))
        elif kind == "custom_tool_call" and not hosted_call(kind, item.get("name"), custom_tools):
            text = str(item.get("input", ""))
            parts.append(
                ir.ToolCallPart(
                    str(item.get("call_id")), str(item.get("name")), text, text, at, kind="custom"
                )
            )
        elif isinstance(kind, str):
            # a hosted tool's item (web_search_call, code_interpreter_call, mcp_call, ...): the
            # client's protocol has no form for it; the rest of the answer is carried, this counted
            left_out[kind] = left_out.get(kind, 0) + 1
            unanswered = unanswered or kind == "custom_tool_call"
        else:
            raise UpstreamProtocolError(f"an output item without a type at {at}")
    if unanswered:
        raise unanswered_hosted()
    status = body.get("status")
    details = body.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    stop = stop_reasons.from_responses(
        status if isinstance(status, str) else None,
        reason if isinstance(reason, str) else None,
        has_tool_calls=any(isinstance(p, ir.ToolCallPart) for p in parts),
        has_refusal=any(isinstance(p, ir.RefusalPart) for p in parts),
    )
    created = body.get("created_at")
    return ir.ResponseIR(
        id=str(body.get("id") or "resp_proxai"),
        model=str(body.get("model") or ""),
        parts=parts,
        stop=stop,
        usage=openai_usage(body.get("usage"), "input_tokens", "output_tokens"),
        created=int(created) if isinstance(created, int | float) else None,
        left_out=left_out,
    )
