"""Parse an OpenAI Chat Completions request body into the neutral ``RequestIR`` (docs/translation.md,
"Requests").

Positions: ``system`` and ``developer`` messages (wherever they stand) are collected as the
instructions; ``assistant.tool_calls`` become tool-call parts with their argument JSON parsed
strictly (invalid JSON fails, never ``{}``); ``role: tool`` messages become user-side tool results.
Rejected (``TranslationError`` naming the field): ``role: function`` and the legacy ``functions`` /
``function_call`` fields (no ``tool_call_id`` to reference, and ids are never invented:
docs/translation.md, "What is rejected, and why"), ``n > 1`` (alternative choices), logprobs, audio,
and unsupported user content parts. Chat custom tools are kept as ``kind="custom"``: the Responses
renderer can express them, the Anthropic renderer rejects them.
"""

from __future__ import annotations

from typing import Any, Literal

from proxai.core.errors import TranslationError
from proxai.translate import ir
from proxai.translate.checks import (
    Loose,
    Reading,
    parse_arguments,
    split_data_url,
    tool_choice_mode,
    validate,
)


class _Message(Loose):
    role: str
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    refusal: str | None = None
    # an OpenAI-compatible server's reasoning, sent back in the history (vLLM, DeepSeek, OpenRouter)
    reasoning_content: Any = None
    reasoning: Any = None


class _Part(Loose):
    type: str


class _TextPart(Loose):
    type: Literal["text"]
    text: str


class _ImageUrl(Loose):
    url: str
    detail: str | None = None


class _ImagePart(Loose):
    type: Literal["image_url"]
    image_url: _ImageUrl


class _File(Loose):
    file_data: str | None = None
    file_id: str | None = None
    filename: str | None = None


class _FilePart(Loose):
    type: Literal["file"]
    file: _File


class _RefusalPart(Loose):
    type: Literal["refusal"]
    refusal: str


class _Function(Loose):
    name: str
    arguments: str


class _ToolCall(Loose):
    id: str
    type: str = "function"
    function: _Function | None = None
    custom: dict[str, Any] | None = None


class _Custom(Loose):
    name: str
    input: str


class _FunctionDef(Loose):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class _Tool(Loose):
    type: str
    function: _FunctionDef | None = None
    custom: dict[str, Any] | None = None


class _CustomDef(Loose):
    name: str
    description: str | None = None
    format: dict[str, Any] | None = None


class _Request(Loose):
    model: str | None = None
    messages: list[dict[str, Any]]
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: str | list[str] | None = None
    stream: bool | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None
    response_format: dict[str, Any] | None = None
    user: str | None = None
    n: int | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None


_HANDLED = frozenset(
    {
        "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop",
        "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls", "reasoning_effort",
        "response_format", "user", "n", "logprobs", "top_logprobs",
    }
)  # fmt: skip

# Fields whose non-default value changes what the model does and that no other API can carry.
_REJECT_IF_SET: dict[str, str] = {
    "functions": "legacy functions (use tools)",
    "function_call": "legacy function_call (use tool_choice)",
    "audio": "audio output",
    "prediction": "predicted outputs",
    "web_search_options": "Chat web search options",
    "logit_bias": "logit_bias",
    "seed": "seed",
}
_REJECT_IF_NONZERO = ("presence_penalty", "frequency_penalty")


