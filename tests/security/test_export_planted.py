"""``python -m proxai export`` (flow, summary and HAR) with a planted secret in every place a flow
can hold one (every secret shape of the rule set too): zero findings, and a body that cannot be
decoded is left out with a note (never copied raw), and ``--har`` does not crash on it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
from mitmproxy import http, io
from mitmproxy.test import tflow, tutils

from tests.security import planted
from tests.security.shapes import PLANTED_SHAPES


def _sse(events: list[dict[str, object]]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)


def _split(secret: str, size: int = 5) -> list[str]:
    return [secret[i : i + size] for i in range(0, len(secret), size)]


def planted_flows() -> list[http.HTTPFlow]:
    """Flows that carry every planted secret: headers, query, bodies, echoes, metadata, comment."""
    out = []
    # 1. a Chat request with every credential, its reply an error quoting the Azure key (no prefix)
    req = tutils.treq(
        method=b"POST",
        path=f"/v1/chat/completions?{planted.QUERY}".encode(),
        content=orjson.dumps(
            {
                "model": "m",
                "messages": [{"role": "user", "content": "hi"}],
                "accesstoken": planted.BODY_ACCESSTOKEN,
                "metadata": {"user_id": planted.USER_ID},
            }
        ),
    )
    req.headers.clear()
    for k, v in planted.client_headers().items():
        req.headers[k] = v
    req.headers["content-type"] = "application/json"
    err = f"Incorrect API key provided: {planted.AZURE_KEY}. Cookie {planted.COOKIE_VALUE}; org {planted.ORG}"
    resp = tutils.tresp(
        status_code=401,
        content=orjson.dumps({"error": {"message": err, "type": "invalid_request_error"}}),
    )
    resp.headers.clear()
    resp.headers["content-type"] = "application/json"
    resp.headers["x-echo-key"] = planted.AZURE_KEY
    resp.headers["set-cookie"] = f"session={planted.COOKIE_VALUE}; Path=/"
    f = tflow.tflow(req=req, resp=resp)
    f.metadata["proxai"] = {
        "schema": 1,
        "protocol": "openai_chat",
        "outcome": "error",
        "original_url": f"https://api.example.com/v1/chat/completions?{planted.QUERY}",
        "error": {"kind": "authentication", "message": err},
        "route": {"target_url": f"https://h.example/v1/{planted.OPENAI_KEY}/chat/completions"},
    }
    f.comment = f"error: {err}"
    out.append(f)
    # 2. an Anthropic stream whose text deltas split the client's key, and the x-goog key in a tool call
    deltas = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
        for t in ["Your key is ", *_split(planted.ANTHROPIC_KEY), " and ", *_split(planted.AZURE_KEY), "."]
    ]
    body = _sse(
        [
            {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {"input_tokens": 1}}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            *deltas,
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
            {"type": "message_stop"},
        ]
    )
    req2 = tutils.treq(method=b"POST", path=b"/v1/messages", content=b'{"model":"m","max_tokens":5}')
    req2.headers["x-api-key"] = planted.ANTHROPIC_KEY
    req2.headers["authorization"] = f"Basic {planted.BASIC}"
    req2.headers["x-goog-api-key"] = planted.GOOGLE_KEY
    resp2 = tutils.tresp(content=body)
    resp2.headers["content-type"] = "text/event-stream"
    f2 = tflow.tflow(req=req2, resp=resp2)
    f2.metadata["proxai"] = {"schema": 1, "protocol": "anthropic_messages", "outcome": "completed"}
    out.append(f2)
    # 3. a body that cannot be decoded (gzip that is not gzip), holding the SigV4 signature
    req3 = tutils.treq(method=b"POST", path=b"/v1/responses", content=b"")
    req3.headers["authorization"] = planted.client_headers(sigv4=True)["authorization"]
    req3.headers["x-amz-security-token"] = planted.AWS_SESSION_TOKEN
    req3.raw_content = b"not gzip " + planted.AWS_SIGNATURE.encode() + b" " + planted.JWT.encode()
    req3.headers["content-encoding"] = "gzip"
    resp3 = tutils.tresp(content=b"")
    resp3.headers["content-encoding"] = "br"
    resp3.raw_content = b"\x00\x01 not brotli " + planted.QUERY_TOKEN.encode()
    f3 = tflow.tflow(req=req3, resp=resp3)
    out.append(f3)
    # 4. every secret shape: in a header no name rule knows, the prompt, the reply's deltas (split),
    # an error message in the metadata and the comment
    req4 = tutils.treq(
        method=b"POST",
        path=b"/v1/messages",
        content=orjson.dumps({"model": "m", "messages": [{"role": "user", "content": planted.SHAPE_TEXT}]}),
    )
    req4.headers["content-type"] = "application/json"
    for n, (text, _secret) in enumerate(PLANTED_SHAPES.values()):
        req4.headers[f"x-note-{n}"] = text
    deltas4 = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
        for t in _split(planted.SHAPE_TEXT)
    ]
    resp4 = tutils.tresp(content=_sse(deltas4))
    resp4.headers["content-type"] = "text/event-stream"
    f4 = tflow.tflow(req=req4, resp=resp4)
    f4.metadata["proxai"] = {"schema": 1, "protocol": "anthropic_messages", "outcome": "error"}
    f4.metadata["proxai"]["error"] = {"kind": "upstream", "message": planted.SHAPE_TEXT}
    f4.comment = planted.SHAPE_TEXT
    out.append(f4)
    return out


def test_export_bundle_has_no_planted_secret(tmp_path: Path) -> None:
    src = tmp_path / "in.flow"
    with open(src, "wb") as fh:
        w = io.FlowWriter(fh)  # type: ignore[no-untyped-call]
        for f in planted_flows():
            w.add(f)
    assert planted.findings(src.read_bytes())  # the input does hold them
    proc = subprocess.run(
        [sys.executable, "-m", "proxai", "export", str(src), str(tmp_path / "out.flow"), "--har"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert planted.findings(proc.stdout + proc.stderr) == []
    for name in ("out.flow", "out.summary.json", "out.har"):
        data = (tmp_path / name).read_bytes()
        assert planted.findings(data) == [], name
    # the undecodable bodies are left out with a note; the readable parts of the flows survive
    with open(tmp_path / "out.flow", "rb") as fh:
        flows = list(io.FlowReader(fh).stream())
    note = flows[2].metadata["proxai_export"]["omitted_bodies"]
    assert set(note) == {"request", "response"} and "could not be decoded" in note["request"]
    assert flows[2].request.raw_content == b"" and flows[2].response.raw_content == b""
    assert "api-version=2024-06-01" in flows[0].request.path
    assert json.loads(flows[0].response.content or b"")["error"]["type"] == "invalid_request_error"
    text = "".join(
        json.loads(line[6:])["delta"]["text"]
        for line in (flows[1].response.content or b"").decode().splitlines()
        if '"text_delta"' in line
    )
    assert text == "Your key is [REDACTED] and [REDACTED]."
    har = json.loads((tmp_path / "out.har").read_text())
    assert len(har["log"]["entries"]) == 4
    # every shape's context stays, only its secret went (the prompt of flow 4)
    prompt = json.loads(flows[3].request.content or b"")["messages"][0]["content"]
    assert prompt == " \n".join(t.replace(s, "[REDACTED]") for t, s in PLANTED_SHAPES.values())
