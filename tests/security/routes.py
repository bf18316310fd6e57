"""A routes file with one route per (auth, client protocol, upstream protocol, normalize), and the
request each client protocol sends, for the credential tests."""

from __future__ import annotations

from typing import Any

from proxai.core.model import Protocol
from tests.e2e.harness import PATHS
from tests.security import planted

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
SHORT = {A: "a", C: "c", R: "r"}
ENV_VAR = {A: "PROXAI_PLANTED_ANTHROPIC_KEY", C: "PROXAI_PLANTED_OPENAI_KEY", R: "PROXAI_PLANTED_AZURE_KEY"}
# mitmdump's environment: the operator's keys the env routes send
ENV = {ENV_VAR[A]: planted.ENV_ANTHROPIC, ENV_VAR[C]: planted.ENV_OPENAI, ENV_VAR[R]: planted.ENV_AZURE}


def combos() -> list[tuple[str, Protocol, Protocol, bool]]:
    """(auth, client, target, normalize) for every pair, both normalize settings on a same pair."""
    out = []
    for auth in ("env", "pass"):
        for client in (A, C, R):
            for target in (A, C, R):
                for normalize in (False, True) if client is target else (False,):
                    out.append((auth, client, target, normalize))
    return out


def route_name(auth: str, client: Protocol, target: Protocol, normalize: bool) -> str:
    return f"{auth}-{SHORT[client]}2{SHORT[target]}{'-norm' if normalize else ''}"


def routes_toml(route_host: str) -> str:
    parts = []
    for auth, client, target, normalize in combos():
        name = route_name(auth, client, target, normalize)
        base = route_host if target is A else route_host + "/v1"
        auth_line = f'auth = {{ env = "{ENV_VAR[target]}" }}' if auth == "env" else 'auth = "pass"'
        parts.append(
            f'[[route]]\nname = "{name}"\nmatch = {{ path = "{PATHS[client]}", model = "{name}:*" }}\n'
            f'upstream = "{base}"\nprotocol = "{target}"\n{auth_line}\nnormalize = {str(normalize).lower()}\n'
        )
    return "\n".join(parts)


def request_body(
    client: Protocol, model: str, *, stream: bool = False, prompt: str = "hi", **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any]
    if client is A:
        body = {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": prompt}]}
    elif client is C:
        body = {"model": model, "messages": [{"role": "user", "content": prompt}]}
    else:
        body = {"model": model, "input": prompt}
    if stream:
        body["stream"] = True
    body.update(extra)
    return body
