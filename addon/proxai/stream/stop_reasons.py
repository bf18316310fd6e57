"""The stop-reason tables, one per protocol, in the neutral layer: the grammars (the summary's
stop class), the stream writers, the JSON translators and the verdict all read them here
(docs/translation.md, "Stop reasons").

Every translator maps a source stop/finish reason to a protocol-neutral ``StopClass``
(``proxai.core.model``) and renders that class in the target protocol. Keeping both directions in
one table means a JSON response and a streamed response of the same upstream reply end with
the same reason on the client side.

======== =============== ====================== =====================================
class    Anthropic       Chat finish_reason     Responses status / incomplete reason
======== =============== ====================== =====================================
END_TURN end_turn        stop                   completed
STOP_SEQ stop_sequence   stop                   completed
MAX_TOK  max_tokens      length                 incomplete / max_output_tokens
                                                (from: incomplete for any other reason)
TOOL_USE tool_use        tool_calls             completed (function_call items)
REFUSAL  refusal         stop + message.refusal completed (a refusal content part)
                         or content_filter (*)  or incomplete / content_filter (*)
FILTER   refusal         content_filter         incomplete / content_filter
PAUSE    pause_turn      stop (lossy)           completed (lossy)
ERROR    (an error)      (an error)             failed
======== =============== ====================== =====================================

(*) A refusal with visible refusal text (Chat ``message.refusal``, a Responses ``refusal``
part) keeps the text in the target's refusal slot; a refusal without one (Anthropic's
classifier stop) becomes the target's content filter signal. No refusal category is ever
invented (docs/translation.md, "JSON responses", refusal).

Anthropic's ``model_context_window_exceeded`` is a MAX_TOKENS class stop.
"""

from __future__ import annotations

from typing import Final, Literal

from proxai.core.model import StopClass

ResponsesStatus = Literal["completed", "incomplete", "failed"]

ANTHROPIC: Final[dict[str, StopClass]] = {
    "end_turn": StopClass.END_TURN,
    "stop_sequence": StopClass.STOP_SEQUENCE,
    "max_tokens": StopClass.MAX_TOKENS,
    "model_context_window_exceeded": StopClass.MAX_TOKENS,
    "tool_use": StopClass.TOOL_USE,
    "refusal": StopClass.REFUSAL,
    "pause_turn": StopClass.PAUSE_TURN,
}

CHAT: Final[dict[str, StopClass]] = {
    "stop": StopClass.END_TURN,
    "length": StopClass.MAX_TOKENS,
    "tool_calls": StopClass.TOOL_USE,
    "function_call": StopClass.TOOL_USE,
    "content_filter": StopClass.CONTENT_FILTER,
}

# A Responses status or incomplete_details.reason -> class: the summary's stop class of a Responses
# stream (``from_responses`` is the translators' reading, which knows the tool calls and refusals).
RESPONSES: Final[dict[str, StopClass]] = {
    "completed": StopClass.END_TURN,
    "max_output_tokens": StopClass.MAX_TOKENS,
    "content_filter": StopClass.CONTENT_FILTER,
    "failed": StopClass.ERROR,
    "cancelled": StopClass.OTHER,
}

_TO_ANTHROPIC: Final[dict[StopClass, str]] = {
    StopClass.END_TURN: "end_turn",
    StopClass.STOP_SEQUENCE: "stop_sequence",
    StopClass.MAX_TOKENS: "max_tokens",
    StopClass.TOOL_USE: "tool_use",
    StopClass.REFUSAL: "refusal",
    StopClass.CONTENT_FILTER: "refusal",
    StopClass.PAUSE_TURN: "pause_turn",
    StopClass.ERROR: "end_turn",
    StopClass.OTHER: "end_turn",
}

_TO_CHAT: Final[dict[StopClass, str]] = {
    StopClass.END_TURN: "stop",
    StopClass.STOP_SEQUENCE: "stop",
    StopClass.MAX_TOKENS: "length",
    StopClass.TOOL_USE: "tool_calls",
    StopClass.REFUSAL: "content_filter",
    StopClass.CONTENT_FILTER: "content_filter",
    StopClass.PAUSE_TURN: "stop",
    StopClass.ERROR: "stop",
    StopClass.OTHER: "stop",
}


