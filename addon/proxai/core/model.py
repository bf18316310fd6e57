"""Protocol-neutral types: the stream summary, its usage and the outcomes (docs/design/outcomes.md).

Every observer, whatever its wire protocol, produces a ``StreamSummary``. The summary turns
into plain JSON-able dicts with ``to_metadata()`` because ``flow.metadata`` only survives
``-w`` / ``FlowReader`` for dict/list/str/int/float/bool/None (docs/design/core.md, "Metadata is
plain JSON").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

SCHEMA_VERSION = 1


class Protocol(StrEnum):
    ANTHROPIC_MESSAGES = "anthropic_messages"
    OPENAI_CHAT = "openai_chat"
    OPENAI_RESPONSES = "openai_responses"


class Outcome(StrEnum):
    """How a flow ended (docs/design/outcomes.md, "The outcome, decided in this order")."""

    COMPLETED = "completed"  # the protocol's terminal event arrived
    CLOSED = "closed"  # EOF before the terminal event
    ERROR = "error"  # an error event / payload, or HTTP 4xx/5xx
    UNFINISHED_TOOL = "unfinished_tool"  # a tool call's arguments started but never finished


class StopClass(StrEnum):
    """Normalized stop reason; the raw value is kept beside it."""

    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    TOOL_USE = "tool_use"
    STOP_SEQUENCE = "stop_sequence"
    REFUSAL = "refusal"
    PAUSE_TURN = "pause_turn"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"
    OTHER = "other"


class ErrorKind(StrEnum):
    PROMPT_TOO_LONG = "prompt_too_long"
    RATE_LIMITED = "rate_limited"
    OVERLOADED = "overloaded"
    AUTHENTICATION = "authentication"
    PERMISSION = "permission"
    NOT_FOUND = "not_found"
    INVALID_REQUEST = "invalid_request"
    SERVER = "server"
    UPSTREAM_PROTOCOL = "upstream_protocol"
    STREAM_LIMIT = "stream_limit"
    IDLE_TIMEOUT = "idle_timeout"
    TOOL_STALL = "tool_stall"
    TRANSLATION = "translation"
    CONNECTION = "connection"
    UNKNOWN = "unknown"


@dataclass(slots=True)
class Usage:
    """Normalized usage (docs/metadata.md, "Usage normalization"). ``None``: never reported.

    ``cache_write_tokens`` is every cache write; ``cache_write_5m_tokens`` /
    ``cache_write_1h_tokens`` split it by the cache entry's lifetime where the upstream says
    (Anthropic's ``cache_creation``), since a 1-hour write is billed at a higher rate."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cache_write_5m_tokens: int | None = None
    cache_write_1h_tokens: int | None = None

    def to_metadata(self) -> dict[str, int | None]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cache_write_5m_tokens": self.cache_write_5m_tokens,
            "cache_write_1h_tokens": self.cache_write_1h_tokens,
        }


@dataclass(slots=True)
class ToolCallInfo:
    """One tool call as observed. ``arguments`` is kept only when content capture is on."""

    id: str | None
    name: str | None
    kind: str = "function"  # function | custom | client | mcp_approval | mcp | server_tool
    arguments_complete: bool = False
    arguments_valid_json: bool = False
    arguments_bytes: int = 0
    arguments: str | None = None

    def to_metadata(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "arguments_complete": self.arguments_complete,
            "arguments_valid_json": self.arguments_valid_json,
            "arguments_bytes": self.arguments_bytes,
        }


@dataclass(slots=True)
class ErrorInfo:
    kind: ErrorKind
    message: str
    source: str = "event"  # event | http | proxy
    status: int | None = None
    type: str | None = None  # the upstream's own error type / code, when it gave one

    def to_metadata(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "message": self.message,
            "source": self.source,
            "status": self.status,
            "type": self.type,
        }


@dataclass(slots=True)
class Timing:
    """Seconds, measured by the shell's clock and handed to the core as plain floats."""

    headers_s: float | None = None
    first_event_s: float | None = None
    first_token_s: float | None = None
    largest_gap_s: float | None = None
    total_s: float | None = None

    def to_metadata(self) -> dict[str, float | None]:
        def r(v: float | None) -> float | None:
            return None if v is None else round(v, 6)

        return {
            "headers_s": r(self.headers_s),
            "first_event_s": r(self.first_event_s),
            "first_token_s": r(self.first_token_s),
            "largest_gap_s": r(self.largest_gap_s),
            "total_s": r(self.total_s),
        }


@dataclass(slots=True)
class Counts:
    bytes: int = 0
    chunks: int = 0
    events: int = 0

    def to_metadata(self) -> dict[str, int]:
        return {"bytes": self.bytes, "chunks": self.chunks, "events": self.events}


@dataclass(slots=True)
class StreamSummary:
    """What one observed response amounts to, in protocol-neutral terms."""

    protocol: Protocol
    streaming: bool
    outcome: Outcome = Outcome.CLOSED
    id: str | None = None
    model: str | None = None
    status_code: int | None = None
    stop_reason: str | None = None
    stop_class: StopClass | None = None
    usage: Usage = field(default_factory=Usage)
    tool_calls: list[ToolCallInfo] = field(default_factory=list)
    error: ErrorInfo | None = None
    timing: Timing = field(default_factory=Timing)
    counts: Counts = field(default_factory=Counts)
    text_bytes: int = 0
    reasoning_bytes: int = 0
    refusal_bytes: int = 0
    sequence_gaps: int = 0
    # Captured content (only when the observer was asked to capture it: contentview, report).
    text: str | None = None
    reasoning: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_metadata(self) -> dict[str, Any]:
        """The ``flow.metadata["proxai"]`` form (schema 1). Never includes captured content."""
        return {
            "schema": SCHEMA_VERSION,
            "protocol": str(self.protocol),
            "streaming": self.streaming,
            "outcome": str(self.outcome),
            "id": self.id,
            "model": self.model,
            "status_code": self.status_code,
            "stop_reason": self.stop_reason,
            "stop_class": None if self.stop_class is None else str(self.stop_class),
            "usage": self.usage.to_metadata(),
            "tool_calls": [t.to_metadata() for t in self.tool_calls],
            "error": None if self.error is None else self.error.to_metadata(),
            "timing": self.timing.to_metadata(),
            "counts": self.counts.to_metadata(),
            "text_bytes": self.text_bytes,
            "reasoning_bytes": self.reasoning_bytes,
            "refusal_bytes": self.refusal_bytes,
            "sequence_gaps": self.sequence_gaps,
            **({"extra": self.extra} if self.extra else {}),
        }
