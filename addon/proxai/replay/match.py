"""What a request asks, for replay: its conversation with the parts that change from run to run
left out, and the first place where two conversations differ (docs/replay.md, "What is ignored
when matching").

A request is read by its protocol's request reader (``proxai.translate.request.read_request``,
the one the translation uses) into the neutral form, and turned into ``Piece`` values in a fixed
order: the model, the system text, every part of every message, the tools, then the settings
that change the answer. Each piece names the client's own field (``messages[3].content[0]``), so
a miss can say where a run diverged. Two requests match when their pieces are equal.

Left out (the volatile parts): everything the reader does not read (cache markers, message and
item ids, ``prompt_cache_key``, ``client_metadata``, ``context_management``, ...), the metadata
ids it does read (``metadata.user_id``, ``user``), the sampling settings ``temperature`` and
``top_p``, Claude Code's ``x-anthropic-billing-header:`` line (a per-request hash), and dates
and times inside system text (and inside the context blocks a client adds to a user turn,
``<environment_context>`` and ``<system-reminder>``), and the run id and wall time lines a client's
shell tool writes into its result (Codex: ``Chunk ID:``, ``Wall time: ... seconds``). Secrets are
masked on both sides (``redact_json_value``): a recorded client request is stored masked.

A body the reader refuses (a field no other protocol has, such as Anthropic ``top_k``) is
compared as JSON instead: one piece per top-level field and per message, with the same fields
left out and ``cache_control`` removed at any depth.

Rules: docs/design/replay.md, 1 to 3. Pure: no mitmproxy, no clock.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any, Literal

import orjson

from proxai.core.errors import TranslationError
from proxai.core.model import Protocol
from proxai.safety.redact import redact_json_value
from proxai.translate import ir
from proxai.translate.request import read_request

#: top-level fields left out of a body compared as JSON (the reader leaves them out as well)
IGNORED_FIELDS = frozenset(
    {
        "metadata", "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention",
        "client_metadata", "temperature", "top_p", "top_k", "seed", "service_tier", "store",
        "stream_options", "include", "context_management",
    }
)  # fmt: skip
#: client blocks inside a user turn whose dates and times are masked like system text's
CONTEXT_TAGS = ("<environment_context>", "<system-reminder>")
BILLING_LINE = re.compile(r"^x-anthropic-billing-header:.*$\n?", re.M)
#: the run id and the duration a client's shell tool writes into its result (Codex's exec_command)
TOOL_RUN_LINES = re.compile(r"^(Chunk ID: )\S+$|^(Wall time: )\d+(?:\.\d+)? seconds$", re.M)

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_DAY = r"(?:Mon|Tue(?:s)?|Wed(?:nes)?|Thu(?:rs)?|Fri|Sat(?:ur)?|Sun)(?:day)?,?\s+"
DATE_TIME = re.compile(
    "|".join(
        (
            # 2026-12-01, 2026-12-01T08:15:00.123Z, 2026/12/01 08:15
            r"\b\d{4}[-/]\d{2}[-/]\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?",
            # Monday, December 1, 2026 / Dec 1st 2026 / 1 December 2026
            rf"(?:{_DAY})?\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b",
            rf"(?:{_DAY})?\b\d{{1,2}}\s+{_MONTH}\.?,?\s+\d{{4}}\b",
            # 08:15, 08:15:00, 8:15 pm, with a zone offset or Z
            r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?(?:[AaPp][Mm]\b|[AaPp]\.[Mm]\.))?(?:Z|\s?[+-]\d{2}:?\d{2}|\s?UTC)?(?!\d)",
        )
    )
)
MASK = "<date-time>"

PieceKind = Literal["model", "system", "message", "tool", "setting"]


@dataclass(frozen=True, slots=True)
class Piece:
    """One comparable part of a request: the client's field, what it is, its normalized value."""

    name: str  # the client's own field: ``messages[3].content[0]``, ``tools[2]``, ``max_tokens``
    kind: PieceKind
    what: str  # "user text", "assistant tool call", "tool result", "system text", "tool", ...
    value: str  # canonical JSON of the normalized content (what is compared)
    show: str = ""  # the same for a reader: a text part's text (empty: ``value``)

    @property
    def shown(self) -> str:
        return self.show or self.value


