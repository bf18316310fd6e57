"""What the three protocol observers share: the summary accumulator and the event loop.

Observation is split into a carrier (bytes, tail, timing: ``proxai.pipeline.observe``) and a
per-protocol grammar (terminal event, tool-call completion, deviations). This module holds the
protocol-neutral half: the accumulator the summary is built from (identity, text / reasoning
sizes, complete tool calls, usage, stop reason, error, notes and findings), and
``GrammarBase``, the loop every protocol grammar runs its events through
(docs/design/protocol-grammars.md, docs/design/outcomes.md):

- each event's JSON is parsed once with orjson (no pydantic per event), and a stream
  translator attached to the grammar is fed from that one parse (its writer is ``out``); an
  event in the grammar's lean shape (``_lean``) has only its one string parsed, the shape being
  one whose whole parse is then known;
- a protocol violation (``UpstreamProtocolError``) or a payload of the wrong shape puts the
  state machine in its errored state for good; later events are
  counted by the carrier but no longer interpreted;
- the empty JSON tail: an empty or unparsable data payload AFTER valid data was received is
  tolerated when nothing follows it (an "empty JSON tail"); anything after it makes it a
  violation, and before any data it is a violation at once.

Outcome rule (docs/design/outcomes.md), in this order:
ERROR (an error event / payload, HTTP >= 400, a protocol violation, a stream limit) >
UNFINISHED_TOOL (a tool call with streamed arguments was open when the stream ended) >
COMPLETED (the terminal event arrived) > CLOSED (EOF) or ERROR (the stream was aborted).
"""

from __future__ import annotations

import io
from typing import Any

import orjson

from proxai.core.errors import ProxaiError, UpstreamProtocolError
from proxai.core.errors.kinds import classify_error, error_message
from proxai.core.model import (
    Counts,
    ErrorInfo,
    ErrorKind,
    Outcome,
    Protocol,
    StopClass,
    StreamSummary,
    Timing,
    ToolCallInfo,
    Usage,
)
from proxai.core.sse import Payloads, RawName, event_name
from proxai.protocols import conformance, fragments
from proxai.stream.limits import DEFAULT_MAX_BUFFER
from proxai.stream.sink import NO_BLOCK, Output, Phase, Sink

from .machine import Finding, Severity, StateEnum, as_dict, as_int, as_str

MAX_NOTES = 20
MAX_FINDINGS = 100  # classified deviations kept per stream (bounded on untrusted input)

_loads = orjson.loads
NO_LEAN = b"\n"  # ``GrammarBase.lean_name`` when no shape is read lean: no event type has an LF
_JSONDecodeError = orjson.JSONDecodeError
_NOT_JSON = object()
_NOT_JSON_TEXT = " data is not JSON: "  # how ``_not_object`` tells a payload that does not parse


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _loads_text(data: bytes) -> Any:
    """The parse of ``data`` decoded as the SSE rules decode it (invalid UTF-8 -> U+FFFD)."""
    try:
        return _loads(_text(data))
    except _JSONDecodeError:
        return _NOT_JSON


# Exceptions a handler may hit on a payload of an unexpected shape (a string where an object
# belongs, a missing key). Untrusted JSON: these are upstream protocol violations, not bugs.
SHAPE_ERRORS = (KeyError, TypeError, AttributeError, ValueError, IndexError)


def nbytes(s: str) -> int:
    """UTF-8 size of ``s`` (fast path for ASCII)."""
    return len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))


def openai_usage(u: dict[str, Any], inp_key: str, out_key: str) -> Usage:
    """The usage rule for both OpenAI APIs (docs/metadata.md, "Usage normalization"; Chat names
    ``prompt``/``completion``, Responses ``input``/``output``): input, output, the API total (or
    their sum), cached input -> cache read."""
    inp = as_int(u.get(f"{inp_key}_tokens"))
    out = as_int(u.get(f"{out_key}_tokens"))
    total = as_int(u.get("total_tokens"))
    if total is None and inp is not None and out is not None:
        total = inp + out
    cached = as_int(as_dict(u.get(f"{inp_key}_tokens_details")).get("cached_tokens"))
    return Usage(input_tokens=inp, output_tokens=out, total_tokens=total, cache_read_tokens=cached)


#: orjson's nesting limit: it refuses a document with more objects and arrays open at once
ORJSON_DEPTH = 1024


#: how orjson refuses a number past a double's range (``1e400``), which the SDKs' parsers read
_INFINITY = "number is infinity when parsed as double"


