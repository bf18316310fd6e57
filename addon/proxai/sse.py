"""Incremental SSE scanner (WHATWG "event stream interpretation") and encoder.

Seed 001: the scanner lives in the observer and each chunk is scanned exactly once.
ARCHITECTURE.md: the cost must be linear in the bytes. A partial line is kept as a list of
pieces and only the newly fed bytes are searched for line terminators, so a multi-megabyte
``response.completed`` line read in hundreds of small pieces is never re-scanned or
re-concatenated per read. Line and event sizes are bounded: past the limit the scanner
raises ``SseLimitError`` and stays errored.

Spec notes (https://html.spec.whatwg.org/multipage/server-sent-events.html#parsing-an-event-stream):
- lines end with CRLF, LF or CR; a CR at the end of a chunk waits for the next byte;
- one UTF-8 BOM is stripped at the very start of the stream only;
- invalid UTF-8 is replaced with U+FFFD (line terminators are ASCII, so decoding line by
  line equals decoding the whole stream);
- ``:`` starts a comment; a line without a colon is a field with an empty value;
- one leading space is removed from a value;
- ``data`` lines are joined with ``\\n``; a block without data is not dispatched;
- the event type resets after each dispatch; the last event ID persists across events;
- an ``id`` containing NUL is ignored; ``retry`` takes ASCII digits only;
- an unfinished block at EOF is not dispatched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .errors import SseLimitError

DEFAULT_MAX_LINE = 16 * 1024 * 1024
DEFAULT_MAX_EVENT = 32 * 1024 * 1024

_TERMINATOR = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"
_COLON = 0x3A
_SPACE = 0x20


@dataclass(slots=True, frozen=True)
class SseEvent:
    """One dispatched event. ``raw`` is the block's bytes as they arrived (BOM excluded).

    ``payload`` is not part of the event's value (no constructor argument, not compared, not in
    the repr): the stream observer puts its parse of ``data`` there when it is a JSON object, so
    that a stream translator fed the same event does not parse it a second time
    (docs/performance.md). Nobody may mutate it; ``None``: not parsed (parse ``data``).
    """

    event: str
    data: str
    id: str
    raw: bytes = b""
    payload: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)


_EVENT_FIELDS = ("event", "data", "id", "raw", "payload")
assert tuple(SseEvent.__slots__) == _EVENT_FIELDS, "update _new_event with SseEvent's fields"
_object_new = object.__new__
_set_event = SseEvent.__dict__["event"].__set__
_set_data = SseEvent.__dict__["data"].__set__
_set_id = SseEvent.__dict__["id"].__set__
_set_raw = SseEvent.__dict__["raw"].__set__
_set_payload = SseEvent.__dict__["payload"].__set__
set_payload = _set_payload  # ``set_payload(event, obj)``: the observer's parse of ``event.data``


def _new_event(event: str, data: str, id: str, raw: bytes) -> SseEvent:
    """``SseEvent(event, data, id, raw)`` at half the cost: a frozen dataclass ``__init__``
    pays for ``object.__setattr__`` per field; this sets the slots through their descriptors.
    The hot path creates one event per SSE event (docs/performance.md)."""
    ev: SseEvent = _object_new(SseEvent)
    _set_event(ev, event)
    _set_data(ev, data)
    _set_id(ev, id)
    _set_raw(ev, raw)
    _set_payload(ev, None)
    return ev


class SseScanner:
    """Feed bytes, get dispatched events. Chunking never changes the result."""

    __slots__ = (
        "_block_size",
        "_bom_pending",
        "_cr_pending",
        "_data",
        "_data_size",
        "_errored",
        "_event_type",
        "_last_id",
        "_line_parts",
        "_line_size",
        "_raw_parts",
        "max_event",
        "max_line",
        "retry",
    )

    def __init__(self, max_line: int = DEFAULT_MAX_LINE, max_event: int = DEFAULT_MAX_EVENT) -> None:
        self.max_line = max_line
        self.max_event = max_event
        self.retry: int | None = None
        self._bom_pending: bytes | None = b""  # None once the BOM question is settled
        self._cr_pending = False
        self._line_parts: list[bytes] = []
        self._line_size = 0
        self._raw_parts: list[bytes] = []
        self._block_size = 0
        self._data: list[str] = []
        self._data_size = 0
        self._event_type = ""
        self._last_id = ""
        self._errored: SseLimitError | None = None

    # -- public API -------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[SseEvent]:
        if self._errored is not None:
            self._errored.events = []
            raise self._errored
        out: list[SseEvent] = []
        if not data:
            return out
        if self._bom_pending is not None:
            data = self._strip_bom(data)
            if not data:
                return out
        try:
            self._scan(data, out)
        except SseLimitError as exc:
            exc.events = out  # the events completed before the limit (chunking-independent)
            self._errored = exc
            raise
        return out

    def close(self) -> list[SseEvent]:
        """End of stream. A pending CR still ends its line; an unfinished block is dropped."""
        if self._errored is not None:
            self._errored.events = []
            raise self._errored
        out: list[SseEvent] = []
        try:
            if self._bom_pending:
                # Fewer than three bytes arrived and they were a BOM prefix: they are content.
                pending, self._bom_pending = self._bom_pending, None
                self._scan(pending, out)
            if self._cr_pending:
                self._cr_pending = False
                self._end_line(b"", b"", out)
        except SseLimitError as exc:
            exc.events = out
            self._errored = exc
            raise
        self._line_parts.clear()
        self._raw_parts.clear()
        self._data.clear()
        self._line_size = self._block_size = self._data_size = 0
        self._event_type = ""
        return out

    @property
    def last_event_id(self) -> str:
        return self._last_id

    @property
    def pending_bytes(self) -> int:
        """Bytes fed since the last complete block (event or blank-line-ended block): the
        unfinished block, a pending CR and a pending BOM prefix included. At most ``max_event``."""
        return self._block_size + (len(self._bom_pending) if self._bom_pending else 0)

    # -- internals --------------------------------------------------------------------------

    def _strip_bom(self, data: bytes) -> bytes:
        assert self._bom_pending is not None
        head = self._bom_pending + data
        if len(head) < 3 and _BOM.startswith(head):
            self._bom_pending = head
            return b""
        self._bom_pending = None
        return head[3:] if head.startswith(_BOM) else head

    def _scan(self, data: bytes, out: list[SseEvent]) -> None:
        if not self._cr_pending and b"\r" not in data:
            self._scan_lf(data, out)
            return
        pos = 0
        n = len(data)
        if self._cr_pending:
            self._cr_pending = False
            if data[0] == 0x0A:  # the LF of a CRLF split across chunks
                self._end_line(b"", b"\n", out)
                pos = 1
            else:
                self._end_line(b"", b"", out)
        for m in _TERMINATOR.finditer(data, pos):
            end = m.end()
            if end == n and data[end - 1] == 0x0D:
                # A CR at the very end: it may be the first half of a CRLF.
                self._add_partial(data, pos, m.start())
                self._raw_parts.append(data[pos:end])
                self._block_size += end - pos
                self._check_event_size()
                self._cr_pending = True
                return
            self._end_line(data[pos : m.start()], data[pos:end], out)
            pos = end
        if pos < n:
            self._add_partial(data, pos, n)
            self._raw_parts.append(data[pos:n])
            self._block_size += n - pos
            self._check_event_size()

    def _scan_lf(self, data: bytes, out: list[SseEvent]) -> None:
        """The common case, a chunk with LF terminators only: the same rules as ``_scan`` +
        ``_end_line`` + ``_dispatch``, inlined. The chunk is split once in C; a block's raw
        bytes are sliced from the chunk once at dispatch instead of collected line by line."""
        max_line = self.max_line
        max_event = self.max_event
        lines = data.split(b"\n")
        rest = lines.pop()  # the unfinished last line (b"" when the chunk ends with LF)
        pos = 0  # offset in ``data`` just past the current line
        raw_start = 0  # where the current block's bytes begin in ``data``
        if lines and self._line_parts:  # the first line continues a partial line
            pos = -self._line_size
            self._line_parts.append(lines[0])
            lines[0] = b"".join(self._line_parts)
            self._line_parts.clear()
            self._line_size = 0
        for line in lines:
            pos += len(line) + 1
            if not line:  # blank line: dispatch
                if self._data:
                    raw = data[raw_start:pos]
                    if self._raw_parts:
                        self._raw_parts.append(raw)
                        raw = b"".join(self._raw_parts)
                        self._raw_parts.clear()
                    d = self._data
                    text = d[0] if len(d) == 1 else "\n".join(d)
                    d.clear()
                    self._data_size = 0
                    out.append(_new_event(self._event_type or "message", text, self._last_id, raw))
                else:
                    self._raw_parts.clear()
                self._event_type = ""
                self._block_size = 0
                raw_start = pos
                continue
            if len(line) > max_line:
                raise SseLimitError("line", max_line)
            if self._block_size + (pos - raw_start) + self._data_size > max_event:
                raise SseLimitError("event", max_event)
            if line[:7] == b"event: ":  # the commonest non-data line, shortcut
                self._event_type = line[7:].decode("utf-8", "replace")
            elif line[0] != _COLON:  # not a comment
                self._field(line, pos - raw_start)
        # The rest of the block so far (complete lines and a partial one) is kept for ``raw``.
        n = len(data)
        if raw_start < n:
            self._raw_parts.append(data[raw_start:] if raw_start else data)
            self._block_size += n - raw_start
        if rest:
            self._line_size += len(rest)
            if self._line_size > max_line:
                raise SseLimitError("line", max_line)
            self._line_parts.append(rest)
        self._check_event_size()

    def _add_partial(self, data: bytes, start: int, stop: int) -> None:
        if stop <= start:
            return
        self._line_size += stop - start
        if self._line_size > self.max_line:
            raise SseLimitError("line", self.max_line)
        self._line_parts.append(data[start:stop])

    def _check_event_size(self) -> None:
        if self._block_size + self._data_size > self.max_event:
            raise SseLimitError("event", self.max_event)

    def _end_line(self, tail: bytes, raw_tail: bytes, out: list[SseEvent]) -> None:
        """A line is complete: ``tail`` is its last piece, ``raw_tail`` adds the terminator."""
        if self._line_parts:
            self._line_parts.append(tail)
            line = b"".join(self._line_parts)
            self._line_parts.clear()
            self._line_size = 0
        else:
            line = tail
        if len(line) > self.max_line:
            raise SseLimitError("line", self.max_line)
        if raw_tail:
            self._raw_parts.append(raw_tail)
            self._block_size += len(raw_tail)
        if not line:
            self._dispatch(out)
            return
        self._check_event_size()  # a block of comment lines alone must not grow without bound
        if line[0] != _COLON:  # not a comment
            self._field(line, 0)

    def _field(self, line: bytes, unaccounted: int) -> None:
        """Interpret one non-empty, non-comment line. ``unaccounted``: bytes of the current block
        not yet added to ``_block_size`` (the LF fast path adds them at the end of the chunk)."""
        if line[:6] == b"data: ":
            field, value = b"data", line[6:]
        else:
            colon = line.find(b":")
            if colon < 0:
                field, value = line, b""
            else:
                field = line[:colon]
                start = colon + 1
                if start < len(line) and line[start] == _SPACE:
                    start += 1
                value = line[start:]
        if field == b"data":
            self._data.append(value.decode("utf-8", "replace"))
            self._data_size += len(value) + 1
            if self._block_size + unaccounted + self._data_size > self.max_event:
                raise SseLimitError("event", self.max_event)
        elif field == b"event":
            self._event_type = value.decode("utf-8", "replace")
        elif field == b"id":
            if b"\x00" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif field == b"retry" and value and value.isdigit() and value.isascii():
            self.retry = int(value)
        # any other field is ignored

    def _dispatch(self, out: list[SseEvent]) -> None:
        raw = b"".join(self._raw_parts) if len(self._raw_parts) != 1 else self._raw_parts[0]
        self._raw_parts.clear()
        self._block_size = 0
        if not self._data:
            self._event_type = ""
            return
        data = self._data[0] if len(self._data) == 1 else "\n".join(self._data)
        self._data.clear()
        self._data_size = 0
        out.append(_new_event(self._event_type or "message", data, self._last_id, raw))
        self._event_type = ""


def encode_event(data: str | bytes, event: str | None = None, id: str | None = None) -> bytes:
    """Serialize one SSE event. Newlines in ``data`` become several ``data:`` lines."""
    parts: list[bytes] = []
    if event is not None:
        parts.append(b"event: " + event.encode() + b"\n")
    if id is not None:
        parts.append(b"id: " + id.encode() + b"\n")
    raw = data.encode() if isinstance(data, str) else data
    if b"\n" not in raw and b"\r" not in raw:
        parts.append(b"data: " + raw + b"\n\n")
    else:
        for line in _TERMINATOR.split(raw):
            parts.append(b"data: " + line + b"\n")
        parts.append(b"\n")
    return b"".join(parts)
