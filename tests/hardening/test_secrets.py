"""Secrets never leak: planted API keys, auth headers, cookies and query/body keys go through a
real mitmdump at debug verbosity, and none of them appears in the log, in ``flow.metadata`` or
the flow comment, in the diagnostics files, or in an export.

``--flow-detail 0``: mitmproxy prints request headers itself from flow-detail 2 on, by its own
design; what is tested here is what ProxAI writes. The routes file path is covered too: a
route whose upstream key comes from an environment variable (the file can only name it).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from proxai.core.errors import ConfigError
from proxai.translate.routes import parse_routes
from tests.e2e.harness import PATHS, TEST_HEADER, Mitmdump, start_mitmdump, tag

from .logcheck import assert_clean_log

pytestmark = pytest.mark.e2e

ENV_KEY = "PROXAI_HARDENING_UPSTREAM_KEY"
SECRETS = {
    "authorization": "sk-hardening-authz-5f1c9e0a7b3d4c2e8f6a1b0c9d8e7f6a",
    "x_api_key": "sk-ant-hardening-xapikey-0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d",
    "azure_api_key": "0123456789abcdefHARDENINGazurekey",
    "cookie": "HARDENINGcookievalue0123456789",
    "query_key": "HARDENINGquerykey0123456789abcdef",
    "query_token": "HARDENINGaccesstoken0123456789ab",
    "body_api_key": "HARDENINGbodyapikey0123456789abcd",
    "body_secret": "HARDENINGclientsecret0123456789ab",
    "routed_env_key": "sk-ant-hardening-routed-9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c",
}


@pytest.fixture(scope="module")
def secret_mitm(fake: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    work = tmp_path_factory.mktemp("hard-secrets")
    routes = work / "routes.toml"
    routes.write_text(
        "[[route]]\n"
        'match = { path = "/routed/v1/chat/completions" }\n'
        f'upstream = "{fake.url}"\n'
        'protocol = "anthropic_messages"\n'
        f'auth = {{ env = "{ENV_KEY}" }}\n'
    )
    old = os.environ.get(ENV_KEY)
    os.environ[ENV_KEY] = SECRETS["routed_env_key"]
    try:
        md = start_mitmdump(
            fake.url,
            workdir=work,
            options={
                "termlog_verbosity": "debug",
                "flow_detail": "0",
                "proxai_routes": str(routes),
                "proxai_tool_stall": "0.5",
            },
        )
    finally:
        if old is None:
            os.environ.pop(ENV_KEY, None)
        else:
            os.environ[ENV_KEY] = old
    try:
        yield md
    finally:
        md.stop()


def planted_request(protocol: str, scenario: str, t: str, path: str | None = None) -> dict[str, Any]:
    return {
        "url": (path or PATHS[protocol])
        + f"?key={SECRETS['query_key']}&access_token={SECRETS['query_token']}",
        "headers": {
            "authorization": f"Bearer {SECRETS['authorization']}",
            "x-api-key": SECRETS["x_api_key"],
            "api-key": SECRETS["azure_api_key"],
            "cookie": f"session={SECRETS['cookie']}; theme=dark",
            "x-proxai-scenario": scenario,
            "x-proxai-stall": "5",
            TEST_HEADER: t,
        },
        "json": {
            "model": "m",
            "stream": True,
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
            "input": "hi",
            "api_key": SECRETS["body_api_key"],
            "metadata": {"client_secret": SECRETS["body_secret"]},
        },
    }


def leaks(text: str | bytes) -> list[str]:
    blob = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return [name for name, value in SECRETS.items() if value in blob]


def test_planted_secrets_never_leak(secret_mitm: Mitmdump, tmp_path: Path) -> None:
    md = secret_mitm
    t = tag()
    cases = [
        (p, s)
        for p in PATHS
        for s in (
            "text",
            "parallel_tools",
            "tool_stall",
            "error_midstream",
            "rate_limit",
            "html_500",
            "malformed_json",
        )
    ]
    with md.http_client() as c:
        for protocol, scenario in cases:
            req = planted_request(protocol, scenario, t)
            with contextlib.suppress(httpx.HTTPError):
                c.post(md.url + req["url"], headers=req["headers"], json=req["json"])
        # A routed, translated flow: the upstream key is injected from the environment.
        req = planted_request("openai_chat", "text", t, path="/routed/v1/chat/completions")
        routed = c.post(md.url + req["url"], headers=req["headers"], json=req["json"])
    flows = md.wait_flows(t, len(cases) + 1)
    assert routed.status_code == 200, routed.text[:500]
    # The planted secrets really reached ProxAI (else the test proves nothing).
    assert any(f.request.headers.get("x-api-key") == SECRETS["x_api_key"] for f in flows)
    routed_flow = next(
        f for f in flows if "routed" in str(f.metadata.get("proxai", {}).get("original_url", ""))
    )
    assert routed_flow.request.headers.get("x-api-key") == SECRETS["routed_env_key"]

    for f in flows:
        assert "proxai" in f.metadata
        assert not leaks(orjson.dumps(f.metadata, default=repr)), f.metadata
        assert not leaks(f.comment or "")
    outcomes = {f.metadata["proxai"]["outcome"] for f in flows}
    assert {"completed", "error", "unfinished_tool"} <= outcomes

    diagnostics = list(md.diagnostics_dir.rglob("*"))
    assert any(p.is_file() for p in diagnostics), "the tool_stall flows wrote no diagnostics file"
    for p in diagnostics:
        if p.is_file():
            assert not leaks(p.read_bytes()), f"{p.name} leaks {leaks(p.read_bytes())}"

    assert_clean_log(md)
    log = md.log_path.read_bytes()
    assert b"] proxai: " in log  # our own lines are there (the guard logged the tool stalls)
    assert not leaks(log), f"mitmdump's log leaks {leaks(log)}"

    out = tmp_path / "bundle.flow"
    subprocess.run(
        [sys.executable, "-m", "proxai", "export", str(md.flow_path), str(out), "--har"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    exported = [p for p in tmp_path.iterdir() if p.name.startswith("bundle")]
    assert len(exported) >= 3
    for p in exported:
        assert not leaks(p.read_bytes()), f"{p.name} leaks {leaks(p.read_bytes())}"


@pytest.mark.parametrize(
    "auth",
    [
        '"sk-ant-literal-key-0123456789"',
        '{ key = "sk-literal" }',
        '{ env = "OK_VAR", value = "sk-literal" }',
        '"Bearer sk-literal"',
    ],
)
def test_routes_file_rejects_literal_keys(auth: str) -> None:
    src = '[[route]]\nmatch = { path = "/v1/messages" }\nupstream = "http://127.0.0.1:9/v1"\n'
    src += f'protocol = "openai_chat"\nauth = {auth}\n'
    with pytest.raises(ConfigError) as exc:
        parse_routes(src, "routes.toml")
    assert "sk-literal" not in str(exc.value) and "sk-ant-literal" not in str(exc.value)


@pytest.mark.parametrize(
    "extra",
    [
        'api_key = "sk-literal-0123456789"',
        'headers = { authorization = "Bearer sk-literal-0123456789" }',
    ],
)
def test_routes_file_rejects_keys_elsewhere(extra: str) -> None:
    src = '[[route]]\nmatch = { path = "/v1/messages" }\nupstream = "http://127.0.0.1:9/v1"\n'
    src += f'protocol = "openai_chat"\nauth = "pass"\n{extra}\n'
    with pytest.raises(ConfigError) as exc:
        parse_routes(src, "routes.toml")
    assert "sk-literal" not in str(exc.value)


def test_routes_upstream_url_cannot_carry_credentials() -> None:
    src = '[[route]]\nmatch = { path = "/v1/messages" }\nupstream = "http://user:sk-literal@127.0.0.1:9/v1"\n'
    src += 'protocol = "openai_chat"\nauth = "pass"\n'
    with pytest.raises(ConfigError) as exc:
        parse_routes(src, "routes.toml")
    assert "sk-literal" not in str(exc.value)