def json_valid(text: str) -> bool:
    """``text`` is one JSON document, however deep it nests: orjson reads nearly every text, and
    only where it refuses one with more than ``ORJSON_DEPTH`` brackets (counted in C) is it read
    again without recursion (``conformance.deep_json``), so the common case costs one parse. A
    number past a double's range orjson refuses too: that text is read by the standard parser."""
    if not text:
        return False
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if text.count("[") + text.count("{") > ORJSON_DEPTH:
            return conformance.deep_json(text)
        return exc.msg == _INFINITY and conformance._json(text) is not conformance._NOT_JSON
    return True


class ToolBuffer:
    """One tool call being assembled. Arguments are buffered up to ``limit`` bytes."""

    __slots__ = (
        "buf",
        "final",
        "finished",
        "has_args",
        "id",
        "json_prefix",
        "key",
        "kind",
        "last_progress_at",
        "lead",
        "limit",
        "name",
        "nbytes",
        "overflow",
        "started_at",
        "valid",
    )

    def __init__(
        self, key: Any, id: str | None, name: str | None, kind: str, *, now: float, limit: int, has_args: bool
    ) -> None:
        self.key = key
        self.id = id
        self.name = name
        self.kind = kind
        self.started_at = now
        self.last_progress_at = now
        self.limit = limit
        self.has_args = has_args
        self.buf: io.StringIO | None = io.StringIO()
        self.nbytes = 0
        self.overflow = False
        self.finished = False
        self.valid = False
        # finished not valid: the arguments start as JSON (cut short, empty, or more after a whole
        # value: openai-python's partial parser reads past nothing, its final json.loads raises)
        self.json_prefix = False
        # The assembled arguments once finished (None: past the limit), kept for a fragment that
        # comes after the call finished (an Anthropic tool block's, ``anthropic_quirks``); the
        # summary shows them only when capturing.
        self.final: str | None = None
        # The arguments so far while an SDK's parse after every fragment may still refuse them
        # (whitespace alone, a top-level number): ``fragments.torn``. None: nothing to judge
        # fragment by fragment (no such parse of this call, or its start settled it).
        self.lead: str | None = None

    def set_arguments(self, s: str, now: float) -> None:
        """The authoritative whole argument string (a ``*.done`` event or a final snapshot)."""
        self.last_progress_at = now
        self.nbytes = nbytes(s)
        if self.nbytes > self.limit:
            self.overflow = True
            self.buf = None
        else:
            self.overflow = False
            self.buf = io.StringIO(s)
            self.buf.seek(0, io.SEEK_END)

    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        if self.buf is None:
            self.valid = self.json_prefix = False
            self.final = None
            return
        text = self.buf.getvalue()
        self.buf = None
        self.valid = json_valid(text) if self.has_args else True
        self.json_prefix = not self.valid and conformance.json_prefix(text, trailing=True)
        self.final = text


# ``Accum.quiet_until`` when the hooks must look at the next read (no time is before it).
LOOK = float("-inf")


