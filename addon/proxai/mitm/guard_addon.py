"""The guard in the mitmproxy shell: options, one ``FlowGuard`` per streamed LLM flow, the timer.

docs/design/guard.md: the carrier checks the tool-argument / idle rules on every chunk and injects an
SSE error and closes (inject-and-close); the read idle timeout of the stream carrier covers a totally
silent upstream. ``proxai.guard`` decides (pure); this module wires it:

- data-driven: a ``Carrier.on_chunk`` hook runs ``guard.check`` after each upstream chunk; a verdict
  makes the carrier append the error (client protocol) and close; ``injection.end_stream`` then ends the
  client stream and closes the upstream;
- timer-driven: ``GuardTimer`` is armed for ``guard.next_deadline``; when it fires with a verdict, the
  carrier keeps the error pending and ``injection.end_stream`` makes mitmproxy call the carrier with its
  end of message, which delivers it (``proxai.mitm.injection`` holds all mitmproxy internals);
- a time rule (tool stall, idle) is judged only once the bytes already received are counted
  (docs/design/guard.md, "Bytes already read count"): when the timer fires or a chunk finds a deadline
  passed, the judgement runs a few event-loop passes later (``after_reads``), after the rest of that
  read and any bytes that came in with the timer; the verdict then goes out as the timer's does;
- the outcome: ``unfinished_tool`` (stall, abnormal arguments) or ``error`` with kind ``idle_timeout``,
  the details in ``flow.metadata["proxai"]["extra"]["guard"]``; the addon writes the diagnostics JSON;
- not streamed (``WaitGuard``): from the request on, an upstream that sends no response headers within
  ``proxai_idle_timeout``, or whose buffered (non-SSE) body is not whole within ``proxai_idle_timeout``
  of its headers, gets the client a whole error response in its protocol's shape (504
  ``timeout_error``, translated like any upstream error) and the upstream request cancelled
  (``injection.answer_now``). A streamed response hands over to ``FlowGuard`` at its headers.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import weakref
from collections.abc import Callable
from typing import Any

from mitmproxy import ctx, exceptions, http
from mitmproxy.addonmanager import Loader

from proxai import guard
from proxai.core.errors.shapes import error_body, http_status_for
from proxai.core.model import ErrorInfo, ErrorKind, Protocol, StreamSummary
from proxai.guard import GuardConfig, Verdict, VerdictKind
from proxai.mitm import fields, injection
from proxai.mitm.carrier import Carrier
from proxai.mitm.option_errors import checked_options
from proxai.outputs import verdict
from proxai.pipeline.carrier import OPEN, GuardAction, StreamCarrier
from proxai.protocols.common import LOOK, Accum
from proxai.safety.termsafe import log_safe

logger = logging.getLogger(__name__)


# ``Protocol(name)`` as a dict: the enum's call (its value lookup through ``EnumType.__call__``)
# costs several times this on every guarded flow.
_PROTOCOLS: dict[str, Protocol] = {p.value: p for p in Protocol}


def _upstream_protocol(flow: http.HTTPFlow) -> Protocol:
    """The protocol the upstream answers in (a route's, else the detected one; Chat if neither
    names a protocol)."""
    meta = flow.metadata.get("proxai") or {}
    route: dict[str, Any] = meta["route"] if isinstance(meta.get("route"), dict) else {}
    name = str(route.get("upstream_protocol") or meta.get("protocol"))
    return _PROTOCOLS.get(name, Protocol.OPENAI_CHAT)


def after_reads() -> Callable[[Callable[[], None]], None] | None:
    """What the guards judge through: ``fn`` runs once the bytes already received are handed over
    (docs/design/guard.md, "Bytes already read count"). ``None`` without a running event loop (a test
    driving the addon by hand): the guards then judge at once.

    Three passes of the loop later: each pass polls the sockets before it runs what is ready. When
    the timer and the bytes are due in one pass, the reading task runs in the next one; when that
    pass's poll did not report them (epoll interrupted by a stop signal returns nothing once its
    timeout has passed), the next pass's poll does and the task runs in the pass after."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None

    def later(fn: Callable[[], None]) -> None:
        loop.call_soon(loop.call_soon, loop.call_soon, fn)

    return later


def parse_seconds(name: str, value: str) -> float:
    try:
        seconds = float(value)
    except ValueError as exc:
        raise exceptions.OptionsError(  # type: ignore[no-untyped-call]
            f"{name}: not a number of seconds: {value!r}"
        ) from exc
    if seconds < 0 or not math.isfinite(seconds):
        raise exceptions.OptionsError(  # type: ignore[no-untyped-call]
            f"{name}: must be a finite number of seconds >= 0 (0 disables)"
        )
    return seconds


