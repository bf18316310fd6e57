"""The secret shapes (``proxai/safety/secret_shapes.toml``): the rule set is what it says it is, every shape
removes its planted value in every place a flow can hold it, and ordinary words and LLM API ids stay
whole."""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from urllib.parse import quote

import orjson
import pytest

from proxai.safety import redact
from proxai.safety.redact import (
    REDACTED,
    SHAPES,
    Redactor,
    load_shapes,
    redact_body,
    redact_bytes,
    redact_metadata,
    redact_text,
    redact_url,
    shape_spans,
)
from tests.security.shapes import PLANTED_SHAPES

DATA = tomllib.loads(resources.files(redact.__package__).joinpath(redact.SHAPES_FILE).read_text("utf-8"))
BY_ID = {s.id: s for s in SHAPES}
IDS = sorted(BY_ID)

# Ordinary words, identifiers and LLM API ids that no shape may cut.
ORDINARY = [
    "disk-space",
    "disk-spaces",
    "risk-assessment",
    "task-management",
    "ask-me-anything",
    "max-tokens",
    "max_tokens",
    "input_tokens",
    "cache_creation_input_tokens",
    "ephemeral_1h_input_tokens",
    "claude-3-5-sonnet-20241022",
    "claude-sonnet-4-5-20250929",
    "gpt-4o-2024-08-06",
    "o3-mini-2025-01-31",
    "text/event-stream",
    "application/json; charset=utf-8",
    "anthropic-version: 2023-06-01",
    "123e4567-e89b-12d3-a456-426614174000",
    "toolu_01A09q90qw90lq917835lq9",
    "msg_01XFDUDYJgAACzvnptvVoYEL",
    "req_011CNHQqz8FXJyXa5u6VyJhd",
    "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    "call_Vf2x3ZKh8SJmcoyMV2ogkNNp",
    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b",
    "fc_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    "rs_67ccd3c9eb14819091a77e1e3bd2a5a10bb6a6b452d3795b",
    "b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b",  # a git commit id
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # a sha256
    "2026-12-02T07:00:00.123456Z",
    "https://api.anthropic.com/v1/messages?beta=true",
    "/v1/chat/completions",
    "Basic understanding of the problem",
    "a basic MIMEText class",
    "the bearer of bad-tidings-and-news",
    "linear = incomprehensible",
    "confluent: incomprehensible",
    "The assistant asked: what is the key to success? They said: patience.",
]


def _secret(shape_id: str) -> str:
    return PLANTED_SHAPES[shape_id][1]


def _left(shape_id: str) -> str:
    """The planted text as every output must show it: the secret replaced, its context kept."""
    text, secret = PLANTED_SHAPES[shape_id]
    return text.replace(secret, REDACTED)


# -- the rule set ---------------------------------------------------------------------------------


def test_rule_set_names_its_source_version_and_licence() -> None:
    source = DATA["source"]
    assert source["name"] == "gitleaks"
    assert source["repository"] == "https://github.com/gitleaks/gitleaks"
    assert source["path"] == "config/gitleaks.toml"
    assert len(source["commit"]) == 40
    assert source["version"].startswith("v8.30.0")
    assert source["licence"].strip().startswith("MIT License")
    assert "Copyright (c) 2019 Zachary Rice" in source["licence"]
    taken = {r["id"] for r in DATA["rule"] if r["origin"] == "gitleaks"}
    left_out = source["left_out"]
    assert set(left_out) == {
        "generic-api-key",
        "curl-auth-header",
        "curl-auth-user",
        "kubernetes-secret-yaml",
        "nuget-config-password",
        "pkcs12-file",
        "hashicorp-tf-password",
        "freemius-secret-key",
    }
    assert not taken & set(left_out) and all(left_out.values())
    assert len(taken) + len(left_out) == 222  # every rule of that gitleaks release, taken or left out


def test_every_rule_is_complete_and_compiled() -> None:
    assert len(SHAPES) == len(DATA["rule"]) == len(BY_ID)  # ids are unique
    for rule in DATA["rule"]:
        shape = BY_ID[rule["id"]]
        assert shape.keywords and all(k == k.lower() for k in shape.keywords), rule["id"]
        assert shape.regex.flags & re.ASCII, rule["id"]  # \w \d \s \b as in RE2
        assert shape.regex.pattern == rule["regex"]
        if rule["origin"] == "gitleaks":
            assert rule["source"] and "why" not in rule, rule["id"]
        else:
            assert rule["origin"] == "proxai" and rule["why"] and "source" not in rule, rule["id"]


