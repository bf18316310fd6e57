"""The stream carrier: one streamed response, from each upstream chunk to the client's bytes.

Sans-IO (docs/design/core.md): bytes and the time they were read come in as arguments
(``feed(chunk, now)``; without ``now`` the time is read from the clock the shell handed in), the
client's bytes go out as the return value; no mitmproxy, no clock of its own, no logging. The
mitmproxy shell's adapter (``proxai.mitm.carrier``) hands it the clock and logs the bugs the
carrier caught; mitmproxy calls its bound ``feed`` as ``flow.response.stream``. With a kept body
(``kept``, ``proxai.pipeline.keep``) the carrier keeps what it returns. docs/design/carrier.md
states the rules this module implements, and its state table (``CarrierState``, ``TABLE``,
``StreamCarrier._step``); docs/design/README.md follows one chunk through the layers: the carrier
owns bytes, lifecycle hooks and injection; the protocol grammar owns the semantics. Per upstream chunk:

    decode (gzip/deflate/br/zstd, bounded)  ->  observer.observe_payloads(decoded, now)
                                                (scanned ONCE, each JSON payload parsed ONCE)
      -> client bytes: the ORIGINAL chunk (observe-only, the default)
                       or translator.collect() (translation: reading the events, the
                       observer's grammar has fed the translator's writer)
                       (guarded pass-through: the original bytes up to the last complete event)
      -> on_chunk hooks (the guard): may inject bytes and close (``GuardAction(close=True)``)

and on the final ``b""``: flush the decoder, ``observer.finish``, ``translator.finish``, ``on_end``
hooks. Never ``b""`` mid-stream (mitmproxy ends an HTTP/1 chunked response on it): an empty list
when the client gets nothing.

Extension points (guard and translation plug in here, nowhere else):

- ``translator``: the ``StreamTranslator`` of the flow's pipeline (``proxai.pipeline.flow``:
  ``build_flow`` connected it to the observer's grammar once). When set, the client gets its
  output instead of the upstream bytes, ``finish()`` at end of message, ``fail()`` on errors (the
  shell drops the upstream's content-encoding/length).
- ``on_chunk``: hooks ``(carrier, n_events, now) -> GuardAction | None`` run after each chunk
  (``n_events``: the SSE events it completed), except a chunk read before ``quiet.quiet_until``
  while observing (``quiet``: what a hook installed to say until when nothing it judges can trip;
  the guard's is the observer's accumulator, whose changes reset it); with ``at_end_hooks =
  True`` they also run once at end of message (``carrier.ending`` is then True), before
  ``translator.finish()``, so the guard can judge a call left open.
- ``on_end``: hooks ``(carrier, summary) -> None`` run once when the stream ends.
- ``inject_and_close(kind, message, now, data=None)``: the out-of-band path (a timer while the
  upstream is silent). It renders the error in the client's protocol, hands it to ``injector``
  (the shell's injection code) and, when that cannot deliver, keeps it pending for the next call
  (state PENDING; data-driven fallback).
- ``close_handlers``: called once when the carrier closes the client stream inside ``feed`` (so
  the shell can end the client stream and cancel the upstream).

Event alignment (guarded pass-through): when an ``on_chunk`` hook may inject (the guard), the body
is not translated and not compressed (identity), the carrier forwards the upstream bytes only up to
the last complete SSE block and holds the unfinished one (``StreamObserver.pending_bytes``, the
scanner's count, so bounded by ``max_event``) until a later chunk completes it. The client's bytes
stay byte-identical, only re-chunked at event boundaries; at end of message what is held is flushed
(a truncated last event stays truncated, as the upstream sent it). An injection drops the held
partial block, so the error always starts on an event boundary and the client's SDK parses it as an
event of its own (a partial ``data:`` line dispatched truncated would make it fail on its JSON
first). When the scanner stops (a limit) or anything goes wrong, the held bytes are released and the
flow goes on unaligned.

A bug in any of these is caught (``bugs``) and never breaks the flow: in observe-only mode the
client keeps receiving exactly the upstream bytes.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import TYPE_CHECKING

from proxai.core.decode import Decoder
from proxai.core.errors import DecodeError, ProxaiError, SseLimitError, TranslationError
from proxai.core.errors.shapes import error_event
from proxai.core.model import ErrorKind, Protocol, StreamSummary
from proxai.core.sse import Payloads
from proxai.protocols.machine import Machine

if TYPE_CHECKING:
    from proxai.pipeline.flow import FlowPipeline
    from proxai.pipeline.keep import KeptBody
    from proxai.translate.stream import StreamTranslator


_JOIN_HELD = 64 * 1024  # held pieces smaller than this go out joined


def _no_clock() -> float:
    raise RuntimeError("the carrier was given no clock: pass feed(chunk, now)")


class CarrierState(StrEnum):
    """Where the carrier is in its one response (docs/design/carrier.md, "States")."""

    STREAMING = "streaming"  # bytes flow to the client
    PENDING = "pending"  # an out-of-band error waits for the next call to go out
    ENDING = "ending"  # the upstream's end arrived: the end-of-message work runs
    CLOSED = "closed"  # we ended the client stream (guard, translation failure); upstream bytes dropped
    FINISHED = "finished"  # the upstream's end of message was carried through
    ABORTED = "aborted"  # the stream died (the shell's error hook)


class CarrierEvent(StrEnum):
    """What happens to the carrier: the table's columns."""

    CHUNK = "chunk"  # an upstream chunk arrived
    END = "end"  # the upstream's end of message arrived
    DEFER = "defer"  # an out-of-band error cannot go out now: it waits for the next call
    CLOSE = "close"  # we end the client stream (an error, or nothing more)
    FINISH = "finish"  # the end-of-message work is done
    ABORT = "abort"  # the stream died


