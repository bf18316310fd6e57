"""Incremental SSE scanner (WHATWG "event stream interpretation") and encoder.

The rules are docs/design/scanner.md's. The scanner lives in the observer and each chunk is scanned
exactly once (docs/design/README.md, "Following one chunk"), and the cost must be linear in the
bytes (docs/design/core.md, "Bounded and linear"). A partial line is kept as a list of
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
- a comment line is no event: it is counted (``comment_lines``) and, for a reader that asks
  (``comments`` a list), kept with its place among the events of the call, for a writer that
  carries a gateway's keep-alive to its client (docs/design/scanner.md, "Comment lines");
- one leading space is removed from a value;
- ``data`` lines are joined with ``\\n``; a block without data is not dispatched; the OpenAI SDKs
  do dispatch one that has an ``event``, ``id`` or ``retry`` line, or any blank line once an ``id``
  came, and fail to parse its empty data: ``dataless`` marks where such blocks were
  (docs/design/conformance.md);
- the event type resets after each dispatch; the last event ID persists across events;
- an ``id`` containing NUL is ignored; ``retry`` takes ASCII digits only (a value the Python SDKs'
  ``int()`` reads, ``+5`` or ``-1``, still marks its block for ``dataless``);
- an unfinished block at EOF is not dispatched.

Two ways to read the same events: ``feed`` returns ``SseEvent`` objects (tests, the translation
of a buffered body); ``feed_payloads`` returns ``Payloads``, one ``(type, data)`` tuple per event
and no event objects, for the carrier's flows, observed, guarded or translated
(docs/performance.md). Its fast path takes runs of the two block shapes LLM APIs send,
``data: V`` and ``event: T`` + ``data: V`` (LF only): the read is split at its blank lines in C,
and each block is one of the two shapes or the run goes to the general rules; every other block,
a CR, a BOM, a block near a limit, a comment line, goes through the same general rules as ``feed``. Both give
the same events, errors and limits for any chunking (tests/hardening/test_sse_fuzz.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from proxai.core.errors import SseLimitError

DEFAULT_MAX_LINE = 16 * 1024 * 1024
DEFAULT_MAX_EVENT = 32 * 1024 * 1024

_TERMINATOR = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"
# after a BOM: the first line's field name (``data``, ``event``: six bytes show which), up to its colon
_FIRST_FIELD = re.compile(rb"[^:\r\n]*")
_ENDS_FIELD = re.compile(rb"[:\r\n]")
_FIELD_SEEN = 6
_COLON = 0x3A
_SPACE = 0x20
_LF = 0x0A
# A byte is looked for as an int (``_CR in data``), one memchr (docs/performance.md, "Why the hot
# code looks so").
_CR = 0x0D

# The fast path keeps at most this much of an unfinished block itself (a longer one goes to the
# general rules, which never re-join a long line's pieces per read).
LEAN_MAX = 1024 * 1024
_MAX_NAMES = 256
MAX_DATALESS = 64


@dataclass(slots=True, frozen=True)
class SseEvent:
    """One dispatched event. ``raw`` is the block's bytes as they arrived (BOM excluded)."""

    event: str
    data: str
    id: str
    raw: bytes = b""


_EVENT_FIELDS = ("event", "data", "id", "raw")
assert tuple(SseEvent.__slots__) == _EVENT_FIELDS, "update _new_event with SseEvent's fields"
_object_new = object.__new__
_set_event = SseEvent.__dict__["event"].__set__
_set_data = SseEvent.__dict__["data"].__set__
_set_id = SseEvent.__dict__["id"].__set__
_set_raw = SseEvent.__dict__["raw"].__set__


def _new_event(event: str, data: str, id: str, raw: bytes) -> SseEvent:
    """``SseEvent(event, data, id, raw)`` at half the cost: a frozen dataclass ``__init__``
    pays for ``object.__setattr__`` per field; this sets the slots through their descriptors.
    The hot path creates one event per SSE event (docs/performance.md)."""
    ev: SseEvent = _object_new(SseEvent)
    _set_event(ev, event)
    _set_data(ev, data)
    _set_id(ev, id)
    _set_raw(ev, raw)
    return ev


# What ``SseScanner.feed_payloads`` returns: one ``(type, data)`` tuple per event, in stream order.
# ``type``: the event type line's raw bytes, ``None`` without one, or the type as text (read it
# with ``event_name``); ``data``: the payload's bytes (the same text the general rules would
# decode, valid UTF-8 or not) or its text.
type RawName = bytes | str | None
type Payload = tuple[RawName, bytes | str]
type Payloads = list[Payload]

