"""Parse an OpenAI Responses request body into the neutral ``RequestIR`` (docs/translation.md,
"Requests").

``instructions`` plus ``system``/``developer`` input messages are the instructions;
``function_call`` items are assistant tool calls (argument JSON parsed strictly);
``function_call_output`` items are user-side tool results; ``reasoning`` items become thinking
(text + ``encrypted_content`` as the signature) or redacted thinking (``encrypted_content``
alone), the inverse of what the Responses renderer of Anthropic thinking produces. The
client-executed ``tool_search`` is a function (its ``tool_search_call`` / ``tool_search_output``
items a call and its result), a ``namespace`` offers its tools under flat names, and a hosted
tool the target cannot run is left out with a note (docs/translation.md, "What the agent CLIs
send"). Rejected: server state the target does not have (``previous_response_id``,
``conversation``, ``item_reference``, stored prompts, background mode).
"""

from __future__ import annotations

from typing import Any, Literal

from proxai.core.errors import TranslationError
from proxai.translate import ir
from proxai.translate.checks import (
    Loose,
    Reading,
    dump_arguments,
    parse_arguments,
    split_data_url,
    tool_choice_mode,
    validate,
)


class _Item(Loose):
    type: str | None = None
    role: str | None = None


class _MessageItem(Loose):
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[dict[str, Any]]


class _Part(Loose):
    type: str


class _InputText(Loose):
    type: str
    text: str


class _InputImage(Loose):
    type: Literal["input_image"]
    image_url: str | None = None
    file_id: str | None = None


class _InputFile(Loose):
    type: Literal["input_file"]
    file_data: str | None = None
    file_id: str | None = None
    file_url: str | None = None
    filename: str | None = None


class _Refusal(Loose):
    type: Literal["refusal"]
    refusal: str


class _FunctionCall(Loose):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str
    namespace: str | None = None


class _SearchCall(Loose):
    type: Literal["tool_search_call"]
    call_id: str | None = None
    id: str | None = None
    arguments: Any = None


class _SearchOutput(Loose):
    type: Literal["tool_search_output"]
    call_id: str | None = None
    id: str | None = None
    tools: list[dict[str, Any]] = []


class _CustomCall(Loose):
    type: Literal["custom_tool_call"]
    call_id: str
    name: str
    input: str


class _CallOutput(Loose):
    type: Literal["function_call_output", "custom_tool_call_output"]
    call_id: str
    output: str | list[dict[str, Any]]


class _Reasoning(Loose):
    type: Literal["reasoning"]
    summary: list[dict[str, Any]] = []
    content: list[dict[str, Any]] | None = None
    encrypted_content: str | None = None


class _Tool(Loose):
    type: str
    name: str | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None
    format: dict[str, Any] | None = None
    execution: str | None = None
    tools: list[dict[str, Any]] | None = None  # a namespace's tools


class _Request(Loose):
    model: str | None = None
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stream: bool | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    reasoning: dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    user: str | None = None


_HANDLED = frozenset(
    {
        "model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "stream", "tools",
        "tool_choice", "parallel_tool_calls", "reasoning", "text", "user",
    }
)  # fmt: skip
_REJECT_IF_SET = {
    "previous_response_id": "previous_response_id needs server-side state the target does not have",
    "conversation": "conversation needs server-side state the target does not have",
    "prompt": "stored prompts exist only in the Responses API",
    "max_tool_calls": "max_tool_calls has no equivalent in the target API",
    "top_logprobs": "logprobs cannot be translated",
}
#: The client-executed tool search (Codex): a function the client runs; its calls and outputs
#: in the history are ``tool_search_call`` / ``tool_search_output`` items.
TOOL_SEARCH = "tool_search"
_SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "number"}},
    "required": ["query"],
}