@pytest.mark.parametrize(
    "ids",
    [
        # LLM providers
        ["anthropic-api-key", "anthropic-admin-api-key", "openai-api-key", "sk-key", "cohere-api-token"],
        ["huggingface-access-token", "perplexity-api-key", "groq-api-key", "xai-api-key"],
        ["aws-amazon-bedrock-api-key-long-lived", "aws-amazon-bedrock-api-key-short-lived"],
        # cloud
        ["aws-access-token", "aws-sigv4-authorization", "gcp-api-key", "google-oauth-access-token"],
        ["azure-ad-client-secret", "alibaba-access-key-id", "digitalocean-pat", "heroku-api-key-v2"],
        # VCS
        ["github-pat", "github-oauth", "github-app-token", "github-refresh-token", "github-fine-grained-pat"],
        ["gitlab-pat", "gitlab-pat-routable", "gitlab-deploy-token", "bitbucket-client-secret"],
        # payment
        ["stripe-access-token", "square-access-token", "shopify-access-token", "plaid-api-token"],
        # chat
        ["slack-bot-token", "slack-user-token", "slack-webhook-url", "discord-api-token"],
    ],
)
def test_the_rule_set_covers(ids: list[str]) -> None:
    assert set(ids) <= set(BY_ID)


def test_a_bad_rule_is_a_clear_error() -> None:
    bad = 'rule = [{id = "x", origin = "proxai", category = "other", keywords = ["x"], regex = "(?i"}]'
    with pytest.raises(ValueError, match="secret shape x: missing"):
        load_shapes(bad)


# -- one planted value per shape ------------------------------------------------------------------


def test_every_shape_has_a_planted_value() -> None:
    assert set(PLANTED_SHAPES) == set(BY_ID)
    secrets = [s for _t, s in PLANTED_SHAPES.values()]
    assert len(set(secrets)) == len(secrets)


@pytest.mark.parametrize("shape_id", IDS)
def test_shape_finds_exactly_its_secret(shape_id: str) -> None:
    text, secret = PLANTED_SHAPES[shape_id]
    shape = BY_ID[shape_id]
    found = []
    for m in shape.regex.finditer(text):
        lo, hi = redact._secret_span(m)
        if shape.accepts(text[lo:hi]):
            found.append(text[lo:hi])
    assert found == [secret]
    # the keyword gate lets it run
    assert shape in redact._shapes_in(text.lower())


@pytest.mark.parametrize("shape_id", IDS)
def test_planted_shape_is_removed_everywhere(shape_id: str) -> None:
    text, secret = PLANTED_SHAPES[shape_id]
    left = _left(shape_id)
    # free text (a log line, an error message), as text and as bytes
    assert redact_text(text) == left
    assert redact_text(f"error: {text} (retry)") == f"error: {left} (retry)"
    assert redact_bytes(f"tail {text} end\n".encode()) == f"tail {left} end\n".encode()
    # a header no name rule knows
    assert Redactor().headers([(b"x-note", text.encode())]) == [(b"x-note", left.encode())]
    # a JSON body (a prompt), an SSE stream whose deltas split it in 5-character pieces
    body = orjson.dumps({"messages": [{"role": "user", "content": f"see {text}"}]})
    out = redact_body(body, "application/json").data
    assert secret.encode() not in out
    assert orjson.loads(out)["messages"][0]["content"] == f"see {left}"
    pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
    sse = b"".join(
        b"data: " + orjson.dumps({"type": "content_block_delta", "delta": {"text": p}}) + b"\n\n"
        for p in pieces
    )
    streamed = redact_body(sse, "text/event-stream").data
    lines = [line[6:] for line in streamed.splitlines() if line.startswith(b"data: ")]
    joined = "".join(orjson.loads(line)["delta"]["text"] for line in lines)
    assert secret not in joined and REDACTED in joined
    # metadata (an error message, a URL with a query parameter no name rule knows)
    meta = redact_metadata({"error": {"message": text}, "url": f"https://h.example/v1?note={quote(text)}"})
    assert meta["error"]["message"] == left
    assert secret not in meta["url"] and quote(secret, safe="") not in meta["url"]
    assert secret not in redact_url(f"/v1/x?q={quote(text)}")
    # what a flow's header taught the echo rule
    red = Redactor()
    red.learn_headers([(b"x-note", text.encode())])
    assert secret in red.secrets
    assert red.text(f"quoted back: {secret}") == f"quoted back: {REDACTED}"


# -- ordinary words stay --------------------------------------------------------------------------


@pytest.mark.parametrize("word", ORDINARY)
def test_ordinary_words_stay_whole(word: str) -> None:
    assert shape_spans(word) == []
    assert redact_text(word) == word
    assert redact_text(f"say {word}, then stop.") == f"say {word}, then stop."
    assert Redactor().headers([(b"x-note", word.encode())]) == [(b"x-note", word.encode())]
    assert redact_metadata({"model": word, "note": [word]}) == {"model": word, "note": [word]}
    body = orjson.dumps({"messages": [{"role": "user", "content": word}]})
    assert redact_body(body, "application/json").data == body