class CarrierStateError(RuntimeError):
    """An event the carrier's table refuses in the state it arrived in: a bug of ours, never the
    upstream's or the client's (so not a ``ProxaiError``, which describe streams). ``feed``
    catches it like any bug: the flow goes on, observe-only bytes stay the upstream's."""

    def __init__(self, message: str, *, event: str, state: Enum) -> None:
        super().__init__(message)
        self.event = event
        self.state = state


_S, _E = CarrierState, CarrierEvent
# The carrier's lifecycle: ``TABLE[state][event]`` is the next state; a missing entry is refused
# (``CarrierStateError``). An event that leads back to its state is taken and changes nothing:
# a read after the stream is over is dropped, a second close or an abort after the end keeps
# the first outcome. docs/design/carrier.md has the table with the reasons.
TABLE: dict[CarrierState, dict[str, CarrierState]] = {
    _S.STREAMING: {
        _E.CHUNK: _S.STREAMING,
        _E.END: _S.ENDING,
        _E.DEFER: _S.PENDING,
        _E.CLOSE: _S.CLOSED,
        _E.ABORT: _S.ABORTED,
    },
    _S.PENDING: {
        _E.CHUNK: _S.PENDING,  # the chunk is dropped; the waiting error goes out (CLOSE)
        _E.END: _S.PENDING,  # likewise, at the upstream's end
        _E.DEFER: _S.PENDING,  # one error waits at a time: a second is not taken
        _E.CLOSE: _S.CLOSED,
        _E.ABORT: _S.ABORTED,
    },
    _S.ENDING: {
        _E.CLOSE: _S.CLOSED,  # the guard's end check or the translator's finish failed
        _E.FINISH: _S.FINISHED,
        _E.ABORT: _S.ABORTED,  # only after a bug cut the end-of-message work short
    },
    _S.CLOSED: {
        _E.CHUNK: _S.CLOSED,
        _E.END: _S.CLOSED,
        _E.DEFER: _S.CLOSED,
        _E.CLOSE: _S.CLOSED,
        _E.ABORT: _S.CLOSED,
    },
    _S.FINISHED: {
        _E.CHUNK: _S.FINISHED,
        _E.END: _S.FINISHED,
        _E.DEFER: _S.FINISHED,
        _E.CLOSE: _S.FINISHED,
        _E.ABORT: _S.FINISHED,
    },
    _S.ABORTED: {
        _E.CHUNK: _S.ABORTED,
        _E.END: _S.ABORTED,
        _E.DEFER: _S.ABORTED,
        _E.CLOSE: _S.ABORTED,
        _E.ABORT: _S.ABORTED,
    },
}
MACHINE = Machine[CarrierState](TABLE, "carrier: {event} in state {state}", error=CarrierStateError)
# The states in which the client stream is still open (the guard judges only these).
OPEN = frozenset({_S.STREAMING, _S.PENDING, _S.ENDING})


