"""Render a neutral ``RequestIR`` as an OpenAI Chat Completions request body (docs/translation.md,
"Requests").

- instructions -> one leading ``system`` message (parts joined by a blank line: local chat
  templates such as vLLM's and Ollama's accept a single system message most reliably);
- user-side tool results -> separate ``role: tool`` messages, placed before the rest of that
  user turn; ``is_error`` is dropped, the error text stays in the content (Chat tool messages have no status);
- assistant tool calls -> ``tool_calls[]`` with compact argument JSON;
- ``system`` turns between other turns -> ``role: system`` messages at their position;
- freeform (custom) tools -> function tools with one string argument (``input``), their
  calls -> function calls with ``{"input": text}`` (vLLM, Ollama, llama.cpp and most Chat
  servers know function tools only);
- thinking has no slot in Chat: it is dropped and counted (``dropped["thinking_blocks"]``, ...);
- ``stream: true`` always asks for ``stream_options.include_usage`` so usage is never lost;
- rejected: images or documents inside tool results (Chat tool messages carry text only),
  Anthropic file ids, documents by URL.
"""

from __future__ import annotations

from typing import Any

from proxai.core.errors import TranslationError
from proxai.translate import ir
from proxai.translate.checks import data_url, dump_arguments
from proxai.translate.reasoning import budget_to_effort


def render_request(req: ir.RequestIR, opts: ir.RequestOptions, dropped: dict[str, int]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    model = opts.model if opts.model is not None else req.model
    if model is not None:
        body["model"] = model
    messages: list[dict[str, Any]] = []
    system = [p.text for p in req.system if p.text]
    if system:
        messages.append({"role": "system", "content": "\n\n".join(system)})
    messages.extend(_messages(req.messages, dropped))
    body["messages"] = messages
    if req.max_tokens is not None:
        body[opts.chat_max_tokens_field] = req.max_tokens
    if req.temperature is not None:
        body["temperature"] = req.temperature
    if req.top_p is not None:
        body["top_p"] = req.top_p
    if req.stop:
        body["stop"] = list(req.stop)
    if req.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if req.tools:
        body["tools"] = [_tool(t) for t in req.tools]
    if req.tool_choice is not None:
        body["tool_choice"] = _tool_choice(req.tool_choice)
    if req.parallel_tool_calls is not None and req.tools:
        body["parallel_tool_calls"] = req.parallel_tool_calls
    if req.reasoning is not None and req.reasoning.enabled:
        r = req.reasoning
        body["reasoning_effort"] = r.effort if r.effort is not None else budget_to_effort(r.budget)
    if req.json_schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": req.json_schema}
    elif req.json_object:
        body["response_format"] = {"type": "json_object"}
    if req.user:
        body["user"] = req.user
    return body


def _messages(messages: tuple[ir.Message, ...], dropped: dict[str, int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: dict[str, Any] | None = None  # the assistant message being assembled
    for m in messages:
        if m.role == "system":
            pending = None
            out.append(
                {
                    "role": "system",
                    "content": "\n\n".join(p.text for p in m.parts if isinstance(p, ir.TextPart)),
                }
            )
            continue
        if m.role == "assistant":
            if pending is None:
                pending = {"role": "assistant", "content": None}
                out.append(pending)
            _assistant(pending, m.parts, dropped)
            continue
        pending = None
        rest: list[ir.Part] = []
        for p in m.parts:
            if isinstance(p, ir.ToolResultPart):
                out.append({"role": "tool", "tool_call_id": p.call_id, "content": _result_content(p)})
            else:
                rest.append(p)
        if rest:
            out.append({"role": "user", "content": _user_content(rest)})
    for msg in out:
        if msg["role"] == "assistant" and msg["content"] is None and not msg.get("tool_calls"):
            msg["content"] = ""
    return out


def _assistant(msg: dict[str, Any], parts: tuple[ir.Part, ...], dropped: dict[str, int]) -> None:
    for p in parts:
        match p:
            case ir.TextPart():
                msg["content"] = (msg["content"] or "") + p.text
            case ir.RefusalPart():
                msg["refusal"] = (msg.get("refusal") or "") + p.text
            case ir.ToolCallPart():
                arguments = (
                    dump_arguments({ir.FREEFORM_ARGUMENT: p.arguments}) if p.kind == "custom" else p.arguments
                )
                call = {"id": p.id, "type": "function", "function": {"name": p.name, "arguments": arguments}}
                msg.setdefault("tool_calls", []).append(call)
            case ir.ThinkingPart() | ir.RedactedThinkingPart():
                ir.count_dropped(dropped, p)
            case _:
                raise TranslationError("Chat assistant messages carry text and tool calls only", p.at)


def _result_content(p: ir.ToolResultPart) -> str | list[dict[str, Any]]:
    texts: list[str] = []
    for c in p.content:
        if not isinstance(c, ir.TextPart):
            raise TranslationError(
                "a Chat tool message carries text only; this tool result holds media", c.at
            )
        texts.append(c.text)
    if len(texts) <= 1:
        return texts[0] if texts else ""
    return [{"type": "text", "text": t} for t in texts]


def _user_content(parts: list[ir.Part]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and isinstance(parts[0], ir.TextPart):
        return parts[0].text
    return [_user_part(p) for p in parts]


def _user_part(p: ir.Part) -> dict[str, Any]:
    match p:
        case ir.TextPart():
            return {"type": "text", "text": p.text}
        case ir.ImagePart():
            if p.file_id is not None:
                raise TranslationError("Chat images take a URL or data URL, not a file id", p.at)
            if p.data is not None and p.media_type:
                return {"type": "image_url", "image_url": {"url": data_url(p.media_type, p.data)}}
            if p.url:
                return {"type": "image_url", "image_url": {"url": p.url}}
            raise TranslationError("an image needs a URL or base64 data", p.at)
        case ir.DocumentPart():
            if p.text is not None:
                return {"type": "text", "text": p.text}
            if p.file_id is not None:
                if p.file_provider != "openai":
                    raise TranslationError("an Anthropic file id cannot be used with OpenAI", p.at)
                return {"type": "file", "file": {"file_id": p.file_id}}
            if p.data is not None and p.media_type:
                return {
                    "type": "file",
                    "file": {
                        "file_data": data_url(p.media_type, p.data),
                        "filename": p.filename or "document.pdf",
                    },
                }
            raise TranslationError("Chat Completions cannot fetch a document by URL", p.at)
        case _:
            raise TranslationError("this part cannot appear in a Chat user message", p.at)


def _tool(t: ir.ToolDef) -> dict[str, Any]:
    if t.kind == "custom":
        parameters = ir.freeform_parameters()
        return {
            "type": "function",
            "function": {"name": t.name, "description": ir.freeform_description(t), "parameters": parameters},
        }
    fn: dict[str, Any] = {"name": t.name}
    if t.description:
        fn["description"] = t.description
    fn["parameters"] = t.parameters if t.parameters is not None else {"type": "object", "properties": {}}
    if t.strict is not None:
        fn["strict"] = t.strict
    return {"type": "function", "function": fn}


def _tool_choice(tc: ir.ToolChoice) -> str | dict[str, Any]:
    if tc.mode != "tool":
        return tc.mode
    return {"type": "function", "function": {"name": tc.name}}