class Accum:
    """The protocol-neutral accumulator: everything ``StreamSummary`` is built from."""

    __slots__ = (
        "cap_reasoning",
        "cap_text",
        "cap_truncated",
        "capture",
        "content_seen",
        "error",
        "error_is_outcome",
        "event_index",
        "extra",
        "findings",
        "finished_tools",
        "found",
        "id",
        "limits_capture",
        "limits_tool_args",
        "model",
        "notes",
        "per_fragment",
        "quiet_until",
        "reasoning_bytes",
        "received",
        "refusal_bytes",
        "sequence_gaps",
        "status_code",
        "stop_class",
        "stop_reason",
        "terminal",
        "text_bytes",
        "tool_order",
        "tools",
        "usage",
    )

    def __init__(self, *, max_tool_args: int, max_capture: int, capture: bool) -> None:
        self.limits_tool_args = max_tool_args
        self.limits_capture = max_capture
        self.capture = capture
        self.id: str | None = None
        self.model: str | None = None
        self.status_code: int | None = None
        self.stop_reason: str | None = None
        self.stop_class: StopClass | None = None
        self.usage = Usage()
        self.tools: dict[Any, ToolBuffer] = {}
        self.tool_order: list[ToolBuffer] = []
        # Before when the stream's ``on_chunk`` hooks need not run (the carrier skips them for a
        # read before it): the guard sets its armed deadline here at each full look; a change of
        # what it judges besides the clock resets it (``LOOK``): a tool call started or finished
        # (``tool_start``, ``tool_finish``), the terminal event (``reach_terminal``), an own
        # error. Content and argument bytes only move every deadline later: until then and while
        # nothing of these changes, the guard has nothing new to judge.
        self.quiet_until = LOOK
        self.finished_tools = 0  # tool calls finished (``tool_finish``)
        self.error: ErrorInfo | None = None
        self.error_is_outcome = False
        self.terminal = False
        self.received = False
        self.content_seen = False
        self.text_bytes = 0
        self.reasoning_bytes = 0
        self.refusal_bytes = 0
        self.sequence_gaps = 0
        self.notes: list[str] = []
        # Every classified deviation (``machine.Finding``), in stream order, and the index of the
        # event being interpreted off the fast paths (the grammar sets it; findings carry it).
        self.findings: list[Finding] = []
        self.event_index = 0
        self.found: set[str] = set()  # the rules ``finding_once`` already reported
        # whose tool calls an SDK parses after every fragment (``fragments``; the flow's builder
        # sets it from the protocol and the request)
        self.per_fragment: fragments.PerFragment | None = None
        self.extra: dict[str, Any] = {}
        self.cap_text: io.StringIO | None = io.StringIO() if capture else None
        self.cap_reasoning: io.StringIO | None = io.StringIO() if capture else None
        self.cap_truncated = False

    # -- content ------------------------------------------------------------------------------

    # (``nbytes`` inline in the three: a call fewer per delta off the fast paths)
    def text(self, s: str) -> None:
        if s:
            self.content_seen = True
            self.text_bytes += len(s) if s.isascii() else nbytes(s)
            if self.cap_text is not None:
                self._capture(self.cap_text, s)

    def reasoning(self, s: str) -> None:
        if s:
            self.content_seen = True
            self.reasoning_bytes += len(s) if s.isascii() else nbytes(s)
            if self.cap_reasoning is not None:
                self._capture(self.cap_reasoning, s)

    def refusal(self, s: str) -> None:
        if s:
            self.content_seen = True
            self.refusal_bytes += len(s) if s.isascii() else nbytes(s)
            if self.cap_text is not None:
                self._capture(self.cap_text, s)

    def capture_text(self, s: str) -> None:
        if self.cap_text is not None:
            self._capture(self.cap_text, s)

    def capture_reasoning(self, s: str) -> None:
        if self.cap_reasoning is not None:
            self._capture(self.cap_reasoning, s)

    def _capture(self, buf: io.StringIO, s: str) -> None:
        room = self.limits_capture - buf.tell()
        if room <= 0:
            self._truncated()
            return
        if len(s) > room:
            buf.write(s[:room])
            self._truncated()
        else:
            buf.write(s)

    def _truncated(self) -> None:
        if not self.cap_truncated:
            self.cap_truncated = True
            self.note(f"captured content truncated at max_capture ({self.limits_capture} characters)")

    def note(self, text: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append(text)

    def finding(self, rule: str, severity: Severity, detail: str) -> None:
        """A deviation the grammar classified at the current event: kept as a ``Finding``; a
        tolerated quirk or a repair also becomes a note of the summary (a violation is the
        summary's error, recorded by whoever raises it)."""
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append(Finding(rule, severity, self.event_index, detail))
        if severity != "violation":
            self.note(detail)

    def finding_once(self, rule: str, severity: Severity, detail: str) -> None:
        """``finding``, once per stream for ``rule`` however often the deviation recurs."""
        if rule not in self.found:
            self.found.add(rule)
            self.finding(rule, severity, detail)

    # -- tool calls ---------------------------------------------------------------------------

    def tool_start(
        self, key: Any, id: str | None, name: str | None, kind: str, now: float, *, has_args: bool = True
    ) -> ToolBuffer:
        self.content_seen = True
        self.quiet_until = LOOK
        tb = ToolBuffer(key, id, name, kind, now=now, limit=self.limits_tool_args, has_args=has_args)
        if self.per_fragment is not None and self.per_fragment.parses(kind, name):
            tb.lead = ""
        self.tools[key] = tb
        self.tool_order.append(tb)
        return tb

    def tool_args(self, tb: ToolBuffer, s: str, now: float) -> None:
        """A fragment of ``tb``'s arguments: buffered up to its limit (past it, a note, once per
        overflow). A call per fragment on every protocol: the buffer's bookkeeping is inline.
        While an SDK's parse after each fragment may refuse the arguments so far (``tb.lead``),
        the fragment is judged as that parse reads it (``fragments.torn``)."""
        tb.last_progress_at = now
        if not s:
            return
        if tb.lead is not None:
            self._torn(tb, s)
        n = tb.nbytes + (len(s) if s.isascii() else nbytes(s))
        tb.nbytes = n
        buf = tb.buf
        if buf is not None:
            if n > tb.limit:
                tb.overflow = True
                tb.buf = None
                self._overflow_note(tb)
            else:
                buf.write(s)

    def _torn(self, tb: ToolBuffer, s: str) -> None:
        """A fragment of a call an SDK parses after every fragment, while its start may be one that
        parse refuses: the rule it breaks, at this event, once per stream."""
        pf = self.per_fragment
        start = fragments.torn(tb, s)
        if start is not None and pf is not None:
            rule = pf.rule(start)
            self.finding_once(rule, "quirk", pf.detail(tb, start))

    def tool_set(self, tb: ToolBuffer, s: str, now: float) -> None:
        was = tb.overflow
        tb.set_arguments(s, now)
        if tb.overflow and not was:
            self._overflow_note(tb)

    def _overflow_note(self, tb: ToolBuffer) -> None:
        self.note(
            f"tool call {tb.id or tb.key!s} arguments exceed max_tool_args"
            f" ({self.limits_tool_args} bytes); stopped buffering them"
        )

    def tool_finish(self, tb: ToolBuffer) -> None:
        if not tb.finished:
            self.finished_tools += 1
            self.quiet_until = LOOK
        tb.finish()

    def tool_reopen(self, tb: ToolBuffer) -> None:
        """A finished call that takes more arguments (both Anthropic SDKs append a fragment that
        comes after its block stopped): unfinished again, until ``tool_finish``."""
        if tb.finished:
            self.finished_tools -= 1
            tb.finished = False  # (the caller finishes it again: ``tool_finish`` counts the change)

    def tool_complete(self, key: Any, id: str | None, name: str | None, kind: str, args: str | None) -> None:
        """A tool call seen only whole (a non-streamed body or a snapshot)."""
        tb = self.tool_start(key, id, name, kind, 0.0, has_args=args is not None)
        if args is not None:
            self.tool_set(tb, args, 0.0)
        self.tool_finish(tb)

    def reach_terminal(self) -> None:
        """The protocol's terminal event came."""
        self.terminal = True
        self.quiet_until = LOOK

    def open_tools(self) -> list[ToolBuffer]:
        return [t for t in self.tool_order if not t.finished and t.has_args]

    # -- errors and usage ---------------------------------------------------------------------

    def upstream_error(
        self,
        message: str,
        *,
        type: str | None = None,
        status: int | None = None,
        source: str = "event",
        outcome: bool = True,
    ) -> None:
        """The upstream reported an error (event, payload, HTTP status). The first one wins."""
        if self.error is None or (outcome and not self.error_is_outcome):
            self.error = ErrorInfo(
                kind=classify_error(message, status=status, type=type),
                message=error_message(message),
                source=source,
                status=status,
                type=type,
            )
        self.error_is_outcome = self.error_is_outcome or outcome

    def own_error(self, kind: ErrorKind, message: str, source: str = "proxy") -> None:
        """A problem we detected (protocol violation, stream limit). Decides the outcome."""
        self.quiet_until = LOOK
        if self.error is None or not self.error_is_outcome:
            self.error = ErrorInfo(kind=kind, message=error_message(message), source=source)
        self.error_is_outcome = True

    def stop(self, raw: str | None, table: dict[str, StopClass]) -> None:
        if raw is None:
            return
        self.stop_reason = raw
        self.stop_class = table.get(raw, StopClass.OTHER)

    # -- the summary ----------------------------------------------------------------------------

    def outcome(self, *, ended: bool, aborted: bool) -> Outcome:
        if self.error_is_outcome:
            return Outcome.ERROR
        if self.open_tools():
            return Outcome.UNFINISHED_TOOL
        if self.terminal:
            return Outcome.COMPLETED
        if aborted:
            return Outcome.ERROR
        return Outcome.CLOSED

    def summary(
        self,
        protocol: Protocol,
        *,
        streaming: bool,
        timing: Timing,
        counts: Counts,
        aborted: bool = False,
    ) -> StreamSummary:
        tools = self.tool_calls()
        extra: dict[str, Any] = dict(self.extra)
        if self.notes:
            extra["notes"] = list(self.notes)
        if self.findings:
            found = conformance.metadata(self.findings)
            if found:
                extra["conformance"] = found
        return StreamSummary(
            protocol=protocol,
            streaming=streaming,
            outcome=self.outcome(ended=True, aborted=aborted),
            id=self.id,
            model=self.model,
            status_code=self.status_code,
            stop_reason=self.stop_reason,
            stop_class=self.stop_class,
            usage=Usage(
                self.usage.input_tokens,
                self.usage.output_tokens,
                self.usage.total_tokens,
                self.usage.cache_read_tokens,
                self.usage.cache_write_tokens,
                self.usage.cache_write_5m_tokens,
                self.usage.cache_write_1h_tokens,
            ),
            tool_calls=tools,
            error=None
            if self.error is None
            else ErrorInfo(
                self.error.kind, self.error.message, self.error.source, self.error.status, self.error.type
            ),
            timing=timing,
            counts=counts,
            text_bytes=self.text_bytes,
            reasoning_bytes=self.reasoning_bytes,
            refusal_bytes=self.refusal_bytes,
            sequence_gaps=self.sequence_gaps,
            text=None if self.cap_text is None else self.cap_text.getvalue(),
            reasoning=None if self.cap_reasoning is None else self.cap_reasoning.getvalue(),
            extra=extra,
        )

    def tool_calls(self) -> list[ToolCallInfo]:
        """The summary's tool calls (the guard judges them without building the rest)."""
        return [
            ToolCallInfo(
                id=t.id,
                name=t.name,
                kind=t.kind,
                arguments_complete=t.finished,
                arguments_valid_json=t.finished and t.valid,
                arguments_bytes=t.nbytes,
                arguments=self._tool_text(t),
            )
            for t in self.tool_order
        ]

    def _tool_text(self, t: ToolBuffer) -> str | None:
        if not self.capture:
            return None
        if t.final is not None:
            s = t.final
        elif t.buf is not None:
            s = t.buf.getvalue()
        else:
            return None
        return s[: self.limits_capture]


def error_fields(err: Any) -> tuple[str, str | None]:
    """(message, type-or-code) of an error object in any of the vendors' shapes."""
    if type(err) is str:
        return err, None
    e = as_dict(err)
    msg = as_str(e.get("message")) or as_str(e.get("detail")) or ""
    code = as_str(e.get("code"))
    etype = as_str(e.get("type"))
    if not msg:
        msg = orjson.dumps(err).decode("utf-8", "replace") if e else "unknown error"
    # Prefer the more specific of code and type: OpenAI's code (``context_length_exceeded``)
    # says more than its type (``invalid_request_error``).
    if code and (not etype or etype in ("invalid_request_error", "error", "server_error")):
        return msg, code
    return msg, etype or code


class GrammarBase:
    """The event loop shared by the three protocol state machines.

    Subclasses implement ``_event(name, obj, now)`` (one parsed SSE event), ``_body(obj)`` (a whole
    non-streamed JSON body) and ``_fail_state()`` (enter the protocol's errored state).

    A grammar that drives a stream translator's writer (``out``, a ``Sink``; ``normalize``: the
    translator's normalize mode) stops reading at the first typed problem, whoever found it: a
    violation (recorded as the summary's error, and in ``translate_error``) or a problem of the
    translation alone (a ``TranslationError``, a writer's limit: ``translate_error`` only). The
    summary and the translated stream therefore end at the same event.
    """

    protocol: Protocol
    state: StateEnum  # the protocol's lifecycle state (each grammar's own ``State``)

    __slots__ = (
        "acc",
        "broken",
        "errored",
        "events",
        "failed",
        "lean_name",
        "max_buffer",
        "normalize",
        "out",
        "pending_at",
        "pending_bad",
        "translate_error",
    )

    def __init__(self, acc: Accum, output: Output | None = None) -> None:
        self.acc = acc
        # The writer the reading drives, given once when the flow's pipeline is built (None:
        # observe only); the translator sets it to None when the translation fails (read on,
        # write no more).
        self.out: Sink | None = None if output is None else output.sink
        self.normalize = False if output is None else output.normalize
        # content a grammar may keep for its writer (Responses)
        self.max_buffer = DEFAULT_MAX_BUFFER if output is None else output.max_buffer
        self.translate_error: ProxaiError | None = None
        self.events = 0  # events handed to ``observe`` so far (findings name their index)
        self.pending_at = 0  # the index of the event ``pending_bad`` describes
        self.errored = False
        self.failed: ProxaiError | None = None
        self.pending_bad: str | None = None
        self.broken: set[str] | None = None  # the conformance rules found so far (``conform``)
        # The event type whose commonest shape the grammar reads without a parse of the whole
        # payload (``_lean``), set while that shape's effect is known (``NO_LEAN``: none).
        self.lean_name: object = NO_LEAN

    # -- streamed -------------------------------------------------------------------------------

    def observe(self, payloads: Payloads, now: float) -> None:
        """Interpret a batch of events (``SseScanner.feed_payloads``). Each payload is parsed once;
        the protocol's ``_fast`` takes the common deltas inline (it never errs, ends the stream or
        leaves a bad payload pending, so the checks for those run only after the general path;
        it takes an event only in a state that an earlier JSON object, through the general path,
        led to, so ``Accum.received`` is set there), everything else goes through ``_general``.
        Every observed event goes through this loop (``StreamObserver.feed`` hands it its event
        objects as ``Payloads``). The batch is only read: a writer attached to the grammar
        (``out``) gets the parse from the handlers, so nobody needs it afterwards."""
        n = len(payloads)
        base = self.events
        self.events = base + n
        if self.errored or self.acc.terminal:
            if not self.errored and n:
                self._after_end(payloads, base)
            return  # errored for good, or the terminal event came: nothing more to interpret
        if self.pending_bad is not None and n:
            self._bad_not_last()  # an earlier read's bad payload, and an event follows it
            return
        fast = self._fast
        loads = _loads
        k = -1  # the event's index in the batch
        for raw_name, data in payloads:
            k += 1
            try:
                # The grammar's lean shape (``lean_name``, a bytes type: the scanner's payload path,
                # whose data is bytes too), read without a parse of the whole payload. An unnamed
                # event (None) is never lean: its identity test spares Chat's events the comparison.
                if raw_name is not None and raw_name == self.lean_name and self._lean(data, now):  # type: ignore[arg-type]
                    continue
                try:
                    obj = loads(data)
                except _JSONDecodeError:
                    # Bytes that are not UTF-8 read as the general rules decode them (U+FFFD).
                    obj = _NOT_JSON if isinstance(data, str) or data.isascii() else _loads_text(data)
                if type(obj) is dict and fast(raw_name, obj, now):
                    continue
            except SHAPE_ERRORS as exc:
                self.acc.event_index = base + k
                self._malformed(event_name(raw_name), exc)
                return
            except ProxaiError as exc:  # only while translating: the writer, or its limits
                self.acc.event_index = base + k
                self._stop(exc)
                return
            self.acc.event_index = base + k
            if self._general(event_name(raw_name), data, obj, now):
                if not self.errored and k + 1 < n:
                    self._after_end(payloads[k + 1 :], base + k + 1)
                return
            if self.pending_bad is not None and k + 1 < n:
                self._bad_not_last()  # a bad payload, and another event follows it
                return

    def _after_end(self, payloads: Payloads, base: int) -> None:
        """Events after the terminal event (the first at ``base``): not interpreted; a protocol
        whose SDKs read on may report them (a conformance finding)."""

    def _lean(self, data: bytes, now: float) -> bool:
        """An event of type ``lean_name`` in the grammar's lean shape, read without a parse of the
        whole payload; False: not that shape (the usual path reads it)."""
        return False

    def _general(self, name: str, data: bytes | str, obj: Any, now: float) -> bool:
        """One event off the fast path; True: interpret no more (errored, or the terminal event)."""
        self.lean_name = NO_LEAN  # whatever it changes, the lean shape is found again by ``_fast``
        try:
            if type(obj) is dict:
                self.acc.received = True
                self._event(name, obj, now)
            else:
                self._not_object(name, data if isinstance(data, str) else _text(data), obj)
        except UpstreamProtocolError as exc:
            self.fail(exc)
        except SHAPE_ERRORS as exc:
            self._malformed(name, exc)
        except ProxaiError as exc:  # only while translating: what the client protocol cannot carry
            self._stop(exc)
        return self.errored or self.acc.terminal

    def _stop(self, exc: ProxaiError) -> None:
        """A typed problem while translating: a violation fails the stream; anything else (a
        ``TranslationError``, a writer's limit) ends the reading for the translation alone."""
        if isinstance(exc, UpstreamProtocolError):
            self.fail(exc)
            return
        if self.translate_error is None:
            self.translate_error = exc
        self.errored = True
        self._fail_state()

    def _malformed(self, name: str, exc: Exception) -> None:
        self.fail(UpstreamProtocolError(f"{self.protocol}: malformed {name!r} event: {exc!r}"))

    def _bad_not_last(self) -> None:
        """A payload that was not a JSON object, and another event followed it: a violation."""
        bad, self.pending_bad = self.pending_bad, None
        assert bad is not None
        self.fail(UpstreamProtocolError(bad))

    def eof(self) -> None:
        """Upstream EOF: a pending unparsable tail payload is tolerated (a quirk, with a note)."""
        if (bad := self.pending_bad) is not None:
            self.pending_bad = None
            acc = self.acc
            acc.event_index = self.pending_at
            acc.finding(
                "stream.empty_json_tail",
                "quirk",
                "ignored an empty or unparsable JSON tail after valid data",
            )
            acc.extra["tolerated_tail"] = True
            if (tail := conformance.TAIL_RULES.get(self.protocol)) is not None:
                # the OpenAI SDKs parse it (Anthropic's skip a payload without an event: name)
                self.conform(tail[0] if _NOT_JSON_TEXT in bad else tail[1], bad)
        if not self.errored and not self.acc.terminal:
            self._ended_early()

    def _ended_early(self) -> None:
        """EOF before the terminal event, and not errored: the grammar's findings for it."""

    def bom(self, field: bytes) -> None:
        """The stream began with a UTF-8 byte order mark before a line of ``field`` (``SseScanner.bom``),
        read without it, as the standard and the Node SDKs read it. The Python SDKs decode the
        first line with the mark and find no field of that name (``\ufeffdata``): they lose the
        line (docs/conformance.md): the first event's name (Anthropic's SDKs then skip the event),
        or its data (openai-python loses the chunk or the event). A finding at event 0."""
        self.acc.event_index = 0
        detail = f"the stream starts with a UTF-8 byte order mark before its first {field.decode()}: line"
        protocol = self.protocol
        if field == b"event" and protocol is Protocol.ANTHROPIC_MESSAGES:
            self.conform("anthropic_messages.bom", detail)
        elif field == b"data" and protocol is Protocol.OPENAI_CHAT:
            self.conform("openai_chat.bom", detail)
        elif field == b"data" and protocol is Protocol.OPENAI_RESPONSES:
            self.conform("openai_responses.bom", detail)

    def dataless(self, index: int, named: bool) -> None:
        """A data-less SSE block that an official SDK dispatches (``SseScanner.dataless``), before
        the event at ``index``; ``named``: it had an ``event:`` line. A finding for the protocols
        whose SDKs parse its empty data (docs/design/conformance.md), unless the grammar stopped
        reading (errored, or the terminal event came and the SDK stops there: Chat's ``[DONE]``)."""
        rules = conformance.DATALESS_RULES.get(self.protocol)
        if rules is None or self.errored or (self.acc.terminal and rules[2]):
            return
        self.acc.event_index = index
        if named:
            self.conform(rules[0], "an SSE block with an event: line and no data")
        else:
            self.conform(rules[1], "an SSE block without data that the OpenAI Python SDK reads")

    def conform(self, rule: str, detail: str) -> None:
        """The stream breaks a requirement of the official SDKs (``proxai.protocols.conformance.RULES``) at
        the current event: a quirk finding, the first time only (one note per rule)."""
        broken = self.broken
        if broken is None:
            broken = self.broken = set()
        if rule not in broken:
            broken.add(rule)
            self.acc.finding(rule, "quirk", detail)

    def _unmodelled(self, rule: str, keep: bool, obj: dict[str, Any]) -> None:
        """An event whose type the grammar does not model, never a refusal: noted once per type
        (``rule``); written as it came when ``keep`` (normalize mode, where the SDKs read it),
        else left out (docs/design/protocol-grammars.md, "Events the grammars do not model")."""
        out = self.out
        how = "not read" if out is None else "carried as it came" if keep else "left out"
        self.acc.finding_once(rule, "quirk", f"event {obj.get('type')!r} is not modelled: {how}")
        if keep and out is not None:
            out.opaque_event(NO_BLOCK, self.protocol, obj)

    def _not_object(self, name: str, data: str, obj: object) -> None:
        """A payload that is not a JSON object: a tolerated tail candidate after valid data
        (decided at the next event or EOF), a violation before any."""
        if obj is _NOT_JSON:
            self._judge_bad(f"{self.protocol}: event {name!r}{_NOT_JSON_TEXT}{data[:80]!r}")
        else:
            self._judge_bad(f"{self.protocol}: event {name!r} data is not a JSON object: {data[:80]!r}")

    def _judge_bad(self, bad: str) -> None:
        """A bad payload described by ``bad``: pending after valid data (the tolerated tail if
        nothing follows it), a violation before any."""
        if self.acc.received:
            self.pending_bad = bad
            self.pending_at = self.acc.event_index
            return
        raise UpstreamProtocolError(bad)

    def _fast(self, name: RawName, obj: dict[str, Any], now: float) -> bool:
        """The protocol's hot path for its most common events; False: not taken. ``name``: the
        event type as the scanner gives it (``sse.event_name`` reads it)."""
        return False

    def fail(self, exc: ProxaiError) -> None:
        if self.failed is None:
            self.failed = exc
        if self.out is not None and self.translate_error is None:
            self.translate_error = exc
        self.errored = True
        self.acc.own_error(ErrorKind.UPSTREAM_PROTOCOL, str(exc))
        self._fail_state()

    def upstream_failed(self) -> None:
        """The upstream itself reported an error mid-stream: stop interpreting events."""
        self.errored = True
        self._fail_state()

    # -- non-streamed ---------------------------------------------------------------------------

    def observe_body(self, body: bytes, status_code: int) -> None:
        acc = self.acc
        acc.status_code = status_code
        if status_code >= 400:
            self.http_error(body, status_code)
            return
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            why = str(exc)
            if "end of data" in why or "empty" in why:
                # The body ended before the JSON document did (a dropped connection): the
                # "EOF before the terminal event", i.e. closed.
                acc.note(f"the JSON body ended after {len(body)} bytes, before the document was complete")
                return
            self.fail(UpstreamProtocolError(f"{self.protocol}: response body is not JSON: {body[:80]!r}"))
            return
        if type(obj) is not dict:
            self.fail(UpstreamProtocolError(f"{self.protocol}: response body is not a JSON object"))
            return
        if self._error_body(obj):
            msg, etype = error_fields(obj["error"])
            acc.upstream_error(msg, type=etype, status=status_code, source="body")
            return
        try:
            self._body(obj)
        except UpstreamProtocolError as exc:
            self.fail(exc)
        except SHAPE_ERRORS as exc:
            self.fail(UpstreamProtocolError(f"{self.protocol}: malformed response body: {exc!r}"))
        else:
            acc.reach_terminal()

    def http_error(self, body: bytes, status_code: int) -> None:
        """An HTTP 4xx/5xx: the body is the vendor's error object, or anything else."""
        msg: str
        etype: str | None = None
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            obj = None
        if type(obj) is dict:
            err = obj.get("error")
            if err is not None:
                msg, etype = error_fields(err)
            else:
                msg, etype = error_fields(obj)
        else:
            msg = body[:MAX_BODY_MESSAGE].decode("utf-8", "replace").strip() or f"HTTP {status_code}"
        self.acc.upstream_error(msg, type=etype, status=status_code, source="http")

    def _error_body(self, obj: dict[str, Any]) -> bool:
        """A generic ``{"error": {...}}`` body (every vendor's error shape)."""
        return obj.get("error") is not None

    # -- to implement ---------------------------------------------------------------------------

    def _event(self, name: str, obj: dict[str, Any], now: float) -> None:
        raise NotImplementedError

    def _body(self, obj: dict[str, Any]) -> None:
        raise NotImplementedError

    def _fail_state(self) -> None:
        raise NotImplementedError

    @property
    def phase(self) -> Phase:
        """The grammar's state as a stream translator's phase."""
        raise NotImplementedError

    def translate_eof(self) -> None:
        """The upstream ended while translating: ``TruncatedStreamError`` when the stream did not
        reach its terminal event (normalize mode may repair a protocol's missing end instead)."""
        raise NotImplementedError

    @property
    def next_sequence_number(self) -> int:
        return 0

    @property
    def final_texts(self) -> list[str]:
        """The answer's text as the SDKs' parse helpers parse it, when the grammar keeps it
        (Responses: ``response.completed``'s messages); else none."""
        return []

    @property
    def parsed_finish(self) -> tuple[int, str | None]:
        """The choice and the stop reason the parse helpers judge (``conformance.at_end``): the
        stream's; Chat's is the first choice's that they refuse (``chat_delta.parsed_finish``)."""
        return 0, self.acc.stop_reason


MAX_BODY_MESSAGE = 500
