"""The routes file: which client requests go to which upstream, in which protocol.

The rules and the schema are in docs/translation.md, "Routes file".

A TOML file (option ``proxai_routes``), validated with pydantic. A bad file raises
``ConfigError`` whose message names the line and the field. Minimal form::

    [[route]]
    match = { path = "/v1/messages" }        # path prefix; host and model globs are optional
    upstream = "http://127.0.0.1:9000/v1"    # base URL as the target's official SDK takes it
    protocol = "openai_chat"                 # anthropic_messages | openai_chat | openai_responses

The upstream URL is read the way the target's official SDK reads its base URL: the OpenAI SDK
appends ``/chat/completions`` or ``/responses`` to ``.../v1``; the Anthropic SDK appends
``/v1/messages`` to its host URL. Keys never live in the file: ``auth = "pass"`` passes the
client's key through, ``auth = { env = "VAR" }`` names an environment variable. The first
matching route wins; no match means the flow passes through untouched.

Every value goes onto the wire or into a header, so the file is strict (``docs/security.md``): a
control character anywhere (a CR/LF in ``anthropic_version`` would add a header of its own) and a
credential anywhere in ``upstream`` (userinfo, path or query) are refused, naming the line.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from proxai.core.errors import ConfigError
from proxai.core.model import Protocol
from proxai.safety.redact import redact_text
from proxai.safety.termsafe import escape

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_KEYS = frozenset(
    {"api_key", "apikey", "key", "token", "secret", "authorization", "password", "bearer"}
)

_ENDPOINT: dict[Protocol, str] = {
    Protocol.ANTHROPIC_MESSAGES: "/v1/messages",
    Protocol.OPENAI_CHAT: "/chat/completions",
    Protocol.OPENAI_RESPONSES: "/responses",
}


def endpoint_protocol(path: str) -> Protocol | None:
    """The protocol a client path speaks, judged by its endpoint (query string ignored)."""
    p = path.split("?", 1)[0].rstrip("/")
    if p.endswith("/messages"):
        return Protocol.ANTHROPIC_MESSAGES
    if p.endswith("/chat/completions"):
        return Protocol.OPENAI_CHAT
    if p.endswith("/responses"):
        return Protocol.OPENAI_RESPONSES
    return None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class MatchSpec(_Strict):
    """What a request must look like for the route to apply (all given parts must match)."""

    path: str | None = None  # client path prefix, e.g. "/v1/messages"
    host: str | None = None  # glob on the client's target host, e.g. "api.anthropic.com" or "*.local"
    model: str | None = None  # glob on the request body's model, e.g. "claude-*"

    @field_validator("path")
    @classmethod
    def _path_starts_with_slash(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith("/"):
            raise ValueError("a path prefix starts with '/'")
        return v


class EnvAuth(_Strict):
    env: str

    @field_validator("env")
    @classmethod
    def _env_name(cls, v: str) -> str:
        if not _ENV_NAME.match(v):
            raise ValueError("env names an environment variable (letters, digits, underscore)")
        return v


class RouteSpec(_Strict):
    """One ``[[route]]`` table as written in the file."""

    name: str | None = None
    match: MatchSpec = Field(default_factory=MatchSpec)
    upstream: str
    protocol: Protocol
    model: str | dict[str, str] | None = None
    auth: Literal["pass"] | EnvAuth = "pass"
    normalize: bool = False
    default_max_tokens: Annotated[int, Field(gt=0)] = 4096
    max_tokens_limit: Annotated[int, Field(gt=0)] | None = None
    anthropic_version: str = "2023-06-01"
    chat_max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    # None: the proxai_strict_translation option decides
    strict_translation: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_literal_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for k in data:
                if str(k).lower() in _SECRET_KEYS:
                    raise ValueError(
                        f"'{k}': a key is never stored in the routes file; "
                        'use auth = "pass" or auth = { env = "VAR" }'
                    )
            auth = data.get("auth")
            if isinstance(auth, str) and auth != "pass":
                raise ValueError(
                    'auth: only "pass" or { env = "VAR" } are allowed (a literal key is rejected)'
                )
            if isinstance(auth, dict):
                for k in auth:
                    if k != "env":
                        raise ValueError(
                            f'auth.{k}: only {{ env = "VAR" }} is allowed (a literal key is rejected)'
                        )
        return data

    @field_validator("upstream")
    @classmethod
    def _upstream_url(cls, v: str) -> str:
        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("upstream must be an http:// or https:// base URL with a host")
        if parts.username is not None or parts.password is not None:
            raise ValueError('upstream must not carry credentials (use auth = { env = "VAR" })')
        if parts.query or parts.fragment:
            raise ValueError("upstream is a base URL without query or fragment")
        if redact_text(parts.path) != parts.path or redact_text(unquote(parts.path)) != unquote(parts.path):
            raise ValueError('upstream must not carry a key in its path (use auth = { env = "VAR" })')
        try:
            _ = parts.port
        except ValueError as e:
            raise ValueError(f"upstream has a bad port: {e}") from None
        return v


class RoutesFile(_Strict):
    route: list[RouteSpec] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Route:
    """A validated route, ready to use."""

    name: str
    match_path: str | None
    match_host: str | None
    match_model: str | None
    upstream: str
    protocol: Protocol
    model: str | tuple[tuple[str, str], ...] | None
    auth_env: str | None  # None: pass the client's key through
    normalize: bool
    default_max_tokens: int
    max_tokens_limit: int | None
    anthropic_version: str
    chat_max_tokens_field: Literal["max_tokens", "max_completion_tokens"]
    strict_translation: bool | None = None  # None: the proxai_strict_translation option decides

    def matches(self, host: str | None, path: str, model: str | None) -> bool:
        return (
            (self.match_path is None or _path_prefix(self.match_path, path))
            and (self.match_host is None or _host_matches(self.match_host, host))
            and (self.match_model is None or _model_matches(self.match_model, model))
        )

    def target_url(self, query: str = "") -> str:
        """The upstream endpoint URL, as the target's official SDK would build it from ``upstream``."""
        url = self.upstream.rstrip("/") + _ENDPOINT[self.protocol]
        return f"{url}?{query}" if query else url

    def map_model(self, model: str | None) -> str | None:
        """The model name to send upstream (the client's, unless the route maps it)."""
        if self.model is None:
            return model
        if isinstance(self.model, str):
            return self.model
        if model is not None:
            for pattern, target in self.model:
                if fnmatch.fnmatchcase(model, pattern):
                    return target
        return model


