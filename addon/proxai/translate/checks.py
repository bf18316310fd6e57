"""Strict checks shared by the request and response translators (docs/translation.md, "Requests").

- ``validate``: a pydantic model at the trust boundary; a failure becomes
  ``TranslationError`` naming the client's field (``messages[2].content[0].text``).
- ``Reading``: how a request reader meets what it cannot read. A strict reading (translation)
  raises the ``TranslationError``; a liberal one (the view, the run report, the telemetry, replay)
  records it, keeps the rest and stands an ``ir.UnreadPart`` where the part was, so the one
  reader of each protocol is total on any JSON (docs/design/request-reading.md).
- ``parse_arguments``: tool-call argument JSON is parsed strictly. Invalid JSON fails; it is
  never replaced with ``{}`` (docs/translation.md, "What is rejected, and why").
- ``split_data_url``: ``data:<media>;base64,<data>`` into its parts.
- ``Loose``: the base of every request-side wire model (unknown fields are kept, then
  judged by the translator: handled, ignored or rejected).
- ``tool_choice_mode``: the OpenAI string tool choices (Chat and Responses share them).
- ``arguments_object``, ``token_count``, ``openai_usage``: lenient readers of an upstream's
  response body (a response is reported, not rejected, when a count is missing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from proxai.core.errors import TranslationError
from proxai.translate import ir


class Loose(BaseModel):
    """A wire object that keeps unknown fields (``model_extra``) for the translator to judge."""

    model_config = ConfigDict(extra="allow", defer_build=True)


def join(at: str, loc: tuple[int | str, ...]) -> str:
    out = at
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def validate[M: BaseModel](model: type[M], data: object, at: str) -> M:
    """``model.model_validate(data)``; a failure names the first bad field under ``at``. The
    model's validator is called itself: ``model_validate`` only passes it its default options
    (tests/translate_json/test_client_requests.py reads bad bodies through it)."""
    try:
        return model.__pydantic_validator__.validate_python(data)  # type: ignore[no-any-return]
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(p for p in err["loc"] if not _is_branch_label(p))
        raise TranslationError(err["msg"], join(at, loc)) from None


@dataclass(slots=True)
class Reading:
    """One reading of a request body: ``strict`` raises at the first thing the translation
    refuses (the order of the reader's checks decides which); otherwise each refusal is kept in
    ``refused`` and the reader goes on with what it can read."""

    strict: bool = True
    refused: list[TranslationError] = field(default_factory=list)

    def refuse(self, exc: TranslationError) -> None:
        """A refusal that leaves nothing to stand in for (a setting, an unknown field)."""
        if self.strict:
            raise exc
        self.refused.append(exc)

    def attempt[T, D](self, instead: D, read: Callable[..., T], *args: Any) -> T | D:
        """``read(*args)``; in a liberal reading, ``instead`` when it refuses."""
        if self.strict:
            return read(*args)
        try:
            return read(*args)
        except TranslationError as exc:
            self.refused.append(exc)
            return instead

    def part[P](self, raw: object, at: str, read: Callable[..., P], *args: Any) -> P | ir.UnreadPart:
        """``read(*args)``; in a liberal reading, the raw part as an ``UnreadPart`` when it refuses."""
        try:
            return read(*args)
        except TranslationError as exc:
            if self.strict:
                raise
            self.refused.append(exc)
            return ir.UnreadPart(raw, exc.reason, at)

    def message(
        self, raw: object, at: str, read: Callable[..., ir.Message | None], *args: Any
    ) -> ir.Message | None:
        """``read(*args)``; in a liberal reading, the raw message kept whole when it refuses (its
        role when it names one the neutral form has, else a user turn: tool results are user parts)."""
        part = self.part(raw, at, read, *args)
        if not isinstance(part, ir.UnreadPart):
            return part
        role = raw.get("role") if isinstance(raw, dict) else None
        kept: Literal["user", "assistant", "system"] = (
            "assistant" if role == "assistant" else "system" if role in ("system", "developer") else "user"
        )
        return ir.Message(kept, (part,), at)

    def body[M: BaseModel](self, model: type[M], body: object) -> M:
        """The request's top level as ``model``. A liberal reading of a body that does not fit
        keeps the fields that do (a list field without its items that are not objects) and
        reads a missing required list as empty."""
        if not isinstance(body, dict):
            self.refuse(TranslationError("the request body must be a JSON object", "body"))
            body = {}
        try:
            return validate(model, body, "")
        except TranslationError as exc:
            if self.strict:
                raise
            self.refused.append(exc)
        return _fitting(model, body)


def _fitting[M: BaseModel](model: type[M], body: dict[str, Any]) -> M:
    kept: dict[str, Any] = {}
    for name, value in body.items():
        spec = model.model_fields.get(name)
        if spec is None or spec.annotation is None:
            kept[name] = value
            continue
        tries = [value] + ([[v for v in value if isinstance(v, dict)]] if isinstance(value, list) else [])
        for candidate in tries:
            try:
                TypeAdapter(spec.annotation).validate_python(candidate)
            except ValidationError:
                continue
            kept[name] = candidate
            break
    for name, spec in model.model_fields.items():
        if spec.is_required() and name not in kept:
            kept[name] = []
    return model.model_validate(kept)


def _is_branch_label(p: int | str) -> bool:
    return isinstance(p, str) and (
        p.startswith(("list[", "dict[", "literal[", "function-", "tagged-union["))
        or p in ("str", "int", "float", "bool", "none")
        or p[:1].isupper()
    )


def parse_arguments(text: str, at: str) -> dict[str, Any]:
    """Tool-call arguments as a JSON object; anything else is a ``TranslationError``."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise TranslationError("tool call arguments are not valid JSON", at) from None
    if not isinstance(value, dict):
        raise TranslationError("tool call arguments must be a JSON object", at)
    return value


def dump_arguments(value: object) -> str:
    """Tool-call input as compact JSON text (Anthropic ``input`` -> OpenAI ``arguments``)."""
    return orjson.dumps(value).decode()


def split_data_url(url: str, at: str) -> tuple[str, str]:
    """``(media_type, base64 data)`` of a base64 data URL."""
    head, sep, data = url.partition(",")
    if not sep or not head.startswith("data:") or not head.endswith(";base64"):
        raise TranslationError("a data URL must look like data:<media type>;base64,<data>", at)
    media = head[len("data:") : -len(";base64")]
    if not media:
        raise TranslationError("a data URL needs a media type", at)
    return media, data


def data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


def tool_choice_mode(raw: str) -> ir.ToolChoice:
    """An OpenAI string ``tool_choice`` (``auto``, ``none``, ``required``); others are rejected."""
    if raw in ("auto", "none", "required"):
        return ir.ToolChoice(raw, "tool_choice")  # type: ignore[arg-type]
    raise TranslationError(f"unknown tool_choice {raw!r}", "tool_choice")


def arguments_object(text: str) -> object:
    """The parsed arguments, or ``None`` when they are not a JSON object (a target that needs
    an object rejects the call; one that takes text passes it on untouched)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def token_count(v: object) -> int:
    """A token count from a response body; anything but an integer counts as 0."""
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def openai_usage(u: object, input_key: str, output_key: str) -> ir.UsageIR | None:
    """An OpenAI usage object: Chat names its counts ``prompt_tokens`` / ``completion_tokens``,
    Responses ``input_tokens`` / ``output_tokens``; both put the cache counts in
    ``<input_key>_details`` and the reasoning count in ``<output_key>_details``."""
    if not isinstance(u, dict):
        return None
    idt = u.get(f"{input_key}_details")
    odt = u.get(f"{output_key}_details")
    idt = idt if isinstance(idt, dict) else {}
    odt = odt if isinstance(odt, dict) else {}
    reasoning = odt.get("reasoning_tokens")
    return ir.UsageIR(
        input_tokens=token_count(u.get(input_key)),
        output_tokens=token_count(u.get(output_key)),
        cache_read=token_count(idt.get("cached_tokens")),
        cache_write=token_count(idt.get("cache_write_tokens")),
        reasoning_tokens=reasoning if isinstance(reasoning, int) else None,
    )