class FlowGuard:
    """Guards one carrier: the data-driven hook, the timer, the outcome annotation."""

    def __init__(
        self,
        config: GuardConfig,
        flow: http.HTTPFlow | None,
        carrier: Carrier,
        *,
        start: float,
        timer: bool = True,
        end_stream: Callable[[Any], bool] = injection.end_stream,
        later: Callable[[Callable[[], None]], object] | None = None,
    ) -> None:
        """``later``: runs a callable once the bytes already received were handed to the carrier
        (``after_reads``); a time rule is judged through it. ``None`` (the unit tests' clock-driven
        rigs, no event loop): judged at once."""
        self.config = config
        self.flow = flow
        self.carrier = carrier
        self.start = start
        self.verdict: Verdict | None = None
        self.path: str | None = None  # "data" | "timer" | "end"
        self.end_requested = False
        self._open_count = 0
        self._finished_seen = 0  # the observer's finished tool calls when last judged
        # The observer's accumulator (``quiet_until``: until when there is nothing new to judge).
        self._acc: Accum = carrier.observer.acc
        self._end_stream = end_stream
        self._later = later
        self._judging = False  # a time rule's judgement waits for ``later``
        self.timer = injection.GuardTimer(self.on_timer, carrier.clock)
        if not timer:
            self.timer.cancel()  # data-driven only: a closed timer never arms
        carrier.on_chunk.append(self.on_chunk)
        carrier.quiet = self._acc  # its ``quiet_until``: the carrier skips the reads before it
        carrier.at_end_hooks = True
        carrier.on_end.append(self.on_end)
        carrier.close_handlers.append(self.on_close)
        self.timer.arm(self.deadline())

    # -- decisions --------------------------------------------------------------------------------

    def _guarding(self) -> bool:
        c = self.carrier
        return (
            self.verdict is None
            and c.state in OPEN  # streaming, an error waiting, or the end's check
            and c.observe_error is None  # ``c.observing``, read inline
            and c.observer.failed is None
        )

    def check(self, now: float, *, with_calls: bool, ended: bool = False) -> tuple[Verdict | None, list[Any]]:
        """The verdict now, and the open calls it was judged on (reused for the deadline).

        ``with_calls``: also judge the observed calls' arguments (builds a summary: only when a call
        may have closed). Calls past ``max_tool_args`` are not judged: their JSON was not kept.
        """
        obs = self.carrier.observer
        open_calls: list[Any] = obs.open_tool_calls()
        calls: list[Any] = []
        if with_calls and self.config.abnormal_arguments:
            limit = obs.limits.max_tool_args
            calls = [c for c in obs.tool_calls() if c.arguments_bytes <= limit]
        verdict = guard.check(
            self.config,
            open_calls=open_calls,
            calls=calls,
            terminal=obs.terminal,
            ended=ended,
            last_byte_at=obs.last_byte_at,
            start=self.start,
            now=now,
        )
        return verdict, open_calls

    def deadline(self, open_calls: list[Any] | None = None) -> float | None:
        if not self._guarding():
            return None
        obs = self.carrier.observer
        return guard.next_deadline(
            self.config,
            open_calls=obs.open_tool_calls() if open_calls is None else open_calls,
            terminal=obs.terminal,
            last_byte_at=obs.last_byte_at,
            start=self.start,
        )

    def _calls_may_have_closed(self) -> bool:
        """Cheap trigger for the abnormal-argument rule (a summary per chunk would cost 5x the
        observer): a tool call finished since the last look (the observer counts them; only a
        finished call's arguments are judged), or the terminal event came."""
        obs = self.carrier.observer
        finished: int = obs.finished_tool_calls
        if finished != self._finished_seen:
            self._finished_seen = finished
            return True
        return obs.terminal

    # -- carrier hooks ----------------------------------------------------------------------------

    def on_chunk(self, carrier: StreamCarrier, events: int, now: float) -> GuardAction | None:
        """The full look: the verdict on what was read, the timer armed for the earliest deadline.

        The carrier skips this call for most reads: those before ``Accum.quiet_until``, which this
        look sets to the armed deadline when it finds nothing. Since then nothing the guard judges
        besides the clock changed (each such change resets it: a call started or finished, the
        stream ended or failed, whichever path read the events); calls only made progress and
        bytes arrived, which move every deadline later. The armed deadline is at or before the
        earliest and it is not reached: no rule can trip and ``arm`` would return at once. The timer
        firing resets it too (``on_timer``). tests/guard/test_guard_timer_skip.py compares this
        with judging every chunk."""
        if not self._guarding():
            self.timer.cancel()
            return None
        ending = carrier.ending  # the end-of-message check: mitmproxy ends the client stream itself
        open_before = self._open_count
        with_calls = ending or (events > 0 and self._calls_may_have_closed())
        verdict, open_calls = self.check(now, with_calls=with_calls, ended=ending)
        self._open_count = len(open_calls)
        if verdict is None and not with_calls and self._open_count < open_before:
            verdict, open_calls = self.check(now, with_calls=True)  # a call closed another way
        if verdict is None:
            if not ending:
                if open_calls or self.timer.armed_at is None:
                    # Without an open call the deadline is the idle one, which only moves later: an
                    # armed timer is already at or before it (``arm`` would return at once).
                    self.timer.arm(self.deadline(open_calls))
                at = self.timer.armed_at
                if at is not None:
                    self._acc.quiet_until = at  # nothing to look at before it (the carrier skips)
            return None
        if not ending and verdict.kind is not VerdictKind.ABNORMAL_ARGUMENTS and self._judge_later("data"):
            # A deadline passed, but the rest of this read (mitmproxy hands it over chunk by chunk)
            # may hold the stalled call's next delta: judged once it is counted.
            return None
        self.verdict, self.path = verdict, "end" if ending else "data"
        self.timer.cancel()
        if ending:
            self.end_requested = True  # nothing to end or cancel: the upstream ended the body
        logger.info("proxai: %s", log_safe(verdict.message))
        return GuardAction(
            close=True, inject=self.error_bytes(verdict), kind=verdict.error_kind, message=verdict.message
        )

    def on_timer(self) -> None:
        self._acc.quiet_until = LOOK  # the armed deadline is gone: the next read looks
        if self._guarding() and not self._judge_later("timer"):
            self.judge("timer")

    def _judge_later(self, path: str) -> bool:
        """Have ``judge(path)`` run once the bytes already read are counted; False: no ``later``.

        A proxy that did not run for a while (a loaded machine, a garbage collection) wakes up with
        its timer due and the upstream's bytes of that while already read: the event loop runs the
        timer before the read's task hands them over, and mitmproxy hands a read's chunks over one
        by one. Judged at once, a stall would be reported before deltas that had already arrived.
        ``later`` runs it after both (mitmproxy processes a read without awaiting)."""
        if self._later is None:
            return False
        if not self._judging:
            self._judging = True
            self._later(lambda: self.judge(path))
        return True

    def judge(self, path: str) -> None:
        """Judge the time rules now; a verdict ends the stream out of band (the carrier keeps the
        error pending until it can go out). ``path``: what noticed the deadline."""
        self._judging = False
        if not self._guarding():
            return
        now = self.carrier.clock()
        verdict, open_calls = self.check(now, with_calls=False)
        if verdict is None:
            self.timer.arm(self.deadline(open_calls))
            return
        self.verdict, self.path = verdict, path
        self.timer.cancel()
        logger.info("proxai: %s", log_safe(verdict.message))
        # The carrier keeps the error pending; ending the stream makes mitmproxy call the carrier with
        # its end of message, which delivers it. Without the internals it goes out with the next chunk.
        self.carrier.inject_and_close(
            verdict.error_kind, verdict.message, now, data=self.error_bytes(verdict)
        )
        self.request_end()

    def error_bytes(self, verdict: Verdict) -> bytes:
        """The client-protocol error. It starts on an event boundary: translated output is whole
        events, and a guarded pass-through carrier holds an unfinished upstream event back and
        drops it when the error goes out (``Carrier`` event alignment)."""
        return self.carrier.error_bytes(verdict.error_kind, verdict.message)

    def on_close(self, carrier: StreamCarrier) -> None:
        """The carrier closed the client stream inside the callable: end it and close the upstream."""
        self.timer.cancel()
        self.request_end()

    def request_end(self) -> None:
        if self.end_requested or self.flow is None:
            return
        self.end_requested = True
        try:
            self._end_stream(self.flow)
        except Exception:
            logger.warning("proxai: cannot end the stream", exc_info=True)

    def on_end(self, carrier: StreamCarrier, summary: StreamSummary) -> None:
        self.timer.cancel()
        v = self.verdict
        if v is None:
            return
        closed = carrier.closed
        injected = closed is not None and closed.message == v.message
        summary.outcome = v.outcome
        summary.error = ErrorInfo(kind=v.error_kind, message=v.message, source="proxy")
        meta = v.to_metadata(injected=injected)
        meta["path"] = self.path
        summary.extra["guard"] = meta


