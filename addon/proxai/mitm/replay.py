"""Replay in the mitmproxy shell: the ``proxai_replay`` options, reading the recorded flows, and
sending each matched request to the loopback player (docs/replay.md).

- ``configure``: ``proxai_replay`` (one or more ``.flow`` files) is read into a ``Cassette``
  (``proxai.replay.cassette``): every LLM flow with a stored response body is an entry, its
  request the CLIENT's request (on a translated route, the copy of the client's body the router
  kept) and its answer what the client received (``proxai.replay.plan.Answer``). A file that
  cannot be read, holds no LLM flow, or none with a body, is an option error of one line; a flow
  without a body is skipped with a note in the log.
- ``answer`` (called by ``ProxAI.request`` after detection, before routing): the request's
  conversation (``proxai.replay.match``) takes its recorded answer; the flow is sent to the
  ``PlayServer`` (``proxai.mitm.replay_server``) with the plan at ``proxai_replay_speed``, so the
  carrier, the guard and fault rules meet it as a live stream. A miss answers in the client's
  protocol with the divergence message (``proxai_replay_miss=error``) or goes to the upstream as
  usual (``upstream``).
- ``request`` (the hook, after the fault rules chose, so their filters see the client's URL): the
  taken flow goes to the player; one a fault rule answered gives its answer back to the cassette.
- ``restore`` puts the client's URL back once the request left; ``finish`` gives an answer that
  was never played back to the cassette. The summary's ``replay``
  says what happened (``ProxAI.record``).

Rules: docs/design/replay.md, 5 (the client side), 6 (the live path) and 9 (input).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from typing import Protocol as TypingProtocol

import orjson
from mitmproxy import ctx, exceptions, http
from mitmproxy.addonmanager import Loader

from proxai.core.detect import detect_protocol
from proxai.core.errors import ProxaiError
from proxai.core.errors.shapes import error_body
from proxai.core.model import ErrorKind, Protocol
from proxai.mitm.flowrows import FlowFileError, read_flows
from proxai.mitm.option_errors import checked_options
from proxai.mitm.replay_server import PATH_PREFIX, PlayServer
from proxai.mitm.runflows import missing_body
from proxai.replay.cassette import Cassette, Entry, Hit, Source
from proxai.replay.match import conversation
from proxai.replay.plan import Answer, kept_header, plan
from proxai.safety.redact import redact_url
from proxai.safety.termsafe import log_safe

logger = logging.getLogger(__name__)

MISS_MODES = ("error", "upstream")
MISS_STATUS = 400
JSON = "application/json"


class ReplayFileError(ProxaiError):
    """A recorded run cannot be replayed (not a flow file, truncated, no LLM flow with a body)."""


class ReplayState(TypingProtocol):
    """The part of the addon's per-flow state replay reads and writes."""

    protocol: Protocol
    start: float  # when the request reached the proxy (the addon's clock, time.monotonic)
    extra: dict[str, Any]


# ---- reading the recorded runs ----------------------------------------------------------------------


def load(paths: Sequence[str]) -> tuple[Cassette, list[str]]:
    """The cassette of the recorded runs in ``paths`` and the notes on the flows skipped."""
    entries: list[Entry] = []
    notes: list[str] = []
    for path in paths:
        try:
            flows = read_flows(path)
        except FlowFileError as exc:
            raise ReplayFileError(str(exc)) from exc
        llm = 0
        before = len(entries)
        for index, f in enumerate(flows, 1):
            if not isinstance(f, http.HTTPFlow):
                continue
            source = Source(path, index, f.id, _client_url(f))
            found = _entry(f, source)
            if found is None:
                continue
            llm += 1
            if isinstance(found, str):
                notes.append(f"{source.describe()} ({f.request.method} {f.request.path}) skipped: {found}")
            else:
                entries.append(found)
        if llm == 0:
            raise ReplayFileError(f"{path}: holds no LLM flow (a run saved with mitmdump -w)")
        if len(entries) == before:
            raise ReplayFileError(f"{path}: none of its {llm} LLM flows can be replayed ({notes[-1]})")
    return Cassette(entries), notes


def _entry(f: http.HTTPFlow, source: Source) -> Entry | str | None:
    """The entry of one recorded flow, why it is skipped, or None for a flow that is not an LLM flow."""
    raw_meta = f.metadata.get("proxai")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    protocol = _protocol(f, meta)
    if protocol is None:
        return None
    replay = meta.get("replay")
    if isinstance(replay, Mapping) and replay.get("miss") == "error":
        return "it is a replay miss (its answer is the divergence error, not a recorded one)"
    body = _client_body(f, meta)
    if isinstance(body, str):
        return body
    missing = missing_body(f, meta)
    if missing is not None:
        return missing
    resp = f.response
    if resp is None:
        return "no response was recorded (the request failed)"
    return Entry(source, conversation(protocol, body), _answer(f, resp, resp.raw_content or b"", meta))


