"""Toward a route's host only the credential the route configures is sent (``docs/security.md``).

A real mitmdump (reverse and regular mode) with a routes file of one route per (auth, client
protocol, upstream protocol, normalize); the route's host is a fake upstream that records every
request it receives. Each request carries every kind of client credential (every provider's key
header, AWS SigV4, cookie, proxy credentials, organization and project, credential-shaped query
parameters); the test asserts, per route, the exact credential the host received and that none of
the others reached it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proxai.core.model import Protocol
from tests.e2e.harness import PATHS, TEST_HEADER, Mitmdump, running_mitmdump, tag
from tests.security import planted
from tests.security.routes import ENV, A, C, R, combos, request_body, route_name, routes_toml

ENV_KEY = {A: planted.ENV_ANTHROPIC, C: planted.ENV_OPENAI, R: planted.ENV_AZURE}


@pytest.fixture(scope="module")
def origin() -> Iterator[Any]:
    from proxai.upstream import FakeUpstream

    with FakeUpstream(tls=True, time_scale=0) as up:
        yield up


@pytest.fixture(scope="module", params=["reverse", "regular"])
def md(
    request: pytest.FixtureRequest, route_host: Any, origin: Any, tmp_path_factory: Any
) -> Iterator[Mitmdump]:
    workdir: Path = tmp_path_factory.mktemp(f"creds-{request.param}")
    routes = workdir / "routes.toml"
    routes.write_text(routes_toml(route_host.url))
    with running_mitmdump(
        origin.url, mode=request.param, workdir=workdir, options={"proxai_routes": str(routes)}, env=ENV
    ) as m:
        yield m


def _send(md: Mitmdump, client: Protocol, model: str, headers: dict[str, str]) -> tuple[str, Any]:
    t = tag()
    with md.http_client() as http:
        resp = http.post(
            md.base_url(PATHS[client]) + "?" + planted.QUERY,
            json=request_body(client, model, metadata={"user_id": planted.USER_ID}),
            headers={**headers, TEST_HEADER: t, "content-type": "application/json"},
        )
    return t, resp


def _received(route_host: Any, t: str) -> Any:
    assert route_host.wait_for(lambda u: any(r.headers.get(TEST_HEADER) == t for r in u.requests), 10)
    (got,) = [r for r in route_host.requests if r.headers.get(TEST_HEADER) == t]
    return got


def _credential(target: Protocol, headers: dict[str, str]) -> str | None:
    if target is A:
        return headers.get("x-api-key")
    auth = headers.get("authorization", "")
    return auth.removeprefix("Bearer ") if auth else None


@pytest.mark.parametrize("case", combos(), ids=lambda c: route_name(*c))
def test_route_host_gets_only_the_configured_credential(
    md: Mitmdump, route_host: Any, case: tuple[str, Protocol, Protocol, bool]
) -> None:
    auth, client, target, _normalize = case
    name = route_name(*case)
    t, resp = _send(md, client, f"{name}:text", planted.client_headers())
    assert resp.status_code == 200, resp.text
    got = _received(route_host, t)
    wire = got.path + "\n" + "\n".join(f"{k}: {v}" for k, v in got.headers.items())
    expected = ENV_KEY[target] if auth == "env" else planted.ANTHROPIC_KEY  # pass: the client's key
    assert _credential(target, got.headers) == expected
    leaked = planted.findings(wire, {**planted.WIRE_CREDENTIALS, **planted.OPERATOR_SECRETS})
    allowed = {"x-api-key"} if auth == "pass" else set()
    allowed |= {k for k, v in planted.OPERATOR_SECRETS.items() if v == expected}
    if auth == "pass" and client is not A and target is not A:
        allowed |= {"openai-organization", "openai-project"}  # they go with the client's own key
    assert set(leaked) == allowed, f"{name}: {wire}"
    # no other credential header at all, and the non-credential query parameter survives
    assert not {"cookie", "proxy-authorization", "api-key", "x-goog-api-key", "x-amz-security-token"} & set(
        got.headers
    )
    if client is target:
        assert got.path.endswith("?api-version=2024-06-01"), got.path
    else:
        assert "?" not in got.path


@pytest.mark.parametrize(("client", "target"), [(A, C), (C, A), (R, R)], ids=str)
def test_sigv4_credentials_stripped_on_pass_routes(
    md: Mitmdump, route_host: Any, client: Protocol, target: Protocol
) -> None:
    name = route_name("pass", client, target, False)
    headers = {
        k: v
        for k, v in planted.client_headers(sigv4=True).items()
        if k not in ("x-api-key", "api-key", "x-goog-api-key")
    }
    t, _resp = _send(md, client, f"{name}:text", headers)
    got = _received(route_host, t)
    wire = got.path + "\n" + "\n".join(f"{k}: {v}" for k, v in got.headers.items())
    leaked = planted.findings(wire, planted.WIRE_CREDENTIALS)
    if client is not A and target is not A:
        leaked = [k for k in leaked if k not in ("openai-organization", "openai-project")]
    assert leaked == [], wire
    assert "authorization" not in got.headers and "x-api-key" not in got.headers
    assert not [k for k in got.headers if k.startswith("x-amz-")]