@dataclass(frozen=True, slots=True)
class GuardAction:
    """What an ``on_chunk`` hook wants: bytes to inject and/or closing the client stream.

    ``inject=None`` with ``close=True`` lets the carrier render the error for ``kind`` /
    ``message`` in the client's protocol (``translator.fail`` or ``error_shapes.error_event``).
    """

    close: bool = False
    inject: bytes | None = None
    kind: ErrorKind = ErrorKind.UNKNOWN
    message: str = ""


# ``(carrier, events, now)``: ``events`` is the number of SSE events the chunk completed.
ChunkHook = Callable[["StreamCarrier", int, float], GuardAction | None]
EndHook = Callable[["StreamCarrier", StreamSummary], None]
CloseHandler = Callable[["StreamCarrier"], None]
# Delivers bytes to the client outside the stream callable and ends the client stream.
# Returns False when it cannot (then the carrier falls back to the next chunk).
Injector = Callable[["StreamCarrier", bytes], bool]


class Quiet(typing.Protocol):
    """Until when the ``on_chunk`` hooks need not run: a read at a time before ``quiet_until``
    skips them while observing (``StreamCarrier.quiet``). The guard installs the observer's
    accumulator (``Accum.quiet_until``), whose every change the guard judges resets it."""

    quiet_until: float


class _Never:
    __slots__ = ("quiet_until",)

    def __init__(self) -> None:
        self.quiet_until = float("-inf")  # no time is before it: the hooks run on every read


NEVER_QUIET: Quiet = _Never()


@dataclass(slots=True)
class CloseInfo:
    kind: ErrorKind
    message: str
    at: float
    injected_bytes: int
    out_of_band: bool