# Raw event type -> the type ``feed`` gives (``message`` when absent or empty); at most
# ``_MAX_NAMES`` distinct types are remembered (untrusted input).
EVENT_NAMES: dict[bytes | None, str] = {None: "message", b"": "message"}


def event_name(raw: RawName) -> str:
    """The event type of a ``Payloads`` entry."""
    if isinstance(raw, str):
        return raw
    name = EVENT_NAMES.get(raw)
    if name is None:
        assert raw is not None
        name = raw.decode("utf-8", "replace") or "message"
        if len(EVENT_NAMES) < _MAX_NAMES:
            EVENT_NAMES[raw] = name
    return name


def iter_payloads(payloads: Payloads) -> Iterator[tuple[str, bytes | str]]:
    """``(type, data)`` per event of ``payloads``, the type as ``feed`` gives it."""
    for raw, data in payloads:
        yield event_name(raw), data


def payloads_of(events: list[SseEvent]) -> Payloads:
    """``Payloads`` of event objects."""
    return [(e.event, e.data) for e in events]


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
        "_general",
        "_held",
        "_held_len",
        "_last_id",
        "_lean_max",
        "_line_parts",
        "_line_size",
        "_raw_parts",
        "_rest",
        "_retry_block",
        "bom",
        "comment_lines",
        "comments",
        "dataless",
        "max_event",
        "max_line",
        "retry",
    )

    def __init__(self, max_line: int = DEFAULT_MAX_LINE, max_event: int = DEFAULT_MAX_EVENT) -> None:
        self.max_line = max_line
        self.max_event = max_event
        self.retry: int | None = None
        self._bom_pending: bytes | None = b""  # None once the BOM question is settled
        # the stream began with a BOM: the field name of its first line (``b"data"``, ``b"event"``,
        # ``b""`` for a comment), else None
        self.bom: bytes | None = None
        self._cr_pending = False
        self._line_parts: list[bytes] = []
        self._line_size = 0
        self._raw_parts: list[bytes] = []
        self._block_size = 0
        self._data: list[str] = []
        self._data_size = 0
        self._event_type = ""
        self._last_id = ""
        self._retry_block = False  # the current block has a valid ``retry`` line
        # Data-less blocks an SDK dispatches (``_mark_dataless``): (index of the event that follows
        # in the list the call returns, whether the block had an ``event`` line). The reader
        # empties it; at most ``MAX_DATALESS`` are kept between two reads.
        self.dataless: list[tuple[int, bool]] = []
        # Comment lines (``_comment``): how many in the stream so far, and, when the reader asks
        # for them (a list instead of ``None``), the lines themselves by place: (index of the event
        # that follows in the list the call returns, the lines there, without their terminators).
        # The reader empties it after each call, so it holds at most one call's comment lines, at
        # most one entry per event of that call plus one.
        self.comment_lines = 0
        self.comments: list[tuple[int, list[bytes]]] | None = None
        self._errored: SseLimitError | None = None
        # The fast path (``feed_payloads``) holds the unfinished block unscanned: in ``_rest``,
        # or, once it spans reads that end no block, in pieces (``_held``, joined once when the
        # block ends; one of the two is empty). No block within ``_lean_max`` bytes can reach a
        # limit: a line is at most the block, and an event counts its bytes plus its data's, at
        # most twice the block.
        self._rest = b""
        self._held: list[bytes] = []
        self._held_len = 0
        # The general rules hold an unfinished block, the BOM question is open, or an error stuck.
        self._general = True
        self._lean_max = max(0, min(LEAN_MAX, max_line, (max_event - 2) // 2))

    # -- public API -------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[SseEvent]:
        if self._errored is not None:
            self._errored.events = []
            raise self._errored
        out: list[SseEvent] = []
        if self._rest or self._held:  # ``feed_payloads`` held an unfinished block: it comes first
            data = self._take_held() + data
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
            self._general = True  # errors stick: every later call raises
            raise
        return out

    def feed_payloads(self, data: bytes) -> Payloads:
        """``feed`` without event objects: the events' types and data (no id, no raw bytes) as
        ``Payloads``, the same events, errors and limits. A ``SseLimitError`` carries its
        ``events`` as ``feed``'s."""
        if self._general or _CR in data:
            return self._general_payloads(data)
        blocks = data.split(b"\n\n")  # the blocks these bytes end, then the unfinished one
        n = len(data)
        held = self._rest
        if held or self._held:
            if n and data[0] == _LF and (self._held[-1] if self._held else held)[-1] == _LF:
                data = self._take_held() + data  # the blank line spans the two reads
                blocks = data.split(b"\n\n")
                n = len(data)
            elif len(blocks) == 1:
                return self._hold(data) if n else []  # the held block does not end here
            else:
                if self._held:
                    held = self._take_held()
                blocks[0] = held + blocks[0]
                n += len(held)
        elif len(blocks) == 1:
            if n and data[0] == _LF:  # a blank line first
                return self._general_payloads(data)
            return self._hold(data) if n else []
        rest = blocks.pop()
        # (near a limit, or a blank line after the last block: the general rules)
        if n <= self._lean_max and rest[:1] != b"\n":
            out: Payloads = []
            for b in blocks:  # ``data: V`` or ``event: T`` + ``data: V``, no LF in T nor V
                v = b.removeprefix(b"data: ")
                if v is b:  # not a data line: an event line, then one data line
                    head, sep, v = b.partition(b"\ndata: ")
                    t = head.removeprefix(b"event: ")
                    if not sep or t is head or _LF in t or _LF in v:
                        break
                    out.append((t, v))
                elif _LF in v:
                    break
                else:
                    out.append((None, v))
            else:
                self._rest = rest
                return out
        # a block of another shape: the general rules for all of it
        self._rest = b""
        return self._general_payloads(b"\n\n".join([*blocks, rest]))

    def close_payloads(self) -> Payloads:
        """``close`` for ``feed_payloads``."""
        return payloads_of(self.close())

    def close(self) -> list[SseEvent]:
        """End of stream. A pending CR still ends its line; an unfinished block is dropped."""
        if self._errored is not None:
            self._errored.events = []
            raise self._errored
        out: list[SseEvent] = []
        try:
            if self._rest or self._held:  # an unfinished block: its complete lines count (``id``, ``retry``)
                self.feed(b"")
            if self._bom_pending:
                # Fewer than three bytes arrived and they were a BOM prefix (content), or a BOM
                # and the start of a first line that never ended
                pending, self._bom_pending = self._bom_pending, None
                if pending.startswith(_BOM):
                    pending = pending[3:]
                    self.bom = _first_field(pending)
                self._scan(pending, out)
            if self._cr_pending:
                self._cr_pending = False
                self._end_line(b"", b"", out)
        except SseLimitError as exc:
            exc.events = out
            self._errored = exc
            self._general = True  # errors stick: every later call raises
            raise
        self._line_parts.clear()
        self._raw_parts.clear()
        self._data.clear()
        self._line_size = self._block_size = self._data_size = 0
        self._event_type = ""
        self._retry_block = False
        return out

    @property
    def last_event_id(self) -> str:
        return self._last_id

    @property
    def pending_bytes(self) -> int:
        """Bytes fed since the last complete block (event or blank-line-ended block): the
        unfinished block, a pending CR and a pending BOM prefix included. At most ``max_event``."""
        held = len(self._rest) + self._held_len
        return self._block_size + held + (len(self._bom_pending) if self._bom_pending else 0)

    # -- internals --------------------------------------------------------------------------

    def _take_held(self) -> bytes:
        """The fast path's unfinished block, which it no longer holds."""
        if self._held:
            data = b"".join(self._held)
            self._held.clear()
            self._held_len = 0
        else:
            data = self._rest
        self._rest = b""
        return data

    def _hold(self, data: bytes) -> Payloads:
        """``data`` ends no block: the fast path keeps it (the general rules take a block that
        grows past ``_lean_max``)."""
        held = self._held
        if not held and self._rest:
            held.append(self._rest)
            self._held_len = len(self._rest)
            self._rest = b""
        held.append(data)
        self._held_len += len(data)
        return self._general_payloads(b"") if self._held_len > self._lean_max else []

    def _general_payloads(self, data: bytes) -> Payloads:
        """The general rules for ``data`` (after any carried block), then back to the fast path
        when the general scanner's unfinished block can be handed back: its bytes are all it
        holds (no CR pending, none in the block, within ``_lean_max``), and re-reading them
        later gives the same events (only ``id`` / ``retry`` lines write state that outlives a
        block, and writing them again is idempotent)."""
        out = payloads_of(self.feed(data))
        size = self._block_size
        self._general = True
        if self._bom_pending is not None:
            return out
        if size == 0:
            self._general = False
            return out
        if self._cr_pending or size > self._lean_max:
            return out
        raw = b"".join(self._raw_parts)
        if _CR in raw or len(raw) != size:
            return out
        if self.comment_lines and (raw[:1] == b":" or b"\n:" in raw):
            return out  # a comment line in it is read once: the block is not read again
        self._raw_parts.clear()
        self._line_parts.clear()
        self._data.clear()
        self._line_size = self._block_size = self._data_size = 0
        self._event_type = ""
        self._retry_block = False  # the block's lines are read again
        self._rest = raw
        self._general = False
        return out

    def _strip_bom(self, data: bytes) -> bytes:
        """The stream's first bytes: a BOM is stripped (the standard; the Node SDKs' decoders too),
        once what follows it shows the first line's field (``bom``: the Python SDKs keep the BOM in
        that field's name, so they lose the line)."""
        assert self._bom_pending is not None
        head = self._bom_pending + data
        if len(head) < 3 and _BOM.startswith(head):
            self._bom_pending = head
            return b""
        if not head.startswith(_BOM):
            self._bom_pending = None
            return head
        after = head[3:]
        if len(after) < _FIELD_SEEN and not _ENDS_FIELD.search(after):
            self._bom_pending = head  # the first field's name is not known yet
            return b""
        self._bom_pending = None
        self.bom = _first_field(after)
        return after

    def _scan(self, data: bytes, out: list[SseEvent]) -> None:
        if not self._cr_pending and _CR not in data:
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
                if self._line_parts:
                    # It ends a line with content: counted now, as a whole CRLF line is.
                    # A CR alone may be a blank line, whose terminator is never checked
                    # (it ends the block), so the limit does not depend on where reads end.
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
                    if self._retry_block:
                        self._retry_block = False
                else:
                    self._raw_parts.clear()
                    if self._event_type or self._last_id or self._retry_block:
                        self._mark_dataless(len(out))
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
            else:
                self._comment(line, len(out))
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
        else:
            self._comment(line, len(out))

    def _comment(self, line: bytes, index: int) -> None:
        """A comment line (not an event; a gateway's keep-alive), before the event at ``index`` of
        the list being built: counted, and kept for the reader when it asked (``comments``)."""
        self.comment_lines += 1
        kept = self.comments
        if kept is not None:
            if kept and kept[-1][0] == index:
                kept[-1][1].append(line)
            else:
                kept.append((index, [line]))

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
        elif field == b"retry" and value:
            if value.isdigit() and value.isascii():
                self.retry = int(value)
                self._retry_block = True
            elif _python_int(value):  # not a retry to the standard, but openai-python keeps it
                self._retry_block = True
        # any other field is ignored

    def _dispatch(self, out: list[SseEvent]) -> None:
        raw = b"".join(self._raw_parts) if len(self._raw_parts) != 1 else self._raw_parts[0]
        self._raw_parts.clear()
        self._block_size = 0
        if not self._data:
            if self._event_type or self._last_id or self._retry_block:
                self._mark_dataless(len(out))
            self._event_type = ""
            return
        data = self._data[0] if len(self._data) == 1 else "\n".join(self._data)
        self._data.clear()
        self._data_size = 0
        out.append(_new_event(self._event_type or "message", data, self._last_id, raw))
        self._event_type = ""
        self._retry_block = False

    def _mark_dataless(self, index: int) -> None:
        """A block ends without data but with what makes an SDK dispatch it anyway."""
        if len(self.dataless) < MAX_DATALESS:
            self.dataless.append((index, self._event_type != ""))
        self._retry_block = False


def _first_field(line: bytes) -> bytes:
    """The field name a line starts with (up to its colon or its end)."""
    m = _FIRST_FIELD.match(line)
    return m.group() if m is not None else b""


def _python_int(value: bytes) -> bool:
    """The Python SDKs' decoders keep a ``retry`` value that ``int()`` reads (``+5``, ``-1``, ``1_0``,
    `` 5``, digits of other scripts), and then dispatch the block even without data."""
    try:
        int(value.decode("utf-8"))
    except ValueError:
        return False
    return True


def encode_event(data: str | bytes, event: str | None = None, id: str | None = None) -> bytes:
    """Serialize one SSE event. Newlines in ``data`` become several ``data:`` lines."""
    parts: list[bytes] = []
    if event is not None:
        parts.append(b"event: " + event.encode() + b"\n")
    if id is not None:
        parts.append(b"id: " + id.encode() + b"\n")
    raw = data.encode() if isinstance(data, str) else data
    if _LF not in raw and _CR not in raw:
        parts.append(b"data: " + raw + b"\n\n")
    else:
        for line in _TERMINATOR.split(raw):
            parts.append(b"data: " + line + b"\n")
        parts.append(b"\n")
    return b"".join(parts)