def parse_request(body: object, rd: Reading) -> ir.RequestIR:
    req = rd.body(_Request, body)
    extras = req.model_extra or {}
    for key, why in _REJECT_IF_SET.items():
        if extras.get(key) not in (None, [], {}):
            rd.refuse(TranslationError(why, key))
    if extras.get("background") is True:
        rd.refuse(TranslationError("background mode exists only in the Responses API", "background"))

    system: list[ir.TextPart] = []
    if req.instructions:
        system.append(ir.TextPart(req.instructions, "instructions"))
    left_out: list[ir.LeftOut] = []
    tools: list[ir.ToolDef] = []
    search: ir.WebSearch | None = None
    for i, raw_tool in enumerate(req.tools or []):
        kind = raw_tool.get("type")
        if search is None and isinstance(kind, str) and kind in WEB_SEARCH_TYPES:
            search = _web_search(raw_tool, f"tools[{i}]")
            continue
        tools.extend(rd.attempt([], _tool, raw_tool, f"tools[{i}]", left_out))
    messages: list[ir.Message] = []
    history_notes: list[str] = []
    if isinstance(req.input, str):
        messages.append(ir.Message("user", (ir.TextPart(req.input, "input"),), "input"))
    else:
        for i, raw in enumerate(req.input):
            if raw.get("type") == "web_search_call":  # the search ran; its cited text stays
                history_notes.append(
                    f"input[{i}]: web_search_call of an earlier turn left out (a web search)"
                )
                continue
            at = f"input[{i}]"
            msg = rd.message(raw, at, _item, raw, at, system, tools)
            if msg is not None:
                messages.append(msg)
    ignored = {k for k in extras if k not in _HANDLED and k not in _REJECT_IF_SET}
    if req.text is not None and req.text.get("verbosity") is not None:
        ignored.add("text.verbosity")

    reasoning = None
    if req.reasoning is not None:
        effort = req.reasoning.get("effort")
        summary = req.reasoning.get("summary")
        reasoning = ir.Reasoning(
            "reasoning",
            enabled=effort != "none",
            effort=effort if isinstance(effort, str) else None,
            summary=summary if isinstance(summary, str) else None,
        )

    return ir.RequestIR(
        model=req.model,
        messages=tuple(messages),
        system=tuple(system),
        tools=tuple(tools),
        tool_choice=rd.attempt(None, _tool_choice, req.tool_choice),
        parallel_tool_calls=req.parallel_tool_calls,
        max_tokens=req.max_output_tokens,
        max_tokens_at="max_output_tokens",
        temperature=req.temperature,
        top_p=req.top_p,
        stream=bool(req.stream),
        reasoning=reasoning,
        user=req.user,
        json_schema=rd.attempt(None, _text_format, req.text),
        json_object=_json_object(req.text),
        json_schema_at="text.format",
        ignored=tuple(sorted(ignored)),
        left_out=tuple(left_out),
        web_search=search,
        history_notes=tuple(history_notes),
        refused=tuple(rd.refused),
    )


def _item(
    raw: dict[str, Any],
    at: str,
    system: list[ir.TextPart],
    tools: list[ir.ToolDef],
) -> ir.Message | None:
    """The turn an input item is; instructions are collected in ``system`` instead, and the tools a
    tool search found are added to ``tools``."""
    item = validate(_Item, raw, at)
    kind = item.type or ("message" if item.role else None)
    if kind == "message":
        m = validate(_MessageItem, raw, at)
        if m.role in ("system", "developer"):
            system.extend(_texts(m.content, at))
            return None
        if m.role == "user":
            return ir.Message("user", _user_parts(m.content, at), at)
        return ir.Message("assistant", _assistant_parts(m.content, at), at)
    if kind == "function_call":
        fc = validate(_FunctionCall, raw, at)
        args = parse_arguments(fc.arguments, f"{at}.arguments")
        name = flat_name(fc.namespace, fc.name) if fc.namespace else fc.name
        return ir.Message("assistant", (ir.ToolCallPart(fc.call_id, name, fc.arguments, args, at),), at)
    if kind == "tool_search_call":
        sc = validate(_SearchCall, raw, at)
        sargs = sc.arguments if isinstance(sc.arguments, dict) else {}
        call = ir.ToolCallPart(_call_id(sc.call_id, sc.id, at), TOOL_SEARCH, dump_arguments(sargs), sargs, at)
        return ir.Message("assistant", (call,), at)
    if kind == "tool_search_output":
        so = validate(_SearchOutput, raw, at)
        found = ir.TextPart(dump_arguments(so.tools), f"{at}.tools")
        result = ir.Message("user", (ir.ToolResultPart(_call_id(so.call_id, so.id, at), (found,), at),), at)
        known = {t.name for t in tools}
        for j, raw_tool in enumerate(so.tools):  # the tools a search found are offered from now on
            for t in _tool(raw_tool, f"{at}.tools[{j}]", []):
                if t.name not in known:
                    known.add(t.name)
                    tools.append(t)
        return result
    if kind == "custom_tool_call":
        cc = validate(_CustomCall, raw, at)
        call = ir.ToolCallPart(cc.call_id, cc.name, cc.input, cc.input, at, kind="custom")
        return ir.Message("assistant", (call,), at)
    if kind in ("function_call_output", "custom_tool_call_output"):
        out = validate(_CallOutput, raw, at)
        content: tuple[ir.ResultContent, ...]
        if isinstance(out.output, str):
            content = (ir.TextPart(out.output, f"{at}.output"),)
        else:
            content = tuple(_user_part(p, f"{at}.output[{j}]") for j, p in enumerate(out.output))
        return ir.Message("user", (ir.ToolResultPart(out.call_id, content, at),), at)
    if kind == "reasoning":
        r = validate(_Reasoning, raw, at)
        texts = [p.get("text") for p in (r.content or []) if isinstance(p.get("text"), str)]
        if not texts:
            texts = [p.get("text") for p in r.summary if isinstance(p.get("text"), str)]
        part: ir.Part
        if texts:
            part = ir.ThinkingPart("".join(str(t) for t in texts), r.encrypted_content, at)
        elif r.encrypted_content:
            part = ir.RedactedThinkingPart(r.encrypted_content, at)
        else:
            return None  # an empty reasoning item says nothing
        return ir.Message("assistant", (part,), at)
    raise TranslationError(f"input item type {kind!r} cannot be translated", f"{at}.type")