def parse_request(body: object, rd: Reading) -> ir.RequestIR:
    req = rd.body(_Request, body)
    extras = req.model_extra or {}
    for key, what in _REJECT_IF_SET.items():
        if extras.get(key) not in (None, [], {}):
            rd.refuse(TranslationError(f"{what} cannot be translated to another API", key))
    for key in _REJECT_IF_NONZERO:
        if extras.get(key) not in (None, 0, 0.0):
            rd.refuse(TranslationError(f"{key} has no equivalent in the target API", key))
    modalities = extras.get("modalities")
    if isinstance(modalities, list) and any(m != "text" for m in modalities):
        rd.refuse(TranslationError("only text output can be translated", "modalities"))
    if req.n not in (None, 1):
        rd.refuse(TranslationError("n > 1 asks for alternative choices, which the target cannot return", "n"))
    if req.logprobs or req.top_logprobs:
        rd.refuse(
            TranslationError("logprobs cannot be translated", "logprobs" if req.logprobs else "top_logprobs")
        )

    system: list[ir.TextPart] = []
    messages: list[ir.Message] = []
    for i, raw in enumerate(req.messages):
        at = f"messages[{i}]"
        msg = rd.message(raw, at, _message, raw, at, system, rd)
        if msg is not None:
            messages.append(msg)

    stop: tuple[str, ...] = ()
    if isinstance(req.stop, str):
        stop = (req.stop,)
    elif req.stop:
        stop = tuple(req.stop)

    max_tokens, max_at = req.max_completion_tokens, "max_completion_tokens"
    if max_tokens is None:
        max_tokens, max_at = req.max_tokens, "max_tokens"

    reasoning = None
    if req.reasoning_effort is not None:
        reasoning = ir.Reasoning(
            "reasoning_effort", enabled=req.reasoning_effort != "none", effort=req.reasoning_effort
        )

    tools = tuple(
        d for i, t in enumerate(req.tools or []) if (d := rd.attempt(None, _tool, t, i)) is not None
    )
    return ir.RequestIR(
        model=req.model,
        messages=tuple(messages),
        system=tuple(system),
        tools=tools,
        tool_choice=rd.attempt(None, _tool_choice, req.tool_choice),
        parallel_tool_calls=req.parallel_tool_calls,
        max_tokens=max_tokens,
        max_tokens_at=max_at,
        temperature=req.temperature,
        top_p=req.top_p,
        stop=stop,
        stop_at="stop",
        stream=bool(req.stream),
        reasoning=reasoning,
        user=req.user,
        json_schema=rd.attempt(None, _response_format, req.response_format),
        json_object=req.response_format is not None and req.response_format.get("type") == "json_object",
        json_schema_at="response_format",
        ignored=tuple(sorted(k for k in extras if k not in _HANDLED and k not in _REJECT_IF_SET)),
        refused=tuple(rd.refused),
    )


def _message(raw: dict[str, Any], at: str, system: list[ir.TextPart], rd: Reading) -> ir.Message | None:
    """A turn; instructions are collected in ``system`` instead."""
    m = validate(_Message, raw, at)
    if m.role in ("system", "developer"):
        system.extend(_instruction_parts(m, at))
        return None
    if m.role == "user":
        return ir.Message("user", _user_parts(m, at, rd), at)
    if m.role == "assistant":
        return ir.Message("assistant", _assistant_parts(m, at, rd), at)
    if m.role == "tool":
        return ir.Message("user", (_tool_result(m, at),), at)
    if m.role == "function":
        raise TranslationError(
            "role 'function' (legacy function result) has no tool_call_id to reference; use role 'tool'",
            f"{at}.role",
        )
    raise TranslationError(f"unknown role {m.role!r}", f"{at}.role")


def _instruction_parts(m: _Message, at: str) -> list[ir.TextPart]:
    if m.content is None:
        return []
    if isinstance(m.content, str):
        return [ir.TextPart(m.content, f"{at}.content")] if m.content else []
    out = []
    for j, raw in enumerate(m.content):
        pat = f"{at}.content[{j}]"
        out.append(ir.TextPart(validate(_TextPart, raw, pat).text, pat))
    return out


def _user_parts(m: _Message, at: str, rd: Reading) -> tuple[ir.Part, ...]:
    if m.content is None:
        raise TranslationError("a user message needs content", f"{at}.content")
    if isinstance(m.content, str):
        return (ir.TextPart(m.content, f"{at}.content"),)
    return tuple(
        rd.part(raw, f"{at}.content[{j}]", _user_part, raw, f"{at}.content[{j}]")
        for j, raw in enumerate(m.content)
    )


def _user_part(raw: dict[str, Any], at: str) -> ir.TextPart | ir.ImagePart | ir.DocumentPart:
    kind = validate(_Part, raw, at).type
    if kind == "text":
        return ir.TextPart(validate(_TextPart, raw, at).text, at)
    if kind == "image_url":
        url = validate(_ImagePart, raw, at).image_url.url
        if url.startswith("data:"):
            media, data = split_data_url(url, f"{at}.image_url.url")
            return ir.ImagePart(at, media_type=media, data=data)
        return ir.ImagePart(at, url=url)
    if kind == "file":
        f = validate(_FilePart, raw, at).file
        if f.file_data:
            media, data = split_data_url(f.file_data, f"{at}.file.file_data")
            return ir.DocumentPart(at, media_type=media, data=data, filename=f.filename)
        if f.file_id:
            return ir.DocumentPart(at, file_id=f.file_id, file_provider="openai", filename=f.filename)
        raise TranslationError("a file part needs file_data or file_id", f"{at}.file")
    raise TranslationError(f"user content part {kind!r} cannot be translated", f"{at}.type")


