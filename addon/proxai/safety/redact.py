"""The redaction engine: every ProxAI output that can hold a secret goes through it.

The rules are written down in ``docs/security.md``. Everything that writes (flow metadata, the flow
comment, diagnostics files, log lines, the contentview, the report, the export bundle and its HAR,
telemetry) uses this module; nothing else decides what a secret is. Pure: every function takes a value
and returns a redacted copy; nothing is changed in place, nothing is logged. Work is bounded: bodies
larger than ``max_scan`` bytes are not parsed as JSON (the token patterns still run over them,
linearly), and nesting deeper than ``MAX_DEPTH`` is replaced as a whole.

Three rules:

* by *name*: a header, query parameter, form field or JSON key whose name says it holds a secret
  (``authorization``, ``x-api-key``, ``cookie``, ``*_token``, ``client_secret``, ``password`` ...) has its
  value replaced by ``[REDACTED]``. Names are normalized first (lower case, separators dropped), so
  ``access_token``, ``accessToken``, ``Access-Token`` and ``accesstoken`` are one name;
* by *value*: anything shaped like a credential wherever it appears is replaced, so a key pasted
  into a prompt or quoted in an error message does not leak either. The shapes are data,
  ``secret_shapes.toml`` beside this module: gitleaks' default rules (LLM providers, cloud, VCS,
  payment, chat ... keys; its release, commit and licence are in the file) translated to Python, and
  ProxAI's own (any ``sk-`` key, ``Bearer ...`` / ``Basic ...`` credentials, AWS SigV4, looser lengths);
  a shape runs only on a text that holds one of its keywords, and never cuts an ordinary word;
* by *echo*: a ``Redactor`` learns every value the first two rules removed from one flow (and the
  operator's own keys, ``register_secret``) and removes it wherever else it appears in that flow:
  other headers, bodies, error messages, metadata, and inside an SSE stream where the deltas split it.

API for a new output (see ``docs/security.md``): build ``Redactor()`` for the flow, ``learn_*`` from its
request and response, then pass every string / body / mapping through ``text``, ``body``, ``headers``,
``url`` or ``metadata`` before it is written. The module-level ``redact_*`` functions are the same
rules without a flow's echo set (the operator's keys are always included).
"""

from __future__ import annotations

import base64
import functools
import math
import re
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, quote, unquote

import orjson

REDACTED = "[REDACTED]"
REDACTED_B = REDACTED.encode()
MAX_DEPTH = 64
DEFAULT_MAX_SCAN = 64 * 1024 * 1024
MIN_SECRET = 8  # a learned value shorter than this is not searched for elsewhere (too common)

# Header names that always carry credentials (lower case, as written on the wire).
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
        "openai-organization",  # account identifiers that go with a key
        "openai-project",
        "chatgpt-account-id",
    }
)

