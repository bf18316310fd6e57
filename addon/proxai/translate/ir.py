"""The protocol-neutral form of a request and of a non-streamed response (docs/translation.md).

Each source protocol is parsed into these types once (``req_from_*``, ``resp_from_*``) and
each target renders them (``req_to_*``, ``resp_to_*``): six directions from three parsers and
three renderers. Every part remembers ``at``, the field it came from in the CLIENT's body, so
a target that cannot express it raises ``TranslationError`` naming the client's own field
(reject, never drop silently).

The positions follow docs/translation.md (the rules in brief, and "Requests"): system/developer
instructions are collected apart from the turns; tool calls are assistant parts; tool results are
user parts (Anthropic's shape), and a Chat/Responses renderer splits them back into ``role: tool``
messages / ``function_call_output`` items.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, dataclass_transform

from proxai.core.errors import TranslationError
from proxai.core.model import StopClass

FileProvider = Literal["openai", "anthropic"]


@dataclass_transform(frozen_default=True)
def value[T](cls: type[T]) -> type[T]:
    """A value of the neutral form: a slotted dataclass that mypy holds frozen (assigning a field
    is a type error, ``dataclasses.replace`` makes a changed copy) and that hashes and compares
    as ``dataclass(frozen=True, slots=True)`` does, without that class's ``__init__``, which sets
    each field through ``object.__setattr__`` (docs/performance.md, "The routed request hook,
    2026-12-03 night"); tests/translate_json/test_ir_values.py checks both."""
    return dataclass(slots=True, unsafe_hash=True)(cls)


@value
class TextPart:
    text: str
    at: str


@value
class ImagePart:
    at: str
    url: str | None = None  # http(s) URL
    media_type: str | None = None  # with data
    data: str | None = None  # base64
    file_id: str | None = None
    file_provider: FileProvider | None = None


@value
class DocumentPart:
    at: str
    media_type: str | None = None
    data: str | None = None  # base64 (PDF)
    text: str | None = None  # a plain-text document
    url: str | None = None
    filename: str | None = None
    file_id: str | None = None
    file_provider: FileProvider | None = None


@value
class ToolCallPart:
    id: str
    name: str
    arguments: str  # JSON text (function) or free text (custom)
    input: object  # the parsed JSON object (function); the text itself (custom)
    at: str
    kind: Literal["function", "custom"] = "function"


ResultContent = TextPart | ImagePart | DocumentPart


@value
class ToolResultPart:
    call_id: str
    content: tuple[ResultContent, ...]
    at: str
    is_error: bool | None = None


@value
class ThinkingPart:
    text: str
    signature: str | None
    at: str


@value
class RedactedThinkingPart:
    data: str
    at: str


@value
class RefusalPart:
    text: str
    at: str


@value
class UnreadPart:
    """A block, part, item or message a liberal reading could not read (``proxai.translate.checks.
    Reading``): the raw JSON as the client sent it and why. A strict reading raises instead, so
    translation never sees one."""

    raw: object
    reason: str
    at: str


Part = (
    TextPart
    | ImagePart
    | DocumentPart
    | ToolCallPart
    | ToolResultPart
    | ThinkingPart
    | RedactedThinkingPart
    | RefusalPart
    | UnreadPart
)


@value
class Message:
    """One turn. ``system`` turns are instructions that stand between other turns (an
    Anthropic ``role: system`` message inside ``messages``): they hold text parts only."""

    role: Literal["user", "assistant", "system"]
    parts: tuple[Part, ...]
    at: str

    @property
    def item(self) -> Part | None:
        """The one part when the turn stands in the client's body as a part of its own (a Chat
        ``role: tool`` message, a Responses item such as ``function_call``), else None."""
        return self.parts[0] if len(self.parts) == 1 and self.parts[0].at == self.at else None

    @property
    def speaker(self) -> str:
        """Who the outputs say the turn is from: ``tool`` for a tool result of its own."""
        return "tool" if isinstance(self.item, ToolResultPart) else self.role


@value
class CallShape:
    """How a Responses client expects a call of one of its tools back (proxai.translate.call_shapes)."""

    item: Literal["function_call", "custom_tool_call", "tool_search_call"]
    name: str  # the client's own tool name (inside its namespace)
    namespace: str | None = None


@value
class ToolDef:
    name: str
    at: str
    description: str | None = None
    parameters: dict[str, object] | None = None  # JSON schema (function tools)
    strict: bool | None = None
    kind: Literal["function", "custom"] = "function"
    format: dict[str, object] | None = None  # custom tools' input format
    # a Responses client's tool offered under another shape (namespaced, tool search): how its
    # calls go back to the client (proxai.translate.call_shapes); None: unchanged
    call_back: CallShape | None = None


#: The one string argument a freeform (custom) tool takes where the target has function tools
#: only; Codex's own function form of ``apply_patch`` names its argument the same way.
FREEFORM_ARGUMENT = "input"


def freeform_parameters() -> dict[str, object]:
    """The JSON schema of a freeform tool rendered as a function with one string argument."""
    return {
        "type": "object",
        "properties": {
            FREEFORM_ARGUMENT: {"type": "string", "description": "the tool's input, as free text"}
        },
        "required": [FREEFORM_ARGUMENT],
        "additionalProperties": False,
    }


def freeform_description(t: ToolDef) -> str:
    """A freeform tool's description, told that its text goes in the one string argument."""
    told = f"Pass the whole freeform input as the string argument `{FREEFORM_ARGUMENT}`."
    if t.format is not None and t.format.get("type") == "grammar":
        told += (
            f" The input follows this {t.format.get('syntax', '')} grammar:\n{t.format.get('definition', '')}"
        )
    return f"{t.description}\n\n{told}" if t.description else told


@value
class ToolChoice:
    mode: Literal["auto", "none", "required", "tool"]
    at: str
    name: str | None = None
    kind: Literal["function", "custom"] = "function"


@value
class Reasoning:
    """Reasoning / thinking settings. ``effort`` is OpenAI's scale, ``budget`` Anthropic's."""

    at: str
    enabled: bool = True
    effort: str | None = None
    budget: int | None = None
    summary: str | None = None


@value
class WebSearch:
    """The provider's own web search, declared by the client (Anthropic ``web_search_20250305``,
    Responses ``web_search``): Anthropic and Responses both run one; Chat has none."""

    at: str  # the client's field, ``tools[2]``
    name: str = "web_search"  # the name a tool_choice forces it by (Anthropic)
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()  # Anthropic only
    user_location: dict[str, object] | None = None  # {type: approximate, city, region, country, timezone}
    max_uses: int | None = None  # Anthropic only
    context_size: str | None = None  # Responses only: search_context_size


@value
class LeftOut:
    """A declared tool the target cannot provide: an offer, left out of the translated request
    with a note (or refused under strict translation). ``name`` is the name a ``tool_choice``
    would force it by, when the client's protocol gives it one."""

    at: str  # the client's field, ``tools[3]``
    what: str  # ``hosted tool 'web_search'``
    why: str  # ``the target cannot run it``
    name: str | None = None

    @property
    def note(self) -> str:
        return f"{self.at}: {self.what} left out ({self.why})"


@value
class RequestIR:
    model: str | None
    messages: tuple[Message, ...]
    system: tuple[TextPart, ...] = ()
    tools: tuple[ToolDef, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_tokens: int | None = None
    max_tokens_at: str = "max_tokens"
    temperature: float | None = None
    temperature_at: str = "temperature"
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    stop_at: str = "stop"
    stream: bool = False
    reasoning: Reasoning | None = None
    user: str | None = None
    json_schema: dict[str, object] | None = None  # {"name", "schema", "strict"} structured output
    json_schema_at: str = "response_format"
    json_object: bool = False  # JSON mode without a schema (Chat json_object, Responses json_object)
    ignored: tuple[str, ...] = ()  # client fields that are hints with no target meaning
    left_out: tuple[LeftOut, ...] = ()  # offers left out (hosted tools the target cannot provide)
    web_search: WebSearch | None = None  # the provider's web search, offered to the target's
    history_notes: tuple[str, ...] = ()  # earlier turns' server-side content the target keeps no form of
    # a liberal reading only: what a strict reading (translation) refuses, in reading order; the
    # first is the error a strict reading raises
    refused: tuple[TranslationError, ...] = ()


# ---- responses -------------------------------------------------------------------------


@dataclass(slots=True)
class UsageIR:
    """Usage in neutral terms: ``input_tokens`` counts ALL prompt tokens, cached ones included."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning_tokens: int | None = None


@dataclass(slots=True)
class ResponseIR:
    id: str
    model: str
    parts: list[Part]
    stop: StopClass
    usage: UsageIR | None
    stop_sequence: str | None = None
    created: int | None = None
    dropped: dict[str, int] = field(default_factory=dict)
    left_out: dict[str, int] = field(default_factory=dict)  # upstream items the client cannot hold


@value
class RequestOptions:
    """Per-route knobs of request rendering (``proxai.translate.routes.Route``)."""

    model: str | None = None  # the (mapped) model to send; None keeps the client's
    default_max_tokens: int = 4096  # Anthropic requires max_tokens; used when the client gave none
    chat_max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    max_tokens_limit: int | None = None  # the most output tokens the target serves (None: no cap)
    strict: bool = False  # strict translation: a declared tool the target cannot provide is refused


def count_dropped(dropped: dict[str, int], part: Part) -> None:
    """Count a thinking part the target has no slot for, with the stream translator's keys
    (``thinking_blocks``, ``thinking_chars``, ``signature_chars``, ``redacted_thinking_blocks``)."""
    if isinstance(part, ThinkingPart):
        dropped["thinking_blocks"] = dropped.get("thinking_blocks", 0) + 1
        dropped["thinking_chars"] = dropped.get("thinking_chars", 0) + len(part.text)
        dropped["signature_chars"] = dropped.get("signature_chars", 0) + len(part.signature or "")
    elif isinstance(part, RedactedThinkingPart):
        dropped["redacted_thinking_blocks"] = dropped.get("redacted_thinking_blocks", 0) + 1
