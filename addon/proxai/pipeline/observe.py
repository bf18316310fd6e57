"""The stream observer: the carrier-side half of observation, sans-IO (docs/design/README.md).

The carrier and the protocol observer split the work ("Following one chunk"): the carrier owns the
bytes, the recent 16 KiB tail, counts and timing; it scans each chunk exactly once with one
``SseScanner`` and hands the events to the protocol state (``proxai.protocols.*``), which owns
terminal event, tool-call completion and the outcome. ``StreamObserver`` is that carrier state; the
mitmproxy shell feeds it DECODED body bytes with a ``now`` from its own clock (nothing here reads a
clock) through ``observe_payloads``, which returns the chunk's events (``sse.Payloads``, one
``(type, data)`` tuple each: the carrier counts them; on a translated flow the grammar has fed the
writer from the same reading) (``observe``: the number of events;
``feed``: event objects, for tests). ``observe_body`` runs a whole body (non-streamed JSON, or a
buffered SSE body) through the same observers.

Problems never escape ``observe_payloads`` / ``observe`` / ``feed``: the first typed problem is
kept in ``failed`` and in the summary's ``error``:

- an SSE line / event over the limit (``SseLimitError``): error kind ``stream_limit``, outcome
  ``error``; observing stops there (bytes, chunks and the tail are still counted);
- malformed JSON, a payload of the wrong shape, a protocol violation
  (``UpstreamProtocolError``): kind ``upstream_protocol``, outcome ``error``; the protocol state
  stays errored and interprets no further events (an empty JSON tail is tolerated);
- an HTTP status >= 400: outcome ``error``; the body (JSON error object, SSE error events or
  text, buffered up to ``Limits.max_event``) gives the message and the kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from proxai.core import sse
from proxai.core.errors import ProxaiError, SseLimitError
from proxai.core.errors.kinds import error_message
from proxai.core.model import Counts, ErrorInfo, ErrorKind, Protocol, StreamSummary, Timing, ToolCallInfo
from proxai.core.sse import Payloads, SseEvent, SseScanner, payloads_of
from proxai.protocols.anthropic import AnthropicGrammar
from proxai.protocols.chat import ChatGrammar
from proxai.protocols.common import Accum, GrammarBase
from proxai.protocols.conformance import NOTHING_ASKED, Asked, at_end
from proxai.protocols.fragments import per_fragment
from proxai.protocols.json_answer import AnthropicJsonGrammar, ChatJsonGrammar
from proxai.protocols.machine import Finding
from proxai.protocols.responses import ResponsesGrammar
from proxai.protocols.responses_sdk import keep_parsed
from proxai.stream.sink import Output, Phase

_NO_COMMENTS: list[tuple[int, list[bytes]]] = []  # (never appended to: ``comments`` is None)

__all__ = ["Limits", "OpenToolCall", "StreamObserver", "make_grammar", "observe_body"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on untrusted input; every field becomes a ``proxai_*`` option."""

    max_line: int = sse.DEFAULT_MAX_LINE
    max_event: int = sse.DEFAULT_MAX_EVENT
    tail_bytes: int = 16 * 1024
    max_tool_args: int = 8 * 1024 * 1024  # per call, kept to judge JSON validity
    max_capture: int = 4 * 1024 * 1024  # captured text/reasoning when capture=True


@dataclass(frozen=True, slots=True)
class OpenToolCall:
    """A started, unfinished tool call (the guard reads these)."""

    id: str | None
    name: str | None
    kind: str
    started_at: float
    last_progress_at: float
    arguments_bytes: int


_GRAMMARS: dict[Protocol, type[GrammarBase]] = {
    Protocol.ANTHROPIC_MESSAGES: AnthropicGrammar,
    Protocol.OPENAI_CHAT: ChatGrammar,
    Protocol.OPENAI_RESPONSES: ResponsesGrammar,
}


