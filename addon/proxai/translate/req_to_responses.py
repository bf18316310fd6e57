"""Render a neutral ``RequestIR`` as an OpenAI Responses request body (docs/translation.md, "Requests").

- instructions -> ``instructions`` for one part; several parts -> one leading ``system``
  input message with one ``input_text`` per part (boundaries kept);
- user-side tool results -> ``function_call_output`` items (``custom_tool_call_output`` for
  custom calls) placed before the rest of that user turn; ``is_error`` is dropped, the status
  is never set to ``incomplete`` (that means truncated, not failed);
- ``system`` turns between other turns -> ``role: system`` message items at their position;
- assistant text/refusal -> an assistant message item; tool calls -> sibling
  ``function_call`` items, in their original order;
- thinking from another provider cannot be verified by OpenAI: dropped and counted;
- function tools get ``strict: false`` unless the client said otherwise (Responses defaults
  to strict, which would reject ordinary JSON schemas);
- rejected: stop sequences (the Responses API has none), Anthropic file ids.
"""

from __future__ import annotations

from typing import Any

from proxai.core.errors import TranslationError
from proxai.translate import ir
from proxai.translate.checks import data_url
from proxai.translate.reasoning import budget_to_effort


def render_request(req: ir.RequestIR, opts: ir.RequestOptions, dropped: dict[str, int]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    model = opts.model if opts.model is not None else req.model
    if model is not None:
        body["model"] = model
    items: list[dict[str, Any]] = []
    system = [p for p in req.system if p.text]
    if len(system) == 1:
        body["instructions"] = system[0].text
    elif system:
        items.append({"role": "system", "content": [{"type": "input_text", "text": p.text} for p in system]})
    custom_calls = {
        p.id for m in req.messages for p in m.parts if isinstance(p, ir.ToolCallPart) and p.kind == "custom"
    }
    for m in req.messages:
        items.extend(_items(m, custom_calls, dropped))
    body["input"] = items
    if req.max_tokens is not None:
        body["max_output_tokens"] = req.max_tokens
    if req.temperature is not None:
        body["temperature"] = req.temperature
    if req.top_p is not None:
        body["top_p"] = req.top_p
    if req.stop:
        raise TranslationError("the Responses API has no stop sequences", req.stop_at)
    if req.stream:
        body["stream"] = True
    if req.tools or req.web_search is not None:
        body["tools"] = [_tool(t) for t in req.tools] + _web_search(req.web_search)
    if req.tool_choice is not None:
        body["tool_choice"] = _tool_choice(req.tool_choice)
    if req.parallel_tool_calls is not None and req.tools:
        body["parallel_tool_calls"] = req.parallel_tool_calls
    if req.reasoning is not None and req.reasoning.enabled:
        r = req.reasoning
        reasoning: dict[str, Any] = {
            "effort": r.effort if r.effort is not None else budget_to_effort(r.budget)
        }
        if r.summary is not None:
            reasoning["summary"] = r.summary
        body["reasoning"] = reasoning
    if req.json_schema is not None:
        body["text"] = {"format": {"type": "json_schema", **req.json_schema}}
    elif req.json_object:
        body["text"] = {"format": {"type": "json_object"}}
    if req.user:
        body["user"] = req.user
    return body


def _items(m: ir.Message, custom_calls: set[str], dropped: dict[str, int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if m.role == "system":
        texts = [{"type": "input_text", "text": p.text} for p in m.parts if isinstance(p, ir.TextPart)]
        return [{"role": "system", "content": texts}]
    if m.role == "user":
        rest: list[dict[str, Any]] = []
        for p in m.parts:
            if isinstance(p, ir.ToolResultPart):
                kind = "custom_tool_call_output" if p.call_id in custom_calls else "function_call_output"
                out.append({"type": kind, "call_id": p.call_id, "output": _output(p)})
            else:
                rest.append(_input_part(p))
        if rest:
            out.append({"role": "user", "content": rest})
        return out
    content: list[dict[str, Any]] = []

    def flush() -> None:
        if content:
            out.append({"role": "assistant", "content": list(content)})
            content.clear()

    for p in m.parts:
        match p:
            case ir.TextPart():
                content.append({"type": "output_text", "text": p.text})
            case ir.RefusalPart():
                content.append({"type": "refusal", "refusal": p.text})
            case ir.ToolCallPart():
                flush()
                if p.kind == "custom":
                    out.append(
                        {"type": "custom_tool_call", "call_id": p.id, "name": p.name, "input": p.arguments}
                    )
                else:
                    out.append(
                        {"type": "function_call", "call_id": p.id, "name": p.name, "arguments": p.arguments}
                    )
            case ir.ThinkingPart() | ir.RedactedThinkingPart():
                ir.count_dropped(dropped, p)
            case _:
                raise TranslationError("assistant turns carry text, refusals and tool calls only", p.at)
    flush()
    return out


def _output(p: ir.ToolResultPart) -> str | list[dict[str, Any]]:
    if all(isinstance(c, ir.TextPart) for c in p.content) and len(p.content) <= 1:
        first = p.content[0] if p.content else None
        return first.text if isinstance(first, ir.TextPart) else ""
    return [_input_part(c) for c in p.content]


def _input_part(p: ir.Part) -> dict[str, Any]:
    match p:
        case ir.TextPart():
            return {"type": "input_text", "text": p.text}
        case ir.ImagePart():
            if p.file_id is not None:
                if p.file_provider != "openai":
                    raise TranslationError("an Anthropic file id cannot be used with OpenAI", p.at)
                return {"type": "input_image", "file_id": p.file_id, "detail": "auto"}
            if p.data is not None and p.media_type:
                return {"type": "input_image", "image_url": data_url(p.media_type, p.data), "detail": "auto"}
            if p.url:
                return {"type": "input_image", "image_url": p.url, "detail": "auto"}
            raise TranslationError("an image needs a URL or base64 data", p.at)
        case ir.DocumentPart():
            if p.text is not None:
                return {"type": "input_text", "text": p.text}
            if p.file_id is not None:
                if p.file_provider != "openai":
                    raise TranslationError("an Anthropic file id cannot be used with OpenAI", p.at)
                return {"type": "input_file", "file_id": p.file_id}
            if p.data is not None and p.media_type:
                return {
                    "type": "input_file",
                    "file_data": data_url(p.media_type, p.data),
                    "filename": p.filename or "document.pdf",
                }
            if p.url:
                return {"type": "input_file", "file_url": p.url}
            raise TranslationError("a document needs data, a URL or a file id", p.at)
        case _:
            raise TranslationError("this part cannot appear in a Responses user message", p.at)


def _tool(t: ir.ToolDef) -> dict[str, Any]:
    out: dict[str, Any] = {"type": t.kind, "name": t.name}
    if t.description:
        out["description"] = t.description
    if t.kind == "custom":
        if t.format is not None:
            out["format"] = t.format
        return out
    out["parameters"] = t.parameters if t.parameters is not None else {"type": "object", "properties": {}}
    out["strict"] = bool(t.strict)
    return out


def _web_search(ws: ir.WebSearch | None) -> list[dict[str, Any]]:
    """The client's web search as Responses' ``web_search`` tool."""
    if ws is None:
        return []
    out: dict[str, Any] = {"type": "web_search"}
    if ws.allowed_domains:
        out["filters"] = {"allowed_domains": list(ws.allowed_domains)}
    if ws.user_location is not None:
        out["user_location"] = ws.user_location
    if ws.context_size is not None:
        out["search_context_size"] = ws.context_size
    return [out]


def _tool_choice(tc: ir.ToolChoice) -> str | dict[str, Any]:
    if tc.mode != "tool":
        return tc.mode
    return {"type": tc.kind, "name": tc.name}
