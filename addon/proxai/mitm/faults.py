"""Fault injection in the mitmproxy shell: the ``proxai_faults`` option, the ``proxai.fault`` command,
and the per-flow wiring of ``proxai.faults`` (rules and stage, sans-IO).

- ``request`` (after ``ProxAI.request``, which marks LLM flows and routes them): the flow's rule is
  chosen (``FaultPlan.choose``; filters are mitmproxy filter expressions, matched here). An
  ``http_error`` rule answers at once with the provider's error in the CLIENT's protocol (status,
  headers such as ``retry-after``, body): the upstream is never asked. A stream rule asks
  ``injection.attach_hold`` to let the stream's upstream end wait for held bytes.
- ``responseheaders`` (after the carrier is installed): the carrier is wrapped in a
  ``FaultedStream``, which hands each carrier output to the ``FaultStage`` and acts at the fault's
  point with the guard's machinery: ``Carrier.close_with`` (the error event rendered in the
  client's protocol, by the translator on a translated route), ``injection.end_stream``,
  ``injection.reset_stream``; held bytes leave through ``injection.release`` when a
  ``GuardTimer`` fires (asyncio, on mitmproxy's loop: no other flow waits).
- ``annotate`` (``ProxAI.record``): ``extra.fault`` in the summary, the error's ``source`` set to
  ``injected``, the outcome the client saw.

docs/agent-testing.md is the user's guide; docs/design/faults.md has the rules.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mitmproxy import command, ctx, exceptions, flowfilter, http
from mitmproxy.addonmanager import Loader

from proxai.core.errors import ConfigError
from proxai.core.errors.providers import http_error
from proxai.core.model import ErrorInfo, ErrorKind, Outcome, StreamSummary
from proxai.faults.plan import STREAM_FAULTS, FaultPlan
from proxai.faults.stage import ERRORS, Act, FaultStage
from proxai.mitm import injection
from proxai.mitm.carrier import Carrier
from proxai.mitm.option_errors import checked_options
from proxai.pipeline.carrier import OPEN, GuardAction
from proxai.pipeline.keep import KeepingStream
from proxai.pipeline.scrub import ScrubbingStream
from proxai.safety.termsafe import log_safe

if TYPE_CHECKING:
    from proxai.faults.rules import FaultRule
    from proxai.mitm.addon import FlowState

logger = logging.getLogger(__name__)

INJECTED = "injected"  # ErrorInfo.source of an error ProxAI injected on purpose


@dataclass(slots=True)
class FlowFault:
    """The fault chosen for one flow and, once streaming, its stage."""

    rule: FaultRule
    hold: injection.StreamHold | None = None
    stage: FaultStage | None = None
    stream: FaultedStream | None = None
    status: int | None = None  # http_error: the status answered
    reason: str | None = None  # why the fault did not apply
    extra: dict[str, Any] = field(default_factory=dict)


class FaultedStream:
    """The callable installed as ``flow.response.stream`` over the carrier of a faulted flow."""

    def __init__(self, flow: http.HTTPFlow, carrier: Carrier, fault: FlowFault, stage: FaultStage) -> None:
        self.flow = flow
        self.carrier = carrier
        self.fault = fault
        self.stage = stage
        self.clock = carrier.clock
        self.closing = False  # we close the carrier (the fault's point)
        self.broken = False
        self.timer = injection.GuardTimer(self.on_timer, carrier.clock)

    def __call__(self, chunk: bytes) -> bytes | list[bytes]:
        if self.broken:
            return b"" if chunk is injection.RELEASE else self.carrier(chunk)
        try:
            return self._call(chunk)
        except Exception as exc:
            # A bug of ours: the flow goes on unfaulted (what the stage held leaves first).
            logger.warning(
                "proxai: internal error in the fault stage: %s: %s", type(exc).__name__, log_safe(exc)
            )
            logger.debug("proxai: traceback", exc_info=True)
            self.broken = True
            self.timer.cancel()
            if self.fault.hold is not None:
                self.fault.hold.off = True
            return []

    def _call(self, chunk: bytes) -> list[bytes]:
        stage = self.stage
        if chunk is injection.RELEASE:
            now = self.clock()
            released = stage.release(now)
            self.arm()
            return released
        out = self.carrier(chunk)
        pieces = [out] if isinstance(out, bytes) else list(out)
        now = self.clock()
        if self.carrier.closed is not None and not self.closing:
            # The guard or a failed translation closed the client stream: its error goes out
            # after what the stage held, and nothing more is shaped.
            self.timer.cancel()
            return [b for b in [*stage.abandon(now), *pieces] if b]
        step = stage.end(pieces, now) if chunk == b"" else stage.feed(pieces, now)
        send: list[bytes] = step.send
        if step.act is not None:
            send.extend(self.act(step.act, now, ending=chunk == b""))
        self.arm()
        return [b for b in send if b]  # never b"" mid-stream

    def act(self, act: Act, now: float, *, ending: bool) -> list[bytes]:
        """The fault's point: end the client stream as the rule says."""
        stage, carrier, rule = self.stage, self.carrier, self.fault.rule
        self.closing = True
        self.timer.cancel()
        where = f"after {stage.at_event} client events"
        if act is Act.RESET:
            if self.fault.hold is not None:
                self.fault.hold.blocking = True  # nothing more reaches the client before the reset
            message = f"ProxAI fault: the client connection was reset {where}"
            if not ending:
                # first: the guard's close handler asks for a clean end, which must come second
                injection.reset_stream(self.flow, message)
            carrier.close_with(
                GuardAction(close=True, inject=b"", kind=ErrorKind.CONNECTION, message=message), now
            )
            return []
        if act is Act.ERROR:
            _, kind, message = stage.error
            data = carrier.close_with(GuardAction(close=True, kind=kind, message=message), now)
            stage.injected(data, now)
            if not ending:
                injection.end_stream(self.flow, "fault")
            return [data]
        message = f"ProxAI fault: the stream was truncated {where} ({rule.describe()})"
        carrier.close_with(
            GuardAction(close=True, inject=b"", kind=ErrorKind.CONNECTION, message=message), now
        )
        if not ending:
            injection.end_stream(self.flow, "fault")
        return []

    def arm(self) -> None:
        self.timer.arm(self.stage.next_release)

    def on_timer(self) -> None:
        if self.carrier.state not in OPEN and not self.stage.holding:
            return
        if not injection.release(self.flow):
            logger.debug("proxai: %s: held bytes wait for the next upstream chunk", self.flow.id)


