"""Test doubles for the carrier's collaborators (the observer contract of docs/design/core.md,
a translator)."""

from __future__ import annotations

from dataclasses import dataclass, field

from proxai.core.errors import ProxaiError, UpstreamProtocolError
from proxai.core.model import ErrorInfo, ErrorKind, Outcome, Protocol, StreamSummary
from proxai.core.sse import Payloads, SseEvent, SseScanner, payloads_of
from proxai.pipeline.flow import FlowPipeline


class RecordingObserver:
    """Follows the ``StreamObserver`` contract: scans decoded bytes once, records what it saw."""

    def __init__(self, protocol: Protocol = Protocol.OPENAI_CHAT, *, boom_on: bytes | None = None) -> None:
        self.protocol = protocol
        self.scanner = SseScanner()
        self.fed: list[bytes] = []
        self.events: list[SseEvent] = []
        self.finished_at: float | None = None
        self.aborted: tuple[str, float, ErrorKind] | None = None
        self.failed: ProxaiError | None = None
        self.next_sequence_number = 7
        self.tail = b""
        self.boom_on = boom_on

    @property
    def pending_bytes(self) -> int:
        return self.scanner.pending_bytes

    def headers(self, status_code: int, now: float) -> None:
        pass

    def feed(self, chunk: bytes, now: float) -> list[SseEvent]:
        if self.boom_on is not None and self.boom_on in chunk:
            raise RuntimeError("observer bug")
        self.fed.append(chunk)
        self.tail = (self.tail + chunk)[-64:]
        evs = self.scanner.feed(chunk)
        self.events.extend(evs)
        return evs

    def observe(self, chunk: bytes, now: float) -> int:
        return len(self.feed(chunk, now))

    def observe_payloads(self, chunk: bytes, now: float) -> Payloads:
        return payloads_of(self.feed(chunk, now))

    def end_payloads(self, now: float) -> Payloads:
        evs = self.scanner.close()
        self.events.extend(evs)
        return payloads_of(evs) if evs else []

    def finish(self, now: float) -> StreamSummary:
        self.finished_at = now
        terminal = any(e.data == "[DONE]" for e in self.events)
        return StreamSummary(self.protocol, True, Outcome.COMPLETED if terminal else Outcome.CLOSED)

    def abort(self, message: str, now: float, kind: ErrorKind = ErrorKind.CONNECTION) -> StreamSummary:
        self.aborted = (message, now, kind)
        return StreamSummary(self.protocol, True, Outcome.ERROR, error=ErrorInfo(kind, message, "proxy"))

    def summary(self) -> StreamSummary:
        return StreamSummary(self.protocol, True, id="chatcmpl-1", model="m")

    def open_tool_calls(self) -> list[object]:
        return []


@dataclass
class UpperTranslator:
    """Re-emits each event's data upper-cased, in SSE framing; fails on a ``FAIL`` event. Like the
    real translator it reads no event itself: ``collect`` takes the events its ``source`` (the
    flow's observer) read since the last call."""

    client_protocol: Protocol = Protocol.ANTHROPIC_MESSAGES
    calls: list[str] = field(default_factory=list)
    source: RecordingObserver | None = None
    _read: int = 0

    def collect(self) -> bytes:
        assert self.source is not None, "connect the translator to its observer (pipeline())"
        events = self.source.events[self._read :]
        self._read = len(self.source.events)
        return self.feed(events)

    def feed(self, events: list[SseEvent]) -> bytes:
        self.calls.append(f"feed:{len(events)}")
        out = b""
        for e in events:
            if e.data == "FAIL":
                raise UpstreamProtocolError("bad source event")
            out += b"data: " + e.data.upper().encode() + b"\n\n"
        return out

    def finish(self) -> bytes:
        self.calls.append("finish")
        return b"data: END\n\n"

    def fail(self, kind: ErrorKind, message: str) -> bytes:
        self.calls.append(f"fail:{kind}:{message}")
        return b"event: error\ndata: " + message.encode() + b"\n\n"


def pipeline(observer: RecordingObserver, translator: UpperTranslator | None = None) -> FlowPipeline:
    """The fakes connected as ``build_flow`` connects the real pipeline: the translator reads what
    the observer read."""
    if translator is not None:
        translator.source = observer
    return FlowPipeline(observer, translator)  # type: ignore[arg-type]