def _host_matches(glob: str, host: str | None) -> bool:
    return host is not None and fnmatch.fnmatchcase(host.lower(), glob.lower())


def _model_matches(glob: str, model: str | None) -> bool:
    return model is not None and fnmatch.fnmatchcase(model, glob)


def _path_prefix(prefix: str, path: str) -> bool:
    p = path.split("?", 1)[0]
    if not p.startswith(prefix):
        return False
    return len(p) == len(prefix) or prefix.endswith("/") or p[len(prefix)] == "/"


@dataclass(frozen=True, slots=True)
class RouteTable:
    """The routes of one file, in file order; the first match wins."""

    routes: tuple[Route, ...] = ()

    def match(self, host: str | None, path: str, model: str | None) -> Route | None:
        for r in self.routes:
            if r.matches(host, path, model):
                return r
        return None

    def match_lazy(
        self, path: str, host: Callable[[], str | None], model: Callable[[], str | None]
    ) -> Route | None:
        """``match`` that asks for the host and the model (the request body's, parsed) only when a
        route whose path matches names one, each at most once: a flow no route's path matches costs
        no header lookup and no body parse."""
        got: dict[str, str | None] = {}
        for r in self.routes:
            if r.match_path is not None and not _path_prefix(r.match_path, path):
                continue
            if r.match_host is not None:
                if "host" not in got:
                    got["host"] = host()
                if not _host_matches(r.match_host, got["host"]):
                    continue
            if r.match_model is not None:
                if "model" not in got:
                    got["model"] = model()
                if not _model_matches(r.match_model, got["model"]):
                    continue
            return r
        return None

    def __len__(self) -> int:
        return len(self.routes)


def load_routes(path: str | Path) -> RouteTable:
    """Read and validate a routes file. Raises ``ConfigError`` naming the line and field."""
    p = Path(path)
    try:
        source = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"routes file {p}: cannot read it: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"routes file {p}: not UTF-8 text") from None
    return parse_routes(source, str(p))


def parse_routes(source: str, filename: str = "<routes>") -> RouteTable:
    """Validate routes from TOML text (``load_routes`` without the file read)."""
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"routes file {filename}: invalid TOML: {e}") from None
    _reject_control_characters(data, (), source, filename)
    _reject_literal_keys(data, source, filename)
    try:
        parsed = RoutesFile.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        _fail(source, filename, tuple(err["loc"]), err["msg"].removeprefix("Value error, "))
    routes: list[Route] = []
    for i, spec in enumerate(parsed.route):
        if spec.normalize and spec.match.path is not None:
            client = endpoint_protocol(spec.match.path)
            if client is not None and client is not spec.protocol:
                _fail(
                    source,
                    filename,
                    ("route", i, "normalize"),
                    f"normalize = true needs the same protocol on both sides, but match.path "
                    f"speaks {client} and protocol is {spec.protocol}",
                )
        model: str | tuple[tuple[str, str], ...] | None
        model = tuple(spec.model.items()) if isinstance(spec.model, dict) else spec.model
        routes.append(
            Route(
                name=spec.name or f"route{i + 1}",
                match_path=spec.match.path,
                match_host=spec.match.host,
                match_model=spec.match.model,
                upstream=spec.upstream,
                protocol=spec.protocol,
                model=model,
                auth_env=spec.auth.env if isinstance(spec.auth, EnvAuth) else None,
                normalize=spec.normalize,
                default_max_tokens=spec.default_max_tokens,
                max_tokens_limit=spec.max_tokens_limit,
                anthropic_version=spec.anthropic_version,
                chat_max_tokens_field=spec.chat_max_tokens_field,
                strict_translation=spec.strict_translation,
            )
        )
    return RouteTable(tuple(routes))


