"""The protocol-neutral script language of the fake upstream, and what renderers hand the server.

A scenario (``scenarios.py``) is a lazy iterator of ``Op`` values: start a message, open a
block, add a fragment, wait, finish, fail. One renderer per protocol (``render_*.py``) turns
ops into wire ``Action`` values: bytes to write, a delay (optionally with keepalives), an
abort, or (non-streamed) one complete response. The transport (``server.py``) plays actions
with real delays. Every situation the fake upstream plays (text, parallel tools, stalls ...)
is expressed in this language so that every scenario exists for all three protocols.

Neutral model: a message is a list of blocks with dense indexes in start order. Block kinds:
``text``, ``thinking`` (with a signature), ``redacted_thinking`` (opaque data), ``refusal``
and ``tool`` (id + name, arguments streamed as JSON fragments). Blocks may interleave (the
parallel tool-call scenario), each renderer keeps them apart by index.

Rules: docs/design/upstream.md, "One script, three protocols" (the ops mirror the
protocol-neutral stream model: text, tool call, usage, done, error) and "Realistic scenarios".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from proxai.core.errors.providers import ProviderError

BlockKind = Literal["text", "thinking", "redacted_thinking", "refusal", "tool"]
StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal"]
# the providers' errors, and a rejected key (an "authentication" error quotes the key it got)
ErrorName = ProviderError | Literal["authentication"]


@dataclass(frozen=True, slots=True)
class Start:
    """The message begins; input-side usage is known now (Anthropic sends it in message_start)."""

    input_tokens: int = 25
    cache_read: int = 0
    cache_write: int = 0


@dataclass(frozen=True, slots=True)
class BlockStart:
    index: int
    kind: BlockKind
    tool_id: str = ""  # tool: the call id without protocol prefix
    name: str = ""  # tool: function name
    data: str = ""  # redacted_thinking: the opaque payload


@dataclass(frozen=True, slots=True)
class BlockDelta:
    """One streamed fragment of a block: text, thinking text, refusal text or argument JSON."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class BlockStop:
    """The block is complete. ``tail`` is a last fragment that arrives WITH the close.

    Quirk scenarios use it: Responses renders a tail only inside ``*.done`` (arguments only in
    ``.done``), Chat puts it into the ``finish_reason`` chunk, Anthropic sends it as a delta.
    ``signature`` closes a thinking block (Anthropic ``signature_delta``, Responses
    ``encrypted_content``).
    """

    index: int
    tail: str = ""
    signature: str = ""


@dataclass(frozen=True, slots=True)
class Wait:
    """A pause. ``keepalive`` sends the protocol's keepalive every ``every`` seconds meanwhile.

    ``stall`` marks the scenario's stall: its length can be overridden per request
    (header ``x-proxai-stall``). ``in_body``: played as a non-streamed response, the pause comes
    after the headers and half the body (a server that stops in the middle of its reply), not
    before the headers.
    """

    seconds: float
    keepalive: bool = False
    every: float = 1.0
    stall: bool = False
    in_body: bool = False


@dataclass(frozen=True, slots=True)
class Finish:
    """The terminal part of the stream (stop reason, cumulative usage, terminal events)."""

    stop: StopReason


@dataclass(frozen=True, slots=True)
class Fail:
    """An error event in the middle of the stream (then the body ends cleanly)."""

    error: ErrorName = "overloaded"


@dataclass(frozen=True, slots=True)
class Reset:
    """The connection (HTTP/1.1) or the stream (HTTP/2) is reset here.

    ``drop=True``: the connection is closed instead, without finishing the body (HTTP/1.1: a
    FIN with no last chunk; HTTP/2: RST_STREAM CANCEL) - an upstream process dying.
    """

    drop: bool = False


@dataclass(frozen=True, slots=True)
class Malformed:
    """One event whose data is broken JSON."""


@dataclass(frozen=True, slots=True)
class HugeLine:
    """One enormous line of ``size`` bytes that never ends; then the body ends."""

    size: int


Op = Start | BlockStart | BlockDelta | BlockStop | Wait | Finish | Fail | Reset | Malformed | HugeLine


# ---- actions: what renderers give the transport ----


@dataclass(frozen=True, slots=True)
class Delay:
    """Sleep ``seconds`` (scaled by the server), writing ``keepalive`` bytes every ``every`` s."""

    seconds: float
    keepalive: bytes = b""
    every: float = 1.0
    stall: bool = False


@dataclass(frozen=True, slots=True)
class Abort:
    """Reset (``drop``: close) the connection / stream now."""

    drop: bool = False


@dataclass(frozen=True, slots=True)
class Respond:
    """A complete non-streamed response. ``cut`` > 0: send only that many body bytes, then drop.
    ``pause``: after the headers and half the body, wait this long before the rest."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    cut: int = 0
    pause: Delay | None = None


Action = bytes | Delay | Abort | Respond


DEFAULT_SIZE = 32 * 1024 * 1024
DEFAULT_EVENTS = 10_000


@dataclass(frozen=True, slots=True)
class Params:
    """What a request tells a scenario: model, streaming, sizes, overrides."""

    model: str = "fake-model"
    stream: bool = False
    include_usage: bool = False  # Chat stream_options.include_usage
    size: int = DEFAULT_SIZE  # huge_line: bytes in the enormous line (x-proxai-size)
    events: int = DEFAULT_EVENTS  # big_stream: number of delta events (x-proxai-events)
    request_number: int = 0  # 1-based counter, makes ids unique and deterministic
    created: int = 1_767_225_600  # unix seconds stamped into created / created_at
    protocol: str = ""  # the request's protocol (``proxai.core.model.Protocol`` value), from the path
    body: object = None  # the parsed request body (the agent scenario reads the conversation)
    credential: str = ""  # the key the request carried (an "authentication" error quotes it)


def echo_headers(id_header: str, request_id: str, params: Params) -> tuple[tuple[str, str], ...]:
    """An authentication error's headers: the request id, and the key the request carried (a
    server that echoes it in a header of its own)."""
    return ((id_header, request_id), ("x-proxai-received-key", params.credential))


OpStream = Iterator[Op]
