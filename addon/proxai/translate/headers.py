"""Request header translation between providers (docs/translation.md, "Headers").

``Authorization: Bearer <key>`` (OpenAI) <-> ``x-api-key: <key>`` (Anthropic); Anthropic
targets get an ``anthropic-version`` (the client's when it speaks Anthropic, else the route's);
``anthropic-beta`` is forwarded only to Anthropic. Provider-specific headers never reach the
other provider: ``anthropic-*`` / ``x-api-key`` are removed for OpenAI targets and
``openai-*`` / ``Authorization`` / Azure's ``api-key`` for Anthropic targets. The key itself
comes from the client (auth "pass") or from the environment variable the route names; it is
never logged or put in metadata. Pure: the caller applies the returned plan to the real headers.

Credential hygiene (``docs/security.md``): toward a route's host only the credential the route
configures is sent. Every credential the client sent is removed whatever the protocols: every
provider's key headers, AWS SigV4 headers, cookies, proxy credentials, any header named like a
secret, and the organization / project headers (kept only for auth "pass" between OpenAI-family
protocols, where they go with the client's own key); ``credential_free_query`` does the same for
the query string.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from urllib.parse import unquote

from proxai.core.errors import TranslationError
from proxai.core.model import Protocol
from proxai.safety.redact import is_secret_param, normalize_name
from proxai.translate.ir import value

# Client credentials of every provider (lower case), removed from every routed request.
CLIENT_CREDENTIALS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",  # Azure OpenAI
        "x-goog-api-key",
        "x-goog-user-project",
        "ocp-apim-subscription-key",
        "cookie",
        "cookie2",
        "chatgpt-account-id",
    }
)
# Identity headers that go with an OpenAI key; sent on only with the client's own key ("pass").
OPENAI_IDENTITY = frozenset({"openai-organization", "openai-project"})
# A header whose last word is one of these carries a credential ("x-custom-key", "x-auth-token").
_CREDENTIAL_WORDS = frozenset({"key", "token", "secret", "password", "auth", "credential", "credentials"})
_CREDENTIAL_SUFFIXES = ("apikey", "token", "secret", "password", "authorization", "cookie")
_OPENAI_FAMILY = (Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES)


@functools.lru_cache(maxsize=1024)
def is_client_credential(name: str) -> bool:
    """True for a request header that carries a client credential (removed on every route). A
    pure function of the name, remembered: a routed request asks it of each of its header names,
    the same few dozen on every flow (its normalization is a regular expression's substitution;
    bounded: the least recently asked names are forgotten first)."""
    low = name.lower()
    if low in CLIENT_CREDENTIALS or low.startswith("x-amz-"):
        return True
    last = low.replace("_", "-").rsplit("-", 1)[-1]
    return last in _CREDENTIAL_WORDS or normalize_name(low).endswith(_CREDENTIAL_SUFFIXES)


def credential_free_query(query: str) -> str:
    """A query string (without ``?``) without credential-shaped parameters (``key``, ``api-key``,
    ``access_token``, ``sig``, ``X-Amz-*`` ...); the others are kept as they were written."""
    kept = []
    for pair in query.split("&") if query else ():
        name = unquote(pair.partition("=")[0])
        if pair and not is_secret_param(name) and not name.lower().startswith("x-amz-"):
            kept.append(pair)
    return "&".join(kept)


@value
class HeaderPlan:
    remove: tuple[str, ...]  # lower-case names to delete
    set: tuple[tuple[str, str], ...]  # (name, value) to set, replacing any existing value


def client_key(headers: Mapping[str, str]) -> str | None:
    """The API key the client sent, in either provider's header."""
    return _client_key({k.lower(): v for k, v in headers.items()})


def _client_key(lower: Mapping[str, str]) -> str | None:
    """``client_key`` of headers whose names are already lowercased (``plan_headers`` has that map)."""
    for name in ("x-api-key", "api-key", "x-goog-api-key"):  # Anthropic; Azure OpenAI; Google
        if lower.get(name):
            return lower[name]
    auth = lower.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


def plan_headers(
    headers: Mapping[str, str],
    *,
    client: Protocol,
    target: Protocol,
    key: str | None,
    anthropic_version: str = "2023-06-01",
) -> HeaderPlan:
    """What to change in the client's request headers for ``target``.

    ``key``: the upstream key (the client's for auth "pass", or the env var's value); ``None``
    leaves auth headers as they are when both sides speak the same provider family.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    passed = key is None  # auth "pass": the client's own key goes on, translated
    if passed:
        key = _client_key(lower)
    # content-length is not touched: mitmproxy recomputes it when the body is replaced
    remove: list[str] = [k for k in lower if is_client_credential(k)]
    if not (passed and client in _OPENAI_FAMILY and target in _OPENAI_FAMILY):
        remove += [k for k in lower if k in OPENAI_IDENTITY]
    sets: list[tuple[str, str]] = []
    if target is Protocol.ANTHROPIC_MESSAGES:
        remove += [k for k in lower if k.startswith("openai-")]
        if client is not Protocol.ANTHROPIC_MESSAGES:
            remove += [k for k in lower if k.startswith("anthropic-")]
        if key is not None:
            sets.append(("x-api-key", key))
        version = lower.get("anthropic-version") if client is Protocol.ANTHROPIC_MESSAGES else None
        sets.append(("anthropic-version", version or anthropic_version))
    else:
        remove += [k for k in lower if k.startswith("anthropic-")]
        if client is Protocol.ANTHROPIC_MESSAGES:
            remove += [k for k in lower if k.startswith("openai-")]
        if key is not None:
            sets.append(("authorization", f"Bearer {key}"))
    set_names = {n for n, _ in sets}
    return HeaderPlan(tuple(dict.fromkeys(r for r in remove if r not in set_names)), tuple(sets))


def env_key(env: Mapping[str, str], name: str) -> str:
    """The key from the route's environment variable; a missing one is a clear error."""
    value = env.get(name)
    if not value:
        raise TranslationError(f"the route's key variable {name} is not set in proxai's environment", "auth")
    return value
