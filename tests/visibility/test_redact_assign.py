"""proxai.safety.redact's pair rule (``name=value`` / ``"name": "value"`` in free text) as it was
written before its name was taken whole and before a text without a separator was left unscanned:
the same text out, over every string of the recorded streams, the planted secrets, the conformance
rules' texts and generated texts full of names, separators and names longer than the 64-character
cap. The pair names' remembered answers (``_secret_param``) against ``is_secret_param``.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.protocols import conformance
from proxai.safety import redact
from proxai.safety.redact import REDACTED, _assign_sub, _assignments, _secret_param, is_secret_param
from tests.security import planted
from tests.visibility.test_redact_memo import STRINGS

# The pattern as it read before (a greedy name: every shorter name tried where the whole failed).
_GREEDY = re.compile(
    r"(?<![A-Za-z0-9_\-])(?P<name>[A-Za-z0-9_\-]{1,64})"
    r"(?P<sep>\s*=\s*|\"\s*:\s*\")(?P<value>[^\s&\"',;}{]+)"
)


def _reference_sub(m: re.Match[str]) -> str:
    if not is_secret_param(m.group("name")) or m.group("value") == REDACTED:
        return m.group(0)
    return f"{m.group('name')}{m.group('sep')}{REDACTED}"


def _reference(text: str) -> str:
    return _GREEDY.sub(_reference_sub, text)


def _rule_texts() -> list[str]:
    out = []
    for rule in conformance.RULES.values():
        out += [rule.requires, rule.python.text(), rule.node.text()]
    return out


def _planted() -> list[str]:
    secrets = [*planted.CLIENT_SECRETS.values(), planted.ENV_ANTHROPIC, planted.ENV_OPENAI]
    out = []
    for s in secrets:
        out += [
            f"api_key={s}",
            f"api_key = {s}&x=1",
            f'{{"access_token": "{s}"}}',
            f'"password":"{s}"',
            f"{'k' * 64}_token={s}",  # a name past the cap: no pair
            f"{'k' * 63}_token={s}",
            f"-token={s}",
            f"x token={REDACTED}",
        ]
    return out


def _same(text: str) -> None:
    assert _assignments(text) == _reference(text)
    assert redact.redact_text(text) == redact._redact_text(text)


def test_pairs_as_before_on_recorded_planted_and_rule_texts() -> None:
    texts = [*STRINGS, *_planted(), *_rule_texts()]
    for text in texts:
        _same(text)
    assert any(_reference(t) != t for t in texts)  # some texts have a secret pair to replace
    assert any("=" not in t and '"' not in t for t in texts)  # and some are not scanned


_NAME_CHARS = "aA0_-kKeyTtoken"
_TEXT = st.text(
    alphabet=st.sampled_from([*_NAME_CHARS, "=", '"', ":", " ", "\t", "&", ",", ";", "{", "}", "'", "é"])
)
_PIECES = st.one_of(
    _TEXT,
    st.sampled_from(
        ["api_key", "access_token", "password", "sig", "X-Amz-Signature", "client_secret", REDACTED]
    ),
    st.integers(60, 70).map(lambda n: "t" * n),  # names about the cap
)


@settings(max_examples=600, deadline=None)
@given(parts=st.lists(_PIECES, max_size=12))
def test_pairs_as_before_on_generated_texts(parts: list[str]) -> None:
    _same("".join(parts))


def test_pair_names_remembered_as_the_rule_answers() -> None:
    names = ["api_key", "sig", "X-Amz-Signature", "accessToken", "max_tokens", "monkey", "k" * 64, "token"]
    for name in names:
        assert _secret_param(name) is is_secret_param(name)
        assert _secret_param(name) is is_secret_param(name)  # remembered
    assert _secret_param.cache_info().maxsize == 4096
    assert _assign_sub(_GREEDY.search("api_key=PLNTvalue12345")) == f"api_key={REDACTED}"  # type: ignore[arg-type]
