"""Secret removal for bug-report exports: headers, URL queries, JSON / SSE / form bodies, metadata.

Issue 6 ("export for bug reports") and the team rule "secrets (API keys, auth headers, cookies) never
appear in logs, metadata, diagnostics or exports". Pure: every function takes a value and returns a
redacted copy; nothing is changed in place, nothing is logged. Work is bounded: bodies larger than
``max_scan`` bytes are not parsed as JSON (the token patterns still run over them, linearly), and
nesting deeper than ``MAX_DEPTH`` is replaced as a whole.

Two rules, applied everywhere:

* a *name* rule: a header, query parameter, form field or JSON key whose name says it holds a secret
  (``authorization``, ``x-api-key``, ``cookie``, ``*_token``, ``client_secret``, ``password`` ...) has its
  value replaced by ``REDACTED``;
* a *value* rule: anything that looks like a credential wherever it appears (``sk-...``, ``sk-ant-...``,
  ``Bearer ...``, Google ``AIza...`` keys, GitHub / Hugging Face / Slack / AWS tokens, JWTs) is replaced,
  so a key pasted into a prompt or echoed in an error message does not leak either.

Seed rule: seed 001 (001_5998ffc26e6ec2b6.txt), the unfinished-tool diagnostics and the 16 KiB
recent tail leave the proxy only through these rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, unquote

import orjson

REDACTED = "[REDACTED]"
REDACTED_B = REDACTED.encode()
MAX_DEPTH = 64
DEFAULT_MAX_SCAN = 64 * 1024 * 1024

# Header names that always carry credentials (lower case).
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "set-cookie2",
        "x-auth-token",
        "x-amz-security-token",
        "ocp-apim-subscription-key",
    }
)

# Words that make a name secret when they appear as a whole word of it ("x-api-key", "client_secret",
# "accessToken"); plural "tokens" is NOT one of them, so "max_tokens" and "input_tokens" stay readable.
_SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "secret",
        "password",
        "passwd",
        "pwd",
        "token",
        "auth",
        "authorization",
        "cookie",
        "credential",
        "credentials",
        "session",
        "sessionid",
        "bearer",
        "jwt",
    }
)
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

# Credential-shaped values. Each pattern is anchored on a distinctive prefix, so it is linear.
_TOKEN_PATTERNS = [
    r"sk-ant-[A-Za-z0-9_\-]{6,}",  # Anthropic
    r"sk-[A-Za-z0-9_\-]{6,}",  # OpenAI (sk-..., sk-proj-...) and OpenAI-compatible servers
    r"AIza[0-9A-Za-z_\-]{20,}",  # Google API keys
    r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",  # AWS access key ids
    r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",  # JWT
    r"(?i:bearer)\s+[A-Za-z0-9._~+/=\-]{16,}",  # an Authorization value pasted anywhere
]
_TOKEN_RE = re.compile("|".join(_TOKEN_PATTERNS))
_TOKEN_RE_B = re.compile("|".join(_TOKEN_PATTERNS).encode())
# ``name=value`` (URLs, forms, env files) and ``"name": "value"`` (JSON held inside a string) in free
# text: "?key=AIza...", "OPENAI_API_KEY=...". The name starts at a word boundary and is at most 64
# characters, so the scan is linear even over megabytes of base64.
_ASSIGN_RE = re.compile(
    r"(?<![A-Za-z0-9_\-])(?P<name>[A-Za-z0-9_\-]{1,64})"
    r"(?P<sep>\s*=\s*|\"\s*:\s*\")(?P<value>[^\s&\"',;}{]+)"
)
# Extra query-parameter names that carry credentials in signed URLs.
_QUERY_SECRET_NAMES = frozenset(
    {"sig", "signature", "x-amz-signature", "x-amz-credential", "x-goog-signature"}
)


def is_secret_name(name: str | bytes) -> bool:
    """True when a header / parameter / JSON key name says its value is a credential."""
    if isinstance(name, bytes):
        name = name.decode("latin-1")
    low = name.strip().lower()
    if low in SECRET_HEADERS:
        return True
    words = [w.lower() for w in _WORD_SPLIT.split(name) if w]
    return any(w in _SECRET_WORDS for w in words)


def _assign_sub(m: re.Match[str]) -> str:
    if not is_secret_name(m.group("name")) or m.group("value") == REDACTED:
        return m.group(0)
    return f"{m.group('name')}{m.group('sep')}{REDACTED}"


def redact_text(text: str) -> str:
    """Replace credential-shaped substrings and ``secret_name=value`` pairs in free text."""
    out = _TOKEN_RE.sub(REDACTED, text)
    return _ASSIGN_RE.sub(_assign_sub, out)


def redact_bytes(data: bytes) -> bytes:
    """``redact_text`` for bytes that may not be UTF-8 (the tokens themselves are ASCII)."""
    out = _TOKEN_RE_B.sub(REDACTED_B, data)
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError:
        return out
    return _ASSIGN_RE.sub(_assign_sub, text).encode("utf-8")


def redact_header_value(name: str | bytes, value: str | bytes) -> str:
    """The redacted form of one header's value."""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if is_secret_name(name):
        return REDACTED
    return redact_text(value)