@dataclass(frozen=True, slots=True)
class Conversation:
    """A request as replay compares it. ``key`` is equal exactly when the pieces are."""

    protocol: Protocol
    model: str | None
    pieces: tuple[Piece, ...]
    read_as: Literal["reader", "json"]  # "json": the reader refused the body (``refused`` says why)
    refused: str | None = None

    @property
    def key(self) -> str:
        h = hashlib.sha256(str(self.protocol).encode())
        for p in self.pieces:
            h.update(b"\x00" + p.kind.encode() + b"\x00" + p.value.encode())
        return h.hexdigest()


def mask_dates(text: str) -> str:
    """``text`` with every date and time replaced by one marker."""
    return DATE_TIME.sub(MASK, text)


def system_text(text: str) -> str:
    """System text as compared: no billing-header line, dates and times masked."""
    masked: str = _SYSTEM.get(text, _system_text, text)
    return masked


def _system_text(text: str) -> str:
    return mask_dates(BILLING_LINE.sub("", text))


def tool_output(text: str) -> str:
    """A tool result's text as compared: its run id and wall time lines masked."""
    return TOOL_RUN_LINES.sub(lambda m: "Chunk ID: <id>" if m.group(1) else "Wall time: <seconds>", text)


def _canon(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=_default).decode()


def _default(value: object) -> object:
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(type(value).__name__)


#: how much ``_masked`` / ``system_text`` remember: at most this many answers, of values that
#: add up to at most this many characters (a memo past either is emptied), each at most MEMO_VALUE
MEMO_ENTRIES = 4096
MEMO_CHARS = 32 * 1024 * 1024
MEMO_VALUE = 256 * 1024


class _Memo:
    """A bounded memory of a pure function of a string: an agent sends the whole conversation with
    every request, so its earlier messages and its system text come back each time."""

    __slots__ = ("answers", "chars")

    def __init__(self) -> None:
        self.answers: dict[str, Any] = {}
        self.chars = 0

    def get(self, key: str, work: Any, arg: Any) -> Any:
        found = self.answers.get(key, _MISSING)
        if found is not _MISSING:
            return found
        answer = work(arg)
        if len(key) <= MEMO_VALUE:
            if len(self.answers) >= MEMO_ENTRIES or self.chars + len(key) > MEMO_CHARS:
                self.answers.clear()
                self.chars = 0
            self.answers[key] = answer
            self.chars += len(key)
        return answer


_MISSING = object()
_MASKED = _Memo()
_SYSTEM = _Memo()
#: the body's lists whose items are masked one by one (each item's answer remembered)
_LISTS = ("messages", "input", "system", "tools")


def _masked(body: dict[str, Any]) -> dict[str, Any]:
    """``redact_json_value(body)``, item by item for the long lists (see ``_Memo``)."""
    out: dict[str, Any] = redact_json_value({k: v for k, v in body.items() if k not in _LISTS})
    for name in _LISTS:
        if name not in body:
            continue
        value = body[name]
        if isinstance(value, list):
            out[name] = [_MASKED.get(orjson.dumps(item).decode(), redact_json_value, item) for item in value]
        else:
            out[name] = redact_json_value(value)
    return out


def conversation(protocol: Protocol, body: dict[str, Any]) -> Conversation:
    """The conversation of a client request body of ``protocol`` (a parsed JSON object)."""
    body = _masked(body)
    try:
        req = read_request(body, protocol)
    except TranslationError as exc:
        return Conversation(
            protocol, _model(body), tuple(_json_pieces(body)), "json", f"{exc.field}: {exc.reason}"
        )
    return Conversation(protocol, req.model, tuple(_reader_pieces(req)), "reader")