def make_grammar(
    protocol: Protocol,
    limits: Limits,
    capture: bool,
    output: Output | None = None,
    asked: Asked = NOTHING_ASKED,
) -> GrammarBase:
    """The one grammar of a flow: its summary accumulator and, when translating, its writer
    (``asked``: the request's custom tools tell a Responses grammar whose ``custom_tool_call`` is
    the client's; a ``json_schema`` format makes a Chat or Anthropic grammar keep the answer)."""
    acc = Accum(max_tool_args=limits.max_tool_args, max_capture=limits.max_capture, capture=capture)
    acc.per_fragment = per_fragment(protocol, asked)  # the SDKs' parses after every tool fragment
    if protocol is Protocol.OPENAI_RESPONSES:
        grammar = ResponsesGrammar(acc, output, asked.custom_tools)
        if asked.json_format and not asked.strict_tools:  # output_text.done's text openai-python parses
            keep_parsed(grammar, limits.max_tool_args)
        return grammar
    if asked.json_format:  # the answer a parse helper parses is kept (protocols/json_answer.py)
        if protocol is Protocol.OPENAI_CHAT:
            return ChatJsonGrammar(acc, output, limits.max_tool_args)
        return AnthropicJsonGrammar(acc, output, limits.max_tool_args, asked)
    return _GRAMMARS[protocol](acc, output)