def _client_url(f: http.HTTPFlow) -> str:
    meta = f.metadata.get("proxai")
    url = meta.get("original_url") if isinstance(meta, Mapping) else None
    return url if isinstance(url, str) else redact_url(f.request.pretty_url)


def _protocol(f: http.HTTPFlow, meta: Mapping[str, Any]) -> Protocol | None:
    for name in (meta.get("client_protocol"), meta.get("protocol")):
        if isinstance(name, str):
            try:
                return Protocol(name)
            except ValueError:
                continue
    return detect_protocol(f.request.method, f.request.path)


def _client_body(f: http.HTTPFlow, meta: Mapping[str, Any]) -> dict[str, Any] | str:
    """The client's own request body (a translated flow's request is the one sent upstream)."""
    client = meta.get("client_request")
    raw: bytes | str | None = None
    if isinstance(client, Mapping) and isinstance(client.get("body"), str):
        raw = client["body"]
    else:
        raw = f.request.get_content(strict=False)
    try:
        body = orjson.loads(raw or b"")
    except orjson.JSONDecodeError:
        return "its request body is not JSON"
    return body if isinstance(body, dict) else "its request body is not a JSON object"


def _seconds(timing: Mapping[str, Any], *names: str) -> float | None:
    for name in names:
        v = timing.get(name)
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
            return float(v)
    return None


def _answer(f: http.HTTPFlow, resp: http.Response, data: bytes, meta: Mapping[str, Any]) -> Answer:
    raw_timing = meta.get("timing")
    timing: Mapping[str, Any] = raw_timing if isinstance(raw_timing, Mapping) else {}
    start = f.request.timestamp_start
    stamped_headers = max(0.0, (resp.timestamp_start or start) - start)
    stamped_end = max(stamped_headers, (resp.timestamp_end or resp.timestamp_start or start) - start)
    headers_s = _seconds(timing, "headers_s")
    headers_s = stamped_headers if headers_s is None else headers_s
    first_s = _seconds(timing, "first_token_s", "first_event_s")
    first_s = headers_s if first_s is None else first_s
    total_s = _seconds(timing, "total_s")
    total_s = stamped_end if total_s is None else total_s
    counts = meta.get("counts")
    events = counts.get("events") if isinstance(counts, Mapping) else None
    return Answer(
        status=resp.status_code,
        headers=tuple((k, v) for k, v in resp.headers.items(multi=True) if kept_header(k)),  # type: ignore[no-untyped-call]
        body=data,
        streaming="text/event-stream" in resp.headers.get("content-type", "").lower(),
        headers_s=headers_s,
        first_s=max(first_s, headers_s),
        total_s=max(total_s, first_s, headers_s),
        reads=_reads(meta.get("reads")),
        events=events if isinstance(events, int) else 0,
        reset=f.error is not None and meta.get("outcome") != "completed",
    )


def _reads(raw: object) -> tuple[tuple[int, float], ...]:
    if not isinstance(raw, list):
        return ()
    out: list[tuple[int, float]] = []
    for item in raw:
        if not (isinstance(item, list) and len(item) == 2):
            return ()
        offset, at = item
        if not isinstance(offset, int) or not isinstance(at, int | float) or not math.isfinite(at):
            return ()
        out.append((offset, float(at)))
    return tuple(out)


# ---- the addon --------------------------------------------------------------------------------------


def _options_error(message: str) -> exceptions.OptionsError:
    return exceptions.OptionsError(message)  # type: ignore[no-untyped-call]


def parse_speed(text: str) -> float:
    """``proxai_replay_speed``: a number >= 0 (0: no delays); raises ``ValueError``."""
    speed = float(text)
    if not math.isfinite(speed) or speed < 0:
        raise ValueError(text)
    return speed