class StreamCarrier:
    """One streamed response. ``feed`` it each upstream chunk with the time it was read; ``b""``
    means end of message."""

    __slots__ = (
        "_align_off",
        "_held",
        "_held_len",
        "_pending",
        "at_end_hooks",
        "bugs",
        "client_bytes",
        "clock",
        "close_handlers",
        "closed",
        "decoder",
        "held_dropped",
        "hook_errors",
        "injector",
        "kept",
        "observe_error",
        "observer",
        "on_chunk",
        "on_end",
        "protocol",
        "quiet",
        "state",
        "summary",
        "translate_error",
        "translator",
        "upstream_bytes",
    )

    def __init__(
        self,
        pipeline: FlowPipeline,
        *,
        decoder: Decoder | None,
        decode_error: str | None = None,
        clock: Callable[[], float] = _no_clock,
    ) -> None:
        # The flow's pipeline, built and connected once (``proxai.pipeline.flow.build_flow``):
        # the observer's grammar reads each event for the summary and feeds the translator's
        # writer, so the carrier hands the observer the bytes and takes the translator's output.
        self.observer = pipeline.observer
        self.protocol: Protocol = pipeline.observer.protocol  # the upstream protocol
        self.decoder = decoder
        self.translator: StreamTranslator | None = pipeline.translator
        self.state = CarrierState.STREAMING  # changed only by ``_step``
        self.on_chunk: list[ChunkHook] = []
        # Until when the on_chunk hooks need not run (``quiet.quiet_until``): the object a hook
        # installed to say so (the guard: the observer's accumulator), by default never.
        self.quiet: Quiet = NEVER_QUIET
        # on_chunk hooks also run once at end of message (events of the decoder flush, maybe 0),
        # in state ENDING (``ending``); the guard turns this on.
        self.at_end_hooks = False
        self.on_end: list[EndHook] = []
        self.close_handlers: list[CloseHandler] = []
        self.injector: Injector | None = None
        self.summary: StreamSummary | None = None
        self.closed: CloseInfo | None = None
        # Why observing stopped early (decode failure, a bug in the observer); None while fine.
        self.observe_error: str | None = decode_error
        self.translate_error: str | None = None
        self.hook_errors = 0
        # The bugs of ours caught on this flow, by kind (``_bug``): how many times each.
        self.bugs: dict[str, int] = {}
        self.client_bytes = 0
        self.upstream_bytes = 0
        # The shell's clock, for ``feed`` called without ``now`` (mitmproxy calls ``feed`` itself,
        # one frame per read); the core reads no clock of its own.
        self.clock = clock
        # The flow's kept body (docs/design/visibility.md, "Bodies are kept"), when the carrier is
        # the stream the client reads: what ``feed`` returns is kept.
        self.kept: KeptBody | None = None
        # In state PENDING: the error waiting to go out, and its kind and message.
        self._pending: tuple[bytes, ErrorKind, str] | None = None
        # Event alignment (guarded pass-through): upstream bytes of the unfinished SSE block,
        # not yet forwarded. ``held_dropped`` counts what an injection discarded.
        self._held: list[bytes] = []
        self._held_len = 0
        # Not aligned (``_pass_through``): the client's bytes are not the scanned ones, or the
        # scanner stopped.
        self._align_off = self.translator is not None or (
            decoder is not None and decoder.encoding != "identity"
        )
        self.held_dropped = 0

    # -- what the shell calls -----------------------------------------------------------------

    @property
    def client_protocol(self) -> Protocol:
        return self.translator.client_protocol if self.translator is not None else self.protocol

    @property
    def observing(self) -> bool:
        return self.observe_error is None

    @property
    def ending(self) -> bool:
        """The end-of-message work runs (the ``on_chunk`` hooks' end check)."""
        return self.state is CarrierState.ENDING

    def _step(self, event: CarrierEvent) -> bool:
        """The one transition: take ``event`` by the table (``CarrierStateError`` if it refuses
        it); whether the carrier moved to another state. The hot read, a chunk while STREAMING,
        is the one event taken without it: the table leaves that state unchanged."""
        before = self.state
        self.state = MACHINE.step(before, event)
        return self.state is not before

    def feed(self, chunk: bytes, now: float | None = None) -> list[bytes]:
        """The client's bytes for one upstream ``chunk`` read at ``now`` (``b""``: the end of
        the message; without ``now``, the time is the shell's ``clock``). Never ``[b""]``: an
        empty list when the client gets nothing."""
        if now is None:
            now = self.clock()
        try:
            if (
                not self._held  # first: a guarded read mostly holds a piece (no slice then)
                and chunk[-2:] == b"\n\n"
                and self.state is CarrierState.STREAMING
                and self.translator is None
                and self.decoder is None
                and self.observe_error is None
            ):
                # The hot read, most reads of every observed flow: uncompressed pass-through, whole
                # events (the read ends with a blank line, which always ends a block), nothing
                # held, no error waiting (that is state PENDING), still observing: aligned or not
                # it goes out whole at once. ``_chunk`` does the same for it, with the checks every
                # other read needs; ``_observe`` is inline (one call less per read).
                size = len(chunk)
                self.upstream_bytes += size
                try:
                    n = len(self.observer.observe_payloads(chunk, now))
                except Exception as exc:
                    self._observer_broke(exc)
                    n = 0
                more = (
                    self._run_chunk_hooks(n, now)
                    if self.on_chunk and (now >= self.quiet.quiet_until or self.observe_error is not None)
                    else None
                )
                if not more:
                    out = [chunk]
                    sent = size
                    piece: bytes | None = chunk
                else:
                    out = [chunk, *more]
                    sent = -1
            else:
                out = self._end(now) if chunk == b"" else self._chunk(chunk, now)
                sent = -1
        except Exception:
            sent = -1
            # A bug in our code. Observe-only: the client still gets exactly the upstream bytes.
            self._bug("internal error in the carrier (bytes pass through)")
            self.observe_error = self.observe_error or "internal error in the carrier"
            if self.state is not CarrierState.STREAMING and self.state is not CarrierState.ENDING:
                out = []  # the client stream is closed, or an error waits to end it
            elif self.translator is None:
                self._align_off = True
                out = self._release_held()
                if chunk:
                    out.append(chunk)
            else:
                # Translated: the upstream bytes mean nothing to this client; end its stream with a
                # well-formed error in its own protocol instead of leaving it without a terminal event.
                out = self._fail_translated_after_bug(now)
        if sent < 0:  # not the hot read's one chunk
            if b"" in out:
                out = [b for b in out if b]  # never b"" mid-stream
            # A read of several pieces is not joined: a released hold can be as large as the
            # scanner's line bound, and a join would copy it (the keeper writes each piece).
            piece = out[0] if len(out) == 1 else None
            sent = len(piece) if piece is not None else sum(map(len, out))
        self.client_bytes = end = self.client_bytes + sent
        kept = self.kept
        if kept is not None and sent:
            # ``KeptBody.add_read`` inline for a read that ends within what the flow took and is
            # not the one that checks the marks' bound (docs/performance.md, "Why the hot code
            # looks so"): the client's byte count is the body's offset (``_keep`` checks it).
            left = kept.left - 1
            if left and end <= kept.limit and piece is not None:
                kept.left = left
                kept.write(piece)
                kept.offsets.append(end)
                kept.seconds.append(now - kept.start)
            else:
                self._keep(out if piece is None else piece, sent, end, now)
        return out

    def _keep(self, piece: bytes | list[bytes], n: int, end: int, now: float) -> None:
        """Keep a read that brought the client's count to ``end`` (``KeptBody.add_read``); a
        dropped body is not kept further. Later reads are kept inline only while the client's
        count is the kept body's size (the body kept from the stream's first byte)."""
        kept = self.kept
        assert kept is not None
        kept.add_read(piece, n, now)
        if kept.dropped is not None:
            self.kept = None
        elif kept.size != end:
            kept.limit = -1

    def _fail_translated_after_bug(self, now: float) -> list[bytes]:
        message = "ProxAI internal error while translating the stream"
        try:
            data = self.error_bytes(ErrorKind.TRANSLATION, message)
            self._close(ErrorKind.TRANSLATION, message, now, len(data), out_of_band=False)
        except Exception:
            self._bug("internal error while failing a translated stream")
            self._step(CarrierEvent.CLOSE)
            return []
        self.translate_error = message
        return [data]

    # -- the out-of-band path (guard timers) ----------------------------------------------------

    def inject_and_close(self, kind: ErrorKind, message: str, now: float, data: bytes | None = None) -> bool:
        """End the client stream with an error now, while the upstream may be silent.

        Returns True when the injector delivered it at once; False when it waits for the next
        call (state PENDING), or when one already waits or the stream is over. While the end's
        work runs (ENDING) only our own code can call: the table refuses it
        (``CarrierStateError``) rather than lose the error silently.
        """
        if MACHINE.step(self.state, CarrierEvent.DEFER) is self.state:
            return False  # an error already waits, or the stream is over
        payload = data if data is not None else self.error_bytes(kind, message)
        if self.injector is not None:
            try:
                delivered = self.injector(self, payload)
            except Exception:
                self._bug("internal error in the injector")
                delivered = False
            if delivered:
                self.client_bytes += len(payload)
                self._close(kind, message, now, len(payload), out_of_band=True)
                return True
        self._step(CarrierEvent.DEFER)
        self._pending = (payload, kind, message)
        return False

    def close_with(self, action: GuardAction, now: float) -> bytes:
        """Close the client stream now, as a closing ``on_chunk`` action does: the bytes to send
        last (``action.inject``, or the error for ``kind`` / ``message`` in the client's
        protocol), the observer aborted, end hooks and close handlers run. For a caller that
        shapes the carrier's output from outside the hooks (the fault injector)."""
        data = action.inject if action.inject is not None else self.error_bytes(action.kind, action.message)
        self._close(action.kind, action.message, now, len(data), out_of_band=False)
        return data

    def error_bytes(self, kind: ErrorKind, message: str) -> bytes:
        """A well-formed error + end of stream in the CLIENT's protocol."""
        if self.translator is not None:
            try:
                return self.translator.fail(kind, message)
            except Exception:
                self._bug("internal error in translator.fail")
        obs = self.observer
        try:
            snap = obs.summary()
            rid, model = snap.id, snap.model
            seq = obs.next_sequence_number
        except Exception:
            rid, model, seq = None, None, 0
        return error_event(
            self.client_protocol, kind, message, response_id=rid, model=model, sequence_number=seq
        )

    # -- the stream died (the shell's error hook) -----------------------------------------------

    def abort(self, message: str, now: float, kind: ErrorKind = ErrorKind.CONNECTION) -> StreamSummary:
        if self.summary is not None:
            return self.summary
        self._step(CarrierEvent.ABORT)  # once the client stream was closed, it stays so
        self._drop_held()
        self.summary = self.observer.abort(message, now, kind)
        self._run_end_hooks()
        return self.summary

    # -- internals ------------------------------------------------------------------------------

    def _chunk(self, chunk: bytes, now: float) -> list[bytes]:
        """A read that is not the hot read nor the end: observed, then passed through or, on a
        translated flow (never aligned, so nothing is held), the writer's bytes taken; then the
        hooks."""
        self.upstream_bytes += len(chunk)
        state = self.state
        if state is not CarrierState.STREAMING:
            # Dropped: the waiting error goes out instead, or the client stream is over.
            self._step(CarrierEvent.CHUNK)
            return self._deliver_pending(now) if state is CarrierState.PENDING else []
        out: list[bytes]
        # The uncompressed read needs no decoder call (``_decode`` checks ``observe_error`` as the
        # test below does); ``_observe`` is inline (one call less per read: the paced reads of
        # 256 bytes nearly all come here, cut inside an event).
        decoded = chunk if self.decoder is None else self._decode(chunk)
        payloads: Payloads = []
        if self.observe_error is None and decoded:
            try:
                payloads = self.observer.observe_payloads(decoded, now)
            except Exception as exc:
                self._observer_broke(exc)
        tr = self.translator
        if tr is None:
            out = self._pass_through(chunk)
        elif self.observe_error is None and self.observer.failed is None:
            try:  # (``_translate``'s common case, without its checks of a failure)
                data = tr.collect()
            except ProxaiError as exc:
                data = self._translation_failed(exc, now)
            out = [data] if data else []
        else:
            out = self._translate(payloads, now)
        if (
            self.on_chunk
            and self.state is CarrierState.STREAMING
            and (now >= self.quiet.quiet_until or self.observe_error is not None)
        ):
            more = self._run_chunk_hooks(len(payloads), now)
            if more:
                out.extend(more)
        return out

    def _end(self, now: float) -> list[bytes]:
        state = self.state
        self._step(CarrierEvent.END)
        if state is not CarrierState.STREAMING:
            # The waiting error goes out (the shell's injection code ended the stream to deliver
            # it: no close handlers), or the upstream ended after the client stream was over.
            return self._deliver_pending(now, notify=False) if state is CarrierState.PENDING else []
        out: list[bytes] = []
        rest = b""
        if self.decoder is not None and self.observing:
            try:
                rest = self.decoder.flush()
            except DecodeError as exc:
                self.observe_error = str(exc)
        # The decoder's last bytes, then the events the scanner completes only at the end (a
        # pending CR): the translator and the guard's end check get them before the end.
        payloads = self._observe(rest, now)
        last = self._observe(None, now)
        if last:
            payloads = payloads + last
        n = len(payloads)
        if self.translator is not None:
            out.extend(self._translate(payloads, now))
        if self.state is CarrierState.ENDING and self.at_end_hooks:
            # The guard's end-of-message check: it may inject an error and close.
            out.extend(self._run_chunk_hooks(n, now))
        if self.translator is not None and self.state is CarrierState.ENDING:
            try:
                out.append(self.translator.finish())
            except ProxaiError as exc:
                out.append(self._translation_failed(exc, now))
        if self.state is CarrierState.ENDING:
            out.extend(self._release_held())  # a truncated last event goes out as the upstream sent it
            self._step(CarrierEvent.FINISH)
            self.summary = self._observer_finish(now)
            self._run_end_hooks()
        return out

    # -- event alignment (guarded pass-through) -----------------------------------------------

    def _pass_through(self, chunk: bytes) -> list[bytes]:
        """The client's bytes for one upstream chunk: all of it, or (aligned) everything up to the
        last complete SSE block, the unfinished block held until a later chunk completes it.
        (``feed`` takes the common read, uncompressed whole events with nothing held.)

        Aligned while something may inject (an ``on_chunk`` hook), the bytes are scanned
        (``observing``, read inline) and they are the client's as they are: no translator (the
        caller's case) and identity encoding (``__init__`` turns alignment off for any other)."""
        if self._align_off or not self.on_chunk or self.observe_error is not None:
            if self._held:
                out = self._release_held()
                out.append(chunk)
                return out
            return [chunk]
        pending = self.observer.pending_bytes
        held_len = self._held_len
        total = held_len + len(chunk)
        if pending is None or pending < 0 or pending > total:
            # The scanner stopped (a limit) or cannot say: forward everything from now on.
            self._align_off = True
            out = self._release_held()
            out.append(chunk)
            return out
        held = self._held
        if pending == total:
            held.append(chunk)
            self._held_len = total
            return []
        cut = len(chunk) - pending
        if cut < 0:  # never expected (held bytes are one unfinished block): stay exact
            data = b"".join(held) + chunk
            cut = len(data) - pending
            self._held, self._held_len = [data[cut:]], pending
            return [data[:cut]]
        done = chunk[:cut] if pending else chunk
        if not held:
            out = [done]
        elif held_len < _JOIN_HELD:  # one write for a small event held in pieces
            if len(held) == 1:
                out = [held[0] + done]
            else:
                held.append(done)
                out = [b"".join(held)]
        else:  # a large held event goes out as its pieces came (no copy)
            out = held
            if len(out[-1]) < _JOIN_HELD:
                out[-1] += done
            else:
                out.append(done)
        self._held = [chunk[cut:]] if pending else []
        self._held_len = pending
        return out

    def _release_held(self) -> list[bytes]:
        """The held bytes: joined when small (one write), else the pieces as they came (a held
        event may be megabytes: no copy)."""
        out = self._held
        small = self._held_len < _JOIN_HELD
        self._held, self._held_len = [], 0
        if len(out) > 1 and small:
            return [b"".join(out)]
        return out

    def _drop_held(self) -> None:
        self.held_dropped += self._held_len
        self._held, self._held_len = [], 0

    def _decode(self, chunk: bytes) -> bytes:
        if self.observe_error is not None:  # not observing (``observing``, read inline)
            return b""
        if self.decoder is None:
            return chunk
        try:
            return self.decoder.feed(chunk)
        except DecodeError as exc:
            self.observe_error = str(exc)
            return b""

    def _observe(self, decoded: bytes | None, now: float) -> Payloads:
        """Observe decoded bytes (``None``: the end of the stream, ``end_payloads``); their
        events as ``Payloads``. Every read of every flow comes here."""
        if self.observe_error is not None or decoded == b"":  # not ``observing``: no property call
            return []
        try:
            if decoded is None:
                return self.observer.end_payloads(now)
            return self.observer.observe_payloads(decoded, now)
        except Exception as exc:
            self._observer_broke(exc)
            return []

    def _observer_broke(self, exc: Exception) -> None:
        """A bug in the observer (called inside ``except``): observing stops for this flow."""
        self._bug("internal error in the observer (observing stops for this flow)")
        self.observe_error = f"internal error in the observer: {type(exc).__name__}"

    def _translate(self, payloads: Payloads, now: float) -> list[bytes]:
        """The translator's bytes for the events the observer just read (``payloads``)."""
        assert self.translator is not None
        if self.observe_error is not None:
            return [
                self._translation_failed(f"the upstream stream could not be read: {self.observe_error}", now)
            ]
        failed = self.observer.failed
        if isinstance(failed, SseLimitError):
            # Observing stopped at a size limit: the writer gets no more events. The grammar's
            # other typed problems reach the translator itself (``collect`` raises them).
            return [self._translation_failed(failed, now)]
        try:
            if payloads:
                return [self.translator.collect()]
            data = self.translator.collect()  # a read of comment lines only: the writer wrote them
            return [data] if data else []
        except ProxaiError as exc:
            return [self._translation_failed(exc, now)]

    def _translation_failed(self, problem: ProxaiError | str, now: float) -> bytes:
        """Translation cannot go on: a well-formed client-protocol error ends the stream."""
        assert self.translator is not None
        if isinstance(problem, TranslationError):
            kind = ErrorKind.TRANSLATION
        elif isinstance(problem, SseLimitError):
            kind = ErrorKind.STREAM_LIMIT
        else:
            kind = ErrorKind.UPSTREAM_PROTOCOL
        message = str(problem)
        self.translate_error = message
        try:
            data = self.translator.fail(kind, message)
        except Exception:
            self._bug("internal error in translator.fail")
            data = error_event(self.client_protocol, kind, message)
        self._close(kind, message, now, len(data), out_of_band=False)
        return data

    def _run_chunk_hooks(self, n_events: int, now: float) -> list[bytes]:
        """The ``on_chunk`` hooks, in order, only while the client stream is open: the loop stops
        at the first hook that closes it (hooks may rely on that). A hook does not add or remove
        hooks."""
        out: list[bytes] = []
        for hook in self.on_chunk:
            try:
                action = hook(self, n_events, now)
            except Exception:
                self.hook_errors += 1
                self._bug("internal error in an on_chunk hook")
                continue
            if action is None:
                continue
            if action.close:
                out.append(self.close_with(action, now))
                break
            if action.inject:
                out.append(action.inject)
        return out

    def _deliver_pending(self, now: float, *, notify: bool = True) -> list[bytes]:
        data, kind, message = self._pending or (b"", ErrorKind.UNKNOWN, "")
        self._pending = None
        self._close(kind, message, now, len(data), out_of_band=True, notify=notify)
        return [data]

    def _close(
        self,
        kind: ErrorKind,
        message: str,
        now: float,
        injected: int,
        *,
        out_of_band: bool,
        notify: bool | None = None,
    ) -> None:
        """Close the client stream: record why, abort the observer, run end hooks, and (unless
        the injection module already ended the stream) call the close handlers."""
        if not self._step(CarrierEvent.CLOSE):
            return  # closed already, or over: the first outcome stays
        self._drop_held()  # the injected error starts on an event boundary
        self.closed = CloseInfo(kind, message, now, injected, out_of_band)
        self.summary = self._observer_abort(message, now, kind)
        self._run_end_hooks()
        if notify if notify is not None else not out_of_band:
            for handler in list(self.close_handlers):
                try:
                    handler(self)
                except Exception:
                    self.hook_errors += 1
                    self._bug("internal error in a close handler")

    def _observer_finish(self, now: float) -> StreamSummary:
        return self.observer.finish(now)

    def _observer_abort(self, message: str, now: float, kind: ErrorKind) -> StreamSummary:
        return self.observer.abort(message, now, kind)

    def _bug(self, what: str) -> None:
        """A bug of ours, caught (called inside ``except``): counted by kind in ``bugs``; the
        flow goes on. The core logs nothing: the shell's adapter logs it (its override)."""
        self.bugs[what] = self.bugs.get(what, 0) + 1

    def _run_end_hooks(self) -> None:
        if self.summary is None:
            return
        for hook in list(self.on_end):
            try:
                hook(self, self.summary)
            except Exception:
                self.hook_errors += 1
                self._bug("internal error in an on_end hook")