def test_real_recorded_streams_hold_no_shape() -> None:
    """The real recordings (ids, models, prose, tool arguments of real providers): nothing found."""
    from pathlib import Path

    root = Path(__file__).parents[1] / "fixtures" / "real"
    files = sorted(p for p in root.rglob("*") if p.is_file())
    assert len(files) > 100
    found = {p.name: shape_spans(p.read_text("utf-8")) for p in files}
    assert {k: v for k, v in found.items() if v} == {}


# -- the translation from gitleaks' RE2 ------------------------------------------------------------
# The steps the data file's header lists, written once more here: each gitleaks rule's ``regex`` must
# be exactly its ``source`` put through them (a rule with a ``change`` has one more edit, named there).

_TERM = "(?:[\\x60'\"\\s;]|\\\\[nr]|$)"
_END = "(?![A-Za-z0-9_+/=-])"
_LEAD = "[\\w.-]{0,50}?"


def _syntax(p: str, start: int = 0) -> list[tuple[int, str]]:
    """The characters of ``p`` from ``start`` that are syntax: not escaped, not in a class."""
    out: list[tuple[int, str]] = []
    cls, j = False, start
    while j < len(p):
        c = p[j]
        if c == "\\":
            j += 2
            continue
        if cls:
            cls = c != "]"
        elif c == "[":
            cls = True
            j += p[j + 1 : j + 2] == "^"
            j += p[j + 1 : j + 2] == "]"
        else:
            out.append((j, c))
        j += 1
    return out


def _groups(p: str) -> list[tuple[int, bool, int]]:
    """Each group of ``p``: (index of its '(', capturing, how many capturing groups hold it)."""
    out: list[tuple[int, bool, int]] = []
    stack: list[bool] = []
    for j, c in _syntax(p):
        if c == "(":
            out.append((j, p[j + 1] != "?" or p[j + 1 : j + 3] == "?P", sum(stack)))
            stack.append(out[-1][1])
        elif c == ")":
            stack.pop()
    return out


def _group_end(p: str, i: int) -> int:
    """Where the group holding position ``i`` ends (RE2: an inline flag's scope); no '|' may follow
    at that depth, or the scope would cross an alternation."""
    depth = 0
    for j, c in _syntax(p, i):
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return j
            depth -= 1
        elif c == "|" and depth == 0:
            raise AssertionError(f"an inline flag's scope crosses an alternation: {p}")
    return len(p)


# the rules with a ``change``: the edit, made to gitleaks' source before the translation
_CHANGES = {
    "sourcegraph-access-token": ("|[a-fA-F0-9]{40}", ""),
    "vault-service-token": ("|s\\.(?i:[a-z0-9]{24})", ""),
    "twilio-api-key": ("SK[0-9a-fA-F]{32}", "\\bSK[0-9a-fA-F]{32}\\b"),
}


def _translate(rule: dict[str, object]) -> str:
    p = str(rule["source"])
    if rule["id"] in _CHANGES:
        old, new = _CHANGES[str(rule["id"])]
        assert old in p
        p = p.replace(old, new)
    p = p.replace("[[:alnum:]]", "[A-Za-z0-9]").replace("\\z", "\\Z")
    if p.startswith("(?i)" + _LEAD):
        p = "(?i)" + p[len("(?i)" + _LEAD) :]
    elif p.startswith(_LEAD):
        p = p[len(_LEAD) :]
    p = p.replace("(?i:" + _LEAD, "(?i:")
    for term in (_TERM, _TERM[:-1] + "|\\b)"):
        if p.endswith(term):
            p = p[: -len(term)] + _END
    caps = [g for g in _groups(p) if g[1]]
    if rule["id"] == "sonar-api-token":  # gitleaks' secretGroup = 2
        keep = {1}
    elif rule["id"] in ("microsoft-teams-webhook", "jwt-base64"):
        keep = set()  # their groups are parts of the secret
    else:
        keep = {n for n, g in enumerate(caps) if g[2] == 0}
    for n, (j, _cap, _held) in reversed(list(enumerate(caps))):
        if n not in keep:
            rest = p[p.index(">", j) + 1 :] if p[j + 1 : j + 3] == "?P" else p[j + 1 :]
            p = p[: j + 1] + "?:" + rest
    flags = ""
    if p.startswith("(?i)"):
        flags, p = "(?i)", p[4:]
    i = p.find("(?i)", 1)
    while i >= 0:
        end = _group_end(p, i + 4)
        p = p[:i] + "(?i:" + p[i + 4 : end] + ")" + p[end:]
        i = p.find("(?i)", 1)
    return flags + p


@pytest.mark.parametrize(
    "rule", [r for r in DATA["rule"] if r["origin"] == "gitleaks"], ids=lambda r: r["id"]
)
def test_regex_is_the_documented_translation_of_gitleaks(rule: dict[str, object]) -> None:
    assert ("change" in rule) == (rule["id"] in _CHANGES)
    assert _translate(rule) == rule["regex"]
