"""proxai.safety.redact's remembered answers and its tree walk: the same answers as computed afresh.

The name rule (``_secret_name``) and the text rule of short strings (``_redact_short``) remember
their answers, bounded; the tree walk remembers its text rule's answers per kind of output and
echo set (``_memo``, with ``same`` and ``names``: the strings and key names it leaves as they are,
so a dict of them is copied whole) and keeps numbers, flags and None without a call. Each is
checked here against the rule computed without the memory (``__wrapped__``, ``_redact_text``) and
against the walk as it was written before (``_reference_tree`` below), over the key names and
strings of every recorded stream, planted secrets, and generated trees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.safety import redact
from proxai.safety.redact import (
    _MEMOS,
    MAX_DEPTH,
    MAX_MEMOS,
    MEMO_CHARS,
    MEMO_SIZE,
    MEMO_TEXT,
    MEMO_TREE_TEXT,
    REDACTED,
    Redactor,
    _meta_secret,
    _redact_short,
    _redact_text,
    _secret_name,
    redact_json_value,
    redact_metadata,
    redact_text,
    register_secret,
)
from tests.observe.test_properties import STREAMS
from tests.security import planted


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _recorded() -> list[Any]:
    """Every JSON payload of the recorded streams."""
    out = []
    for p in STREAMS:
        for line in p.read_bytes().splitlines():
            if line.startswith(b"data:"):
                try:
                    out.append(orjson.loads(line[5:]))
                except orjson.JSONDecodeError:
                    continue
    return out


def _planted_texts() -> list[str]:
    secrets = [*planted.CLIENT_SECRETS.values(), planted.ENV_ANTHROPIC, planted.ENV_OPENAI]
    texts = []
    for s in secrets:
        texts += [s, f"key {s} in prose", f"api_key={s}", f'{{"access_token": "{s}"}}', f"Bearer {s}"]
    return texts


STRINGS = sorted({s for payload in _recorded() for s in _strings(payload)} | set(_planted_texts()))


def test_text_memo_gives_the_rule_s_answer() -> None:
    for s in STRINGS:
        fresh = _redact_text(s)
        assert redact_text(s) == fresh  # computed (or remembered from another test)
        assert redact_text(s) == fresh  # remembered
    assert any(redact_text(s) != s for s in STRINGS)  # the corpus has secrets to redact


def test_text_memo_forgets_when_an_operator_secret_is_registered() -> None:
    text = "a reply quoting PLNTmemoOperatorKey0042 back"
    assert redact_text(text) == text  # remembered as clean
    register_secret("PLNTmemoOperatorKey0042")
    assert redact_text(text) == f"a reply quoting {REDACTED} back"
    assert _redact_text(text) == redact_text(text)


def test_text_memo_is_bounded() -> None:
    assert _redact_short.cache_info().maxsize == 4096
    for i in range(5000):
        redact_text(f"distinct string {i}")
    assert _redact_short.cache_info().currsize <= 4096
    # a string longer than MEMO_TEXT is never remembered (the memory holds 4,096 short strings)
    long = "x" * (MEMO_TEXT + 1)
    before = _redact_short.cache_info()
    assert redact_text(long) == long
    after = _redact_short.cache_info()
    assert (after.hits, after.misses) == (before.hits, before.misses)


def test_name_memo_gives_the_rule_s_answer_and_is_bounded() -> None:
    names = [*STRINGS, "x-api-key", "accessToken", "max_tokens", "client_secret", "monkey"]
    for n in names:
        assert _secret_name(n) == _secret_name.__wrapped__(n)
    assert _secret_name.cache_info().maxsize == 4096
    for i in range(5000):
        _secret_name(f"name_{i}")
    assert _secret_name.cache_info().currsize <= 4096


# -- the tree walk ------------------------------------------------------------------------------


def _reference_tree(
    value: Any, depth: int, text: Callable[[str], str], secret: Callable[[Any], Any | None]
) -> Any:
    """``_redact_tree``'s rule, written as it read before numbers were kept without a call: every
    value goes through the type checks, every key name through the name rule uncached."""
    if depth > MAX_DEPTH:
        return REDACTED
    match value:
        case str():
            return text(value)
        case bytes():
            return text(value.decode("utf-8", "replace")).encode()
        case Mapping():
            return {
                (text(k) if isinstance(k, str) else k): _reference_item(k, v, depth, text, secret)
                for k, v in value.items()
            }
        case list() | tuple():
            return [_reference_tree(v, depth + 1, text, secret) for v in value]
    return value


def _reference_item(
    k: Any, v: Any, depth: int, text: Callable[[str], str], secret: Callable[[Any], Any | None]
) -> Any:
    hidden = secret(v) if isinstance(k, str) and _secret_name.__wrapped__(k) else None
    return hidden if hidden is not None else _reference_tree(v, depth + 1, text, secret)


def _reference_metadata(red: Redactor, value: Any) -> Any:
    def text(v: str) -> str:
        if "://" in v or v.startswith("/"):
            return red.url(v)
        out = _redact_text(v)
        return red._echo(out) if red._secrets else out

    return _reference_tree(value, 0, text, _meta_secret)


def _reference_json(value: Any) -> Any:
    return _reference_tree(value, 0, _redact_text, redact._json_secret)


def _echoing() -> Redactor:
    red = Redactor()
    red.learn_headers([(b"authorization", f"Bearer {planted.OPENAI_KEY}".encode()), (b"x-custom", b"1")])
    red.learn("PLNTlearnedEchoValue77")
    return red


def _same(value: Any) -> None:
    for _ in range(2):  # the second walk finds every name in the memo's ``same``
        assert redact_metadata(value) == _reference_metadata(Redactor(), value)
        red = _echoing()
        assert red.metadata(value) == _reference_metadata(red, value)
        assert redact_json_value(value) == _reference_json(value)
        assert red.json_value(value) == _reference_tree(value, 0, red.text, redact._json_secret)
    _same_is_unchanged_names()


def _same_is_unchanged_names() -> None:
    """Every string of a memo's ``same`` is its own answer there; every one of its ``names`` too,
    and no secret name."""
    for memo in _MEMOS.values():
        for s in memo.same:
            assert memo[s] == s
            assert type(s) is str
        for s in memo.names:
            assert memo[s] == s
            assert type(s) is str
            assert not _secret_name.__wrapped__(s)


def test_tree_walk_as_before_on_recorded_payloads() -> None:
    for payload in _recorded():
        _same(payload)
        _same({"proxai": payload, "usage": {"input_tokens": 3, "ratio": 0.5, "ok": True, "none": None}})


def test_tree_walk_as_before_at_the_depth_limit() -> None:
    for depth in range(MAX_DEPTH - 2, MAX_DEPTH + 3):
        for leaf in (1, 2.5, True, None, "sk-PLNTdeepleaf12345", b"x", 10**30):
            tree: Any = {"n": leaf, "token": leaf, "s": "t"}
            for i in range(depth):
                tree = {"k": tree, "count": i} if i % 2 else [tree, i]
            _same(tree)


class _Int(int):
    pass


class _Str(str):
    pass


_KEYS = st.sampled_from(
    ["text", "input_tokens", "api_key", "password", "accessToken", "url", "/path", "Bearer", "monkey", "k"]
)
_LEAVES = st.one_of(
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.text(max_size=40),
    st.binary(max_size=20),
    st.sampled_from(
        [
            planted.OPENAI_KEY,
            f"api_key={planted.QUERY_KEY}",
            "https://h/v1?key=PLNTqueryKey1234&x=1",
            "/v1/messages?access_token=PLNTpathToken123",
            "PLNTlearnedEchoValue77",
            _Int(3),
            _Str("sk-PLNTsubclassString1"),
            "",
        ]
    ),
)
_TREES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.one_of(_KEYS, st.integers(0, 3)), inner, max_size=5),
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(tree=_TREES)
def test_tree_walk_as_before_on_generated_trees(tree: Any) -> None:
    _same(tree)
    _same({"proxai": tree})


def test_tree_memo_forgets_when_an_operator_secret_is_registered() -> None:
    meta = {"message": "upstream said PLNTmemoTreeOperator0043 is wrong"}
    assert redact_metadata(meta) == meta
    assert Redactor().json_value(meta) == meta
    register_secret("PLNTmemoTreeOperator0043")
    assert redact_metadata(meta) == {"message": f"upstream said {REDACTED} is wrong"}
    assert Redactor().json_value(meta) == {"message": f"upstream said {REDACTED} is wrong"}


def test_tree_memo_is_per_echo_set() -> None:
    meta = {"error": "the key PLNTechoOnlyForOneFlow99 was refused"}
    assert redact_metadata(meta) == meta  # remembered for the empty echo set
    red = Redactor()
    red.learn("PLNTechoOnlyForOneFlow99")
    assert red.metadata(meta) == {"error": f"the key {REDACTED} was refused"}
    assert red.json_value(meta) == {"error": f"the key {REDACTED} was refused"}
    assert redact_metadata(meta) == meta


def test_names_kept_whole_are_redacted_once_they_are_secrets() -> None:
    # A summary's numbers under names the walk has seen: copied whole (``same``) for the echo set
    # that left the names as they are, and redacted for one that has a name as a secret.
    meta = {"usage": {"PLNTnameAsSecret0051": 1, "input_tokens": 2}, "model": "PLNTnameAsSecret0051"}
    assert redact_metadata(meta) == meta
    assert redact_metadata(meta) == meta
    red = Redactor()
    red.learn("PLNTnameAsSecret0051")
    want = {"usage": {REDACTED: 1, "input_tokens": 2}, "model": REDACTED}
    assert red.metadata(meta) == want
    assert red.metadata(meta) == want
    register_secret("PLNTnameAsSecret0051")
    assert redact_metadata(meta) == want
    # a secret name is never kept whole: its string value is replaced on every walk, also after
    # walks that kept its number or its empty value
    for value in (0, None, "", "plain value", 0, "plain value"):
        want_value = REDACTED if value else value
        assert redact_metadata({"api_key": value, "n": 1}) == {"api_key": want_value, "n": 1}
        assert red.metadata({"api_key": value, "n": 1}) == {"api_key": want_value, "n": 1}
    _same_is_unchanged_names()


def test_plain_values_of_secret_names_are_kept() -> None:
    # A dict of plain values is copied whole when its keys are in ``same``, secret names included
    # (``first_token_s`` names a token): right only while both secret rules keep a plain value.
    for value in (0, 1, -1, 10**30, 0.0, -2.5, True, False, None, _Int(3)):
        assert _meta_secret(value) is None
        assert redact._json_secret(value) is None
    timing = {"headers_s": 0.1, "first_token_s": 0.25, "api_key": 3, "access_token": None}
    for _ in range(3):
        assert redact_metadata({"timing": timing}) == {"timing": timing}
        assert redact_json_value({"timing": timing}) == {"timing": timing}


def test_tree_memos_are_bounded() -> None:
    for i in range(MAX_MEMOS + 5):
        red = Redactor()
        red.learn(f"PLNTboundedEchoSet{i:04d}")
        red.metadata({"k": "v"})
    assert len(_MEMOS) <= MAX_MEMOS
    redact_metadata({f"key {i}": f"value {i}" for i in range(MEMO_SIZE)})
    assert all(len(m) <= MEMO_SIZE for m in _MEMOS.values())
    assert all(len(m.same) <= len(m) and len(m.names) <= len(m) for m in _MEMOS.values())
    long = "y" * (MEMO_TREE_TEXT + 1)
    assert redact_metadata({"k": long}) == {"k": long}
    assert all(long not in m for m in _MEMOS.values())
    # strings up to MEMO_TREE_TEXT are remembered, within MEMO_CHARS characters in all
    for i in range(3 * MEMO_CHARS // MEMO_TREE_TEXT):
        text = f"{i:06d}" + "z" * (MEMO_TREE_TEXT - 6)
        assert redact_metadata({"k": text}) == {"k": text}
        for m in _MEMOS.values():
            assert m.chars == sum(map(len, m)) <= MEMO_CHARS


def test_tree_memo_remembers_the_rules_texts() -> None:
    # the conformance rules' texts a summary quotes (up to 329 characters, past MEMO_TEXT), with a
    # planted secret after them, and as their own answers: as computed afresh, twice
    from proxai.protocols import conformance

    texts = [t for r in conformance.RULES.values() for t in (r.requires, r.python.text(), r.node.text())]
    assert max(map(len, texts)) <= MEMO_TREE_TEXT
    assert any(len(t) > MEMO_TEXT for t in texts)
    planted_texts = [f"{t} {planted.OPENAI_KEY}"[:MEMO_TREE_TEXT] for t in texts]
    _same({"extra": {"conformance": [{"requires": t} for t in texts], "notes": planted_texts}})
    memo = _MEMOS[("meta", frozenset())]
    assert all(memo[t] == t for t in texts if t in memo)
    assert any(len(t) > MEMO_TEXT and t in memo.same for t in texts)


# -- learning from headers and URLs ----------------------------------------------------------------


def _reference_learn(fields: list[tuple[bytes, bytes]], url: str) -> frozenset[str]:
    """``learn_headers`` and ``learn_url`` as they were written before their finds were remembered."""
    import re
    from urllib.parse import parse_qsl

    red = Redactor()
    for name, raw in fields:
        value = raw.decode("latin-1")
        low = name.decode("latin-1").strip().lower()
        if low in ("cookie", "set-cookie", "set-cookie2"):
            pairs = value.split(";") if low == "cookie" else value.split(";", 1)[:1]
            for pair in pairs:
                red.learn(pair.partition("=")[2])
        elif redact.is_secret_name(low):
            red.learn(value)
            for part in re.split(r"[\s,]+", value):
                red.learn(part.partition("=")[2] if "=" in part else part)
        for lo, hi in redact.shape_spans(value):
            red.learn(value[lo:hi])
    head, _, query = url.partition("?")
    for qname, qvalue in parse_qsl(query.partition("#")[0], keep_blank_values=True):
        if redact.is_secret_param(qname):
            red.learn(qvalue)
    _scheme, sep, rest = head.partition("://")
    userinfo, at, _host = rest.split("/", 1)[0].rpartition("@")
    if sep and at:
        red.learn(userinfo)
        red.learn(userinfo.partition(":")[2])
    return red.secrets


def _learned(fields: list[tuple[bytes, bytes]], url: str) -> frozenset[str]:
    red = Redactor()
    red.learn_headers(fields)
    red.learn_url(url)
    return red.secrets


PLANTED_FIELDS = [
    (b"Authorization", f"Bearer {planted.OPENAI_KEY}".encode()),
    (b"x-api-key", planted.ANTHROPIC_KEY.encode()),
    (b"api-key", planted.AZURE_KEY.encode()),
    (b"cookie", f"sid={planted.COOKIE_VALUE}; theme=dark".encode()),
    (b"set-cookie", f"sid={planted.COOKIE_VALUE}; Path=/; HttpOnly".encode()),
    (b"x-amz-security-token", planted.AWS_SESSION_TOKEN.encode()),
    (b"x-custom", f"see {planted.GOOGLE_KEY} here".encode()),
    (b"user-agent", b"Anthropic/Python 0.40.0"),
    (b"content-type", b"application/json"),
    (b"x-long", b"k" * (redact.MEMO_FIELD + 5) + planted.JWT.encode()),
]
PLANTED_URLS = [
    f"https://user:{planted.BASIC_USERPASS}@h.example/v1/messages?key={planted.QUERY_KEY}&x=1#frag",
    f"https://h.example/v1?api-key={planted.QUERY_API_KEY}&access_token={planted.QUERY_TOKEN}",
    "http://127.0.0.1:9/v1/chat/completions",
    "https://h.example/" + "p" * (redact.MEMO_FIELD + 1) + f"?token={planted.QUERY_TOKEN}",
]


def test_learning_as_before_on_planted_headers_and_urls() -> None:
    for url in PLANTED_URLS:
        for n in range(len(PLANTED_FIELDS) + 1):
            fields = PLANTED_FIELDS[:n]
            assert _learned(fields, url) == _reference_learn(fields, url)  # computed
            assert _learned(fields, url) == _reference_learn(fields, url)  # remembered
    assert planted.OPENAI_KEY in _learned(PLANTED_FIELDS, PLANTED_URLS[0])


@settings(max_examples=300, deadline=None)
@given(
    fields=st.lists(
        st.tuples(
            st.sampled_from([b"authorization", b"cookie", b"set-cookie", b"x-api-key", b"x-thing", b"Token"]),
            st.binary(max_size=60),
        ),
        max_size=5,
    ),
    url=st.text(max_size=80),
)
def test_learning_as_before_on_generated_headers_and_urls(
    fields: list[tuple[bytes, bytes]], url: str
) -> None:
    assert _learned(fields, url) == _reference_learn(fields, url)


def test_learning_memos_are_bounded() -> None:
    for i in range(1500):
        Redactor().learn_headers([(b"x-request-id", f"req-{i}".encode())])
        Redactor().learn_url(f"https://h.example/v1?n={i}")
    assert redact._header_finds.cache_info().maxsize == 1024
    assert redact._header_finds.cache_info().currsize <= 1024
    assert redact._url_finds.cache_info().currsize <= 256