class Replay:
    """The replay options and the per-flow hand-off to the player (a child addon of ProxAI)."""

    def __init__(self, state_of: Callable[[http.HTTPFlow], ReplayState | None]) -> None:
        self.state_of = state_of
        self.cassette: Cassette | None = None
        self.speed = 1.0
        self.miss = "error"
        self.server = PlayServer()
        self._starting: asyncio.Task[None] | None = None

    def load(self, loader: Loader) -> None:
        loader.add_option(
            "proxai_replay",
            Sequence[str],
            [],
            "Recorded runs (.flow files saved with -w) that answer LLM requests instead of an "
            "upstream: a request gets the answer of the recorded request with the same conversation "
            "(docs/replay.md), as a stream with the recorded timing.",
        )
        loader.add_option(
            "proxai_replay_speed",
            str,
            "1",
            "How fast a replay plays the recorded timing: 1 as recorded, 2 twice as fast, 0 no delays.",
        )
        loader.add_option(
            "proxai_replay_miss",
            str,
            "error",
            "A request no recording matches: 'error' answers in the client's protocol with where it "
            "diverged from the closest recording; 'upstream' sends it to the upstream (save with -w to "
            "extend the recording).",
            choices=MISS_MODES,
        )

    @checked_options
    def configure(self, updated: set[str]) -> None:
        opts = ctx.options
        if "proxai_replay_speed" in updated:
            try:
                self.speed = parse_speed(opts.proxai_replay_speed)
            except ValueError:
                raise _options_error(
                    f"proxai_replay_speed: {opts.proxai_replay_speed!r} is not a number >= 0"
                ) from None
        if "proxai_replay_miss" in updated:
            self.miss = opts.proxai_replay_miss
        if "proxai_replay" in updated:
            paths = [p for p in opts.proxai_replay if p]
            if not paths:
                self.cassette = None
                return
            try:
                cassette, notes = load(paths)
            except ReplayFileError as exc:
                raise _options_error(f"proxai_replay: {exc}") from exc
            for note in notes:
                logger.info("proxai replay: %s", log_safe(note))
            self.cassette = cassette
            logger.info(
                "proxai replay: %d recorded answers from %s%s",
                len(cassette),
                log_safe(", ".join(paths)),
                f" ({len(notes)} flows skipped)" if notes else "",
            )
            self._start()

    def _start(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not running yet: ``running`` starts the server
        if self.server.port is None and self._starting is None:
            self._starting = loop.create_task(self.server.start())

    async def running(self) -> None:
        if self.cassette is not None:
            await self.server.start()

    def done(self) -> None:
        self.server.close()

    # -- per flow (called by ProxAI) ------------------------------------------------------------------

    def answer(self, flow: http.HTTPFlow, state: ReplayState) -> bool:
        """Answer ``flow`` from the recordings; True when replay took it (no routing then)."""
        cassette = self.cassette
        if cassette is None or not flow.live or flow.response is not None:
            return False
        client = state.protocol
        try:
            body = orjson.loads(flow.request.get_content(strict=False) or b"")
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            return self._miss(flow, state, "proxai replay: the request body is not a JSON object", None)
        found = cassette.take(conversation(client, body))
        if not isinstance(found, Hit):
            return self._miss(flow, state, found.message, found.closest)
        port = self.server.port
        if port is None:  # the server is not up (the proxy is not running yet): answered as a miss
            cassette.give_back(found.entry)
            return self._miss(flow, state, "proxai replay: the replay server is not running", None)
        p = plan(found.entry.answer, self.speed)
        token = self.server.add(p, state.start)
        state.extra["replay_token"] = (token, found.entry)
        state.extra["replay"] = {
            "replayed": True,
            **found.entry.source.to_metadata(),
            "speed": self.speed,
            "timed_by": p.timed_by,
            "waits_s": round(p.waits, 6),
            **({"again": True} if found.again else {}),
        }
        return True  # the request goes to the player in ``request``, after the fault rules chose

    def request(self, flow: http.HTTPFlow) -> None:
        """The hook, after ProxAI's and the fault rules' own: a flow ``answer`` took goes to the
        player now (a fault rule's filter saw the client's URL); one a fault rule answered gives
        its recorded answer back."""
        state = self.state_of(flow)
        taken = state.extra.get("replay_token") if state is not None else None
        if state is None or taken is None:
            return
        if flow.response is not None:
            self.finish(flow, state)
            return
        port = self.server.port
        if port is None:
            return
        req = flow.request
        state.extra["replay_url"] = (req.scheme, req.host, req.port, req.path, req.host_header)
        req.scheme, req.host, req.port = "http", "127.0.0.1", port
        req.path = PATH_PREFIX + taken[0]

    def _miss(self, flow: http.HTTPFlow, state: ReplayState, message: str, closest: Source | None) -> bool:
        state.extra["replay"] = {
            "replayed": False,
            "miss": self.miss,
            "message": message,
            "closest": None if closest is None else closest.to_metadata(),
        }
        logger.warning("%s", log_safe(message))
        if self.miss == "upstream":
            return False
        client = state.protocol
        flow.response = http.Response.make(
            MISS_STATUS, error_body(client, ErrorKind.INVALID_REQUEST, message), {"content-type": JSON}
        )
        return True

    def restore(self, flow: http.HTTPFlow, state: ReplayState) -> None:
        """The client's URL back on the flow, once the request went to the player."""
        saved = state.extra.pop("replay_url", None)
        if saved is None:
            return
        req = flow.request
        req.scheme, req.host, req.port, req.path, host_header = saved
        req.host_header = host_header

    def finish(self, flow: http.HTTPFlow, state: ReplayState) -> None:
        """The flow ended: an answer that was never played goes back to the cassette."""
        self.restore(flow, state)
        taken = state.extra.pop("replay_token", None)
        if taken is None or self.cassette is None:
            return
        token, entry = taken
        if self.server.forget(token):
            self.cassette.give_back(entry)
            state.extra["replay"] = {
                "replayed": False,
                "reason": "the request was answered before it reached the replay (a fault rule)",
            }