class WaitGuard:
    """Guards one LLM request until its response is whole, while that response is not streamed."""

    def __init__(
        self,
        flow: http.HTTPFlow,
        limit: float,
        protocol: Protocol,
        clock: Callable[[], float],
        answer: Callable[[Any, Any], bool] = injection.answer_now,
        *,
        later: Callable[[Callable[[], None]], object] | None = None,
    ) -> None:
        """``later``: as ``FlowGuard``'s, the limit is judged once what was read is handed over."""
        self.flow = flow
        self.limit = limit
        self.protocol = protocol  # the upstream's: the answer is translated back like its errors
        self.clock = clock
        self.answer = answer
        self.later = later
        self.phase = "headers"
        self.since = clock()
        self.answered: dict[str, Any] | None = None
        self.timer = injection.GuardTimer(self.on_timer, clock)
        self.timer.arm(self.since + limit)

    def headers(self, streamed: bool) -> None:
        """The response headers arrived: a stream is the carrier's guard's; a buffered body gets
        ``limit`` seconds from now to be whole."""
        self.timer.cancel()
        if streamed or self.answered is not None:
            return
        self.phase = "body"
        self.since = self.clock()
        self.timer = injection.GuardTimer(self.on_timer, self.clock)
        self.timer.arm(self.since + self.limit)

    def cancel(self) -> None:
        self.timer.cancel()

    def on_timer(self) -> None:
        if self.later is None:
            self.judge()
        else:
            self.later(self.judge)

    def judge(self) -> None:
        if self.answered is not None:
            return
        response = self.flow.response
        if response is not None and (self.phase == "headers" or response.timestamp_end is not None):
            # What was waited for had been read when the limit passed (mitmproxy sets the response
            # before its hooks run): the ``responseheaders`` / ``response`` hook takes over.
            return
        waited = self.clock() - self.since
        what = "no response headers" if self.phase == "headers" else "no complete response body"
        message = (
            f"ProxAI guard: upstream sent {what} for {waited:.1f}s (limit {self.limit:g}s, "
            "proxai_idle_timeout); the upstream request was cancelled"
        )
        kind = ErrorKind.IDLE_TIMEOUT
        response = http.Response.make(
            http_status_for(kind, self.protocol),
            error_body(self.protocol, kind, message),
            {"content-type": "application/json"},
        )
        logger.info("proxai: %s", message)
        # Set before the answer goes out: mitmproxy may run the hooks it causes at once.
        self.answered = {
            "kind": str(kind),
            "message": message,
            "phase": self.phase,
            "idle_s": round(waited, 3),
            "threshold_s": self.limit,
            "injected": True,
            "path": "timer",
            "streamed": False,
        }
        if not self.answer(self.flow, response):
            self.answered = None

    def record(self, meta: dict[str, Any]) -> None:
        """After ``ProxAI.response`` recorded the answer: the outcome is the guard's."""
        if self.answered is None:
            return
        meta["outcome"] = "error"
        meta["error"] = {
            "kind": self.answered["kind"],
            "message": self.answered["message"],
            "source": "proxy",
        }
        extra: dict[str, Any] = dict(meta["extra"]) if isinstance(meta.get("extra"), dict) else {}
        extra["guard"] = dict(self.answered)
        meta["extra"] = extra


