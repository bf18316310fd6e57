"""The stream carrier's adapter in the mitmproxy shell: the callable mitmproxy installs as
``flow.response.stream`` for an SSE response, and the headers of a translated body.

The carrier itself (decode, observe, pass through or translate, hooks, injection, end) is the
sans-IO core's ``proxai.pipeline.carrier.StreamCarrier`` (docs/design/README.md follows one chunk
through it). This adapter only hands the core the shell's clock (``feed`` reads it for each
call), keeps the flow it carries, and logs the bugs the carrier caught (docs/design/core.md: one
warning line per kind and flow, the traceback at debug level). mitmproxy calls its ``feed`` with
each upstream chunk and once with ``b""`` at the end of the message; the injection code
(``proxai.mitm.injection``) is the other half of the shell's part.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from proxai.core.decode import Decoder
from proxai.mitm import fields
from proxai.pipeline.carrier import StreamCarrier
from proxai.pipeline.flow import FlowPipeline
from proxai.safety.termsafe import log_safe

if TYPE_CHECKING:
    from mitmproxy import http

logger = logging.getLogger(__name__)

_FRAMING = frozenset({b"content-encoding", b"content-length", b"content-md5", b"etag"})


def strip_translated_headers(response: http.Response) -> None:
    """A translated body is new bytes: the upstream's framing headers no longer describe it."""
    fields.drop(response.headers, _FRAMING)
    fields.put(response.headers, b"content-type", "text/event-stream; charset=utf-8")


class Carrier(StreamCarrier):
    """The carrier of one streamed flow, as mitmproxy calls it: ``flow.response.stream`` is its
    bound ``feed`` (one frame per read: ``feed`` reads the clock itself when called without
    ``now``); ``carrier(chunk)`` is the same call, for the stages that wrap it."""

    __slots__ = ("flow",)

    def __init__(
        self,
        pipeline: FlowPipeline,
        *,
        decoder: Decoder | None,
        decode_error: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        flow: http.HTTPFlow | None = None,
    ) -> None:
        super().__init__(pipeline, decoder=decoder, decode_error=decode_error, clock=clock)
        self.flow = flow

    def __call__(self, chunk: bytes) -> list[bytes]:
        return self.feed(chunk)

    def _bug(self, what: str) -> None:
        first = what not in self.bugs
        super()._bug(what)
        if first:
            exc = sys.exc_info()[1]
            logger.warning("proxai: %s: %s: %s", what, type(exc).__name__, log_safe(exc))
        logger.debug("proxai: traceback of %s", what, exc_info=True)
