"""Routed flows: route matching, the request's rewrite and the translation of a buffered reply
(docs/translation.md).

``Routing`` (``proxai.mitm.routing``) loads this module with the first routes file
(``proxai_routes``), so a proxy that only observes imports no translation
(docs/design/footprint.md). ``RoutedFlows.request`` runs from the addon's ``request`` hook (after
detection) and ``RoutedFlows.translate_body`` from its ``response`` hook (after the upstream body
was observed):

- request: match a route (``proxai.translate.routes``); rewrite the URL to the route's upstream (works in
  reverse mode and in regular/CONNECT mode: mitmproxy opens a new server connection when the
  host changes), the headers (``translate.headers``: auth from the client or from the route's
  environment variable), and the body (``translate.request``). A request the target cannot
  express is answered here with a 400 in the CLIENT's protocol error shape naming the field;
  nothing goes upstream. The route name and the original URL go into
  ``flow.metadata["proxai"]`` - never a key.
- response: a buffered JSON reply is translated back (``translate.response``); an upstream
  error body becomes the client protocol's error (``translate.errors``); a buffered SSE body
  (not streamed by mitmproxy) goes whole through the stream translator.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import orjson
from mitmproxy import http
from mitmproxy.net.http import status_codes
from mitmproxy.net.http import url as mitm_url

from proxai.core.errors import ProxaiError, TranslationError, UpstreamProtocolError
from proxai.core.errors.shapes import error_body, http_status_for
from proxai.core.model import ErrorKind, Protocol
from proxai.core.sse import SseScanner
from proxai.mitm import fields, urls
from proxai.mitm.routing import RoutedState, scrub_operator_key
from proxai.pipeline.flow import ClientSide, Translation, build_flow
from proxai.pipeline.observe import Limits
from proxai.safety.redact import Redactor, redact_json_value, register_secret
from proxai.translate import ir
from proxai.translate.errors import is_error_body, is_failed_body, translate_error
from proxai.translate.headers import credential_free_query, env_key, plan_headers
from proxai.translate.request import parse_body, translate_request
from proxai.translate.response import load_json, translate_response
from proxai.translate.routes import Route, RouteTable, load_routes

if TYPE_CHECKING:
    from proxai.mitm.routing import Routing

JSON = "application/json"


@functools.lru_cache(maxsize=64)
def _parsed_url(url: str) -> tuple[bytes, str, int, bytes, str]:
    """``url`` as mitmproxy's ``Request.url`` setter parses it (scheme, host, port, path; a
    ``ValueError`` is not remembered), the host as its ``host`` setter decodes it, and the Host
    header's value its setters write (``url.hostport``): a route's upstream URL is parsed once,
    not on every flow (the IDNA codec and ``urllib.parse``)."""
    scheme, host, port, path = mitm_url.parse(url)
    name = host.decode("idna")
    return scheme, name, port, path, mitm_url.hostport(scheme.decode(), name, port)


def _retarget(req: http.Request, url: str) -> None:
    """``req.url = url``: the same scheme, host, port, path, Host header and authority
    (tests/mitm/test_routed_url.py), with the URL parsed once (``_parsed_url``) and the Host
    header and the authority written once. mitmproxy's setter sets the host and then the port,
    and each rewrites both (its ``Headers`` lowercases every field's name on each look-up): about
    30,000 instructions more per routed flow."""
    scheme, host, port, path, hostport = _parsed_url(url)
    d = req.data
    d.scheme, d.host, d.port, d.path = scheme, host, port, path
    if fields.has(d.headers, b"host"):
        fields.put(d.headers, b"Host", hostport)
    if d.authority:
        req.authority = hostport


def _set_body(req: http.Request, body: bytes) -> None:
    """``req.content = body`` for a request without a content-encoding (the caller removed it):
    mitmproxy's setter stores the body (its identity encoding is the body itself) and sets
    ``content-length`` unless a ``transfer-encoding`` is named."""
    req.data.content = body
    if not fields.has(req.data.headers, b"transfer-encoding"):
        fields.put(req.data.headers, b"content-length", str(len(body)))


def _raw(name: str) -> bytes:
    """A header name as mitmproxy's ``Headers`` takes a ``str`` one."""
    return name.encode("utf-8", "surrogateescape")


def _parse(req: http.Request) -> dict[str, Any] | None:
    """The client's body as a JSON object, or None (``parse_body`` raises the error later)."""
    try:
        return parse_body(fields.content(req) or b"")
    except TranslationError:
        return None


def _model(body: dict[str, Any] | None) -> str | None:
    model = body.get("model") if body is not None else None
    return model if isinstance(model, str) else None


def _as_it_came(state: RoutedState, route: Route) -> bool:
    """A same-protocol route gives the client the upstream's bytes: not normalizing, or a resumed
    background stream (``Routing._resume``)."""
    return not route.normalize or bool(state.extra.get("resume"))


def _redact(url: str) -> str:
    return Redactor().url(url.split("?", 1)[0])


class RoutedFlows:
    """Route matching + request rewrite + JSON response translation, for the routes of one file;
    the settings (environment, clock, translation limits, strict translation) are the ``Routing``'s
    that holds it, read when a flow uses them (the options may change after the file is loaded)."""

    def __init__(self, path: str, settings: Routing) -> None:
        self.table: RouteTable = load_routes(path)  # ConfigError
        self.settings = settings

    def strict(self, route: Route) -> bool:
        """Strict translation on ``route``: its own ``strict_translation``, else the option's."""
        own = route.strict_translation
        return self.settings.strict_translation if own is None else own

    # -- request --------------------------------------------------------------------------------

    def request(self, flow: http.HTTPFlow, state: RoutedState) -> None:
        req = flow.request
        client = state.protocol
        read: list[dict[str, Any] | None] = []  # the body, parsed once: when a route's path matches

        def model_of() -> str | None:
            read.append(_parse(req))
            return _model(read[0])

        route = self.table.match_lazy(req.path, lambda: req.pretty_host, model_of)
        if route is None:
            return
        body = read[0] if read else _parse(req)
        model = _model(body)
        meta = flow.metadata.setdefault("proxai", {})
        info: dict[str, Any] = {
            "name": route.name,
            "client_protocol": str(client),
            "upstream_protocol": str(route.protocol),
            "original_url": _redact(urls.pretty_url(req)),
            "target_url": _redact(route.target_url()),
            "normalize": route.normalize,
        }
        meta["route"] = info
        if req.method.upper() == "GET":  # a background response's stream (detect.is_resume)
            self._resume(flow, state, route, info)
            return
        try:
            if body is None:
                body = parse_body(fields.content(req) or b"")  # raises the body error
            key = self._key(state, route)
            opts = ir.RequestOptions(
                model=route.map_model(model) if route.model is not None else None,
                default_max_tokens=route.default_max_tokens,
                max_tokens_limit=route.max_tokens_limit,
                chat_max_tokens_field=route.chat_max_tokens_field,
                strict=self.strict(route),
            )
            translated = translate_request(body, client, route.protocol, opts)
        except TranslationError as exc:
            self._reject(flow, state, client, exc, info)
            return
        info["stream"] = translated.stream
        if translated.dropped:
            info["dropped"] = dict(translated.dropped)
        if translated.ignored:
            info["ignored"] = list(translated.ignored)
        if translated.notes:
            info["notes"] = list(translated.notes)
        if route.model is not None:
            info["model"] = {"client": model, "upstream": translated.body.get("model")}
        options = body.get("stream_options")
        state.extra["client_include_usage"] = isinstance(options, dict) and bool(options.get("include_usage"))
        state.extra["created"] = int(self.settings.wall_clock())
        state.extra["call_shapes"] = translated.call_shapes
        state.extra["custom_tools"] = translated.custom_tools

        self._headers(req, client, route, key)
        # (a query goes upstream only to the client's own protocol: no URL is built for another)
        url = urls.url(req) if client is route.protocol else ""
        query = url.split("?", 1)[1] if "?" in url else ""
        _retarget(req, route.target_url(credential_free_query(query)))
        if translated.body is not body or opts.model is not None:
            # a new body (translated, or the model mapped); a plain reroute keeps the client's bytes
            if fields.has(req.headers, b"content-encoding"):
                del req.headers["content-encoding"]
            # the client's own request stays visible beside the one sent upstream (secrets masked:
            # metadata never holds one)
            client_body = orjson.dumps(redact_json_value(body)).decode()
            meta["client_request"] = {"url": info["original_url"], "body": client_body}
            _set_body(req, orjson.dumps(translated.body))
        if not fields.has(req.headers, b"content-type"):
            fields.put(req.headers, b"content-type", JSON)

        state.client_protocol = client
        state.protocol = route.protocol
        state.route = route

    def _key(self, state: RoutedState, route: Route) -> str | None:
        """The operator's key the route injects (from its environment variable), or None."""
        key = env_key(self.settings.env, route.auth_env) if route.auth_env else None
        if key is not None:
            register_secret(key)  # redacted from every output, never returned to the client
            state.extra["operator_key"] = key
        return key

    @staticmethod
    def _headers(req: http.Request, client: Protocol, route: Route, key: str | None) -> None:
        plan = plan_headers(
            fields.as_dict(req.headers),
            client=client,
            target=route.protocol,
            key=key,
            anthropic_version=route.anthropic_version,
        )
        if plan.remove:
            fields.drop(req.headers, frozenset(_raw(name).lower() for name in plan.remove))
        for name, value in plan.set:
            fields.put(req.headers, _raw(name), value)
        if key is not None:
            # an uncompressed reply: the operator's key is scrubbed from its bytes as they stream
            fields.put(req.headers, b"accept-encoding", "identity")

    def _resume(self, flow: http.HTTPFlow, state: RoutedState, route: Route, info: dict[str, Any]) -> None:
        """``GET .../responses/{id}?stream=true`` (docs/design/protocol-grammars.md, "Background
        mode"): no body to translate, and only a Responses upstream holds the response. On a route
        to one the request goes to the route's upstream with its query, and the stream comes back
        as it is, in normalize mode too: the client asked for the events after ``starting_after``
        by their sequence numbers, which a rewritten stream would renumber. A route to another
        protocol answers a 400 in the Responses error shape."""
        req = flow.request
        client = state.protocol
        if route.protocol is not client:
            reason = f"a background response's stream is only on a Responses upstream, not {route.protocol}"
            self._reject(flow, state, client, TranslationError(reason, "response_id"), info)
            return
        self._headers(req, client, route, self._key(state, route))
        path, _, query = req.path.partition("?")
        rid = path.rstrip("/").rsplit("/", 1)[-1]
        req.url = f"{route.target_url()}/{rid}?{credential_free_query(query)}"
        info["resume"] = True
        state.extra["resume"] = True  # the client gets the upstream's bytes (``client_side``)
        state.client_protocol = client
        state.route = route

    def _reject(
        self,
        flow: http.HTTPFlow,
        state: RoutedState,
        client: Protocol,
        exc: TranslationError,
        info: dict[str, Any],
    ) -> None:
        kind = ErrorKind.TRANSLATION
        message = f"proxai cannot translate this request for {info['upstream_protocol']}: {exc}"
        if exc.field == "auth":
            kind = ErrorKind.AUTHENTICATION
            message = f"proxai: {exc.reason}"
        info["rejected"] = {"field": exc.field, "message": exc.reason}
        state.extra["rejected"] = True
        flow.response = http.Response.make(
            http_status_for(kind, client),
            error_body(client, kind, message, param=exc.field),
            {"content-type": JSON},
        )

    # -- response -------------------------------------------------------------------------------

    def client_side(self, state: RoutedState) -> ClientSide | None:
        """The client's side of a routed SSE response, for its pipeline (None: pass the bytes
        through)."""
        route = state.route
        client = state.client_protocol
        if not isinstance(route, Route) or client is None or state.extra.get("rejected"):
            return None
        upstream = state.protocol
        if client is upstream and _as_it_came(state, route):
            return None
        return ClientSide(
            client,
            created=int(state.extra.get("created") or 0),
            include_usage=bool(state.extra.get("client_include_usage", True)),
            call_shapes=state.extra.get("call_shapes") or {},
            max_buffer=self.settings.max_buffer,
            strict=self.strict(route),
            custom_tools=state.extra.get("custom_tools") or frozenset(),
        )

    def body_too_large(self, flow: http.HTTPFlow, state: RoutedState, message: str) -> None:
        """A buffered reply past ``proxai_max_body`` was not parsed: a translated route cannot give
        it to the client in the upstream's protocol, so the client gets a ``stream_limit`` error in
        its own; an observe-only route passes it through."""
        route = state.route
        client = state.client_protocol
        resp = flow.response
        if not isinstance(route, Route) or client is None or resp is None or state.extra.get("rejected"):
            return
        if client is state.protocol and _as_it_came(state, route):
            return
        info = flow.metadata.setdefault("proxai", {}).setdefault("route", {})
        info["response_error"] = message
        kind = ErrorKind.STREAM_LIMIT
        self._replace(resp, http_status_for(kind, client), error_body(client, kind, message))

    def translate_body(self, flow: http.HTTPFlow, state: RoutedState) -> None:
        """Rewrite a buffered upstream reply for the client (the addon observed it already)."""
        route = state.route
        client = state.client_protocol
        resp = flow.response
        if not isinstance(route, Route) or client is None or resp is None or state.extra.get("rejected"):
            return
        scrub_operator_key(resp, state.extra.get("operator_key"))
        upstream = state.protocol
        if client is upstream and _as_it_came(state, route):
            return
        raw = resp.get_content(strict=False) or b""
        info = flow.metadata.setdefault("proxai", {}).setdefault("route", {})
        try:
            if "text/event-stream" in resp.headers.get("content-type", "").lower():
                self._translate_sse(resp, raw, state)
                return
            if client is upstream:
                return  # JSON normalize: nothing to repair in a whole JSON body
            if resp.status_code >= 400:
                self._error(resp, raw, resp.status_code, client, info)
                return
            body = load_json(raw)
            if is_failed_body(upstream, body):
                err = body.get("error")
                self._error(resp, orjson.dumps({"error": err}), 502, client, info)
                return
            if is_error_body(body):  # an error object sent with 200 (some compatible servers)
                self._error(resp, raw, 502, client, info)
                return
            out = translate_response(
                body,
                upstream,
                client,
                created=int(state.extra.get("created") or 0),
                call_shapes=state.extra.get("call_shapes") or {},
                custom_tools=state.extra.get("custom_tools") or frozenset(),
            )
        except (TranslationError, UpstreamProtocolError) as exc:
            message = f"proxai cannot translate the upstream {upstream} response: {exc}"
            info["response_error"] = message
            self._replace(resp, 502, error_body(client, ErrorKind.UPSTREAM_PROTOCOL, message))
            return
        if out.dropped:
            info["response_dropped"] = dict(out.dropped)
        if out.left_out:
            kinds = ", ".join(f"{k} x{n}" for k, n in sorted(out.left_out.items()))
            if self.strict(route):  # strict translation: content without counterpart is an error
                message = (
                    f"proxai strict translation: the upstream's answer holds {kinds}, which {client} "
                    "cannot carry"
                )
                info["response_error"] = message
                self._replace(resp, 502, error_body(client, ErrorKind.UPSTREAM_PROTOCOL, message))
                return
            meta = flow.metadata["proxai"]
            extra = dict(meta.get("extra") or {})
            extra["left_out"] = {**extra.get("left_out", {}), **out.left_out}
            extra["notes"] = [
                *extra.get("notes", ()),
                f"left out (no counterpart in the client protocol): {kinds}",
            ]
            meta["extra"] = extra
        self._replace(resp, resp.status_code, out.to_bytes())

    def _error(
        self, resp: http.Response, raw: bytes, status: int, client: Protocol, info: dict[str, Any]
    ) -> None:
        te = translate_error(raw, status, client)
        info["upstream_error"] = {"status": status, "kind": str(te.kind), "type": te.upstream_type}
        self._replace(resp, te.status, te.body)

    def _translate_sse(self, resp: http.Response, raw: bytes, state: RoutedState) -> None:
        side = self.client_side(state)
        if side is None:
            return
        translator = Translation(
            build_flow(state.protocol, side, limits=Limits(max_tool_args=self.settings.max_tool_args))
        )
        scanner = SseScanner()
        try:
            out = translator.feed(scanner.feed(raw) + scanner.close()) + translator.finish()
        except ProxaiError as exc:
            out = translator.fail(ErrorKind.UPSTREAM_PROTOCOL, str(exc))
        for name in ("content-encoding", "content-md5", "etag"):
            if name in resp.headers:
                del resp.headers[name]
        resp.headers["content-type"] = "text/event-stream; charset=utf-8"
        resp.content = out

    @staticmethod
    def _replace(resp: http.Response, status: int, body: bytes) -> None:
        if resp.status_code != status:
            resp.status_code = status
            resp.reason = status_codes.RESPONSES.get(status, "")
        for name in ("content-encoding", "content-md5", "etag"):
            if name in resp.headers:
                del resp.headers[name]
        resp.headers["content-type"] = JSON
        resp.content = body