class GuardAddon:
    """mitmproxy addon part of the guard (a child addon of ``ProxAI``)."""

    def __init__(self) -> None:
        self.config = GuardConfig()
        self.use_timer = True
        self.on = True  # proxai_guard: False = pure observe-only (no injection, no header rewrite)
        self.waits: weakref.WeakKeyDictionary[http.HTTPFlow, WaitGuard] = weakref.WeakKeyDictionary()

    @property
    def active(self) -> bool:
        return self.on and self.config.enabled

    def load(self, loader: Loader) -> None:
        loader.add_option(
            "proxai_guard",
            bool,
            True,
            "The stream guard (docs/guard.md): on a tool-argument stall, an idle upstream or abnormal "
            "tool arguments, inject one protocol-correct SSE error and close the stream; guarded flows "
            "ask the upstream for Accept-Encoding: identity. False: pure observe-only, the client "
            "gets exactly the upstream's bytes and headers (the outcome is still recorded).",
        )
        loader.add_option(
            "proxai_guard_abnormal",
            bool,
            True,
            "Guard rule: end the stream when a tool call is declared done with arguments that are not "
            "valid JSON, or the stream ends while a call is unfinished. False: only recorded.",
        )
        loader.add_option(
            "proxai_tool_stall",
            str,
            f"{guard.DEFAULT_TOOL_STALL:g}",
            "Seconds a started, unfinished streamed tool call may go without an argument delta before "
            "ProxAI injects a protocol-correct SSE error and closes the stream (pings and other blocks "
            "do not count as progress). Decimals allowed; 0 disables.",
        )
        loader.add_option(
            "proxai_idle_timeout",
            str,
            f"{guard.DEFAULT_IDLE_TIMEOUT:g}",
            "Seconds a streamed LLM response may go without any upstream byte (pings count) before "
            "ProxAI injects an idle_timeout SSE error and closes the stream. Long reasoning pauses are "
            "normal, so keep it generous. Decimals allowed; 0 disables.",
        )
        loader.add_option(
            "proxai_guard_timer",
            bool,
            True,
            "Arm one timer per guarded stream so that a totally silent upstream is caught too (this "
            "reaches into mitmproxy internals, see docs/guard.md). False: the guard rules are checked "
            "only when upstream bytes arrive.",
        )

    @checked_options
    def configure(self, updated: set[str]) -> None:
        if updated & {"proxai_tool_stall", "proxai_idle_timeout", "proxai_guard_abnormal"}:
            self.config = GuardConfig(
                tool_stall=parse_seconds("proxai_tool_stall", ctx.options.proxai_tool_stall),
                idle_timeout=parse_seconds("proxai_idle_timeout", ctx.options.proxai_idle_timeout),
                abnormal_arguments=bool(ctx.options.proxai_guard_abnormal),
            )
        if "proxai_guard" in updated:
            self.on = bool(ctx.options.proxai_guard)
        if "proxai_guard_timer" in updated:
            self.use_timer = bool(ctx.options.proxai_guard_timer)

    def running(self) -> None:
        if self.active:  # off: mitmproxy's internals stay untouched (setup installs if turned on later)
            injection.install()

    def after_request(self, flow: http.HTTPFlow) -> None:
        """Ask guarded LLM flows for an uncompressed body: an error injected into a gzip/br/zstd
        pass-through stream would corrupt it. ``ProxAI.request`` calls it after its own part, which
        marks LLM flows with ``flow.metadata["proxai"]``."""
        if not self.active or "proxai" not in flow.metadata:
            return
        asked = fields.header(flow.request.headers, b"accept-encoding")
        if asked is not None and asked.strip().lower() != "identity":
            flow.request.headers["accept-encoding"] = "identity"
        limit = self.config.idle_timeout
        if flow.response is None and flow.live and self.use_timer and limit > 0 and injection.install():
            self.waits[flow] = WaitGuard(
                flow, limit, _upstream_protocol(flow), time.monotonic, later=after_reads()
            )

    def after_responseheaders(self, flow: http.HTTPFlow) -> None:
        """``ProxAI.responseheaders`` calls it after its own part, which made a streamed
        response's carrier."""
        wait = self.waits.get(flow)
        if wait is not None and flow.response is not None:
            streamed = bool(flow.response.stream)
            wait.headers(streamed)
            if streamed:
                del self.waits[flow]

    def after_response(self, flow: http.HTTPFlow) -> None:
        """``ProxAI.response`` calls it after its own part recorded the flow: a guard answer is
        the outcome."""
        wait = self.waits.pop(flow, None)
        if wait is None:
            return
        wait.cancel()
        meta = flow.metadata.get("proxai")
        if wait.answered is not None and isinstance(meta, dict):
            wait.record(meta)
            flow.comment = verdict.comment_line(meta)
            marker = verdict.marker_for(meta)
            if marker:
                flow.marked = marker

    def after_error(self, flow: http.HTTPFlow) -> None:
        """``ProxAI.error`` calls it after its own part."""
        wait = self.waits.pop(flow, None)
        if wait is not None:
            wait.cancel()

    def setup(self, flow: http.HTTPFlow, carrier: Carrier) -> None:
        """``ProxAI.carrier_setup`` hook: guard this streamed flow."""
        if not self.active:
            return
        injection.install()  # idempotent; normally done at `running` (a reloaded script may miss it)
        FlowGuard(
            self.config, flow, carrier, start=carrier.clock(), timer=self.use_timer, later=after_reads()
        )
