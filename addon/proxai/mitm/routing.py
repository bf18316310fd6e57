"""Routing in the mitmproxy shell: the routes option's holder, and the scrub of an operator's key
(docs/translation.md).

``Routing`` holds what the options say about translation (``proxai_max_translate_buffer``,
``proxai_strict_translation``, the tool-argument cap) and, once ``proxai_routes`` names a file,
that file's ``RoutedFlows`` (``proxai.mitm.routed``: route matching, the request's rewrite, the
translation of a buffered reply). The addon calls its four hooks on every LLM flow; without a
routes file each returns at once, and neither the translation nor pydantic is imported
(docs/design/footprint.md).

``client_stream`` / ``scrub_operator_key``: a route that injects the operator's key from its
environment variable must not hand that key to the client when the upstream quotes it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from typing import Protocol as TypingProtocol

from mitmproxy import http

from proxai.core.decode import Decoder, make_decoder
from proxai.core.errors import DecodeError
from proxai.core.model import Protocol
from proxai.pipeline.scrub import ScrubbingStream, StreamFn
from proxai.safety.redact import REDACTED_B
from proxai.stream.limits import DEFAULT_MAX_BUFFER, DEFAULT_MAX_TOOL_ARGS

if TYPE_CHECKING:
    from proxai.mitm.routed import RoutedFlows
    from proxai.pipeline.flow import ClientSide
    from proxai.translate.routes import RouteTable


class RoutedState(TypingProtocol):
    """The part of the addon's per-flow state that routing reads and writes."""

    protocol: Protocol  # detected client protocol; becomes the upstream protocol when routed
    client_protocol: Protocol | None
    route: Any
    extra: dict[str, Any]


class Routing:
    """The addon's routing: the translation settings and, with a routes file, its ``RoutedFlows``."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.routed: RoutedFlows | None = None
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.wall_clock = wall_clock
        # Stream translation limits (options proxai_max_translate_buffer, proxai_max_tool_args).
        self.max_buffer = DEFAULT_MAX_BUFFER
        self.max_tool_args = DEFAULT_MAX_TOOL_ARGS
        # Option proxai_strict_translation: what a route without its own strict_translation gets.
        self.strict_translation = False

    @property
    def table(self) -> RouteTable | None:
        return None if self.routed is None else self.routed.table

    def configure(self, path: str) -> None:
        """Load the routes file named by ``proxai_routes`` (empty: no routing). ``ConfigError``."""
        if not path:
            self.routed = None
            return
        from proxai.mitm.routed import RoutedFlows  # the translation, with the first routes file

        self.routed = RoutedFlows(path, self)

    def request(self, flow: http.HTTPFlow, state: RoutedState) -> None:
        if self.routed is not None:
            self.routed.request(flow, state)

    def client_side(self, state: RoutedState) -> ClientSide | None:
        """The client's side of a routed SSE response, for its pipeline (None: pass the bytes
        through)."""
        if self.routed is None or state.route is None:
            return None
        return self.routed.client_side(state)

    def body_too_large(self, flow: http.HTTPFlow, state: RoutedState, message: str) -> None:
        if self.routed is not None and state.route is not None:
            self.routed.body_too_large(flow, state, message)

    def translate_body(self, flow: http.HTTPFlow, state: RoutedState) -> None:
        if self.routed is not None and state.route is not None:
            self.routed.translate_body(flow, state)


def scrub_operator_key(resp: http.Response, key: object) -> None:
    """An upstream that quotes the key it received (as providers do in their "invalid API key"
    errors) must not hand the operator's key to the client: it is replaced in the headers and the
    buffered body. A reply the route does not translate is otherwise left byte for byte."""
    if not isinstance(key, str) or not key:
        return
    secret = key.encode()
    _scrub_headers(resp, secret)
    raw = resp.get_content(strict=False)
    if raw is not None and secret in raw:
        if "content-encoding" in resp.headers:
            del resp.headers["content-encoding"]
        resp.content = raw.replace(secret, REDACTED_B)


def _scrub_headers(resp: http.Response, secret: bytes) -> None:
    if any(secret in value for _name, value in resp.headers.fields):
        resp.headers.fields = tuple((n, v.replace(secret, REDACTED_B)) for n, v in resp.headers.fields)


def client_stream(resp: http.Response, key: object, inner: StreamFn, max_decoded: int) -> StreamFn:
    """The stream callable the client's bytes come out of, for a streamed reply. On a route that
    injects an env key (``key``) the key is scrubbed from the reply's headers now and from its
    bytes as they stream (``proxai/pipeline/scrub.py``; a compressed reply is decoded first and sent
    decoded). Every other flow gets ``inner`` itself: no wrapper, the upstream's bytes as they are."""
    if not isinstance(key, str) or not key:
        return inner
    secret = key.encode()
    _scrub_headers(resp, secret)
    decoder: Decoder | None = None
    encoding = resp.headers.get("content-encoding", "")
    if encoding.strip().lower() not in ("", "identity"):
        try:
            decoder = make_decoder(encoding, max_decoded)
        except DecodeError:
            decoder = _Undecodable()  # what cannot be read cannot be scrubbed: nothing is sent
        for name in ("content-encoding", "content-length", "content-md5", "etag"):
            if name in resp.headers:
                del resp.headers[name]
    return ScrubbingStream(inner, secret, REDACTED_B, decoder)


class _Undecodable:
    """The decoder of a content-encoding ProxAI does not know: every piece fails."""

    encoding = "unknown"

    def feed(self, data: bytes) -> bytes:
        raise DecodeError("unknown content-encoding: the reply cannot be scrubbed")

    def flush(self) -> bytes:
        return b""