def _texts(content: str | list[dict[str, Any]], at: str) -> list[ir.TextPart]:
    if isinstance(content, str):
        return [ir.TextPart(content, f"{at}.content")] if content else []
    out = []
    for j, raw in enumerate(content):
        pat = f"{at}.content[{j}]"
        p = validate(_InputText, raw, pat)
        if p.type not in ("input_text", "output_text", "text"):
            raise TranslationError(f"instruction part {p.type!r} cannot be translated", f"{pat}.type")
        out.append(ir.TextPart(p.text, pat))
    return out


def _user_parts(content: str | list[dict[str, Any]], at: str) -> tuple[ir.Part, ...]:
    if isinstance(content, str):
        return (ir.TextPart(content, f"{at}.content"),)
    return tuple(_user_part(raw, f"{at}.content[{j}]") for j, raw in enumerate(content))


def _user_part(raw: dict[str, Any], at: str) -> ir.TextPart | ir.ImagePart | ir.DocumentPart:
    kind = validate(_Part, raw, at).type
    if kind in ("input_text", "text", "output_text"):
        return ir.TextPart(validate(_InputText, raw, at).text, at)
    if kind == "input_image":
        img = validate(_InputImage, raw, at)
        if img.image_url and img.image_url.startswith("data:"):
            media, data = split_data_url(img.image_url, f"{at}.image_url")
            return ir.ImagePart(at, media_type=media, data=data)
        if img.image_url:
            return ir.ImagePart(at, url=img.image_url)
        if img.file_id:
            return ir.ImagePart(at, file_id=img.file_id, file_provider="openai")
        raise TranslationError("an input_image needs image_url or file_id", at)
    if kind == "input_file":
        f = validate(_InputFile, raw, at)
        if f.file_data:
            if f.file_data.startswith("data:"):
                media, data = split_data_url(f.file_data, f"{at}.file_data")
            else:
                media, data = "application/pdf", f.file_data
            return ir.DocumentPart(at, media_type=media, data=data, filename=f.filename)
        if f.file_url:
            return ir.DocumentPart(at, url=f.file_url, filename=f.filename)
        if f.file_id:
            return ir.DocumentPart(at, file_id=f.file_id, file_provider="openai", filename=f.filename)
        raise TranslationError("an input_file needs file_data, file_url or file_id", at)
    raise TranslationError(f"content part {kind!r} cannot be translated", f"{at}.type")


