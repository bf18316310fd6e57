"""Stop-reason mapping for streams: a thin adapter over the shared table
``proxai.translate.stop_reasons`` (one table for JSON and streams, docs/translation.md), so a
streamed and a non-streamed reply of the same upstream end with the same client-side reason.

Refusal: an Anthropic ``refusal`` stop (a classifier stopped the model) becomes Chat
``content_filter`` / Responses ``incomplete`` (``content_filter``) unless the refusal text was
streamed in the target's refusal slot (Chat ``delta.refusal``, a Responses ``refusal`` part).
"""

from __future__ import annotations

from proxai.core.model import StopClass
from proxai.translate import stop_reasons


def from_anthropic(raw: str | None) -> StopClass:
    return stop_reasons.from_anthropic(raw)


def from_chat(raw: str, *, refusal_streamed: bool) -> StopClass:
    return stop_reasons.from_chat(raw, has_refusal=refusal_streamed)


def from_responses(
    status: str, incomplete_reason: str | None, *, tool_calls: bool, refusal_streamed: bool
) -> StopClass:
    return stop_reasons.from_responses(
        status, incomplete_reason, has_tool_calls=tool_calls, has_refusal=refusal_streamed
    )


def to_anthropic(cls: StopClass) -> str:
    return stop_reasons.to_anthropic(cls)


def to_chat(cls: StopClass, *, refusal_streamed: bool) -> str:
    return stop_reasons.to_chat(cls, has_refusal=refusal_streamed)


def to_responses(cls: StopClass, *, refusal_streamed: bool) -> tuple[str, str | None]:
    """(status, incomplete_details.reason); a failed status never comes from a normal stop."""
    status, reason = stop_reasons.to_responses(cls, has_refusal=refusal_streamed)
    if status == "failed":
        return "completed", None
    return status, reason