def _assistant_parts(m: _Message, at: str, rd: Reading) -> tuple[ir.Part, ...]:
    parts: list[ir.Part] = []
    for field in ("reasoning_content", "reasoning"):
        text = getattr(m, field)
        if isinstance(text, str) and text:
            # thinking without a signature: a target that needs one drops it and counts it
            parts.append(ir.ThinkingPart(text, None, f"{at}.{field}"))
            break
    if isinstance(m.content, str):
        if m.content:
            parts.append(ir.TextPart(m.content, f"{at}.content"))
    elif m.content is not None:
        for j, raw in enumerate(m.content):
            pat = f"{at}.content[{j}]"
            parts.append(rd.part(raw, pat, _assistant_part, raw, pat))
    if m.refusal:
        parts.append(ir.RefusalPart(m.refusal, f"{at}.refusal"))
    for j, raw in enumerate(m.tool_calls or []):
        pat = f"{at}.tool_calls[{j}]"
        parts.append(rd.part(raw, pat, _tool_call, raw, pat))
    return tuple(parts)


def _assistant_part(raw: dict[str, Any], at: str) -> ir.TextPart | ir.RefusalPart:
    kind = validate(_Part, raw, at).type
    if kind == "text":
        return ir.TextPart(validate(_TextPart, raw, at).text, at)
    if kind == "refusal":
        return ir.RefusalPart(validate(_RefusalPart, raw, at).refusal, at)
    raise TranslationError(f"assistant content part {kind!r} cannot be translated", f"{at}.type")


def _tool_call(raw: dict[str, Any], at: str) -> ir.ToolCallPart:
    tc = validate(_ToolCall, raw, at)
    if tc.type == "function" and tc.function is not None:
        args = parse_arguments(tc.function.arguments, f"{at}.function.arguments")
        return ir.ToolCallPart(tc.id, tc.function.name, tc.function.arguments, args, at)
    if tc.type == "custom" and tc.custom is not None:
        c = validate(_Custom, tc.custom, f"{at}.custom")
        return ir.ToolCallPart(tc.id, c.name, c.input, c.input, at, kind="custom")
    raise TranslationError(f"tool call type {tc.type!r} cannot be translated", f"{at}.type")


def _tool_result(m: _Message, at: str) -> ir.ToolResultPart:
    if not m.tool_call_id:
        raise TranslationError("a tool message needs tool_call_id", f"{at}.tool_call_id")
    content: tuple[ir.ResultContent, ...]
    if m.content is None:
        content = ()
    elif isinstance(m.content, str):
        content = (ir.TextPart(m.content, f"{at}.content"),)
    else:
        content = tuple(_user_part(raw, f"{at}.content[{j}]") for j, raw in enumerate(m.content))
    return ir.ToolResultPart(m.tool_call_id, content, at)  # is_error: never synthesized (docs/translation.md)


def _tool(raw: dict[str, Any], i: int) -> ir.ToolDef:
    at = f"tools[{i}]"
    t = validate(_Tool, raw, at)
    if t.type == "function" and t.function is not None:
        f = t.function
        return ir.ToolDef(f.name, at, f.description, f.parameters, f.strict)
    if t.type == "custom" and t.custom is not None:
        c = validate(_CustomDef, t.custom, f"{at}.custom")
        return ir.ToolDef(c.name, at, c.description, kind="custom", format=c.format)
    raise TranslationError(f"tool type {t.type!r} cannot be translated", f"{at}.type")


def _tool_choice(raw: str | dict[str, Any] | None) -> ir.ToolChoice | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        return tool_choice_mode(raw)
    kind = raw.get("type")
    if (
        kind == "function"
        and isinstance(raw.get("function"), dict)
        and isinstance(raw["function"].get("name"), str)
    ):
        return ir.ToolChoice("tool", "tool_choice", raw["function"]["name"])
    if (
        kind == "custom"
        and isinstance(raw.get("custom"), dict)
        and isinstance(raw["custom"].get("name"), str)
    ):
        return ir.ToolChoice("tool", "tool_choice", raw["custom"]["name"], kind="custom")
    raise TranslationError(f"tool_choice type {kind!r} cannot be translated", "tool_choice.type")


def _response_format(raw: dict[str, Any] | None) -> dict[str, object] | None:
    if raw is None or raw.get("type") in ("text", "json_object"):
        return None
    if raw.get("type") == "json_schema" and isinstance(raw.get("json_schema"), dict):
        return dict(raw["json_schema"])
    raise TranslationError(
        f"response_format {raw.get('type')!r} cannot be translated", "response_format.type"
    )
