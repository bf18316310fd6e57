"""Redaction end to end: flows carrying planted secrets in every place a secret can be are exported
(the ``proxai.export`` command and ``python -m proxai export``); none of the secrets may be found in
the exported bytes - the .flow file, the HAR, the summary JSON - nor in any body read back and
decoded (a gzip body hides its plain text from a byte search)."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from mitmproxy import http
from mitmproxy.test import taddons, tflow

from proxai.core.model import Protocol
from proxai.mitm.commands import Visibility
from proxai.mitm.flowrows import read_flows, write_flows

from .flows import llm_flow, observed_meta
from .scenario_bodies import scenario_body

# Every secret is unique; the comment says where it is planted and which rule must catch it.
SECRETS = {
    "auth_header": "sk-proj-PLNTauthHeader0001",  # Authorization: Bearer (name + token)
    "x_api_key": "PLNTxApiKey0002",  # x-api-key (name only)
    "api_key_header": "PLNTazureKey0003",  # api-key (Azure; name only)
    "goog_key_header": "PLNTgoogKey0004",  # x-goog-api-key (name only)
    "proxy_auth": "PLNTproxyAuth0005",  # proxy-authorization: Basic ...
    "cookie": "PLNTcookie0006",  # Cookie: session=...
    "set_cookie": "PLNTsetCookie0007",  # Set-Cookie: sid=...
    "custom_token_header": "PLNTcustomTok0008",  # x-my-token (name rule)
    "stray_header_value": "sk-ant-api03-PLNTstray0009",  # x-debug: contains an Anthropic key
    "query_key": "AIzaSyPLNTqueryKey0010abcdefgh",  # ?key=...
    "query_api_key": "PLNTqueryApiKey0011",  # &api_key=...
    "body_api_key": "PLNTbodyApiKey0012",  # JSON body {"api_key": ...}
    "body_text_token": "sk-ant-api03-PLNTbodyText0013",  # a key pasted into a prompt
    "nested_secret": "PLNTnestedSecret0014",  # {"metadata": {"client_secret": ...}}
    "sse_text_token": "sk-PLNTsseText0015xyz",  # a key echoed in an SSE text delta (gzip body)
    "sse_json_secret": "PLNTsseJson0016",  # an SSE data JSON with {"access_token": ...}
    "trailer": "PLNTtrailer0017",  # trailer x-api-key
    "meta_url": "PLNTmetaUrl0018",  # metadata original_url ?api_key=
    "meta_nested": "PLNTmetaNested0019",  # metadata {"auth_token": ...}
    "meta_tail": "sk-ant-PLNTmetaTail0020",  # metadata bytes (a diagnostics tail)
    "comment": "sk-PLNTcomment0021abc",  # flow.comment
    "error_msg": "sk-ant-PLNTerror0022",  # flow.error.msg
    "form_secret": "PLNTformSecret0023",  # urlencoded client_secret=
    "ws_message": "sk-ant-PLNTws0024abc",  # a WebSocket message
    "userinfo": "PLNTuserinfo0025",  # https://user:PLNT...@host in metadata
    "bearer_in_body": "PLNTbearerBody0026zzzzzz",  # "Authorization: Bearer ..." pasted in JSON text
}
MARK = b"PLNT"


def planted_flows() -> list[http.HTTPFlow]:
    s = SECRETS
    # 1. A streamed Chat flow, gzip response, secrets everywhere.
    body = scenario_body(Protocol.OPENAI_CHAT, "text", True)
    sse = (
        body.data
        + (
            f'data: {{"choices":[{{"index":0,"delta":{{"content":"your key {s["sse_text_token"]}"}}}}]}}\n\n'
            f'data: {{"access_token":"{s["sse_json_secret"]}"}}\n\n'
        ).encode()
    )
    req = {
        "model": "gpt-4.1",
        "stream": True,
        "api_key": s["body_api_key"],
        "metadata": {"client_secret": s["nested_secret"]},
        "messages": [
            {"role": "user", "content": f"Paris weather? my key is {s['body_text_token']}"},
            {"role": "user", "content": f"curl -H 'Authorization: Bearer {s['bearer_in_body']}'"},
        ],
    }
    f = llm_flow(Protocol.OPENAI_CHAT, type(body)(200, "text/event-stream", b""), stream=True, request=req)
    f.request.path = f"/v1/chat/completions?key={s['query_key']}&api_key={s['query_api_key']}&alt=sse"
    h = f.request.headers
    h["authorization"] = f"Bearer {s['auth_header']}"
    h["x-api-key"] = s["x_api_key"]
    h["api-key"] = s["api_key_header"]
    h["x-goog-api-key"] = s["goog_key_header"]
    h["proxy-authorization"] = f"Basic {s['proxy_auth']}"
    h["cookie"] = f"session={s['cookie']}; theme=dark"
    h["x-my-token"] = s["custom_token_header"]
    h["x-debug"] = f"key={s['stray_header_value']}"
    f.request.trailers = http.Headers(x_api_key=s["trailer"])
    assert f.response is not None
    f.response.headers["set-cookie"] = f"sid={s['set_cookie']}; Path=/; HttpOnly"
    f.response.headers["content-encoding"] = "gzip"
    f.response.content = sse  # encoded with gzip by mitmproxy
    assert s["sse_text_token"].encode() not in f.response.raw_content  # hidden by gzip
    assert gzip.decompress(f.response.raw_content) == sse
    f.metadata["proxai"] = observed_meta(Protocol.OPENAI_CHAT, body)
    f.metadata["proxai"]["original_url"] = (
        f"https://user:{s['userinfo']}@api.openai.com/v1/chat/completions?api_key={s['meta_url']}"
    )
    f.metadata["proxai"]["extra"] = {"auth_token": s["meta_nested"], "tail": s["meta_tail"].encode()}
    f.comment = f"note {s['comment']}"
    # 2. A failed flow with a form body and an error message.
    g = tflow.tflow(err=True)
    g.request.method = "POST"
    g.request.headers["content-type"] = "application/x-www-form-urlencoded"
    g.request.content = f"grant_type=client_credentials&client_secret={s['form_secret']}".encode()
    assert g.error is not None
    g.error.msg = f"upstream said: invalid key {s['error_msg']}"
    # 3. A WebSocket flow.
    w = tflow.twebsocketflow()
    assert w.websocket is not None
    w.websocket.messages[0].content = f"hello {s['ws_message']}".encode()
    return [f, g, w]


def assert_clean(data: bytes, what: str) -> None:
    for where, secret in SECRETS.items():
        assert secret.encode() not in data, f"{where} secret found in {what}"
    assert MARK not in data, f"a planted secret fragment found in {what}"


def assert_bundle_clean(flow_path: Path, har_path: Path | None, summary_path: Path) -> None:
    assert_clean(flow_path.read_bytes(), "the .flow file")
    assert_clean(summary_path.read_bytes(), "the summary JSON")
    if har_path is not None:
        assert_clean(har_path.read_bytes(), "the HAR file")
        har = orjson.loads(har_path.read_bytes())
        assert len(har["log"]["entries"]) == 3
    flows = read_flows(str(flow_path))
    assert len(flows) == 3
    for f in flows:
        assert isinstance(f, http.HTTPFlow)
        for msg in (f.request, f.response):
            if msg is not None:
                assert_clean(msg.get_content(strict=False) or b"", f"a decoded body of {f.id}")
        assert_clean(repr(f.get_state()).encode(), f"the state of {f.id}")
    # Redaction keeps what a bug report needs.
    chat = flows[0]
    assert isinstance(chat, http.HTTPFlow) and chat.response is not None
    assert chat.response.headers["content-encoding"] == "gzip"
    content = chat.response.get_content() or b""
    assert b"chatcmpl-FakeUpstream00000001" in content and b" sunny" in content
    assert chat.request.headers["authorization"] == "[REDACTED]"
    assert chat.request.headers["cookie"] == "session=[REDACTED]; theme=[REDACTED]"
    assert chat.request.query["alt"] == "sse"
    assert chat.metadata["proxai"]["outcome"] == "completed"
    summary = orjson.loads(summary_path.read_bytes())
    assert summary["totals"]["flows"] == 1  # the one LLM flow
    assert summary["flows"][0]["outcome"] == "completed"
    assert summary["export"]["flows"] == 3


def test_planted_flows_really_carry_the_secrets(tmp_path: Path) -> None:
    """Guard against a vacuous test: unredacted, every secret is findable."""
    path = tmp_path / "raw.flow"
    flows = planted_flows()
    write_flows(str(path), flows)
    everything = path.read_bytes() + b"".join(
        (m.get_content(strict=False) or b"")
        for f in flows
        if isinstance(f, http.HTTPFlow)
        for m in (f.request, f.response)
        if m is not None
    )
    for where, secret in SECRETS.items():
        assert secret.encode() in everything, where


def test_export_command(tmp_path: Path) -> None:
    vis = Visibility()
    flows = planted_flows()
    before = [f.get_state() for f in flows]
    with taddons.context(vis) as tctx:
        tctx.configure(vis, proxai_export_har=True)
        said = tctx.master.commands.call("proxai.export", flows, str(tmp_path / "bug.flow"))
    # returned, so mitmweb's command bar shows it (mitmweb's event log does not show ALERT)
    assert said == (
        f"proxai.export: {len(flows)} flow(s) redacted and written to {tmp_path / 'bug.flow'}, "
        f"{tmp_path / 'bug.summary.json'}, {tmp_path / 'bug.har'}"
    )
    assert [f.get_state() for f in flows] == before  # the originals are untouched
    assert_bundle_clean(tmp_path / "bug.flow", tmp_path / "bug.har", tmp_path / "bug.summary.json")


def test_export_cli(tmp_path: Path) -> None:
    src = tmp_path / "in.flow"
    write_flows(str(src), planted_flows())
    out = tmp_path / "out.flow"
    proc = subprocess.run(
        [sys.executable, "-m", "proxai", "export", str(src), str(out), "--har"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    summary, har = tmp_path / "out.summary.json", tmp_path / "out.har"
    assert proc.stdout == f"proxai export: 3 flow(s) redacted -> {out}, {summary}, {har}\n"
    assert_bundle_clean(out, tmp_path / "out.har", tmp_path / "out.summary.json")


def test_export_truncates_long_bodies(tmp_path: Path) -> None:
    vis = Visibility()
    flows = planted_flows()[:1]
    with taddons.context(vis) as tctx:
        tctx.configure(vis, proxai_export_max_body=100)
        tctx.master.commands.call("proxai.export", flows, str(tmp_path / "cut"))
    (f,) = read_flows(str(tmp_path / "cut.flow"))
    assert isinstance(f, http.HTTPFlow) and f.response is not None
    body = f.response.get_content() or b""
    assert body.endswith(b" bytes truncated by proxai export]\n")
    assert len(body.split(b"\n[...")[0]) == 100
    assert f.metadata["proxai_export"] == {"truncated_bodies": 2, "max_body": 100}
    assert_clean(body, "a truncated body")
    assert not (tmp_path / "cut.har").exists()


def test_negative_max_body_is_rejected() -> None:
    from mitmproxy import exceptions

    vis = Visibility()
    with taddons.context(vis) as tctx, pytest.raises(exceptions.OptionsError):
        tctx.configure(vis, proxai_export_max_body=-1)