def _model(body: dict[str, Any]) -> str | None:
    model = body.get("model")
    return model if isinstance(model, str) else None


# ---- read by the protocol's reader ----------------------------------------------------------------


def _reader_pieces(req: ir.RequestIR) -> Iterator[Piece]:
    yield Piece("model", "model", "model", _canon(req.model))
    for sys_part in req.system:
        text = system_text(sys_part.text)
        yield Piece(sys_part.at, "system", "system text", _canon(text), text)
    for m in req.messages:
        if not m.parts:
            yield Piece(m.at, "message", f"empty {m.role} message", _canon([m.role]))
        for part in m.parts:
            what, value = _part(m.role, part)
            show = _shown(value)
            yield Piece(part.at, "message", what, _canon([m.role, value]), show)
    for t in req.tools:
        tool = {f.name: getattr(t, f.name) for f in fields(t) if f.name not in ("at", "call_back")}
        yield Piece(t.at, "tool", f"tool {t.name!r}", _canon(tool))
    for x in req.left_out:
        yield Piece(x.at, "tool", x.what, _canon([x.what, x.name]))
    if req.web_search is not None:
        ws = req.web_search
        search = {f.name: getattr(ws, f.name) for f in fields(ws) if f.name != "at"}
        yield Piece(ws.at, "tool", "web search tool", _canon(search))
    if req.tool_choice is not None:
        tc = req.tool_choice
        yield Piece(tc.at, "setting", "tool choice", _canon([tc.mode, tc.name, tc.kind]))
    yield Piece("parallel_tool_calls", "setting", "setting", _canon(req.parallel_tool_calls))
    yield Piece(req.max_tokens_at, "setting", "token limit", _canon(req.max_tokens))
    yield Piece(req.stop_at, "setting", "stop sequences", _canon(req.stop))
    if req.reasoning is not None:
        r = req.reasoning
        value = [r.enabled, r.effort, r.budget, r.summary]
        yield Piece(r.at, "setting", "reasoning settings", _canon(value))
    yield Piece(req.json_schema_at, "setting", "output format", _canon([req.json_schema, req.json_object]))
    yield Piece("stream", "setting", "stream", _canon(req.stream))


def _shown(value: list[Any]) -> str:
    """What a divergence quotes of a part: its text (a tool result's texts), else its JSON."""
    if value[0] == "text":
        return str(value[1])
    if value[0] == "tool_result" and all(c[0] == "text" for c in value[2]):
        return "\n".join(str(c[1]) for c in value[2])
    return _canon(value)


def _part(role: str, part: ir.Part) -> tuple[str, list[Any]]:
    """(what the part is, its normalized value)."""
    match part:
        case ir.TextPart(text=text):
            if role == "system" or text.lstrip().startswith(CONTEXT_TAGS):
                text = system_text(text)
            return f"{role} text", ["text", text]
        case ir.ToolCallPart():
            return "assistant tool call", ["tool_call", part.id, part.name, part.kind, part.input]
        case ir.ToolResultPart():
            content = [
                ["text", tool_output(c.text)] if isinstance(c, ir.TextPart) else _part("tool", c)[1]
                for c in part.content
            ]
            return "tool result", ["tool_result", part.call_id, content, part.is_error]
        case ir.ThinkingPart():
            return "assistant thinking", ["thinking", part.text, part.signature]
        case ir.RedactedThinkingPart():
            return "assistant redacted thinking", ["redacted_thinking", part.data]
        case ir.RefusalPart():
            return "assistant refusal", ["refusal", part.text]
        case _:  # image, document
            kind = type(part).__name__.removesuffix("Part").lower()
            value = {f.name: getattr(part, f.name) for f in fields(part) if f.name != "at"}
            return f"{role} {kind}", [kind, value]


