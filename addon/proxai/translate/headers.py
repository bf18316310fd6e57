"""Request header translation between providers (issue 4).

``Authorization: Bearer <key>`` (OpenAI) <-> ``x-api-key: <key>`` (Anthropic); Anthropic
targets get an ``anthropic-version`` (the client's when it speaks Anthropic, else the route's);
``anthropic-beta`` is forwarded only to Anthropic. Provider-specific headers never reach the
other provider: ``anthropic-*`` / ``x-api-key`` are removed for OpenAI targets and
``openai-*`` / ``Authorization`` / Azure's ``api-key`` for Anthropic targets. The key itself
comes from the client (auth "pass") or from the environment variable the route names; it is
never logged or put in metadata. Pure: the caller applies the returned plan to the real headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from proxai.errors import TranslationError
from proxai.model import Protocol


@dataclass(frozen=True, slots=True)
class HeaderPlan:
    remove: tuple[str, ...]  # lower-case names to delete
    set: tuple[tuple[str, str], ...]  # (name, value) to set, replacing any existing value


def client_key(headers: Mapping[str, str]) -> str | None:
    """The API key the client sent, in either provider's header."""
    lower = {k.lower(): v for k, v in headers.items()}
    for name in ("x-api-key", "api-key"):  # Anthropic; Azure OpenAI
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
    remove: list[str] = []  # content-length: mitmproxy recomputes it when the body is replaced
    sets: list[tuple[str, str]] = []
    if target is Protocol.ANTHROPIC_MESSAGES:
        remove += [k for k in lower if k.startswith("openai-") or k in ("authorization", "api-key")]
        if client is not Protocol.ANTHROPIC_MESSAGES:
            remove += [k for k in lower if k.startswith("anthropic-")]
        if key is None:
            key = client_key(headers)
        if key is not None:
            sets.append(("x-api-key", key))
        version = lower.get("anthropic-version") if client is Protocol.ANTHROPIC_MESSAGES else None
        sets.append(("anthropic-version", version or anthropic_version))
    else:
        remove += [k for k in lower if k.startswith("anthropic-") or k == "x-api-key"]
        if client is Protocol.ANTHROPIC_MESSAGES:
            remove += [k for k in lower if k.startswith("openai-")]
        if key is None:
            key = client_key(headers)
        if key is not None:
            sets.append(("authorization", f"Bearer {key}"))
            remove = [r for r in remove if r != "authorization"]
    set_names = {n for n, _ in sets}
    return HeaderPlan(tuple(dict.fromkeys(r for r in remove if r not in set_names)), tuple(sets))


def env_key(env: Mapping[str, str], name: str) -> str:
    """The key from the route's environment variable; a missing one is a clear error."""
    value = env.get(name)
    if not value:
        raise TranslationError(f"the route's key variable {name} is not set in proxai's environment", "auth")
    return value
