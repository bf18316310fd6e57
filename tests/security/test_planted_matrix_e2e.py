"""The planted-secret matrix: secrets in every location x every ProxAI output x every mode.

A real mitmdump in reverse and in regular mode (HTTPS through CONNECT), the routes file of
``tests/security/routes.py`` (every pair, env and pass auth, normalize), a fake upstream as the
origin and another as the route's host, both recording what they receive. Every request carries
every kind of client secret (every provider's key header, AWS SigV4 token, cookie, proxy
credentials, organization and project, credential query parameters, an ``accesstoken`` body field,
``metadata.user_id``) and, in its prompt, one planted value per secret shape of the rule set
(``tests/security/shapes.py``); routes use the operator's keys from the environment; the upstream echoes the
key it received: in an error message and a response header (``auth_echo``), split into 5-character
text deltas (``key_echo``), in a translated stream's error event (``auth_error_midstream``). Modes:
observe-only, translated (env and pass routes), normalize, guard injection (with its diagnostics
file), truncation.

Outputs searched for every planted secret (raw and URL-quoted): ``flow.metadata`` and the comment of
every flow, the diagnostics files, mitmdump's log (debug verbosity), ``python -m proxai report``
(table and JSON), ``python -m proxai export --har`` (flow file, summary, HAR, its own output), the
ProxAI contentview of every request and response. Also: no operator key in anything a client
received, and no client credential at an env route's host. Expected: zero findings.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from mitmproxy import http
from mitmproxy.contentviews import Metadata

from proxai.core.model import Protocol
from proxai.mitm.contentview import view
from tests.e2e.harness import PATHS, TEST_HEADER, Mitmdump, running_mitmdump, tag
from tests.security import planted
from tests.security.routes import ENV, A, C, R, request_body, routes_toml


@dataclass(frozen=True)
class Case:
    name: str
    client: Protocol
    model: str
    stream: bool
    headers: str = "all"  # "all": every client secret; "azure": only api-key header + ?api-key=
    extra: tuple[tuple[str, str], ...] = ()
    routed_env: bool = False  # an env route: the client must never see an operator key


CASES = [
    *(Case(f"observe key_echo {p}", p, "key_echo", True) for p in (A, C, R)),
    *(Case(f"observe auth_echo {p}", p, "auth_echo", False) for p in (A, C, R)),
    Case("observe auth_echo azure-only", C, "auth_echo", False, headers="azure"),
    Case("observe key_echo azure-only", R, "key_echo", True, headers="azure"),
    *(
        Case(f"env route {r} {s}{' streamed' if st else ''}", c, f"{r}:{s}", st, routed_env=True)
        for r, c in (("env-c2a", C), ("env-a2r", A), ("env-r2c", R), ("env-c2c-norm", C), ("env-a2a", A))
        for s, st in (("auth_echo", False), ("auth_echo", True), ("auth_error_midstream", True))
    ),
    Case("pass route a2c key_echo", A, "pass-a2c:key_echo", True),
    Case("pass route c2r auth_echo", C, "pass-c2r:auth_echo", False),
    Case(
        "guard injection tool_stall",
        A,
        "tool_stall",
        True,
        extra=(("x-proxai-stall", "3"), ("x-proxai-time-scale", "0.01")),
    ),
    Case("truncated", C, "truncated", True, extra=(("x-proxai-time-scale", "0"),)),
    # the guard beside the streamed scrub of a byte-for-byte env route
    Case(
        "env route env-a2a guard injection tool_stall",
        A,
        "env-a2a:tool_stall",
        True,
        extra=(("x-proxai-stall", "3"), ("x-proxai-time-scale", "0.01")),
        routed_env=True,
    ),
]


assert len({c.name for c in CASES}) == len(CASES)  # a finding names its case


def _headers(case: Case) -> dict[str, str]:
    if case.headers == "azure":
        return {"api-key": planted.AZURE_KEY}
    return planted.client_headers()


def _query(case: Case) -> str:
    return (
        f"api-version=2024-06-01&api-key={planted.QUERY_API_KEY}"
        if case.headers == "azure"
        else planted.QUERY
    )


@pytest.fixture(scope="module")
def origin_plain() -> Iterator[Any]:
    from proxai.upstream import FakeUpstream

    with FakeUpstream(time_scale=0.01) as up:
        yield up


@pytest.fixture(scope="module")
def origin_tls() -> Iterator[Any]:
    from proxai.upstream import FakeUpstream

    with FakeUpstream(tls=True, time_scale=0.01) as up:
        yield up


def _send(md: Mitmdump, case: Case) -> tuple[str, bytes]:
    """Send one case; returns its tag and everything the client received (headers and body)."""
    t = tag()
    body = request_body(
        case.client,
        case.model,
        stream=case.stream,
        prompt=f"hi\n{planted.SHAPE_TEXT}",
        metadata={"user_id": planted.USER_ID},
        accesstoken=planted.BODY_ACCESSTOKEN,
    )
    headers = {**_headers(case), **dict(case.extra), TEST_HEADER: t, "content-type": "application/json"}
    url = md.base_url(PATHS[case.client]) + "?" + _query(case)
    with md.http_client() as client:
        try:
            with client.stream("POST", url, json=body, headers=headers) as resp:
                got = b"".join(f"{k}: {v}\n".encode() for k, v in resp.headers.items())
                got += resp.read()
        except httpx.HTTPError as exc:  # a guarded stream may end with the connection
            got = str(exc).encode()
    return t, got


def _run(args: list[str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "proxai", *args], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


def _contentviews(f: http.HTTPFlow) -> str:
    out = []
    for msg in (f.request, f.response):
        if msg is None:
            continue
        data = msg.get_content(strict=False) or b""
        meta = Metadata(flow=f, http_message=msg, content_type=msg.headers.get("content-type"))
        if view.render_priority(data, meta) > 0:
            out.append(view.prettify(data, meta))
    return "\n".join(out)


@pytest.mark.parametrize("mode", ["reverse", "regular"])
def test_no_planted_secret_in_any_output(
    mode: str, route_host: Any, origin_plain: Any, origin_tls: Any, tmp_path: Path
) -> None:
    origin = origin_plain if mode == "reverse" else origin_tls
    routes = tmp_path / "routes.toml"
    routes.write_text(routes_toml(route_host.url))
    options = {
        "proxai_routes": str(routes),
        "proxai_tool_stall": "0.5",
        "termlog_verbosity": "debug",
    }
    findings: dict[str, list[str]] = {}
    with running_mitmdump(origin.url, mode=mode, workdir=tmp_path / "md", options=options, env=ENV) as md:
        tags: dict[str, Case] = {}
        for case in CASES:
            t, received = _send(md, case)
            tags[t] = case
            if case.routed_env:
                findings[f"{case.name}: client received"] = planted.findings(
                    received, planted.OPERATOR_SECRETS
                )
        flows = {t: md.wait_flow(t) for t in tags}
        for t, case in tags.items():
            f = flows[t]
            text = repr(f.metadata) + "\n" + f.comment
            findings[f"{case.name}: metadata + comment"] = planted.findings(text)
            findings[f"{case.name}: contentview"] = planted.findings(_contentviews(f))
            if case.routed_env:
                (got,) = [r for r in route_host.requests if r.headers.get(TEST_HEADER) == t]
                wire = got.path + "\n" + "\n".join(f"{k}: {v}" for k, v in got.headers.items())
                findings[f"{case.name}: route host received"] = planted.findings(
                    wire, planted.WIRE_CREDENTIALS
                )
        guarded = [flows[t] for t, c in tags.items() if "guard injection" in c.name]
        assert len(guarded) == 2
        for guard in guarded:
            assert guard.metadata["proxai"]["extra"]["guard"]["injected"] is True
        diag_files = list(md.diagnostics_dir.glob("*.json"))
        assert diag_files, "the guard injection wrote no diagnostics file"
        for p in diag_files:
            findings[f"diagnostics {p.name}"] = planted.findings(p.read_bytes())
        md.stop()
        findings["mitmdump log"] = planted.findings(md.log_path.read_bytes())
        flow_file = md.flow_path
        findings["report"] = planted.findings(_run(["report", str(flow_file)]))
        findings["report --json"] = planted.findings(_run(["report", str(flow_file), "--json"]))
        out = tmp_path / "bundle" / "bug.flow"
        findings["export output"] = planted.findings(_run(["export", str(flow_file), str(out), "--har"]))
        for name in ("bug.flow", "bug.summary.json", "bug.har"):
            findings[f"export {name}"] = planted.findings((out.parent / name).read_bytes())
    # the planted secrets did travel: mitmproxy's own capture holds them (the user's responsibility)
    assert planted.findings(flow_file.read_bytes())
    assert {k: v for k, v in findings.items() if v} == {}
    # every output of every case was searched: metadata + comment and contentview per case, what the
    # client received and what the route host got per env case, each diagnostics file, the log, the
    # report twice and the export's output and three files
    routed = sum(c.routed_env for c in CASES)
    assert len(findings) == 2 * len(CASES) + 2 * routed + len(diag_files) + 7


@pytest.fixture(scope="module")
def phoenix() -> Iterator[Any]:
    from tests.e2e.phoenix import running_phoenix

    with running_phoenix() as phx:
        yield phx


# Phoenix starts (a whole server) and its spans are read back: the OTLP end-to-end tests' budget,
# not the default 120 s (a busy runner takes longer than that to start it)
@pytest.mark.timeout(600)
def test_no_planted_secret_in_telemetry(
    route_host: Any, origin_plain: Any, phoenix: Any, tmp_path: Path
) -> None:
    """The same cases with the OTLP export on, content included (``proxai_otlp_content``), to a real
    receiver (Arize Phoenix): no planted secret in any span read back, and one span per flow."""
    routes = tmp_path / "routes.toml"
    routes.write_text(routes_toml(route_host.url))
    project = f"proxai-planted-{tag()}"
    options = {
        "proxai_routes": str(routes),
        "proxai_tool_stall": "0.5",
        "proxai_otlp": phoenix.url,
        "proxai_otlp_headers": f"x-project-name={project}",
        "proxai_otlp_content": "true",
    }
    with running_mitmdump(
        origin_plain.url, mode="reverse", workdir=tmp_path / "md", options=options, env=ENV
    ) as md:
        tags = {}
        for case in CASES:
            t, _received = _send(md, case)
            tags[t] = case
        flows = {t: md.wait_flow(t) for t in tags}
        spans = phoenix.wait_spans(project, len(CASES))
    by_flow = {s["attributes"]["proxai.flow_id"]: s for s in spans}
    assert set(by_flow) == {f.id for f in flows.values()}  # one span per flow, no more
    findings = {
        case.name: planted.findings(orjson.dumps(by_flow[flows[t].id]).decode()) for t, case in tags.items()
    }
    assert {k: v for k, v in findings.items() if v} == {}
    # the content was exported (the search had something to search)
    assert all("gen_ai.input.messages" in s["attributes"] for s in spans)