class StreamObserver:
    """Observe one streamed response: ``headers``, ``observe_payloads`` (or ``feed``) per chunk,
    then ``end_payloads`` (optional: the events only the end completes) and ``finish``, or
    ``abort``."""

    __slots__ = (
        "_aborted",
        "_body",
        "_bytes",
        "_chunks",
        "_done",
        "_ended",
        "_first_event_at",
        "_first_token_at",
        "_gap",
        "_headers_at",
        "_prev_at",
        "_proto",
        "_scan",
        "_scanner",
        "_special",
        "_start",
        "_stopped",
        "_tail",
        "_tail_bytes",
        "_tail_cut",
        "_tail_from",
        "acc",
        "asked",
        "failed",
        "last_byte_at",
        "limits",
        "protocol",
    )

    def __init__(
        self,
        protocol: Protocol,
        *,
        start: float,
        limits: Limits = Limits(),
        capture: bool = False,
        output: Output | None = None,
        asked: Asked = NOTHING_ASKED,
    ) -> None:
        self.protocol = protocol
        # what the client's request asks of the SDKs' parse helpers (the end's conformance rules)
        self.asked = asked
        self.limits = limits
        self._start = start
        self._scanner = SseScanner(limits.max_line, limits.max_event)
        # the read's scanning: the payload path (``feed`` puts the event objects' scan here)
        self._scan = self._scanner.feed_payloads
        if output is not None:  # a writer writes the comment lines at their places
            self._scanner.comments = []
        # The flow's one reading of each event: the summary, and the writer of ``output`` when
        # the flow is translated (``proxai.pipeline.flow.build_flow`` gives it).
        self._proto = make_grammar(protocol, limits, capture, output, asked)
        # The protocol-neutral accumulator (read-only use: the guard reads its tool-call counts).
        self.acc = self._proto.acc
        # The last chunks, at most twice ``tail_bytes`` plus one chunk (joined and cut when longer):
        # they start after the first ``_tail_from`` bytes of the stream.
        self._tail: list[bytes] = []
        self._tail_from = 0
        self._tail_bytes = limits.tail_bytes
        self._tail_cut = 2 * limits.tail_bytes
        self._bytes = self._chunks = 0  # the summary's ``Counts`` (events: the grammar counts them)
        self.last_byte_at: float | None = None
        self.failed: ProxaiError | None = None
        self._headers_at: float | None = None
        self._first_event_at: float | None = None
        self._first_token_at: float | None = None
        self._prev_at = math.inf  # ``last_byte_at`` as a number (the first gap is -inf)
        self._gap = -math.inf  # the largest gap between chunks (-inf: fewer than two chunks)
        self._stopped = False  # a limit error: no more scanning
        self._body: bytearray | None = None  # the body of an HTTP error response
        self._special = False  # ``_stopped`` or ``_body``: ``observe_payloads``' one test
        self._done: StreamSummary | None = None
        self._aborted = False
        self._ended = False  # ``end_payloads`` ran

    # -- what the guard and the carrier read ------------------------------------------------------

    @property
    def terminal(self) -> bool:
        """The protocol's terminal event was seen."""
        return self._proto.acc.terminal

    @property
    def tail(self) -> bytes:
        """The last ``Limits.tail_bytes`` of stream bytes."""
        data = b"".join(self._tail)
        return data[len(data) - self._tail_bytes :] if len(data) > self._tail_bytes else data

    @property
    def pending_bytes(self) -> int | None:
        """Fed bytes that do not yet form a complete SSE block (the scanner's unfinished block);
        ``None`` once scanning stopped (a limit, or the end): then nothing is known."""
        return None if self._stopped or self._done is not None else self._scanner.pending_bytes

    @property
    def next_sequence_number(self) -> int:
        """Responses: the last seen ``sequence_number`` + 1 (0 for the other protocols)."""
        return self._proto.next_sequence_number

    @property
    def grammar(self) -> GrammarBase:
        """The protocol state machine (read-only use: diagnostics, tests)."""
        return self._proto

    @property
    def findings(self) -> list[Finding]:
        """The deviations the protocol grammar classified so far (quirk, repair, violation), in
        stream order, each with its rule and the index of its event."""
        return list(self._proto.acc.findings)

    @property
    def finished_tool_calls(self) -> int:
        """How many tool calls have finished so far (the guard judges arguments when it moves)."""
        return self._proto.acc.finished_tools

    def open_tool_calls(self) -> list[OpenToolCall]:
        return [
            OpenToolCall(t.id, t.name, t.kind, t.started_at, t.last_progress_at, t.nbytes)
            for t in self._proto.acc.open_tools()
        ]

    # -- the carrier's calls ------------------------------------------------------------------------

    def headers(self, status_code: int, now: float) -> None:
        """The response headers arrived."""
        self._headers_at = now
        self._proto.acc.status_code = status_code
        if status_code >= 400:
            self._body = bytearray()
            self._special = True

    def feed(self, chunk: bytes, now: float) -> list[SseEvent]:
        """One chunk of DECODED body bytes, scanned once; returns its events as objects (tests;
        the carrier takes ``observe_payloads``), observed as ``observe_payloads`` observes them.
        Never raises ``ProxaiError``."""
        events: list[SseEvent] = []
        scanner = self._scanner

        def scan(data: bytes) -> Payloads:
            try:
                got = scanner.feed(data)
            except SseLimitError as exc:
                events.extend(exc.events)
                raise
            events.extend(got)
            return payloads_of(got)

        self._scan = scan
        try:
            self.observe_payloads(chunk, now)
        finally:
            self._scan = scanner.feed_payloads
        return events

    def observe(self, chunk: bytes, now: float) -> int:
        """``feed`` for a flow that needs no event objects (observe-only, guarded or not): the
        same observation through the scanner's payload path; returns the number of events."""
        return len(self.observe_payloads(chunk, now))

    def observe_payloads(self, chunk: bytes, now: float, scanned: Payloads | None = None) -> Payloads:
        """``observe`` returning the events (the carrier's call on every flow): the same
        accounting, scanning, limits and observation, and the chunk's events as ``Payloads``
        (none when there was nothing to scan). The list is the caller's; nothing here reads it
        afterwards. ``scanned``: events scanned elsewhere (``observe_events``, ``end_payloads``),
        observed without ``chunk``'s accounting and scanning.

        Every observation goes through this one method (``feed`` too, through ``_scan``), the
        read's accounting and the grammar's call written out in it: the per-read Python calls
        they replace cost about 1.3% of the Chat observer (docs/performance.md, "The Chat
        observer, the per-read accounting and the Chat -> Anthropic pair, 2026-12-03 night")."""
        if scanned is None:
            if not chunk or self._done is not None:
                return []
            self._bytes += len(chunk)
            self._chunks += 1
            gap = now - self._prev_at
            if gap > self._gap:  # noqa: PLR1730 (no call to max per chunk)
                self._gap = gap
            self._prev_at = self.last_byte_at = now
            self._tail.append(chunk)
            if self._bytes - self._tail_from > self._tail_cut:
                self._cut_tail()
            if self._special:  # an error status's body (kept to read its message), or a limit hit
                body = self._body
                if body is not None and len(body) < self.limits.max_event:
                    body += chunk[: self.limits.max_event - len(body)]
                if self._stopped:
                    return []
            try:
                payloads = self._scan(chunk)
            except SseLimitError as exc:
                payloads = payloads_of(exc.events)
                self._limit(exc)
        else:
            payloads = scanned
        scanner = self._scanner
        if scanner.dataless or scanner.comments:
            self._observe_marked(payloads, now)
            if not payloads:
                return payloads
        elif payloads:
            self._proto.observe(payloads, now)
        else:
            return payloads
        if self._first_event_at is None:
            self._first_event_at = now
        proto = self._proto
        if self.failed is None and proto.failed is not None:
            self.failed = proto.failed
        if self._first_token_at is None and proto.acc.content_seen:
            self._first_token_at = now
        return payloads

    def observe_events(self, payloads: Payloads, now: float) -> None:
        """Events that were scanned elsewhere (a buffered body, a test's events), observed as the
        scanner's events are; no bytes are counted."""
        if payloads and self._done is None:
            self.observe_payloads(b"", now, payloads)

    def end_payloads(self, now: float) -> Payloads:
        """Upstream EOF, first half: the events the scanner completes only at the end of the
        stream (a pending CR ends its line), observed and returned as ``observe_payloads``
        returns events (the carrier translates them, and counts them for the guard's end check,
        before ``finish``). No chunk may follow. ``finish`` calls it when the caller did not;
        later calls return nothing."""
        if self._stopped or self._ended or self._done is not None:
            return []
        self._ended = True
        try:
            payloads = self._scanner.close_payloads()
        except SseLimitError as exc:
            payloads = payloads_of(exc.events)
            self._limit(exc)
        return self.observe_payloads(b"", now, payloads)

    def _observe_marked(self, payloads: Payloads, now: float) -> None:
        """The grammar reads the batch with the data-less blocks the scanner marked in it
        (``SseScanner.dataless``) and the comment lines it kept (``SseScanner.comments``, on a
        translated flow) at their places among its events, so that what it finds, and where the
        writer writes each comment line, does not depend on how the stream was cut into reads.
        (A mark writes nothing: at one index, marks go before comment lines.)"""
        proto = self._proto
        marks = self._scanner.dataless
        comments = self._scanner.comments or _NO_COMMENTS
        start = 0
        m = c = 0
        while m < len(marks) or c < len(comments):
            mark = c == len(comments) or (m < len(marks) and marks[m][0] <= comments[c][0])
            i = marks[m][0] if mark else comments[c][0]
            if i > start:
                proto.observe(payloads[start:i], now)
                start = i
            if mark:
                proto.dataless(proto.events, marks[m][1])
                m += 1
            else:
                self._comment(comments[c][1])
                c += 1
        marks.clear()
        if comments:
            comments.clear()
        if start < len(payloads):
            proto.observe(payloads[start:], now)

    def _comment(self, lines: list[bytes]) -> None:
        """Comment lines of the upstream at this place among its events: the writer writes them as
        they came (bytes that are not UTF-8 as U+FFFD, as the scanner reads every other line),
        each with its LF (docs/design/protocol-grammars.md, "SSE comment lines"), while
        it writes the client's stream (not after the terminal event or an error, not once the
        translation stopped); while the source's stop waits for its end (``Phase.TERMINAL``, the
        writer holds the stop) they wait with it, so that none goes out before the stop."""
        proto = self._proto
        out = proto.out
        if out is None or proto.errored or proto.acc.terminal:
            return
        data = b"\n".join(lines) + b"\n"
        if not data.isascii():  # (the Python SDKs' line decoder raises on bytes that are not UTF-8)
            data = data.decode("utf-8", "replace").encode()
        out.comment(data, hold=proto.phase is Phase.TERMINAL)

    def finish(self, now: float) -> StreamSummary:
        """Upstream EOF. Idempotent: a second call returns the first summary."""
        if self._done is not None:
            return self._done
        self.end_payloads(now)
        proto = self._proto
        proto.eof()
        if self._scanner.bom is not None:
            proto.bom(self._scanner.bom)
        if not proto.errored and proto.acc.received:
            self._judge_end()
        # after the end's own notes, which a translated flow's writer may have asked for before
        # (its finish): the comment lines' note is last on every route
        self._note_comments()
        self._http_error()
        self._done = self._build(now, final=True)
        return self._done

    def _judge_end(self) -> None:
        """The findings only the whole answer gives (``conformance.at_end``: the stop reason the
        parse helpers refuse, arguments or text the request asked as JSON), at the last event."""
        proto = self._proto
        acc = proto.acc
        acc.event_index = proto.events
        choice, finish = proto.parsed_finish
        for rule, detail in at_end(
            self.protocol, self.asked, finish, acc.tool_order, proto.final_texts, choice=choice
        ):
            proto.conform(rule, detail)

    def abort(self, message: str, now: float, kind: ErrorKind = ErrorKind.CONNECTION) -> StreamSummary:
        """The stream died (connection error, or the guard cut it). Undispatched bytes are dropped.

        The message is recorded as the summary's error (source ``proxy``) unless an error is
        already there; the outcome is ``error``, unless the terminal event had already
        arrived (``completed``, the message kept only as a note) or a tool call was open
        (``unfinished_tool``).
        """
        if self._done is not None:
            return self._done
        self._aborted = True
        self._note_comments()
        self._http_error()
        acc = self._proto.acc
        if acc.terminal:
            # The stream had already ended as its protocol says (e.g. an SDK that closes the
            # connection right after ``[DONE]``, before the upstream's end of message): not an error,
            # and the answer is whole, so it is judged as at EOF.
            acc.note(f"the connection closed after the terminal event: {error_message(message)}")
            if not self._proto.errored:
                self._judge_end()
        elif acc.error is None:
            acc.error = ErrorInfo(kind=kind, message=error_message(message), source="proxy")
        self._done = self._build(now, final=True)
        return self._done

    def summary(self) -> StreamSummary:
        """A snapshot at any time; before the end its outcome is what EOF now would give."""
        if self._done is not None:
            return self._done
        end = self.last_byte_at if self.last_byte_at is not None else self._headers_at
        return self._build(end, final=False)

    def tool_calls(self) -> list[ToolCallInfo]:
        """``summary().tool_calls``, without building the rest of the summary (the guard asks for
        them whenever a call may have closed, and a whole summary is mostly the dataclasses the
        guard does not read)."""
        if self._done is not None:
            return self._done.tool_calls
        return self._proto.acc.tool_calls()

    def diagnostics(self) -> dict[str, Any]:
        """Unfinished-tool diagnostics (tail plus state; docs/design/outcomes.md), as a JSON-able dict."""
        s = self.summary()
        return {
            "summary": s.to_metadata(),
            "open_tool_calls": [
                {
                    "id": t.id,
                    "name": t.name,
                    "kind": t.kind,
                    "started_at": t.started_at,
                    "last_progress_at": t.last_progress_at,
                    "arguments_bytes": t.arguments_bytes,
                }
                for t in self.open_tool_calls()
            ],
            "state": self._proto.state.name,
            "terminal": self.terminal,
            "next_sequence_number": self.next_sequence_number,
            "failed": None if self.failed is None else f"{type(self.failed).__name__}: {self.failed}",
            "tail": self.tail.decode("utf-8", "replace"),
        }

    # -- internals ------------------------------------------------------------------------------

    def _cut_tail(self) -> None:
        """Keep the last ``tail_bytes`` (amortized: about two bytes copied per byte fed)."""
        cap = self._tail_bytes
        data = b"".join(self._tail)
        data = data[len(data) - cap :] if cap else b""
        self._tail = [data] if data else []
        self._tail_from = self._bytes - len(data)

    def _note_comments(self) -> None:
        """One note for the comment lines of the stream, with their count (never a finding: a
        comment line is SSE, and every SDK skips it)."""
        n = self._scanner.comment_lines
        if n:
            written = self._scanner.comments is not None
            how = "written to the client" if written else "passed on in the upstream's bytes"
            lines = "line" if n == 1 else "lines"
            note = f"sse.comments: {n} SSE comment {lines} (not events, the SDKs skip them): {how}"
            self._proto.acc.note(note)

    def _limit(self, exc: SseLimitError) -> None:
        self._stopped = True
        self._special = True
        if self.failed is None:
            self.failed = exc
        self._proto.acc.own_error(ErrorKind.STREAM_LIMIT, str(exc))

    def _http_error(self) -> None:
        """An HTTP error status decides the outcome; the body says what the error was."""
        body = self._body
        if body is None:
            return
        self._body = None
        self._special = self._stopped
        acc = self._proto.acc
        status = acc.status_code or 0
        if acc.error is not None and acc.error.source == "event":
            acc.error.status = status
            acc.error_is_outcome = True
            return
        self._proto.http_error(bytes(body), status)

    def _build(self, end: float | None, *, final: bool) -> StreamSummary:
        start = self._start

        def rel(t: float | None) -> float | None:
            return None if t is None else t - start

        gap = None if self._gap == -math.inf else self._gap
        if final and end is not None and self.last_byte_at is not None:
            g = end - self.last_byte_at
            if gap is None or g > gap:
                gap = g
        timing = Timing(
            headers_s=rel(self._headers_at),
            first_event_s=rel(self._first_event_at),
            first_token_s=rel(self._first_token_at),
            largest_gap_s=gap,
            total_s=rel(end) if final else None,
        )
        return self._proto.acc.summary(
            self.protocol,
            streaming=True,
            timing=timing,
            counts=Counts(self._bytes, self._chunks, self._proto.events),
            aborted=self._aborted,
        )