def _assistant_parts(content: str | list[dict[str, Any]], at: str) -> tuple[ir.Part, ...]:
    if isinstance(content, str):
        return (ir.TextPart(content, f"{at}.content"),) if content else ()
    parts: list[ir.Part] = []
    for j, raw in enumerate(content):
        pat = f"{at}.content[{j}]"
        kind = validate(_Part, raw, pat).type
        if kind in ("output_text", "input_text", "text"):
            parts.append(ir.TextPart(validate(_InputText, raw, pat).text, pat))
        elif kind == "refusal":
            parts.append(ir.RefusalPart(validate(_Refusal, raw, pat).refusal, pat))
        else:
            raise TranslationError(f"assistant content part {kind!r} cannot be translated", f"{pat}.type")
    return tuple(parts)


def _call_id(call_id: str | None, item_id: str | None, at: str) -> str:
    if call_id:
        return call_id
    if item_id:
        return item_id
    raise TranslationError("a tool search item needs a call_id", f"{at}.call_id")


def flat_name(namespace: str, name: str) -> str:
    """A namespaced tool's name for targets without namespaces (``mcp__docs__`` + ``search``)."""
    return f"{namespace}{name}" if namespace.endswith("__") else f"{namespace}__{name}"


def _tool(
    raw: dict[str, Any], at: str, left_out: list[ir.LeftOut], namespace: str | None = None
) -> list[ir.ToolDef]:
    """The tools one declaration offers: a function, a freeform (custom) tool, the client's
    tool search (a function it runs), or a namespace's tools under flat names. A hosted tool
    the target cannot run (``web_search``, ``file_search``, ...) is left out, with a note."""
    t = validate(_Tool, raw, at)
    name = flat_name(namespace, t.name) if namespace and t.name else t.name
    if t.type == "function" and name:
        back = ir.CallShape("function_call", t.name or name, namespace) if namespace else None
        return [ir.ToolDef(name, at, t.description, t.parameters, t.strict, call_back=back)]
    if t.type == "custom" and name:
        back = ir.CallShape("custom_tool_call", t.name or name, namespace)
        return [ir.ToolDef(name, at, t.description, kind="custom", format=t.format, call_back=back)]
    if t.type == TOOL_SEARCH and t.execution == "client":
        back = ir.CallShape("tool_search_call", TOOL_SEARCH)
        return [
            ir.ToolDef(TOOL_SEARCH, at, t.description, t.parameters or _SEARCH_PARAMETERS, call_back=back)
        ]
    if t.type == "namespace" and t.name and namespace is None:
        return [
            d
            for j, inner in enumerate(t.tools or [])
            for d in _tool(inner, f"{at}.tools[{j}]", left_out, t.name)
        ]
    left_out.append(ir.LeftOut(at, f"hosted tool {t.type!r}", "the target cannot run it"))
    return []


#: The Responses web search tool's types (the preview and dated names are the same search).
WEB_SEARCH_TYPES = frozenset(
    {"web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11"}
)


def _web_search(raw: dict[str, Any], at: str) -> ir.WebSearch:
    filters = raw.get("filters")
    domains = filters.get("allowed_domains") if isinstance(filters, dict) else None
    location = raw.get("user_location")
    size = raw.get("search_context_size")
    return ir.WebSearch(
        at,
        allowed_domains=tuple(d for d in domains if isinstance(d, str)) if isinstance(domains, list) else (),
        user_location=location if isinstance(location, dict) else None,
        context_size=size if isinstance(size, str) else None,
    )


def _tool_choice(raw: str | dict[str, Any] | None) -> ir.ToolChoice | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        return tool_choice_mode(raw)
    kind = raw.get("type")
    name = raw.get("name")
    if kind in ("function", "custom") and isinstance(name, str):
        return ir.ToolChoice("tool", "tool_choice", name, kind="custom" if kind == "custom" else "function")
    raise TranslationError(f"tool_choice type {kind!r} cannot be translated", "tool_choice.type")


def _text_format(raw: dict[str, Any] | None) -> dict[str, object] | None:
    if raw is None:
        return None
    fmt = raw.get("format")
    if fmt is None or (isinstance(fmt, dict) and fmt.get("type") in ("text", "json_object")):
        return None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return {k: v for k, v in fmt.items() if k in ("name", "schema", "strict", "description")}
    kind = fmt.get("type") if isinstance(fmt, dict) else fmt
    raise TranslationError(f"text format {kind!r} cannot be translated", "text.format.type")


def _json_object(raw: dict[str, Any] | None) -> bool:
    fmt = raw.get("format") if raw is not None else None
    return isinstance(fmt, dict) and fmt.get("type") == "json_object"