# ---- read as JSON (the reader refused the body) -------------------------------------------------


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _json_pieces(body: dict[str, Any]) -> Iterator[Piece]:
    yield Piece("model", "model", "model", _canon(body.get("model")))
    system = body.get("system", body.get("instructions"))
    name = "system" if "system" in body else "instructions"
    if isinstance(system, str):
        yield Piece(name, "system", "system text", _canon(system_text(system)))
    elif isinstance(system, list):
        for i, raw in enumerate(system):
            block = raw
            if isinstance(raw, dict) and isinstance(raw.get("text"), str):
                block = {**raw, "text": system_text(raw["text"])}
            yield Piece(f"{name}[{i}]", "system", "system text", _canon(_strip(block)))
    turns_name = "messages" if "messages" in body else "input"
    turns = body.get(turns_name)
    if isinstance(turns, list):
        for i, raw in enumerate(turns):
            what, turn = "item", raw
            if isinstance(raw, dict):
                what = f"{raw.get('role') or raw.get('type') or 'item'} message"
                turn = {k: v for k, v in raw.items() if k != "id"}
            yield Piece(f"{turns_name}[{i}]", "message", what, _canon(_strip(turn)))
    elif turns is not None:
        yield Piece(turns_name, "message", "user text", _canon(turns))
    skip = IGNORED_FIELDS | {"model", "system", "instructions", "messages", "input"}
    for key in sorted(k for k in body if k not in skip):
        kind: PieceKind = "tool" if key == "tools" else "setting"
        yield Piece(key, kind, "tools" if kind == "tool" else "setting", _canon(_strip(body[key])))


# ---- where two conversations differ -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first piece where a request differs from a recorded one."""

    common: int  # pieces equal before it
    name: str  # the request's field (or the recording's, when the request has fewer pieces)
    what: str
    recorded: str | None  # a short excerpt of the recorded value (None: the recording has no such piece)
    got: str | None  # the same of the request's

    def describe(self, where: str = "the recording") -> str:
        """One sentence; ``where`` names the recording compared with."""
        if self.recorded is None:
            return f"{self.name} ({self.what}) is new: {where} ends before it; got {self.got}"
        if self.got is None:
            return f"{self.name} ({self.what}) is missing: {where} has {self.recorded}"
        return f"{self.name} ({self.what}) differs from {where}: recorded {self.recorded}, got {self.got}"


_RANK = {"model": 0, "system": 1, "message": 2, "tool": 3, "setting": 4}


def divergence(request: Conversation, recorded: Conversation) -> Divergence | None:
    """Where ``request`` first differs from ``recorded`` (None: they match). A piece of an
    earlier kind on one side only (a message where the other side's tools begin) is new or
    missing rather than different."""
    a, b = request.pieces, recorded.pieces
    n = 0
    while n < len(a) or n < len(b):
        mine = a[n] if n < len(a) else None
        theirs = b[n] if n < len(b) else None
        if (
            mine is not None
            and theirs is not None
            and mine.value == theirs.value
            and mine.kind == theirs.kind
        ):
            n += 1
            continue
        if theirs is None or (mine is not None and _RANK[mine.kind] < _RANK[theirs.kind]):
            assert mine is not None
            return Divergence(n, mine.name, mine.what, None, excerpts("", mine.shown)[1])
        if mine is None or _RANK[mine.kind] > _RANK[theirs.kind]:
            return Divergence(n, theirs.name, theirs.what, excerpts(theirs.shown, "")[0], None)
        rec, got = excerpts(theirs.shown, mine.shown)
        return Divergence(n, mine.name, mine.what, rec, got)
    return None


EXCERPT = 60


def excerpts(recorded: str, got: str) -> tuple[str, str]:
    """Short quoted excerpts of two values, around the first character where they differ."""
    i = 0
    for x, y in zip(recorded, got, strict=False):
        if x != y:
            break
        i += 1
    start = max(0, i - EXCERPT // 3)

    def cut(s: str) -> str:
        piece = (
            ("…" if start else "") + s[start : start + EXCERPT] + ("…" if start + EXCERPT < len(s) else "")
        )
        return orjson.dumps(piece).decode()  # quoted, newlines escaped

    return cut(recorded), cut(got)
