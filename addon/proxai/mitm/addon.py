"""The ProxAI mitmproxy addon: detect LLM flows, carry their streams, record how they ended.

The addon decides whether a response is SSE and hands it to the protocol's streaming handling;
the carrier wraps the byte stream; the end of the stream emits the outcome
(docs/design/README.md, "Following one chunk"). Here:

- ``request``: detect the protocol (paths, Azure paths, or the ``proxai_filter`` option with a
  ``proxai_protocol`` hint / body sniffing); remember the start time; ``route_request`` is the
  seam where the request-translation Router plugs in.
- ``responseheaders``: SSE -> install a ``Carrier`` as ``flow.response.stream``; anything else
  stays buffered.
- ``response``: buffered and server-replayed bodies go through ``observe_body``; a streamed
  one was finished by its carrier. The summary goes to ``flow.metadata["proxai"]``, a one-line
  ``flow.comment``, a marker for flows that did not complete, and unfinished-tool diagnostics.
- ``error``: the stream died -> ``observer.abort``.

Conventions after ``mitmproxy/addons/savehar.py``: options in ``load``, validated in
``configure`` (``OptionsError``). Every hook is wrapped: a bug in ProxAI is logged and never
breaks the flow or mitmproxy.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from mitmproxy import ctx, exceptions, flowfilter, http
from mitmproxy.addonmanager import Loader

from proxai.core.decode import DEFAULT_MAX_DECODED, Decoder, IdentityDecoder, make_decoder
from proxai.core.detect import detect_protocol, parse_protocol, sniff_protocol
from proxai.core.errors import ConfigError, DecodeError, ProxaiError
from proxai.core.model import ErrorKind, Outcome, Protocol, StopClass, StreamSummary
from proxai.mitm import fields, urls
from proxai.mitm.carrier import Carrier, strip_translated_headers
from proxai.mitm.commands import Visibility
from proxai.mitm.diagnostics import build_report, write_report
from proxai.mitm.export import live_redactor
from proxai.mitm.faults import FaultAddon
from proxai.mitm.guard_addon import GuardAddon
from proxai.mitm.option_errors import checked_options
from proxai.mitm.otlp_export import OtlpExport
from proxai.mitm.replay import Replay
from proxai.mitm.routing import Routing, client_stream
from proxai.outputs import cost, verdict, view_text
from proxai.pipeline import keep, observe
from proxai.pipeline.flow import ClientSide, FlowPipeline, build_flow, request_asks
from proxai.pipeline.scrub import ScrubbingStream
from proxai.protocols.conformance import NOTHING_ASKED, Asked
from proxai.safety.redact import Redactor, redact_url
from proxai.safety.termsafe import log_safe
from proxai.stream.limits import DEFAULT_MAX_BUFFER

DEFAULT_MAX_BODY = 64 * 1024 * 1024

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

_LIMIT_HELP = {
    "max_line": "Largest SSE line ProxAI scans, in bytes; past it the flow records a stream_limit error.",
    "max_event": "Largest SSE event ProxAI scans, in bytes; past it the flow records a stream_limit error.",
    "tail_bytes": "How many of the most recent stream bytes are kept for unfinished-tool diagnostics.",
    "max_tool_args": "Most argument bytes kept per tool call to judge whether its JSON is valid.",
    "max_capture": "Most text/reasoning bytes captured per flow when proxai_capture is on.",
}


def _safe(default: Any = None) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Wrap a hook: a bug is logged (one line; traceback at debug level) and swallowed."""

    def deco(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(*args, **kwargs)
            except exceptions.OptionsError:
                raise
            except Exception as exc:
                logger.warning(
                    "proxai: internal error in %s: %s: %s",
                    fn.__name__.removeprefix("_"),  # a hook's own part (``_request``) by the hook's name
                    type(exc).__name__,
                    log_safe(exc),
                )
                logger.debug("proxai: traceback", exc_info=True)
                return default  # type: ignore[no-any-return]

        return wrapper

    return deco


def _options_error(message: str) -> exceptions.OptionsError:
    return exceptions.OptionsError(message)  # type: ignore[no-untyped-call]


@dataclass(slots=True)
class FlowState:
    """What the addon remembers about one LLM flow between hooks (never serialized)."""

    protocol: Protocol
    start: float
    detected_by: str  # "path" | "filter"
    original_url: str
    headers_at: float | None = None
    carrier: Carrier | None = None
    client_protocol: Protocol | None = None  # set by the Router when translating
    route: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    # the streamed body as the client received it (proxai_keep_body), and when its reads left
    # (a replay plays them back)
    kept: keep.KeptBody | None = None
    asked: Asked = NOTHING_ASKED  # what the request sent upstream asks of the SDKs' parse helpers


class ProxAI:
    """The addon. ``addons = [ProxAI()]`` in ``addon/proxai.py``."""

    def __init__(self) -> None:
        self.clock: Callable[[], float] = time.monotonic
        self.filter: flowfilter.TFilter | None = None
        self.protocol_hint: Protocol | None = None
        self.limits = observe.Limits()
        self.max_decoded = DEFAULT_MAX_DECODED
        self.max_body = DEFAULT_MAX_BODY
        self.capture = False
        self.keep_body = True
        self.keep_budget = keep.KeepBudget()
        self.diagnostics_dir = "flows/diagnostics"
        self.flows: weakref.WeakKeyDictionary[http.HTTPFlow, FlowState] = weakref.WeakKeyDictionary()
        # Hooks for other parts of ProxAI (guard): called with each new carrier.
        self.carrier_setup: list[Callable[[http.HTTPFlow, Carrier], None]] = []
        # The stream guard (docs/guard.md): a child addon (options, start-up check) + a carrier setup hook.
        self.guard = GuardAddon()
        self.carrier_setup.append(self.guard.setup)
        # Visibility (docs/design/visibility.md): the contentview, proxai.export / proxai.report.
        self.visibility = Visibility()
        # Fault injection (docs/agent-testing.md): a child addon; it marks the summaries it shaped.
        self.faults = FaultAddon(self.flows.get)
        # Called by ``record`` before the summary is written: ``(flow, state, summary, now)``.
        self.annotators: list[Callable[[http.HTTPFlow, FlowState, StreamSummary, float], None]] = [
            self.faults.annotate
        ]
        # Called with each recorded flow, its summary and its metadata (the OTLP export).
        self.on_record: list[Callable[[http.HTTPFlow, StreamSummary, dict[str, Any]], None]] = []
        self.otlp = OtlpExport()
        self.on_record.append(self.otlp.record)
        # Replay of recorded runs (docs/replay.md): options proxai_replay, proxai_replay_speed, _miss.
        self.replay = Replay(self.flows.get)
        self.addons = [self.guard, self.visibility, self.faults, self.otlp, self.replay]
        # Routing + request/JSON translation (docs/translation.md): option proxai_routes.
        self.routing = Routing()

    # -- options --------------------------------------------------------------------------------

    def load(self, loader: Loader) -> None:
        loader.add_option(
            "proxai_filter",
            str,
            "",
            "A mitmproxy filter expression; matching requests are treated as LLM flows even when "
            "their path is not one of the known API paths (see proxai_protocol).",
        )
        loader.add_option(
            "proxai_protocol",
            str,
            "",
            "The protocol of flows matched only by proxai_filter: anthropic_messages, openai_chat or "
            "openai_responses. Empty: guess from the request body.",
        )
        loader.add_option(
            "proxai_diagnostics_dir",
            str,
            "flows/diagnostics",
            "Folder for unfinished-tool diagnostics JSON files (recent stream tail and state, no headers).",
        )
        loader.add_option(
            "proxai_routes",
            str,
            "",
            "A TOML routes file: which LLM requests are sent to which upstream in which protocol "
            "(docs/translation.md). Empty: observe only, no routing.",
        )
        loader.add_option(
            "proxai_capture",
            bool,
            False,
            "Capture the assembled text and reasoning of each flow (bounded by proxai_max_capture).",
        )
        loader.add_option(
            "proxai_keep_body",
            bool,
            True,
            "Keep the body of streamed LLM responses (the bytes the client received) so every mitmproxy "
            "view shows it, within proxai_keep_body_max per flow and proxai_keep_body_total over all "
            "kept bodies; past a cap the body is dropped with a note and the summary still shows. "
            "Independent of store_streamed_bodies, which keeps every streamed body.",
        )
        loader.add_option(
            "proxai_keep_body_max",
            int,
            keep.DEFAULT_MAX_PER_FLOW,
            "Largest streamed LLM response body proxai_keep_body keeps, in bytes.",
        )
        loader.add_option(
            "proxai_keep_body_total",
            int,
            keep.DEFAULT_MAX_TOTAL,
            "Most bytes of streamed LLM response bodies proxai_keep_body keeps at once (bodies of "
            "flows still in memory); past it further bodies are dropped with a note.",
        )
        loader.add_option(
            "proxai_max_decoded",
            int,
            DEFAULT_MAX_DECODED,
            "Most bytes one compressed chunk may expand to when ProxAI decodes gzip/deflate/br/zstd "
            "streams; past it the flow is passed through unobserved.",
        )
        loader.add_option(
            "proxai_max_body",
            int,
            DEFAULT_MAX_BODY,
            "Largest non-streamed (JSON) LLM response body ProxAI parses, in bytes, after decoding; a "
            "larger one is passed through unparsed and recorded as a stream_limit error (a translated "
            "route answers its client with a stream_limit error instead).",
        )
        loader.add_option(
            "proxai_max_translate_buffer",
            int,
            DEFAULT_MAX_BUFFER,
            "Most bytes of streamed content a stream translation keeps per flow (the Responses "
            "snapshot for response.completed, the text checked against .done events); past it the "
            "client gets a stream_limit error in its protocol.",
        )
        loader.add_option(
            "proxai_strict_translation",
            bool,
            False,
            "Strict translation on routes that do not set strict_translation themselves: a request "
            "declaring a tool the target cannot provide is refused (HTTP 400 naming the field) "
            "instead of sent without it, and upstream content the client's protocol has no "
            "counterpart for ends the stream with an error instead of being left out with a note.",
        )
        defaults = observe.Limits()
        for f in dataclasses.fields(observe.Limits):
            loader.add_option(
                f"proxai_{f.name}",
                int,
                getattr(defaults, f.name),
                _LIMIT_HELP.get(f.name, f"Observer limit {f.name} (see proxai.pipeline.observe.Limits)."),
            )

    def running(self) -> None:
        # the price table is read by a helper process on first use (about a second): off the event loop.
        threading.Thread(target=_warm_prices, name="proxai-prices", daemon=True).start()

    @checked_options
    def configure(self, updated: set[str]) -> None:
        opts = ctx.options
        if "proxai_filter" in updated:
            expr = opts.proxai_filter
            if expr:
                try:
                    self.filter = flowfilter.parse(expr)
                except ValueError as exc:
                    raise _options_error(f"proxai_filter: {exc}") from exc
            else:
                self.filter = None
        if "proxai_protocol" in updated:
            name = opts.proxai_protocol
            if name:
                try:
                    self.protocol_hint = parse_protocol(name)
                except ValueError as exc:
                    allowed = ", ".join(str(p) for p in Protocol)
                    raise _options_error(
                        f"proxai_protocol: unknown protocol {name!r} (one of {allowed})"
                    ) from exc
            else:
                self.protocol_hint = None
        if "proxai_diagnostics_dir" in updated:
            if not opts.proxai_diagnostics_dir:
                raise _options_error("proxai_diagnostics_dir must not be empty")
            self.diagnostics_dir = opts.proxai_diagnostics_dir
        if "proxai_capture" in updated or "proxai_otlp_content" in updated:
            # Exported content needs the captured text, reasoning and tool arguments.
            self.capture = bool(opts.proxai_capture) or bool(getattr(opts, "proxai_otlp_content", False))
        if "proxai_keep_body" in updated:
            self.keep_body = bool(opts.proxai_keep_body)
        for name in ("proxai_keep_body_max", "proxai_keep_body_total"):
            if name in updated and getattr(opts, name) <= 0:
                raise _options_error(f"{name} must be a positive number of bytes")
        if "proxai_keep_body_max" in updated:
            self.keep_budget.max_per_flow = opts.proxai_keep_body_max
        if "proxai_keep_body_total" in updated:
            self.keep_budget.max_total = opts.proxai_keep_body_total
        if "proxai_routes" in updated:
            try:
                self.routing.configure(opts.proxai_routes)
            except ConfigError as exc:
                raise _options_error(f"proxai_routes: {exc}") from exc
        if "proxai_max_decoded" in updated:
            if opts.proxai_max_decoded <= 0:
                raise _options_error("proxai_max_decoded must be a positive number of bytes")
            self.max_decoded = opts.proxai_max_decoded
        if "proxai_max_body" in updated:
            if opts.proxai_max_body <= 0:
                raise _options_error("proxai_max_body must be a positive number of bytes")
            self.max_body = opts.proxai_max_body
        if "proxai_max_translate_buffer" in updated:
            if opts.proxai_max_translate_buffer <= 0:
                raise _options_error("proxai_max_translate_buffer must be a positive number of bytes")
            self.routing.max_buffer = opts.proxai_max_translate_buffer
        if "proxai_strict_translation" in updated:
            self.routing.strict_translation = opts.proxai_strict_translation
        names = [f.name for f in dataclasses.fields(observe.Limits)]
        if any(f"proxai_{n}" in updated for n in names):
            values: dict[str, int] = {}
            for n in names:
                v = getattr(opts, f"proxai_{n}")
                if v <= 0:
                    raise _options_error(f"proxai_{n} must be a positive number of bytes")
                values[n] = v
            if values.get("max_line", 0) > values.get("max_event", 1 << 62):
                raise _options_error("proxai_max_line must not exceed proxai_max_event")
            self.limits = observe.Limits(**values)
            self.routing.max_tool_args = self.limits.max_tool_args  # the translators' cap per call too

    # -- seams for the other engineers ----------------------------------------------------------

    def route_request(self, flow: http.HTTPFlow, state: FlowState) -> None:
        """Request translation plugs in here: call the Router, rewrite URL/headers/body, and set
        ``state.client_protocol`` / ``state.route`` (the upstream protocol goes to
        ``state.protocol``). Observe-only: nothing to do."""
        self.routing.request(flow, state)

    def client_side_for(self, flow: http.HTTPFlow, state: FlowState) -> ClientSide | None:
        """Stream translation plugs in here: the client's side of a routed SSE response (its
        pipeline then translates), or None (observed only)."""
        return self.routing.client_side(state)

    def translate_body(self, flow: http.HTTPFlow, state: FlowState, summary: StreamSummary) -> None:
        """Non-streamed translation plugs in here: rewrite ``flow.response`` for the client."""
        self.routing.translate_body(flow, state)

    # -- detection --------------------------------------------------------------------------------

    def detect(self, flow: http.HTTPFlow) -> tuple[Protocol, str] | None:
        req = flow.request
        proto = detect_protocol(req.method, req.path)
        if proto is not None:
            return proto, "path"
        if self.filter is None or not self.filter(flow):
            return None
        if self.protocol_hint is not None:
            return self.protocol_hint, "filter"
        sniffed = sniff_protocol(
            req.get_content(strict=False) or b"", anthropic_headers="anthropic-version" in req.headers
        )
        if sniffed is None:
            logger.debug(
                "proxai: %s matched proxai_filter but its protocol is unknown", redact_url(req.pretty_url)
            )
            return None
        return sniffed, "filter"

    # -- hooks ----------------------------------------------------------------------------------
    #
    # Every flow hook calls its child addons' part itself, after its own, in the order mitmproxy
    # would (``addons``: guard, visibility, faults, replay, those that take part): mitmproxy's dispatch
    # of a hook to a child (the hook's arguments rebuilt from its dataclass fields, a coroutine
    # check) costs more than most of those parts do, on every flow. An error in a child's part
    # reaches mitmproxy as it did; ProxAI's own part is wrapped (``_safe``).

    def request(self, flow: http.HTTPFlow) -> None:
        self._request(flow)
        self.guard.after_request(flow)
        self.faults.after_request(flow)
        self.replay.after_request(flow)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        self._responseheaders(flow)
        self.guard.after_responseheaders(flow)
        self.faults.after_responseheaders(flow)

    def response(self, flow: http.HTTPFlow) -> None:
        self._response(flow)
        self.guard.after_response(flow)
        self.visibility.after_response(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._error(flow)
        self.guard.after_error(flow)
        self.visibility.after_error(flow)

    @_safe()
    def _request(self, flow: http.HTTPFlow) -> None:
        if not flow.live and "outcome" in (flow.metadata.get("proxai") or {}):
            # A flow loaded from a file (-r / mitmweb open) that was recorded live: its
            # metadata is the truth; re-observing a stored (often empty) body would overwrite it.
            return
        found = self.detect(flow)
        if found is None:
            return
        protocol, how = found
        state = FlowState(
            protocol=protocol,
            start=self.clock(),
            detected_by=how,
            original_url=redact_url(urls.pretty_url(flow.request)),
        )
        self.flows[flow] = state
        flow.metadata["proxai"] = {
            "schema": 1,
            "protocol": str(protocol),
            "detected_by": how,
            "original_url": state.original_url,
        }
        if not self.replay.answer(flow, state):  # (answered from a recording: nothing is routed)
            self.route_request(flow, state)
        state.asked = request_asks(fields.content(flow.request), state.protocol)

    @_safe()
    def _responseheaders(self, flow: http.HTTPFlow) -> None:
        state = self.flows.get(flow)
        if state is None or flow.response is None:
            return
        state.headers_at = self.clock()
        self.replay.restore(flow, state)
        if not flow.live or not _is_sse(flow.response) or flow.response.stream:
            return  # buffered: observed whole in the response hook
        if flow.response.raw_content is not None:
            # A response set by an addon (server replay): mitmproxy emulates this hook, then sends
            # the whole body without streaming it. The response hook observes it whole.
            return
        pipeline = self.new_pipeline(state, self.client_side_for(flow, state))
        pipeline.observer.headers(flow.response.status_code, state.headers_at)
        decoder: Decoder | None = None
        decode_error: str | None = None
        try:
            decoder = make_decoder(
                fields.header(flow.response.headers, b"content-encoding"), self.max_decoded
            )
        except DecodeError as exc:
            decode_error = str(exc)
        if isinstance(decoder, IdentityDecoder):
            decoder = None  # nothing to undo: the carrier scans each chunk as it is, no call per read
        carrier = Carrier(pipeline, decoder=decoder, decode_error=decode_error, clock=self.clock, flow=flow)
        if pipeline.translator is not None:
            strip_translated_headers(flow.response)
        for setup in list(self.carrier_setup):
            try:
                setup(flow, carrier)
            except Exception:
                logger.warning("proxai: carrier setup hook failed", exc_info=True)
        state.carrier = carrier
        # On a route that injects an env key the key is scrubbed from what the client gets; every
        # other flow gets the carrier itself. The keeper keeps what the client got.
        stream = client_stream(flow.response, state.extra.get("operator_key"), carrier, self.max_decoded)
        if isinstance(stream, ScrubbingStream):
            state.extra["scrub"] = stream  # what the client got is counted there
        if self.keep_body:
            state.kept = keep.KeptBody(self.keep_budget, state.start)
        if stream is carrier:
            # mitmproxy calls the carrier's ``feed`` itself (one frame per read), which keeps
            # what it returns.
            carrier.kept = state.kept
            flow.response.stream = carrier.feed
        elif state.kept is not None:
            flow.response.stream = keep.KeepingStream(stream, state.kept, self.clock)
        else:
            flow.response.stream = stream

    @_safe()
    def _response(self, flow: http.HTTPFlow) -> None:
        # The flow is done: forget its state (the carrier and its hooks reference the flow, so a
        # kept entry would keep the flow alive through the weak dictionary's value).
        state = self.flows.pop(flow, None)
        if state is None or flow.response is None:
            return
        self.replay.finish(flow, state)
        self.store_kept(flow, state)  # first: whatever fails below, the client's bytes are kept
        now = self.clock()
        carrier = state.carrier
        if carrier is not None and carrier.summary is None and carrier.upstream_bytes == 0:
            # The carrier was installed but never called: mitmproxy sent the body whole.
            state.carrier = carrier = None
        if carrier is not None:
            summary = carrier.summary
            if summary is None:  # the carrier never saw the end (a bug): take a snapshot
                summary = carrier.observer.finish(now)
            self.record(flow, state, summary)
            return
        resp = flow.response
        if resp.stream:
            # mitmproxy streamed it without us (stream_large_bodies): the body is gone.
            summary = self.new_pipeline(state, None).observer.finish(now)
            self.record(
                flow, state, summary, observe_error="the body was streamed by mitmproxy, not observed"
            )
            return
        headers_at = state.headers_at if state.headers_at is not None else now
        body, too_large = self.buffered_body(resp)
        if too_large is not None:
            # Not parsed (proxai_max_body): recorded as stream_limit; bytes pass through as they are.
            observer = self.new_pipeline(state, None).observer
            observer.headers(resp.status_code, headers_at)
            summary = observer.abort(too_large, now, ErrorKind.STREAM_LIMIT)
            self.routing.body_too_large(flow, state, too_large)
            self.record(flow, state, summary)
            return
        try:
            summary = observe.observe_body(
                state.protocol,
                body,
                status_code=resp.status_code,
                start=state.start,
                headers_at=headers_at,
                end=now,
                content_type=resp.headers.get("content-type"),
                capture=self.capture,
                limits=self.limits,
                asked=state.asked,
            )
        except ProxaiError as exc:
            observer = self.new_pipeline(state, None).observer
            observer.headers(resp.status_code, headers_at)
            summary = observer.abort(str(exc), now, ErrorKind.UPSTREAM_PROTOCOL)
        self.translate_body(flow, state, summary)
        self.record(flow, state, summary)

    @_safe()
    def _error(self, flow: http.HTTPFlow) -> None:
        state = self.flows.pop(flow, None)
        if state is None:
            return
        self.replay.finish(flow, state)
        self.store_kept(flow, state)
        now = self.clock()
        message = flow.error.msg if flow.error is not None else "the flow failed"
        if state.carrier is not None:
            summary = state.carrier.abort(message, now)
        else:
            observer = self.new_pipeline(state, None).observer
            if flow.response is not None and state.headers_at is not None:
                observer.headers(flow.response.status_code, state.headers_at)
            summary = observer.abort(message, now, ErrorKind.CONNECTION)
        self.record(flow, state, summary)

    def buffered_body(self, resp: http.Response) -> tuple[bytes, str | None]:
        """The decoded body of a buffered response, or why it is not parsed (past ``max_body``,
        before or after decoding: a compressed body is decoded with that bound, never whole)."""
        raw = resp.raw_content or b""
        limit = self.max_body
        if len(raw) > limit:
            return (
                b"",
                f"response body of {len(raw)} bytes exceeds proxai_max_body ({limit} bytes); not parsed",
            )
        encoding = resp.headers.get("content-encoding")
        if not encoding or encoding.strip().lower() == "identity":
            return raw, None
        try:
            decoder = make_decoder(encoding, limit)
            body = decoder.feed(raw)
            body += decoder.flush()
        except DecodeError as exc:
            if "exceeds the limit" in str(exc):
                return b"", f"decoded response body exceeds proxai_max_body ({limit} bytes); not parsed"
            return resp.get_content(strict=False) or b"", None  # as before: mitmproxy's best effort
        if len(body) > limit:
            return b"", f"decoded response body exceeds proxai_max_body ({limit} bytes); not parsed"
        return body, None

    # -- recording ------------------------------------------------------------------------------

    def store_kept(self, flow: http.HTTPFlow, state: FlowState) -> None:
        """The kept streamed body becomes the flow's body, unless mitmproxy stored one itself
        (``store_streamed_bodies``). Its bytes count against ``proxai_keep_body_total`` until the
        flow is freed. Nothing goes on the wire: the stream has been sent."""
        kept, state.kept = state.kept, None
        if state.carrier is not None:
            state.carrier.kept = None  # nothing more is kept
        if kept is None or flow.response is None:
            return
        if kept.dropped is not None:
            state.extra["body_not_kept"] = kept.dropped
            return
        if kept.reads:
            state.extra["reads"] = kept.marks()  # the body they describe is stored
        if flow.response.raw_content is not None:
            kept.drop("stored by mitmproxy")
            return
        body = kept.take_bytes()
        flow.response.raw_content = body
        self.keep_budget.hold(flow, len(body))

    def new_pipeline(self, state: FlowState, client: ClientSide | None) -> FlowPipeline:
        """The flow's pipeline, built once: observed only, or translated for ``client``."""
        return build_flow(
            state.protocol,
            client,
            start=state.start,
            limits=self.limits,
            capture=self.capture,
            asked=state.asked,
        )

    def record(
        self,
        flow: http.HTTPFlow,
        state: FlowState,
        summary: StreamSummary,
        observe_error: str | None = None,
    ) -> None:
        """Summary -> ``flow.metadata["proxai"]``, comment, marker, diagnostics."""
        for annotate in self.annotators:
            try:
                annotate(flow, state, summary, self.clock())
            except Exception:
                logger.warning("proxai: a summary annotator failed", exc_info=True)
        meta: dict[str, Any] = dict(flow.metadata.get("proxai") or {})
        meta.update(summary.to_metadata())
        meta["detected_by"] = state.detected_by
        meta["original_url"] = state.original_url
        if state.client_protocol is not None:
            meta["client_protocol"] = str(state.client_protocol)
        if "body_not_kept" in state.extra:
            meta["body_not_kept"] = state.extra["body_not_kept"]
        marks = state.extra.get("reads")
        if marks is not None:
            meta["reads"] = None  # its place in the summary: the marks go in after the redaction
        if "replay" in state.extra:
            meta["replay"] = state.extra["replay"]
        carrier = state.carrier
        if carrier is not None:
            scrub = state.extra.get("scrub")
            observe_error = observe_error or carrier.observe_error
            meta["carrier"] = {
                "upstream_bytes": carrier.upstream_bytes,
                "client_bytes": scrub.sent if isinstance(scrub, ScrubbingStream) else carrier.client_bytes,
                "translated": carrier.translator is not None,
                "closed": None
                if carrier.closed is None
                else {
                    "kind": str(carrier.closed.kind),
                    "message": carrier.closed.message,
                    "out_of_band": carrier.closed.out_of_band,
                },
            }
            if carrier.translate_error:
                meta["translate_error"] = carrier.translate_error
            if carrier.translator is not None:
                # dropped thinking/reasoning counts, the translator's phase and its error, if any
                meta["translation"] = translation = carrier.translator.metadata()
                _record_left_out(meta, translation)
        if observe_error:
            meta["observe_error"] = observe_error
        _note_lossy_stop(meta, summary, state.client_protocol, state.protocol)
        if summary.outcome is Outcome.CLOSED and carrier is not None:
            # What came last before the stream ended without its terminal event (names only): the
            # view shows it when the body was not kept, and for the upstream side of a translation.
            meta["last_events"] = view_text.last_event_names(bytes(carrier.observer.tail))
        cost.add_cost(meta, api_url=urls.pretty_url(flow.request), at=flow.request.timestamp_start)
        red = live_redactor(flow)
        if summary.outcome is Outcome.UNFINISHED_TOOL or "guard" in summary.extra:
            path = self.write_diagnostics(flow, state, summary, red)
            if path is not None:
                meta["diagnostics"] = path
        meta = red.metadata(meta)  # never a secret in the metadata (docs/security.md)
        if marks is not None:
            # {"offsets": [...], "seconds": [...]}, the keeper's lists of byte counts and clock
            # differences: the redaction returns numbers as they are, so its walk over them is left out
            meta["reads"] = marks
        flow.metadata["proxai"] = meta
        flow.comment = verdict.comment_line(meta)
        marker = verdict.marker_for(meta)
        if marker:
            flow.marked = marker
        for hook in list(self.on_record):
            try:
                hook(flow, summary, meta)
            except Exception as exc:
                logger.warning("proxai: record hook failed: %s: %s", type(exc).__name__, log_safe(exc))

    def write_diagnostics(
        self, flow: http.HTTPFlow, state: FlowState, summary: StreamSummary, red: Redactor | None = None
    ) -> str | None:
        tail = b""
        open_calls: list[Any] = []
        if state.carrier is not None:
            tail = bytes(state.carrier.observer.tail)
            open_calls = list(state.carrier.observer.open_tool_calls())
        report = build_report(
            flow_id=flow.id,
            method=flow.request.method,
            path=flow.request.path,
            summary=summary,
            tail=tail,
            open_tool_calls=open_calls,
            written_at=time.time(),
            redactor=red or live_redactor(flow),
        )
        try:
            return write_report(self.diagnostics_dir, flow.id, report)
        except OSError as exc:
            logger.warning("proxai: cannot write diagnostics to %s: %s", self.diagnostics_dir, log_safe(exc))
            return None


def _warm_prices() -> None:
    try:
        cost.warm()
    except Exception as exc:  # the first flow then loads the table itself
        logger.debug("proxai: loading the price table failed: %s", log_safe(exc))


def _note_lossy_stop(
    meta: dict[str, Any], summary: StreamSummary, client: Protocol | None, upstream: Protocol
) -> None:
    """An Anthropic ``pause_turn`` (the upstream paused a long server-tool turn, for the client to
    send back to continue it) has no counterpart in the OpenAI protocols: their client got a
    normal end (docs/translation.md, "Stop reasons"). The flow says so, so it is not silent."""
    if (
        summary.stop_class is StopClass.PAUSE_TURN
        and client is not None
        and client is not upstream
        and client is not Protocol.ANTHROPIC_MESSAGES
    ):
        extra = dict(meta.get("extra") or {})
        note = f"stop pause_turn has no counterpart in {client}: the client got a normal end of the turn"
        extra["notes"] = [*extra.get("notes", ()), note]
        meta["extra"] = extra


def _record_left_out(meta: dict[str, Any], translation: dict[str, Any]) -> None:
    """Content of the upstream's answer that the client's protocol has no counterpart for was
    left out of the client's stream: the flow's ``extra`` says so with a count per kind
    (``left_out``) and the translator's note (docs/design/real-streams.md, rule 6)."""
    left_out = translation.get("left_out")
    if not left_out:
        return
    extra = dict(meta.get("extra") or {})
    extra["left_out"] = dict(left_out)
    extra["notes"] = [*extra.get("notes", ()), *translation.get("notes", ())]
    meta["extra"] = extra


def _is_sse(response: http.Response) -> bool:
    return "text/event-stream" in (fields.header(response.headers, b"content-type") or "").lower()
