"""Replay in the mitmproxy shell: the ``proxai_replay`` options, and
sending each matched request to the loopback player (docs/replay.md).

- ``configure``: ``proxai_replay`` (one or more ``.flow`` files) is read into a ``Cassette``
  (``proxai.mitm.replay_load``, imported with the first file: a proxy that replays nothing
  imports no request reader, docs/design/footprint.md). A file that cannot be read, holds no
  LLM flow, or none with a body, is an option error of one line; a flow without a body is
  skipped with a note in the log.
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
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from typing import Protocol as TypingProtocol

import orjson
from mitmproxy import ctx, exceptions, http
from mitmproxy.addonmanager import Loader

from proxai.core.errors.shapes import error_body
from proxai.core.model import ErrorKind, Protocol
from proxai.mitm.option_errors import checked_options
from proxai.mitm.replay_server import PATH_PREFIX, PlayServer
from proxai.replay.plan import plan
from proxai.safety.termsafe import log_safe

if TYPE_CHECKING:
    from proxai.replay.cassette import Cassette, Source

logger = logging.getLogger(__name__)

MISS_MODES = ("error", "upstream")
MISS_STATUS = 400
JSON = "application/json"


class ReplayState(TypingProtocol):
    """The part of the addon's per-flow state replay reads and writes."""

    protocol: Protocol
    start: float  # when the request reached the proxy (the addon's clock, time.monotonic)
    extra: dict[str, Any]


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
            from proxai.mitm.replay_load import ReplayFileError, load  # with the first recording

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
        # the cassette's modules (the request reader) came with it (``replay_load``): once per flow
        from proxai.replay.cassette import Hit
        from proxai.replay.match import conversation

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
        return True  # the request goes to the player in ``after_request``, after the fault rules chose

    def after_request(self, flow: http.HTTPFlow) -> None:
        """``ProxAI.request`` calls it after its own part and the fault rules': a flow ``answer``
        took goes to the player now (a fault rule's filter saw the client's URL); one a fault rule
        answered gives its recorded answer back."""
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