# Normalized names (lower case, letters and digits only) that hold a secret or an identity.
_SECRET_NAMES = frozenset(
    {
        *(re.sub(r"[^a-z0-9]", "", h) for h in SECRET_HEADERS),
        "userid",  # Anthropic metadata.user_id: an account / session identifier
        "sessionid",
        "accountid",
        "chatgptaccountid",
        "privatekey",
    }
)
# A normalized name ending in one of these is secret: "accesstoken", "clientsecret", "xgoogapikey"
# (a bare "key" suffix is not one: "monkey"; "key" as a word of the name is, see _SECRET_WORDS).
_SECRET_SUFFIXES = (
    "token",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "sessionkey",
    "subscriptionkey",
    "authkey",
    "secret",
    "password",
    "passwd",
    "credential",
    "credentials",
    "cookie",
    "auth",
    "authorization",
    "bearer",
    "jwt",
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
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
# Extra query-parameter names that carry credentials in signed URLs (normalized).
_QUERY_SECRET_NAMES = frozenset(
    {"sig", "signature", "xamzsignature", "xamzcredential", "xgoogsignature", "xgoogcredential"}
)

# Credential-shaped values: the shapes of ``secret_shapes.toml`` (gitleaks' default rules, translated
# to Python, and ProxAI's own; that file says which, from which release, and why). Each shape is
# compiled on its own and runs only on a text that holds one of its keywords: one pass of a keyword
# trie over the lower-cased text decides which (most texts hold none), so the cost of a shape that
# does not apply is nothing and the scan stays linear.
SHAPES_FILE = "secret_shapes.toml"


@dataclass(frozen=True, slots=True)
class Shape:
    """One credential shape: what it is (``id``, ``origin``, ``category``), when it runs (``keywords``)
    and what it removes (the first capture group that matched, else the whole match)."""

    id: str
    origin: str
    category: str
    keywords: tuple[str, ...]
    regex: re.Pattern[str]
    entropy: float  # a secret with fewer bits per character is kept (0: no threshold)
    keep_words: bool  # a secret that is an ordinary word is kept
    userinfo: bool  # a secret is kept unless it is base64 of "user:password"

    def accepts(self, secret: str) -> bool:
        """Whether a match's secret is one (gitleaks' entropy threshold, ProxAI's two guards)."""
        if self.keep_words and _WORD.fullmatch(secret):
            return False
        if self.userinfo and not _is_userinfo(secret):
            return False
        return not self.entropy or _entropy(secret) >= self.entropy


# An ordinary word, or words joined by "-" / "_": "incomprehensible", "Understanding", "disk-space".
_WORD = re.compile(r"[A-Za-z][a-z]*(?:[-_][a-z]+)*")


def _is_userinfo(value: str) -> bool:
    try:
        return b":" in base64.b64decode(value, validate=True)
    except ValueError:  # binascii.Error is one
        return False


def _entropy(s: str) -> float:
    """Shannon entropy in bits per character (as gitleaks computes it)."""
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def load_shapes(data: str) -> tuple[Shape, ...]:
    """The shapes of a ``secret_shapes.toml`` text (``ValueError`` on a rule that is not one)."""
    shapes = []
    for rule in tomllib.loads(data)["rule"]:
        regex = rule["regex"]
        try:
            compiled = re.compile(regex, re.ASCII)
        except re.error as exc:
            raise ValueError(f"secret shape {rule['id']}: {exc}") from exc
        shapes.append(
            Shape(
                id=rule["id"],
                origin=rule["origin"],
                category=rule["category"],
                keywords=tuple(k.lower() for k in rule["keywords"]),
                regex=compiled,
                entropy=float(rule.get("entropy", 0)),
                keep_words=bool(rule.get("keep_words", False)),
                userinfo=bool(rule.get("userinfo", False)),
            )
        )
    return tuple(shapes)


def _keyword_trie(words: Iterable[str]) -> str:
    """A regular expression matching any of ``words`` by their shared prefixes: one branch per
    character, so the scan tries a handful of alternatives per position, not one per keyword."""
    tree: dict[str, Any] = {}
    for word in words:
        node = tree
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + emit(sub) for ch, sub in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return emit(tree)


SHAPES = load_shapes(resources.files(__package__).joinpath(SHAPES_FILE).read_text("utf-8"))
# keyword -> the shapes it starts: its own and those of every keyword that is a prefix of it (the
# trie matches the longest keyword at a position)
_BY_KEYWORD: dict[str, tuple[Shape, ...]] = {}
for _kw in {k for s in SHAPES for k in s.keywords}:
    _BY_KEYWORD[_kw] = tuple(s for s in SHAPES if any(_kw.startswith(k) for k in s.keywords))
# Any keyword, the longest at a position (a branch per first character, then a trie: the cheapest
# form for ``re``); searched again from the next position, so overlapping keywords are found too.
_KEYWORD = re.compile(
    "|".join(
        re.escape(first) + "(?:" + _keyword_trie(k[1:] for k in _BY_KEYWORD if k[0] == first) + ")"
        for first in sorted({k[0] for k in _BY_KEYWORD})
    )
)


def _shapes_in(low: str) -> set[Shape]:
    """The shapes whose keywords the lower-cased text holds."""
    shapes: set[Shape] = set()
    m = _KEYWORD.search(low)
    while m is not None:
        shapes.update(_BY_KEYWORD[m.group()])
        m = _KEYWORD.search(low, m.start() + 1)
    return shapes


def shape_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds a credential-shaped secret: (start, end) of each, unsorted, may overlap."""
    spans = []
    for shape in _shapes_in(text.lower()):
        for m in shape.regex.finditer(text):
            lo, hi = _secret_span(m)
            if hi > lo and shape.accepts(text[lo:hi]):
                spans.append((lo, hi))
    return spans


def _secret_span(m: re.Match[str]) -> tuple[int, int]:
    """gitleaks' secret of a match: the first capture group that matched something, else the match."""
    for n in range(1, m.re.groups + 1):
        lo, hi = m.span(n)
        if hi > lo:
            return lo, hi
    return m.span()


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans sorted, the overlapping ones joined."""
    out: list[list[int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


def _replace_shapes(text: str) -> str:
    spans = shape_spans(text)
    if not spans:
        return text
    parts, pos = [], 0
    for lo, hi in _merged(spans):
        parts += [text[pos:lo], REDACTED]
        pos = hi
    parts.append(text[pos:])
    return "".join(parts)


# ``name=value`` (URLs, forms, env files) and ``"name": "value"`` (JSON held inside a string) in free
# text: "?key=AIza...", "OPENAI_API_KEY=...". The name starts at a word boundary and is at most 64
# characters, so the scan is linear even over megabytes of base64. The name is taken whole
# (possessive ``{1,64}+``): a separator never starts with a name's character, so a shorter name
# never matched where the whole one did not, and the scan does not try every shorter one.
_ASSIGN_RE = re.compile(
    r"(?<![A-Za-z0-9_\-])(?P<name>[A-Za-z0-9_\-]{1,64}+)"
    r"(?P<sep>\s*=\s*|\"\s*:\s*\")(?P<value>[^\s&\"',;}{]+)"
)


def _assignments(text: str) -> str:
    """``text`` with the values of its secret ``name=value`` / ``"name": "value"`` pairs replaced.
    Every separator holds ``=`` or ``"``: a text with neither has no pair and is not scanned."""
    if "=" in text or '"' in text:
        return _ASSIGN_RE.sub(_assign_sub, text)
    return text


# The operator's own secrets (the environment keys routes send upstream): redacted by every function
# of this module, in every output, and never returned to a client.
_OPERATOR_SECRETS: set[str] = set()


def register_secret(value: str) -> None:
    """Treat ``value`` (an operator's key read from the environment) as a secret everywhere."""
    if len(value) >= MIN_SECRET:
        _OPERATOR_SECRETS.add(value)
        _redact_short.cache_clear()  # their answers were given without this secret
        _MEMOS.clear()


def normalize_name(name: str | bytes) -> str:
    """``Access-Token``, ``access_token``, ``accessToken`` -> ``accesstoken``: one name."""
    if isinstance(name, bytes):
        name = name.decode("latin-1")
    return _NON_ALNUM.sub("", name.lower())


def is_secret_name(name: str | bytes) -> bool:
    """True when a header / parameter / JSON key name says its value is a credential."""
    return _secret_name(name.decode("latin-1") if isinstance(name, bytes) else name)


@functools.lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    """``is_secret_name`` of a text name. A pure function of the name, remembered: a flow's
    metadata asks it of the same few dozen key names every time (bounded: the least recently
    asked names are forgotten first)."""
    norm = normalize_name(name)
    if norm in _SECRET_NAMES or norm.endswith(_SECRET_SUFFIXES):
        return True
    return any(w.lower() in _SECRET_WORDS for w in _WORD_SPLIT.split(name) if w)


def is_secret_param(name: str | bytes) -> bool:
    """``is_secret_name`` plus the signature parameters of signed URLs (``sig``, ``X-Amz-Signature``)."""
    return is_secret_name(name) or normalize_name(name) in _QUERY_SECRET_NAMES


@functools.lru_cache(maxsize=4096)
def _secret_param(name: str) -> bool:
    """``is_secret_param`` of a pair's name (at most 64 characters), remembered: a JSON text
    quotes the same few keys in every object (bounded as ``_secret_name``)."""
    return is_secret_param(name)


def _assign_sub(m: re.Match[str]) -> str:
    if not _secret_param(m.group("name")) or m.group("value") == REDACTED:
        return m.group(0)
    return f"{m.group('name')}{m.group('sep')}{REDACTED}"


def _operator(text: str) -> str:
    for secret in _OPERATOR_SECRETS:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_text(text: str) -> str:
    """Replace credential-shaped substrings and ``secret_name=value`` pairs in free text."""
    return _redact_short(text) if len(text) <= MEMO_TEXT else _redact_text(text)


# A string up to this long has its ``redact_text`` remembered (see ``_redact_short``).
MEMO_TEXT = 256


@functools.lru_cache(maxsize=4096)
def _redact_short(text: str) -> str:
    """``redact_text`` of a short string, remembered: a flow's metadata holds the same key names
    and values (protocol, outcome, stop reason, model, units) every time, and each costs two
    regular-expression passes. A pure function of the string and the operator's secrets
    (``register_secret`` forgets every answer); bounded: 4,096 strings of at most ``MEMO_TEXT``
    characters, the least recently asked forgotten first."""
    return _redact_text(text)


def _redact_text(text: str) -> str:
    out = _assignments(_replace_shapes(text))
    return _operator(out) if _OPERATOR_SECRETS else out


def redact_bytes(data: bytes) -> bytes:
    """``redact_text`` for bytes that may not be UTF-8 (the tokens themselves are ASCII)."""
    # latin-1: one character per byte, so the shapes (ASCII) find in bytes what they find in text
    out = _replace_shapes(data.decode("latin-1")).encode("latin-1")
    for secret in _OPERATOR_SECRETS:
        out = out.replace(secret.encode(), REDACTED_B)
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError:
        return out
    return _assignments(text).encode("utf-8")


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
    """Header fields (as mitmproxy's ``Headers.fields``) with secret values replaced."""
    return Redactor().headers(fields)


def redact_query(query: str) -> str:
    """A URL query string (without ``?``) with secret parameters replaced; order and keys kept."""
    return Redactor().query(query)


def redact_url(url: str) -> str:
    """A URL or request path with userinfo and secret query parameters replaced."""
    return Redactor().url(url)


def _redact_tree(
    value: Any,
    depth: int,
    text: Callable[[str], str],
    secret: Callable[[Any], Any | None],
    memo: _Memo,
) -> Any:
    """A redacted copy of nested mappings / lists: a string goes through ``text``; the value of a
    secret-named key is replaced by ``secret(value)`` unless that is ``None``; deeper than
    ``MAX_DEPTH`` the whole subtree is replaced. ``memo``: ``text``'s answers so far (``_memo``)."""
    if depth > MAX_DEPTH:
        return REDACTED
    kind = type(value)
    if kind is dict:  # first: a summary is dicts, and the Mapping check is an ABC's (slower)
        if depth < MAX_DEPTH:
            if _PLAIN.issuperset(map(type, value.values())):
                # Numbers, flags and None only (a summary's usage, timing, counts), under keys the
                # text rule returns as they are (``same``): copied whole, in C. A secret name's
                # plain value is kept too (``_meta_secret`` and ``_json_secret`` keep every one).
                if memo.same.issuperset(value):
                    return value.copy()
            elif memo.names.issuperset(value):
                # Every key a name the text rule returns as it is and no secret name (``names``):
                # the keys stay, and so do numbers, flags, None and strings the rule returns as
                # they are (``same``).
                same = memo.same
                copy = value.copy()
                for k, v in value.items():
                    t = type(v)
                    if t is str:
                        if v not in same:
                            copy[k] = memo[v] if v in memo else _remember(memo, v, text(v))
                    elif t not in _PLAIN:
                        copy[k] = _redact_tree(v, depth + 1, text, secret, memo)
                return copy
        return _redact_mapping(value, depth, text, secret, memo)
    if kind is list or kind is tuple:
        return _redact_items(value, depth, text, secret, memo)
    if isinstance(value, str):
        return memo[value] if value in memo else _remember(memo, value, text(value))
    if isinstance(value, bytes):
        return text(value.decode("utf-8", "replace")).encode()
    if isinstance(value, Mapping):
        return _redact_mapping(value, depth, text, secret, memo)
    if isinstance(value, (list, tuple)):
        return _redact_items(value, depth, text, secret, memo)
    return value


def _redact_mapping(
    value: Mapping[Any, Any],
    depth: int,
    text: Callable[[str], str],
    secret: Callable[[Any], Any | None],
    memo: _Memo,
) -> dict[Any, Any]:
    """``_redact_tree`` of a mapping, key by key."""
    inner = depth < MAX_DEPTH  # a value one level down is still inside the limit
    names = memo.names
    out: dict[Any, Any] = {}
    for k, v in value.items():
        key = k
        if isinstance(k, str):
            key = memo[k] if k in memo else _remember(memo, k, text(k))
            if _secret_name(k):
                hidden = secret(v)
                if hidden is not None:
                    out[key] = hidden
                    continue
            elif key == k and type(k) is str and len(k) <= MEMO_TEXT:
                names.add(k)  # a name the walk keeps as it is, whatever its value
        if inner:
            # A string, a number, a flag or None (nearly all of a summary's values) without the
            # recursive call, which would only make the same type checks and memo lookup.
            t = type(v)
            if t is str:
                out[key] = memo[v] if v in memo else _remember(memo, v, text(v))
                continue
            if t in _PLAIN:
                out[key] = v
                continue
        out[key] = _redact_tree(v, depth + 1, text, secret, memo)
    return out


def _redact_items(
    value: list[Any] | tuple[Any, ...],
    depth: int,
    text: Callable[[str], str],
    secret: Callable[[Any], Any | None],
    memo: _Memo,
) -> list[Any]:
    """``_redact_tree`` of a list or tuple: a string, a number, a flag or None one level down
    (a summary's lists of names) without the recursive call, as in a mapping's values; anything
    else through ``_redact_tree``."""
    if depth >= MAX_DEPTH:  # one level down is past the limit: every item is replaced
        return [_redact_tree(v, depth + 1, text, secret, memo) for v in value]
    kinds = set(map(type, value))
    if kinds <= _PLAIN or (kinds == _STR and memo.same.issuperset(value)):
        return list(value)  # numbers, flags, None, or strings the text rule returns as they are
    out: list[Any] = []
    for v in value:
        t = type(v)
        if t is str:
            out.append(memo[v] if v in memo else _remember(memo, v, text(v)))
        elif t in _PLAIN:
            out.append(v)
        else:
            out.append(_redact_tree(v, depth + 1, text, secret, memo))
    return out


# The exact types ``_redact_tree`` returns unchanged (no subclass: a subclass may be anything).
_PLAIN = frozenset({int, float, bool, type(None)})
_STR = frozenset({str})


# A tree's text rule remembers its answers. A flow's summary holds the same hundred-odd key names
# and values every time (protocol, outcome, stop reason, model, units, the conformance rules'
# texts ...), and each cost a Python call or two and two regular-expression passes; a lookup
# costs about a tenth of that. The rule is a pure function of the string, the kind of output
# (metadata or JSON), the echo set of the redactor and the operator's secrets: one memo per
# (kind, echo set), at most MAX_MEMOS (the oldest forgotten first), each at most MEMO_SIZE
# strings of at most MEMO_TREE_TEXT characters and MEMO_CHARS characters in all (emptied when
# full); ``register_secret`` forgets them all.
class _Memo(dict[str, str]):
    """A tree's text rule's answers so far (string -> its redacted form); ``same``: the strings
    among them that the rule returns as they are; ``names``: those of them seen as a mapping's keys
    that are no secret name (``_secret_name`` is False), so as a key they stay as they are whatever
    their value. A dict whose keys are all in ``names`` needs no look at its keys (one set test in
    C, ``_redact_tree``). Both are emptied with the answers."""

    __slots__ = ("chars", "names", "same")

    def __init__(self) -> None:
        super().__init__()
        self.same: set[str] = set()
        self.names: set[str] = set()
        self.chars = 0  # the remembered strings' length in all


_MEMOS: dict[tuple[str, frozenset[str]], _Memo] = {}
MAX_MEMOS = 8
MEMO_SIZE = 2048
# Longer than MEMO_TEXT: the conformance rules' texts in a summary run to 329 characters; the
# characters in all stay within what MEMO_SIZE strings of MEMO_TEXT characters held.
MEMO_TREE_TEXT = 512
MEMO_CHARS = MEMO_SIZE * MEMO_TEXT


def _memo(kind: str, secrets: frozenset[str]) -> _Memo:
    key = (kind, secrets)
    memo = _MEMOS.get(key)
    if memo is None:
        if len(_MEMOS) >= MAX_MEMOS:
            del _MEMOS[next(iter(_MEMOS))]
        memo = _MEMOS[key] = _Memo()
    return memo


def _remember(memo: _Memo, text: str, out: str) -> str:
    n = len(text)
    if n <= MEMO_TREE_TEXT:
        if len(memo) >= MEMO_SIZE or memo.chars + n > MEMO_CHARS:
            memo.clear()
            memo.same.clear()
            memo.names.clear()
            memo.chars = 0
        memo[text] = out
        memo.chars += n
        if out == text and type(text) is str:
            memo.same.add(text)
    return out


def _json_secret(v: Any) -> Any | None:
    # a secret-named key keeps a number or boolean (a count, a flag), and an empty value; a nested
    # object under a secret name ("credentials": {...}) is replaced whole
    return REDACTED if not isinstance(v, (bool, int, float)) and v else None


def redact_json_value(value: Any, depth: int = 0) -> Any:
    """A redacted copy of a parsed JSON value: secret-named keys and credential-shaped strings."""
    return _redact_tree(value, depth, redact_text, _json_secret, _memo("json", frozenset()))


@dataclass(frozen=True, slots=True)
class BodyResult:
    """A redacted body; ``changed`` says whether anything was replaced."""

    data: bytes
    changed: bool


def redact_body(
    data: bytes, content_type: str | None = None, *, max_scan: int = DEFAULT_MAX_SCAN
) -> BodyResult:
    """A redacted copy of a decoded HTTP body. JSON bodies stay JSON; SSE stays SSE."""
    return Redactor().body(data, content_type, max_scan=max_scan)


def redact_metadata(value: Any) -> Any:
    """``flow.metadata`` (nested dict/list/str/bytes/numbers): secret keys, tokens, URL queries."""
    return Redactor().metadata(value)


def _meta_secret(v: Any) -> str | bytes | None:
    # a secret-named key keeps anything but a non-empty string or bytes
    if isinstance(v, (str, bytes)) and v:
        return REDACTED if isinstance(v, str) else REDACTED_B
    return None


# Keys whose string values are streamed text, argument JSON or reasoning (the pieces an SSE stream
# can split a secret across).
_DELTA_KEYS = frozenset({"text", "delta", "partial_json", "arguments", "thinking", "content", "refusal"})


# What a header field or a URL gives the echo set is a pure function of its bytes (``learn``
# then keeps what is long enough), remembered: a client sends the same dozen or more headers and
# the same URL with every request, and each field cost a pass of the credential patterns (about
# 10,000 instructions). At most 1,024 fields and 256 URLs of at most MEMO_FIELD bytes; they stay
# in memory only, as the flows' own headers do.
MEMO_FIELD = 2048


@functools.lru_cache(maxsize=1024)
def _header_finds(name: bytes, raw: bytes) -> tuple[str, ...]:
    """The values ``Redactor.learn_headers`` learns from one header field."""
    found: list[str] = []
    value = raw.decode("latin-1")
    low = name.decode("latin-1").strip().lower()
    if low in ("cookie", "set-cookie", "set-cookie2"):
        pairs = value.split(";") if low == "cookie" else value.split(";", 1)[:1]
        found += [pair.partition("=")[2] for pair in pairs]
    elif is_secret_name(low):
        found.append(value)
        found += [part.partition("=")[2] if "=" in part else part for part in re.split(r"[\s,]+", value)]
    found += [value[lo:hi] for lo, hi in shape_spans(value)]
    return tuple(found)


def _query_finds(query: str) -> list[str]:
    """The values of a query string's secret parameters."""
    return [value for name, value in parse_qsl(query, keep_blank_values=True) if is_secret_param(name)]


@functools.lru_cache(maxsize=256)
def _url_finds(url: str) -> tuple[str, ...]:
    """The values ``Redactor.learn_url`` learns from a URL: secret query parameters, userinfo."""
    head, _, query = url.partition("?")
    found = _query_finds(query.partition("#")[0])
    _scheme, sep, rest = head.partition("://")
    userinfo, at, _host = rest.split("/", 1)[0].rpartition("@")
    if sep and at:
        found += [userinfo, userinfo.partition(":")[2]]
    return tuple(found)


class Redactor:
    """The three rules for one flow (or any outputs that belong together): name, value and echo.

    ``learn_*`` collects the values the name and value rules remove (the echo set); every output
    method then also removes those values wherever they appear. The operator's registered keys
    are always in the echo set."""

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        for s in secrets:
            self.learn(s)

    # -- learning -------------------------------------------------------------------------------

    def learn(self, value: str) -> None:
        """Add one secret value (and its credential part: ``Bearer X`` -> ``X``) to the echo set."""
        value = value.strip()
        if len(value) < MIN_SECRET or REDACTED in value:
            return
        self._secrets.add(value)
        scheme, sp, rest = value.partition(" ")
        if sp and scheme.lower() in ("bearer", "basic", "token") and len(rest.strip()) >= MIN_SECRET:
            self._secrets.add(rest.strip())
        unq = unquote(value)
        if unq != value and len(unq) >= MIN_SECRET:
            self._secrets.add(unq)

    def learn_headers(self, fields: Iterable[tuple[bytes, bytes]]) -> None:
        """Learn the values of secret-named headers (each cookie value on its own)."""
        for name, raw in fields:
            found = (
                _header_finds(name, raw) if len(raw) <= MEMO_FIELD else _header_finds.__wrapped__(name, raw)
            )
            for value in found:
                self.learn(value)

    def learn_query(self, query: str) -> None:
        for value in _query_finds(query):
            self.learn(value)

    def learn_url(self, url: str) -> None:
        for value in _url_finds(url) if len(url) <= MEMO_FIELD else _url_finds.__wrapped__(url):
            self.learn(value)

    def learn_json(self, value: Any, depth: int = 0) -> None:
        """Learn the string values of secret-named keys in a parsed JSON value."""
        if depth > MAX_DEPTH:
            return
        if isinstance(value, Mapping):
            for k, v in value.items():
                if isinstance(k, str) and is_secret_name(k) and isinstance(v, str):
                    self.learn(v)
                else:
                    self.learn_json(v, depth + 1)
        elif isinstance(value, list):
            for v in value:
                self.learn_json(v, depth + 1)

    def learn_body(self, data: bytes, content_type: str | None = None) -> None:
        """Learn from a decoded body: JSON keys, form fields, SSE data lines."""
        if not data or len(data) > DEFAULT_MAX_SCAN:
            return
        ct = (content_type or "").lower()
        if "x-www-form-urlencoded" in ct:
            self.learn_query(data.decode("latin-1"))
            return
        if "event-stream" in ct:
            for line in data.splitlines():
                if line.startswith(b"data:"):
                    self._learn_json_bytes(line[5:])
            return
        self._learn_json_bytes(data)

    def _learn_json_bytes(self, data: bytes) -> None:
        if data.lstrip()[:1] not in (b"{", b"["):
            return
        try:
            self.learn_json(orjson.loads(data))
        except orjson.JSONDecodeError:
            return

    @property
    def secrets(self) -> frozenset[str]:
        """The echo set (learned values and the operator's keys)."""
        return frozenset(self._secrets | _OPERATOR_SECRETS)

    # -- output ---------------------------------------------------------------------------------

    def _echo(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def text(self, text: str) -> str:
        """Free text with every rule applied."""
        out = redact_text(text)
        return self._echo(out) if self._secrets else out

    def binary(self, data: bytes) -> bytes:
        """Bytes (a body, a tail) with every rule applied; a secret is also found JSON- or URL-escaped."""
        out = redact_bytes(data)
        for secret in sorted(self._secrets, key=len, reverse=True):
            for form in {secret.encode(), orjson.dumps(secret)[1:-1], quote(secret, safe="").encode()}:
                out = out.replace(form, REDACTED_B)
        return out

    def headers(self, fields: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        """Header fields (as mitmproxy's ``Headers.fields``) with secret values replaced.

        Cookies keep their names (useful in a bug report) and lose their values; every other secret
        header loses its whole value; any other value goes through the value and echo rules."""
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
                out.append((name, self.text(value.decode("latin-1")).encode("latin-1", "replace")))
        return out

    def query(self, query: str) -> str:
        """A URL query string (without ``?``) with secret parameters replaced; order and keys kept."""
        if not query:
            return query
        parts: list[str] = []
        for pair in query.split("&"):
            name, eq, _value = pair.partition("=")
            if eq and is_secret_param(unquote(name)):
                parts.append(f"{name}={quote(REDACTED, safe='[]')}")
            else:
                parts.append(self._pair(pair))
        return "&".join(parts)

    def _pair(self, pair: str) -> str:
        out = self.text(pair)
        plain = unquote(pair)
        if out == pair and plain != pair and self.text(plain) != plain:
            return quote(self.text(plain), safe="=[]")
        return out

    def url(self, url: str) -> str:
        """A URL or request path with userinfo, secret query parameters and echoes replaced."""
        head, q, query = url.partition("?")
        fragment = ""
        if "#" in query:
            query, _, fragment = query.partition("#")
            fragment = "#" + fragment
        scheme, sep, rest = head.partition("://")
        if sep and "@" in rest.split("/", 1)[0]:
            rest = REDACTED + "@" + rest.split("@", 1)[1]
            head = scheme + sep + rest
        head = self.text(head)
        if not q:
            return head
        return f"{head}?{self.query(query)}{self.text(fragment)}"

    def json_value(self, value: Any, depth: int = 0) -> Any:
        """A redacted copy of a parsed JSON value."""
        return _redact_tree(value, depth, self.text, _json_secret, _memo("json", frozenset(self._secrets)))

    def metadata(self, value: Any) -> Any:
        """``flow.metadata`` (nested dict/list/str/bytes/numbers): secret keys, tokens, URL queries."""
        return _redact_tree(value, 0, self._meta_text, _meta_secret, _memo("meta", frozenset(self._secrets)))

    def _meta_text(self, value: str) -> str:
        if "://" in value or value.startswith("/"):
            return self.url(value)
        return self.text(value)

    def body(
        self, data: bytes, content_type: str | None = None, *, max_scan: int = DEFAULT_MAX_SCAN
    ) -> BodyResult:
        """A redacted copy of a decoded HTTP body. JSON bodies stay JSON; SSE stays SSE."""
        if not data:
            return BodyResult(data, False)
        ct = (content_type or "").split(";", 1)[0].strip().lower()
        out: bytes | None = None
        if "event-stream" in ct or (not ct and data.lstrip().startswith((b"event:", b"data:"))):
            out = self._sse(data, max_scan)
        elif "x-www-form-urlencoded" in ct:
            out = self.binary(self.query(data.decode("latin-1")).encode("latin-1"))
        elif len(data) <= max_scan and data.lstrip()[:1] in (b"{", b"["):
            red = self._json_bytes(data)
            if red is not None:
                out = self.binary(red)  # a credential-shaped substring inside a JSON key
        if out is None:
            out = self.binary(data)
        return BodyResult(out, out != data)

    def _json_bytes(self, data: bytes) -> bytes | None:
        """The redacted JSON document, or None when ``data`` is not JSON."""
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None
        redacted = self.json_value(parsed)
        if redacted == parsed:
            return data
        return orjson.dumps(redacted)

    def _sse(self, data: bytes, max_scan: int) -> bytes:
        """SSE: each ``data:`` line that is JSON is redacted as JSON; a secret that the stream's
        deltas split between events is removed from every piece; line endings are kept."""
        lines = data.splitlines(keepends=True)
        parsed: dict[int, Any] = {}
        for n, line in enumerate(lines):
            body = line.rstrip(b"\r\n")
            if body.startswith(b"data:") and len(body) <= max_scan:
                payload = body[5:]
                try:
                    value = orjson.loads(payload)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(value, (dict, list)):
                    parsed[n] = value
        changed = self._split_secrets(parsed)
        out: list[bytes] = []
        for n, line in enumerate(lines):
            body = line.rstrip(b"\r\n")
            ending = line[len(body) :]
            if n in parsed:
                value = parsed[n]
                red = self.json_value(value)
                if red != value or n in changed:
                    lead = b" " if body[5:6] == b" " else b""
                    body = b"data:" + lead + orjson.dumps(red)
            out.append(body + ending)
        return self.binary(b"".join(out))

    def _split_secrets(self, parsed: dict[int, Any]) -> set[int]:
        """Remove secrets that only appear when the streamed pieces are joined; returns the lines
        changed. The pieces are the strings under delta keys, in stream order."""
        pieces: list[tuple[int, Any, Any, str]] = []  # (line, container, key, text)
        for n, value in parsed.items():
            _delta_strings(value, n, pieces, 0)
        if len(pieces) < 2:
            return set()
        joined = "".join(p[3] for p in pieces)
        spans = shape_spans(joined)
        for secret in self._secrets | _OPERATOR_SECRETS:
            start = joined.find(secret)
            while start >= 0:
                spans.append((start, start + len(secret)))
                start = joined.find(secret, start + 1)
        if not spans:
            return set()
        merged = _merged(spans)
        starts: list[int] = []
        pos = 0
        for p in pieces:
            starts.append(pos)
            pos += len(p[3])
        changed: set[int] = set()
        texts = [p[3] for p in pieces]
        for lo, hi in reversed(merged):  # from the end: earlier offsets stay valid
            hit = [i for i, p in enumerate(pieces) if starts[i] < hi and starts[i] + len(p[3]) > lo]
            if len(hit) < 2:
                continue  # inside one piece: the value and echo rules see it there
            for i in hit:
                a = starts[i]
                cut_lo, cut_hi = max(lo, a) - a, min(hi, a + len(pieces[i][3])) - a
                t = texts[i]
                texts[i] = t[:cut_lo] + (REDACTED if i == hit[0] else "") + t[cut_hi:]
                changed.add(pieces[i][0])
        for (_line, container, key, _t), new in zip(pieces, texts, strict=True):
            container[key] = new
        return changed


def _delta_strings(value: Any, line: int, out: list[tuple[int, Any, Any, str]], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if k in _DELTA_KEYS and isinstance(v, str):
                out.append((line, value, k, v))
            elif isinstance(v, (dict, list)):
                _delta_strings(v, line, out, depth + 1)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)):
                _delta_strings(v, line, out, depth + 1)


def parse_query_pairs(query: str) -> list[tuple[str, str]]:
    """Query pairs (blank values kept); a small helper for callers that need them."""
    return parse_qsl(query, keep_blank_values=True)


def truncate_body(data: bytes, limit: int) -> tuple[bytes, int]:
    """Cut ``data`` to ``limit`` bytes (0 = no limit) plus a marker line; returns (body, bytes cut)."""
    if limit <= 0 or len(data) <= limit:
        return data, 0
    cut = len(data) - limit
    return data[:limit] + f"\n[... {cut} bytes truncated by proxai export]\n".encode(), cut