def _fail(source: str, filename: str, loc: tuple[Any, ...], msg: str) -> NoReturn:
    line = _locate(source, loc)
    where = f"line {line}" if line else "top level"
    field = escape(_field_name(loc), newlines=False)
    raise ConfigError(f"routes file {filename}, {where}, field {field}: {msg}")


# C0 and C1 control characters, DEL, and the Unicode line separators: never part of a header value,
# a URL, a model name or a glob.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _reject_control_characters(value: Any, loc: tuple[Any, ...], source: str, filename: str) -> None:
    """Refuse a control character in any key or value (never echoing the value)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if _CONTROL.search(str(k)):
                _fail(source, filename, (*loc, k), "a name must not contain control characters")
            _reject_control_characters(v, (*loc, k), source, filename)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _reject_control_characters(v, (*loc, i), source, filename)
    elif isinstance(value, str) and _CONTROL.search(value):
        _fail(
            source,
            filename,
            loc,
            "control characters (CR, LF, tab, escape ...) are not allowed in a value: it would go "
            "onto the wire as it is",
        )


def _reject_literal_keys(data: dict[str, Any], source: str, filename: str) -> None:
    """Name the exact line of a key written into the file (never echo its value)."""
    routes = data.get("route")
    if not isinstance(routes, list):
        return
    for i, r in enumerate(routes):
        if not isinstance(r, dict):
            continue
        for k in r:
            if str(k).lower() in _SECRET_KEYS:
                _fail(
                    source,
                    filename,
                    ("route", i, k),
                    'a key is never stored in the routes file; use auth = "pass" or auth = { env = "VAR" }',
                )
        auth = r.get("auth")
        if isinstance(auth, str) and auth != "pass":
            _fail(
                source,
                filename,
                ("route", i, "auth"),
                'only "pass" or { env = "VAR" } are allowed (a literal key is rejected)',
            )
        if isinstance(auth, dict):
            for k in auth:
                if k != "env":
                    _fail(
                        source,
                        filename,
                        ("route", i, "auth", k),
                        'only { env = "VAR" } is allowed (a literal key is rejected)',
                    )


def _field_name(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "literal[", "str", "dict[", "EnvAuth")):
            continue  # pydantic union branch labels, not fields
        else:
            out += ("." if out else "") + str(part)
    return out or "(file)"


_TABLE = re.compile(r"^\s*\[\[\s*route\s*\]\]\s*(#.*)?$")
_HEADER = re.compile(r"^\s*\[")


def _locate(source: str, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of ``loc`` (``("route", i, key, ...)``) in ``source``, best effort."""
    lines = source.splitlines()
    if len(loc) < 2 or loc[0] != "route" or not isinstance(loc[1], int):
        if loc:
            key = re.compile(rf"^\s*{re.escape(str(loc[0]))}\s*=")
            for n, text in enumerate(lines, 1):
                if key.match(text):
                    return n
        return None
    starts = [n for n, text in enumerate(lines) if _TABLE.match(text)]
    if loc[1] >= len(starts):
        return None
    start = starts[loc[1]]
    end = next((n for n in range(start + 1, len(lines)) if _HEADER.match(lines[n])), len(lines))
    if len(loc) >= 3 and isinstance(loc[2], str):
        key_name = loc[2]
        key = re.compile(rf"^\s*{re.escape(key_name)}\s*[=.]")
        for n in range(start + 1, end):
            if key.match(lines[n]):
                return n + 1
        # a sub-table such as [route.match]
        sub = re.compile(rf"^\s*\[\s*route\s*\.\s*{re.escape(key_name)}\s*\]")
        for n in range(end, len(lines)):
            if _TABLE.match(lines[n]):
                break
            if sub.match(lines[n]):
                if len(loc) >= 4 and isinstance(loc[3], str):
                    inner = re.compile(rf"^\s*{re.escape(loc[3])}\s*=")
                    for m in range(n + 1, len(lines)):
                        if _HEADER.match(lines[m]):
                            break
                        if inner.match(lines[m]):
                            return m + 1
                return n + 1
    return start + 1