def redact_cookie_header(value: str) -> str:
    """``Cookie: a=1; b=2`` -> ``a=[REDACTED]; b=[REDACTED]`` (names kept, values removed)."""
    out = []
    for pair in value.split(";"):
        name, eq, _v = pair.strip().partition("=")
        name = redact_text(name)
        out.append(f"{name}={REDACTED}" if eq else REDACTED)
    return "; ".join(out)


def redact_set_cookie(value: str) -> str:
    """``Set-Cookie: sid=abc; Path=/; HttpOnly`` -> ``sid=[REDACTED]; Path=/; HttpOnly``."""
    first, sep, attrs = value.partition(";")
    name, eq, _v = first.strip().partition("=")
    name = redact_text(name)
    head = f"{name}={REDACTED}" if eq else REDACTED
    return head + (sep + redact_text(attrs) if sep else "")


def redact_headers(fields: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Header fields (as mitmproxy's ``Headers.fields``) with secret values replaced.

    Cookies keep their names (useful in a bug report) and lose their values; every other secret
    header loses its whole value."""
    out: list[tuple[bytes, bytes]] = []
    for name, value in fields:
        low = name.decode("latin-1").strip().lower()
        if low == "cookie":
            out.append((name, redact_cookie_header(value.decode("latin-1")).encode("latin-1")))
        elif low in ("set-cookie", "set-cookie2"):
            out.append((name, redact_set_cookie(value.decode("latin-1")).encode("latin-1")))
        elif is_secret_name(name):
            out.append((name, REDACTED_B))
        else:
            out.append((name, redact_bytes(value)))
    return out


def redact_query(query: str) -> str:
    """A URL query string (without ``?``) with secret parameters replaced; order and keys kept."""
    if not query:
        return query
    parts: list[str] = []
    for pair in query.split("&"):
        name, eq, _value = pair.partition("=")
        if eq and (is_secret_name(unquote(name)) or unquote(name).lower() in _QUERY_SECRET_NAMES):
            parts.append(f"{name}={quote(REDACTED, safe='[]')}")
        else:
            parts.append(redact_text(pair) if _needs_text_pass(pair) else pair)
    return "&".join(parts)


def _needs_text_pass(s: str) -> bool:
    return bool(_TOKEN_RE.search(s) or _TOKEN_RE.search(unquote(s)))


def redact_url(url: str) -> str:
    """A URL or request path with userinfo and secret query parameters replaced."""
    head, q, query = url.partition("?")
    fragment = ""
    if "#" in query:
        query, _, fragment = query.partition("#")
        fragment = "#" + fragment
    scheme, sep, rest = head.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        rest = REDACTED + "@" + rest.split("@", 1)[1]
        head = scheme + sep + rest
    head = redact_text(head)
    if not q:
        return head
    return f"{head}?{redact_query(query)}{redact_text(fragment)}"


def _redact_tree(
    value: Any, depth: int, text: Callable[[str], str], secret: Callable[[Any], Any | None]
) -> Any:
    """A redacted copy of nested mappings / lists: a string goes through ``text``; the value of a
    secret-named key is replaced by ``secret(value)`` unless that is ``None``; deeper than
    ``MAX_DEPTH`` the whole subtree is replaced."""
    if depth > MAX_DEPTH:
        return REDACTED
    if isinstance(value, str):
        return text(value)
    if isinstance(value, bytes):
        return redact_bytes(value)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            hidden = secret(v) if isinstance(k, str) and is_secret_name(k) else None
            out[k] = hidden if hidden is not None else _redact_tree(v, depth + 1, text, secret)
        return out
    if isinstance(value, (list, tuple)):
        return [_redact_tree(v, depth + 1, text, secret) for v in value]
    return value


def _json_secret(v: Any) -> str | None:
    # a secret-named key keeps a number or boolean (a count, a flag), and an empty value
    return REDACTED if not isinstance(v, (bool, int, float)) and v else None


def redact_json_value(value: Any, depth: int = 0) -> Any:
    """A redacted copy of a parsed JSON value: secret-named keys and credential-shaped strings."""
    return _redact_tree(value, depth, redact_text, _json_secret)


@dataclass(frozen=True, slots=True)
class BodyResult:
    """A redacted body; ``changed`` says whether anything was replaced."""

    data: bytes
    changed: bool


def _redact_json_bytes(data: bytes) -> bytes | None:
    """The redacted JSON document, or None when ``data`` is not JSON."""
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    redacted = redact_json_value(parsed)
    if redacted == parsed:
        return data
    return orjson.dumps(redacted)


def _redact_sse(data: bytes, max_scan: int) -> bytes:
    """SSE: each ``data:`` line that is JSON is redacted as JSON; line endings are kept."""
    out: list[bytes] = []
    for line in data.splitlines(keepends=True):
        body = line.rstrip(b"\r\n")
        ending = line[len(body) :]
        if body.startswith(b"data:") and len(body) <= max_scan:
            payload = body[5:]
            lead = b" " if payload.startswith(b" ") else b""
            red = _redact_json_bytes(payload[len(lead) :])
            if red is not None:
                body = b"data:" + lead + red
        out.append(body + ending)
    return redact_bytes(b"".join(out))


def _redact_form(data: bytes) -> bytes:
    text = data.decode("latin-1")
    return redact_query(text).encode("latin-1")


def redact_body(
    data: bytes, content_type: str | None = None, *, max_scan: int = DEFAULT_MAX_SCAN
) -> BodyResult:
    """A redacted copy of a decoded HTTP body. JSON bodies stay JSON; SSE stays SSE."""
    if not data:
        return BodyResult(data, False)
    ct = (content_type or "").split(";", 1)[0].strip().lower()
    out: bytes | None = None
    if "event-stream" in ct or (not ct and data.lstrip().startswith((b"event:", b"data:"))):
        out = _redact_sse(data, max_scan)
    elif "x-www-form-urlencoded" in ct:
        out = redact_bytes(_redact_form(data))
    elif len(data) <= max_scan and data.lstrip()[:1] in (b"{", b"["):
        red = _redact_json_bytes(data)
        if red is not None:
            out = _reserialize_if_needed(red)
    if out is None:
        out = redact_bytes(data)
    return BodyResult(out, out != data)


def _reserialize_if_needed(red: bytes) -> bytes:
    # A credential-shaped substring inside a JSON key (rare) is caught by the byte pass.
    return redact_bytes(red)


def redact_metadata(value: Any) -> Any:
    """``flow.metadata`` (nested dict/list/str/bytes/numbers): secret keys, tokens, URL queries."""
    return _redact_tree(value, 0, _meta_text, _meta_secret)


def _meta_text(value: str) -> str:
    if "://" in value or value.startswith("/"):
        return redact_url(value)
    return redact_text(value)


def _meta_secret(v: Any) -> str | bytes | None:
    # a secret-named key keeps anything but a non-empty string or bytes
    if isinstance(v, (str, bytes)) and v:
        return REDACTED if isinstance(v, str) else REDACTED_B
    return None


def parse_query_pairs(query: str) -> list[tuple[str, str]]:
    """Query pairs (blank values kept); a small helper for callers that need them."""
    return parse_qsl(query, keep_blank_values=True)


def truncate_body(data: bytes, limit: int) -> tuple[bytes, int]:
    """Cut ``data`` to ``limit`` bytes (0 = no limit) plus a marker line; returns (body, bytes cut)."""
    if limit <= 0 or len(data) <= limit:
        return data, 0
    cut = len(data) - limit
    return data[:limit] + f"\n[... {cut} bytes truncated by proxai export]\n".encode(), cut