def read_rules(spec: str, *, inline: bool) -> list[FaultRule]:
    """The rules of the ``proxai_faults`` option (a file or inline rules), or of the command
    (``inline``). Their reader (pydantic models) is imported with the first rule, so a proxy
    without faults never imports it (docs/design/footprint.md)."""
    if not spec.strip():
        return []
    from proxai.faults import rules

    return rules.parse_inline(spec) if inline else rules.parse_option(spec)


class FaultAddon:
    """mitmproxy addon part of fault injection (a child addon of ``ProxAI``)."""

    def __init__(self, state_of: Callable[[http.HTTPFlow], FlowState | None]) -> None:
        self.state_of = state_of
        self.plan = FaultPlan()
        self.command_plan = FaultPlan()
        self.filters: dict[int, flowfilter.TFilter] = {}  # id(rule) -> compiled filter
        self.flows: weakref.WeakKeyDictionary[http.HTTPFlow, FlowFault] = weakref.WeakKeyDictionary()
        self.limits: Any = None

    def load(self, loader: Loader) -> None:
        loader.add_option(
            "proxai_faults",
            str,
            "",
            "Fault injection for testing agents (docs/agent-testing.md): a TOML or JSON rules file, or "
            "inline rules 'KIND key=value ...' separated by ';' (e.g. 'http_error error=overloaded "
            "count=1'). Empty: no faults.",
        )

    @checked_options
    def configure(self, updated: set[str]) -> None:
        if "proxai_faults" not in updated:
            return
        try:
            rules = read_rules(ctx.options.proxai_faults, inline=False)
            self._compile(rules)
        except ConfigError as exc:
            raise exceptions.OptionsError(f"proxai_faults: {exc}") from exc  # type: ignore[no-untyped-call]
        self.plan = FaultPlan.of(rules)
        if rules:
            injection.install()
            logger.info("proxai: fault rules: %s", "; ".join(r.describe() for r in rules))

    def _compile(self, rules: list[FaultRule]) -> None:
        for r in rules:
            if r.filter and id(r) not in self.filters:
                try:
                    self.filters[id(r)] = flowfilter.parse(r.filter)
                except ValueError as exc:
                    raise ConfigError(f"filter {r.filter!r}: {exc}") from exc

    @command.command("proxai.fault")  # type: ignore[untyped-decorator]
    def fault(self, spec: str) -> str:
        """Arm one fault rule now (inline form, tried before the option's rules); 'clear' drops the
        rules armed this way, 'list' shows every rule and what it has left."""
        spec = spec.strip()
        if spec == "clear":
            self.command_plan = FaultPlan()
            return "proxai: command fault rules cleared"
        if spec in ("", "list"):
            rows = self.command_plan.status() + self.plan.status()
            return "\n".join(f"{r['rule']} (left {r['left']}, chosen {r['chosen']})" for r in rows) or (
                "proxai: no fault rules"
            )
        try:
            rules = read_rules(spec, inline=True)
            self._compile(rules)
        except ConfigError as exc:
            raise exceptions.CommandError(f"proxai.fault: {exc}") from exc
        for r in reversed(rules):
            self.command_plan.add_first(r)
        injection.install()
        text = "; ".join(r.describe() for r in rules)
        logger.info("proxai: fault rule armed: %s", text)
        return f"proxai: armed {text}"

    # -- hooks (``ProxAI.request`` / ``responseheaders`` call each after their own part) ------------

    def _choose(self, flow: http.HTTPFlow) -> FaultRule | None:
        def matches(_: int, rule: FaultRule) -> bool:
            f = self.filters.get(id(rule))
            return f is None or bool(f(flow))

        for plan in (self.command_plan, self.plan):
            chosen = plan.choose(matches)
            if chosen is not None:
                return chosen[1]
        return None

    def after_request(self, flow: http.HTTPFlow) -> None:
        if not flow.live or not (self.command_plan.armed or self.plan.armed):
            return
        state = self.state_of(flow)
        if state is None or flow.response is not None:
            return
        rule = self._choose(flow)
        if rule is None:
            return
        fault = FlowFault(rule)
        self.flows[flow] = fault
        if rule.fault == "http_error":
            self._answer(flow, state, fault)
            return
        fault.hold = injection.StreamHold(lambda: fault.stage is not None and fault.stage.holding)
        injection.attach_hold(flow, fault.hold)

    def _answer(self, flow: http.HTTPFlow, state: FlowState, fault: FlowFault) -> None:
        """Answer with the provider's HTTP error in the client's protocol; the upstream is not asked."""
        rule = fault.rule
        client = state.client_protocol or state.protocol
        name, _ = ERRORS[rule.error]
        retry = None if rule.retry_after is None else f"{rule.retry_after:g}"
        status, headers, body = http_error(client, name, f"req_proxai_fault_{flow.id[:8]}", retry)
        fault.status = rule.status or status
        flow.response = http.Response.make(fault.status, body, dict(headers))
        # The client's own protocol answered directly: nothing is translated.
        state.protocol, state.client_protocol, state.route = client, None, None
        logger.info(
            "proxai: fault: %s answered %s (%s)", log_safe(flow.request.path), fault.status, rule.describe()
        )

    def after_responseheaders(self, flow: http.HTTPFlow) -> None:
        fault = self.flows.get(flow)
        if fault is None or fault.rule.fault not in STREAM_FAULTS or flow.response is None:
            return
        state = self.state_of(flow)
        carrier = state.carrier if state is not None else None
        # the stream callable is the carrier, or wrappers over it that must see what the client
        # gets (the body keeper, the scrub of an env route's key): the stage goes right over the
        # carrier, under them
        keeper: KeepingStream | ScrubbingStream | None = None
        current = flow.response.stream
        while isinstance(current, (KeepingStream, ScrubbingStream)):
            keeper, current = current, current.inner
        if carrier is not None and current == carrier.feed:
            current = carrier  # mitmproxy calls the carrier's ``feed`` itself
        if carrier is None or current is not carrier:
            fault.reason = "the response is not a stream ProxAI carries"
            if fault.hold is not None:
                fault.hold.off = True
            return
        stage = FaultStage(
            fault.rule,
            carrier.client_protocol,
            now=carrier.clock(),
            status_code=flow.response.status_code,
            limits=carrier.observer.limits,
        )
        fault.stage = stage
        fault.stream = FaultedStream(flow, carrier, fault, stage)
        if keeper is not None:
            keeper.inner = fault.stream
        elif carrier.kept is not None:
            # The carrier kept what it returned: the body is now what the stage returns.
            flow.response.stream = KeepingStream(fault.stream, carrier.kept, carrier.clock)
            carrier.kept = None
        else:
            flow.response.stream = fault.stream

    def annotate(self, flow: http.HTTPFlow, state: FlowState, summary: StreamSummary, now: float) -> None:
        """``ProxAI.record``: say in the summary that (and how) a fault was injected."""
        fault = self.flows.pop(flow, None)
        if fault is None:
            return
        rule = fault.rule
        if fault.stream is not None:
            fault.stream.timer.cancel()
        if rule.fault == "http_error":
            summary.extra["fault"] = {
                "fault": rule.fault,
                "rule": rule.describe(),
                "injected": True,
                "error": rule.error,
                "status": fault.status,
            }
            if summary.error is not None:
                summary.error.source = INJECTED
            return
        stage = fault.stage
        if stage is None:
            summary.extra["fault"] = {
                "fault": rule.fault,
                "rule": rule.describe(),
                "injected": False,
                "reason": fault.reason or "the response never started",
            }
            return
        meta = stage.metadata(now)
        summary.extra["fault"] = meta
        if state.carrier is not None:
            state.carrier.client_bytes = stage.sent_bytes  # what the client really got
        if not stage.fired:
            return
        client = stage.client_summary(now)
        summary.outcome = client.outcome  # what the client got (the upstream's is in the notes)
        if rule.fault == "error_event":
            _, kind, message = stage.error
            summary.outcome = Outcome.ERROR
            summary.error = ErrorInfo(kind=kind, message=message, source=INJECTED, type=rule.error)
        elif rule.fault == "truncate":
            summary.error = None  # a clean end: the client's stream just stops
        elif rule.fault == "reset":
            summary.error = ErrorInfo(
                kind=ErrorKind.CONNECTION,
                message=f"ProxAI fault: the client connection was reset after {stage.at_event} client events",
                source=INJECTED,
            )