def _is_sse(content_type: str | None, body: bytes) -> bool:
    """``text/event-stream``, or a body that starts like SSE whatever its label (no JSON
    document starts with a field name and a colon; some servers label SSE as JSON or not at all)."""
    if content_type is not None and "text/event-stream" in content_type.lower():
        return True
    head = body[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith((b"event:", b"data:", b"id:", b"retry:", b":"))


def observe_body(
    protocol: Protocol,
    body: bytes,
    *,
    status_code: int,
    start: float,
    headers_at: float,
    end: float,
    content_type: str | None = None,
    capture: bool = False,
    limits: Limits = Limits(),
    asked: Asked = NOTHING_ASKED,
) -> StreamSummary:
    """A whole body: non-streamed JSON, or a buffered SSE body (``text/event-stream``).

    A body that starts like SSE is read as SSE whatever its content type says. JSON bodies: a 2xx
    body of the protocol's response shape is ``completed``; an error object or a status
    >= 400 is ``error``; a body that is not JSON is ``error`` / ``upstream_protocol``.
    """
    if _is_sse(content_type, body):
        obs = StreamObserver(protocol, start=start, limits=limits, capture=capture, asked=asked)
        obs.headers(status_code, headers_at)
        obs.observe(body, end)
        return obs.finish(end)
    proto = make_grammar(protocol, limits, capture, asked=asked)
    proto.observe_body(body, status_code)
    timing = Timing(headers_s=headers_at - start, total_s=end - start)
    counts = Counts(bytes=len(body), chunks=1 if body else 0, events=0)
    return proto.acc.summary(protocol, streaming=False, timing=timing, counts=counts)