def from_anthropic(stop_reason: str | None) -> StopClass:
    """The class of an Anthropic ``stop_reason`` (``None`` or unknown -> OTHER)."""
    if stop_reason is None:
        return StopClass.OTHER
    return ANTHROPIC.get(stop_reason, StopClass.OTHER)


def from_chat(finish_reason: str | None, *, has_refusal: bool = False) -> StopClass:
    """The class of a Chat ``finish_reason``; a ``message.refusal`` makes it REFUSAL."""
    if has_refusal and finish_reason in (None, "stop", "content_filter"):
        return StopClass.REFUSAL
    if finish_reason is None:
        return StopClass.OTHER
    return CHAT.get(finish_reason, StopClass.OTHER)


def from_responses(
    status: str | None,
    incomplete_reason: str | None = None,
    *,
    has_tool_calls: bool = False,
    has_refusal: bool = False,
) -> StopClass:
    """The class of a Responses terminal state (``status`` + ``incomplete_details.reason``).

    An incomplete response was cut short whatever its reason: one the table has no class for
    (``max_messages``, ``steered``, none) is MAX_TOKENS, so the client is told its answer was cut
    (``length``, ``max_tokens``), never that it ended normally."""
    if status == "failed":
        return StopClass.ERROR
    if status == "incomplete":
        if incomplete_reason == "content_filter":
            return StopClass.CONTENT_FILTER
        return StopClass.MAX_TOKENS
    if status in ("completed", None):
        if has_tool_calls:
            return StopClass.TOOL_USE
        if has_refusal:
            return StopClass.REFUSAL
        return StopClass.END_TURN
    return StopClass.OTHER


def to_anthropic(stop: StopClass) -> str:
    """The Anthropic ``stop_reason`` for ``stop``."""
    return _TO_ANTHROPIC[stop]


def to_chat(stop: StopClass, *, has_refusal: bool = False) -> str:
    """The Chat ``finish_reason`` for ``stop``.

    ``has_refusal``: the refusal text goes into ``message.refusal``, so the finish reason is
    the ordinary ``stop`` (what OpenAI itself sends with a refusal).
    """
    if stop is StopClass.REFUSAL and has_refusal:
        return "stop"
    return _TO_CHAT[stop]


def to_responses(stop: StopClass, *, has_refusal: bool = False) -> tuple[ResponsesStatus, str | None]:
    """The Responses ``(status, incomplete_details.reason)`` for ``stop``.

    ``has_refusal``: a ``refusal`` content part carries the refusal, the response completed.
    """
    if stop is StopClass.MAX_TOKENS:
        return "incomplete", "max_output_tokens"
    if stop is StopClass.CONTENT_FILTER:
        return "incomplete", "content_filter"
    if stop is StopClass.REFUSAL:
        return ("completed", None) if has_refusal else ("incomplete", "content_filter")
    if stop is StopClass.ERROR:
        return "failed", None
    return "completed", None


def to_responses_streamed(
    stop: StopClass, *, has_refusal: bool = False
) -> tuple[ResponsesStatus, str | None]:
    """``to_responses`` for a stream's terminal event: a normal stop never ends a stream
    ``failed`` (an error is the writer's ``response.failed``, not a stop class)."""
    status, reason = to_responses(stop, has_refusal=has_refusal)
    if status == "failed":
        return "completed", None
    return status, reason


def same_class(a: StopClass, b: StopClass) -> bool:
    """Whether two classes survive a round trip as "the same stop" (the property tests' notion).

    END_TURN / STOP_SEQUENCE / PAUSE_TURN / OTHER all become Chat ``stop`` and Responses
    ``completed``; REFUSAL and CONTENT_FILTER share Anthropic's ``refusal``.
    """
    return _coarse(a) == _coarse(b)


def _coarse(c: StopClass) -> str:
    if c in (StopClass.END_TURN, StopClass.STOP_SEQUENCE, StopClass.PAUSE_TURN, StopClass.OTHER):
        return "stop"
    if c in (StopClass.REFUSAL, StopClass.CONTENT_FILTER):
        return "refusal"
    return str(c)
