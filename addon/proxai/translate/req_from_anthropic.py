"""Parse an Anthropic Messages request body into the neutral ``RequestIR`` (docs/translation.md,
"Requests").

The body is validated with pydantic at this trust boundary (unknown top-level fields are
tolerated like the API tolerates them, and listed in ``ignored``). Top-level ``system`` stays
apart; ``tool_use`` blocks are assistant tool calls; ``tool_result`` blocks are user parts with
``is_error`` kept (the OpenAI renderers drop it lossily, keeping the error text; docs/translation.md,
"Requests").
``role: system`` messages inside ``messages`` stay turns of their own at their position;
``output_config.effort`` is the reasoning level and ``output_config.format`` / ``output_format``
the structured output; server tools are offers left out with a note (docs/translation.md, "What
the agent CLIs send").
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from proxai.core.errors import TranslationError
from proxai.translate import ir
from proxai.translate.checks import Loose, Reading, dump_arguments, validate


class _Block(Loose):
    type: str


class _Text(Loose):
    type: Literal["text"]
    text: str


class _Source(Loose):
    type: str
    media_type: str | None = None
    data: Any = None
    url: str | None = None
    file_id: str | None = None


class _Image(Loose):
    type: Literal["image"]
    source: _Source


class _Document(Loose):
    type: Literal["document"]
    source: _Source
    title: str | None = None


class _ToolUse(Loose):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class _ToolResult(Loose):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[dict[str, Any]] | None = None
    is_error: bool | None = None


class _Thinking(Loose):
    type: Literal["thinking"]
    thinking: str
    signature: str | None = None


class _Redacted(Loose):
    type: Literal["redacted_thinking"]
    data: str


class _Message(Loose):
    role: Literal["user", "assistant", "system"]
    content: str | list[dict[str, Any]]


class _Tool(Loose):
    name: str
    type: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] | None = None


class _ToolChoice(Loose):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class _ThinkingConfig(Loose):
    type: str
    budget_tokens: int | None = None


class _Format(Loose):
    type: Literal["json_schema"]
    schema_: dict[str, Any] = Field(alias="schema")


class _OutputConfig(Loose):
    effort: str | None = None
    format: dict[str, Any] | None = None


class _Request(Loose):
    model: str | None = None
    messages: list[dict[str, Any]]
    system: str | list[dict[str, Any]] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: list[str] | None = None
    stream: bool | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: dict[str, Any] | None = None
    thinking: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    output_config: dict[str, Any] | None = None
    output_format: dict[str, Any] | None = None


_HANDLED = frozenset(
    {
        "model", "messages", "system", "max_tokens", "temperature", "top_p", "top_k", "stop_sequences",
        "stream", "tools", "tool_choice", "thinking", "metadata", "output_config", "output_format",
    }
)  # fmt: skip
# ``context_management`` (server-side clearing of old tool results or thinking) is a
# context-size optimization, not a change of what the model is asked: it is ignored (listed
# in ``ignored``).
_REJECT = {
    "container": "containers",
    "mcp_servers": "MCP servers",
}
#: Anthropic's effort scale on OpenAI's: the same words, and ``max`` is OpenAI's ``xhigh``.
_EFFORT = {"low": "low", "medium": "medium", "high": "high", "max": "xhigh"}


def parse_request(body: object, rd: Reading) -> ir.RequestIR:
    req = rd.body(_Request, body)
    extras = req.model_extra or {}
    for key, what in _REJECT.items():
        if extras.get(key) not in (None, [], {}):
            rd.refuse(TranslationError(f"{what} exist only in Anthropic Messages", key))
    if req.top_k is not None:
        rd.refuse(TranslationError("top_k has no equivalent in OpenAI APIs", "top_k"))
    ignored = tuple(sorted(k for k in extras if k not in _HANDLED))
    system = _system(req.system, rd)
    raw_messages, history_notes = _without_searches(req.messages)
    messages = tuple(
        msg
        for i, m in enumerate(raw_messages)
        if (msg := rd.message(m, f"messages[{i}]", _message, m, i, rd)) is not None
    )
    left_out: list[ir.LeftOut] = []
    searches: list[ir.WebSearch] = []
    tools = tuple(
        t
        for i, raw in enumerate(req.tools or [])
        if (t := rd.attempt(None, _tool, raw, i, left_out, searches)) is not None
    )
    effort, json_schema, json_at = rd.attempt(
        (None, None, "output_config.format"), _output, req.output_config, req.output_format
    )
    tool_choice, parallel = rd.attempt((None, None), _tool_choice, req.tool_choice)
    user = None
    if req.metadata and isinstance(req.metadata.get("user_id"), str):
        user = req.metadata["user_id"]
    return ir.RequestIR(
        model=req.model,
        messages=messages,
        system=system,
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        max_tokens=req.max_tokens,
        max_tokens_at="max_tokens",
        temperature=req.temperature,
        top_p=req.top_p,
        stop=tuple(req.stop_sequences or ()),
        stop_at="stop_sequences",
        stream=bool(req.stream),
        reasoning=rd.attempt(None, _reasoning, req.thinking, effort),
        user=user,
        json_schema=json_schema,
        json_schema_at=json_at,
        ignored=ignored,
        left_out=tuple(left_out),
        web_search=searches[0] if searches else None,
        history_notes=history_notes,
        refused=tuple(rd.refused),
    )


def _system(system: str | list[dict[str, Any]] | None, rd: Reading) -> tuple[ir.TextPart, ...]:
    if system is None:
        return ()
    if isinstance(system, str):
        return (ir.TextPart(system, "system"),) if system else ()
    out = []
    for i, b in enumerate(system):
        at = f"system[{i}]"
        t = rd.attempt(None, validate, _Text, b, at)
        if t is not None:
            out.append(ir.TextPart(t.text, at))
    return tuple(out)


def _message(raw: dict[str, Any], i: int, rd: Reading) -> ir.Message:
    at = f"messages[{i}]"
    m = validate(_Message, raw, at)
    if m.role == "system":
        return ir.Message("system", _system_turn(m.content, at), at)
    if isinstance(m.content, str):
        return ir.Message(m.role, (ir.TextPart(m.content, f"{at}.content"),), at)
    parts = tuple(
        rd.part(b, f"{at}.content[{j}]", _block, b, f"{at}.content[{j}]", m.role)
        for j, b in enumerate(m.content)
    )
    return ir.Message(m.role, parts, at)


def _system_turn(content: str | list[dict[str, Any]], at: str) -> tuple[ir.Part, ...]:
    """A ``role: system`` message inside ``messages``: instructions at that position (text only)."""
    if isinstance(content, str):
        return (ir.TextPart(content, f"{at}.content"),)
    out: list[ir.Part] = []
    for j, b in enumerate(content):
        pat = f"{at}.content[{j}]"
        kind = validate(_Block, b, pat).type
        if kind != "text":
            raise TranslationError(f"a system message holds text blocks, not {kind!r}", f"{pat}.type")
        out.append(ir.TextPart(validate(_Text, b, pat).text, pat))
    return tuple(out)


def _block(raw: dict[str, Any], at: str, role: str) -> ir.Part:
    kind = validate(_Block, raw, at).type
    if kind == "text":
        return ir.TextPart(validate(_Text, raw, at).text, at)
    if kind == "image":
        return _image(validate(_Image, raw, at), at)
    if kind == "document":
        return _document(validate(_Document, raw, at), at)
    if kind == "tool_use":
        if role != "assistant":
            raise TranslationError("tool_use blocks belong to assistant messages", f"{at}.type")
        t = validate(_ToolUse, raw, at)
        return ir.ToolCallPart(t.id, t.name, dump_arguments(t.input), t.input, at)
    if kind == "tool_result":
        if role != "user":
            raise TranslationError("tool_result blocks belong to user messages", f"{at}.type")
        r = validate(_ToolResult, raw, at)
        content: tuple[ir.ResultContent, ...]
        if r.content is None:
            content = ()
        elif isinstance(r.content, str):
            content = (ir.TextPart(r.content, f"{at}.content"),)
        else:
            content = tuple(_result_block(b, f"{at}.content[{k}]") for k, b in enumerate(r.content))
        return ir.ToolResultPart(r.tool_use_id, content, at, r.is_error)
    if kind == "thinking":
        th = validate(_Thinking, raw, at)
        return ir.ThinkingPart(th.thinking, th.signature, at)
    if kind == "redacted_thinking":
        return ir.RedactedThinkingPart(validate(_Redacted, raw, at).data, at)
    raise TranslationError(f"content block type {kind!r} cannot be translated", f"{at}.type")


def _result_block(raw: dict[str, Any], at: str) -> ir.ResultContent:
    part = _block(raw, at, "user")
    if not isinstance(part, ir.TextPart | ir.ImagePart | ir.DocumentPart):
        raise TranslationError("a tool_result holds text, image or document blocks", f"{at}.type")
    return part


def _image(img: _Image, at: str) -> ir.ImagePart:
    s = img.source
    if s.type == "base64" and isinstance(s.data, str) and s.media_type:
        return ir.ImagePart(at, media_type=s.media_type, data=s.data)
    if s.type == "url" and s.url:
        return ir.ImagePart(at, url=s.url)
    if s.type == "file" and s.file_id:
        return ir.ImagePart(at, file_id=s.file_id, file_provider="anthropic")
    raise TranslationError(f"image source type {s.type!r} cannot be translated", f"{at}.source.type")


def _document(doc: _Document, at: str) -> ir.DocumentPart:
    s = doc.source
    if s.type == "base64" and isinstance(s.data, str):
        return ir.DocumentPart(
            at, media_type=s.media_type or "application/pdf", data=s.data, filename=doc.title
        )
    if s.type == "text" and isinstance(s.data, str):
        return ir.DocumentPart(at, media_type=s.media_type or "text/plain", text=s.data, filename=doc.title)
    if s.type == "url" and s.url:
        return ir.DocumentPart(at, url=s.url, filename=doc.title)
    if s.type == "file" and s.file_id:
        return ir.DocumentPart(at, file_id=s.file_id, file_provider="anthropic", filename=doc.title)
    raise TranslationError(f"document source type {s.type!r} cannot be translated", f"{at}.source.type")


def _tool(
    raw: dict[str, Any], i: int, left_out: list[ir.LeftOut], searches: list[ir.WebSearch]
) -> ir.ToolDef | None:
    """A client tool; a server tool (``web_search_20250305``, ...) the OpenAI APIs cannot run
    is an offer left out, with a note. ``defer_loading`` (the tool's schema is shown to the
    model only once a tool search found it) has no OpenAI form: the tool is offered outright."""
    at = f"tools[{i}]"
    t = validate(_Tool, raw, at)
    if t.type is not None and t.type.startswith("web_search_") and not searches:
        searches.append(
            ir.WebSearch(
                at,
                t.name,
                allowed_domains=_strings(raw.get("allowed_domains")),
                blocked_domains=_strings(raw.get("blocked_domains")),
                user_location=raw.get("user_location")
                if isinstance(raw.get("user_location"), dict)
                else None,
                max_uses=raw.get("max_uses") if type(raw.get("max_uses")) is int else None,
            )
        )
        return None
    if t.type not in (None, "custom"):
        left_out.append(ir.LeftOut(at, f"server tool {t.type!r}", "OpenAI APIs cannot run it", t.name))
        return None
    return ir.ToolDef(t.name, at, t.description, t.input_schema or {"type": "object", "properties": {}})


#: Server-side search blocks of earlier turns: the search ran at the provider; its cited text
#: is in the answer's text blocks, which stay.
_SEARCH_BLOCKS = frozenset({"server_tool_use", "web_search_tool_result"})


def _without_searches(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """The messages without the web search blocks of earlier assistant turns (no target takes
    another provider's search call back), and a note for each one left out."""
    out: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, m in enumerate(messages):
        content = m.get("content") if isinstance(m, dict) else None
        if not isinstance(m, dict) or m.get("role") != "assistant" or not isinstance(content, list):
            out.append(m)
            continue
        kept = []
        for j, b in enumerate(content):
            if isinstance(b, dict) and isinstance(b.get("type"), str) and b["type"] in _SEARCH_BLOCKS:
                notes.append(
                    f"messages[{i}].content[{j}]: {b['type']} of an earlier turn left out (a web search)"
                )
            else:
                kept.append(b)
        out.append(m if len(kept) == len(content) else {**m, "content": kept})
    return out, tuple(notes)


def _strings(v: object) -> tuple[str, ...]:
    return tuple(x for x in v if isinstance(x, str)) if isinstance(v, list) else ()


def _tool_choice(raw: dict[str, Any] | None) -> tuple[ir.ToolChoice | None, bool | None]:
    if raw is None:
        return None, None
    tc = validate(_ToolChoice, raw, "tool_choice")
    parallel = None if tc.disable_parallel_tool_use is None else not tc.disable_parallel_tool_use
    if tc.type == "tool":
        if not tc.name:
            raise TranslationError("tool_choice of type tool needs a name", "tool_choice.name")
        return ir.ToolChoice("tool", "tool_choice", tc.name), parallel
    if tc.type == "any":
        return ir.ToolChoice("required", "tool_choice"), parallel
    return ir.ToolChoice(tc.type, "tool_choice"), parallel


def _output(
    config: dict[str, Any] | None, legacy: dict[str, Any] | None
) -> tuple[str | None, dict[str, object] | None, str]:
    """``output_config`` (``effort``, ``format``) and the older ``output_format``: the effort
    on OpenAI's scale, and a JSON schema for structured output."""
    effort = None
    json_schema: dict[str, object] | None = None
    at = "output_config.format"
    if config is not None:
        oc = validate(_OutputConfig, config, "output_config")
        for key in oc.model_extra or {}:
            raise TranslationError(f"output_config.{key} cannot be translated", f"output_config.{key}")
        if oc.effort is not None:
            if oc.effort not in _EFFORT:
                raise TranslationError(f"effort {oc.effort!r} cannot be translated", "output_config.effort")
            effort = _EFFORT[oc.effort]
        if oc.format is not None:
            json_schema = _schema(oc.format, at)
    if legacy is not None and json_schema is None:
        at = "output_format"
        json_schema = _schema(legacy, at)
    return effort, json_schema, at


def _schema(raw: dict[str, Any], at: str) -> dict[str, object]:
    f = validate(_Format, raw, at)
    return {"name": "response", "schema": f.schema_, "strict": True}


def _reasoning(raw: dict[str, Any] | None, effort: str | None) -> ir.Reasoning | None:
    """``thinking`` and ``output_config.effort``: an effort, when given, is the level OpenAI
    targets get (it is what the client chose); otherwise the budget maps to one."""
    if raw is None:
        return ir.Reasoning("output_config.effort", effort=effort) if effort is not None else None
    t = validate(_ThinkingConfig, raw, "thinking")
    if t.type == "disabled":
        return ir.Reasoning("thinking", enabled=False)
    if t.type == "enabled":
        return ir.Reasoning("thinking", budget=t.budget_tokens, effort=effort)
    if t.type == "adaptive":
        return ir.Reasoning("thinking", effort=effort)
    raise TranslationError(f"thinking type {t.type!r} cannot be translated", "thinking.type")
