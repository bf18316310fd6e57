"""The streamed scrub in the addon (``mitm/routing.py: client_stream``) under ``taddons``: on a route
that injects an env key and passes the stream on byte for byte, the key is scrubbed from the reply's
headers and bytes, at every chunking, under the body keeper (which keeps what the client got) and
beside the guard; every other flow has no wrapper and gets the upstream bytes."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import http
from mitmproxy.test import taddons, tflow, tutils

from proxai.mitm.addon import ProxAI
from proxai.mitm.carrier import Carrier
from proxai.mitm.faults import FaultedStream
from proxai.pipeline.keep import KeepingStream
from proxai.pipeline.scrub import ScrubbingStream
from proxai.safety.redact import REDACTED_B

KEY = "sk-ant-api03-OperatorKeyFromTheEnv0042"
VAR = "PROXAI_TEST_SCRUB_KEY"
ROUTES = f"""
[[route]]
name = "same-protocol"
match = {{ path = "/v1/messages", model = "routed" }}
upstream = "https://api.anthropic.com"
protocol = "anthropic_messages"
auth = {{ env = "{VAR}" }}
"""


def _event(name: str, data: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


START = _event(
    "message_start",
    {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "routed",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    },
)
WIRE = (
    START
    + _event(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    + _event(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    )
    + _event(
        "error",
        {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key: {KEY}"}},
    )
)


@pytest.fixture
def tctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(VAR, KEY)
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    a = ProxAI()
    with taddons.context(a) as ctx:  # type: ignore[no-untyped-call]
        ctx.configure(a, proxai_diagnostics_dir=str(tmp_path / "diag"), proxai_routes=str(routes))
        ctx.addon = a
        yield ctx


def _flow(model: str) -> http.HTTPFlow:
    body = {"model": model, "max_tokens": 16, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    req = tutils.treq(method=b"POST", path=b"/v1/messages", content=orjson.dumps(body))
    req.headers["content-type"] = "application/json"
    req.headers["x-api-key"] = "sk-ant-client-own-key-0001"
    req.headers["accept-encoding"] = "gzip, br"
    return tflow.tflow(req=req)


def _reply(f: http.HTTPFlow, *headers: tuple[bytes, bytes]) -> None:
    fields = [(b"content-type", b"text/event-stream"), *headers]
    f.response = tutils.tresp(status_code=200, headers=http.Headers(fields), content=None)


def _drive(a: ProxAI, f: http.HTTPFlow, wire: bytes, size: int) -> bytes:
    """After ``responseheaders``: the upstream's chunks through the installed stream, then the end."""
    assert f.response is not None
    stream = f.response.stream
    assert callable(stream)
    got = b""
    for i in range(0, len(wire), size):
        out = stream(wire[i : i + size])
        assert out != b""  # never the end mid-stream
        got += out if isinstance(out, bytes) else b"".join(out)
    out = stream(b"")
    got += out if isinstance(out, bytes) else b"".join(out)
    a.response(f)
    return got


@pytest.mark.parametrize("size", [1, 2, 5, 7, 13, 64, 10_000])
def test_env_route_stream_is_scrubbed_under_the_keeper_and_beside_the_guard(tctx: Any, size: int) -> None:
    a: ProxAI = tctx.addon
    f = _flow("routed")
    a.request(f)
    assert f.request.headers["x-api-key"] == KEY  # the route's credential went upstream
    assert f.request.headers["accept-encoding"] == "identity"  # asked for bytes that can be scrubbed
    _reply(f, (b"x-proxai-received-key", KEY.encode()))
    a.responseheaders(f)
    assert f.response is not None
    stream = f.response.stream
    # the keeper over the scrub over the carrier, whose guard hooks still run
    assert isinstance(stream, KeepingStream) and isinstance(stream.inner, ScrubbingStream)
    carrier = stream.inner.inner
    assert isinstance(carrier, Carrier) and carrier.on_chunk
    assert f.response.headers["x-proxai-received-key"] == REDACTED_B.decode()
    got = _drive(a, f, WIRE, size)
    assert got == WIRE.replace(KEY.encode(), REDACTED_B)
    assert f.response.raw_content == got  # kept: what the client got
    meta = f.metadata["proxai"]
    assert meta["carrier"]["client_bytes"] == len(got) < meta["carrier"]["upstream_bytes"] == len(WIRE)
    assert meta["outcome"] == "error" and meta["error"]["kind"] == "authentication"
    assert KEY not in repr(meta) + f.comment


def test_env_route_compressed_stream_is_decoded_scrubbed_and_sent_plain(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    f = _flow("routed")
    a.request(f)
    _reply(f, (b"content-encoding", b"gzip"))
    a.responseheaders(f)
    got = _drive(a, f, gzip.compress(WIRE), 9)
    assert got == WIRE.replace(KEY.encode(), REDACTED_B)
    assert f.response is not None and "content-encoding" not in f.response.headers
    assert f.metadata["proxai"]["carrier"]["client_bytes"] == len(got)


@pytest.mark.parametrize("size", [1, 7, 10_000])
def test_a_flow_without_env_key_has_no_wrapper_and_gets_the_upstream_bytes(tctx: Any, size: int) -> None:
    a: ProxAI = tctx.addon
    f = _flow("not-routed")  # observe-only: no route matches
    a.request(f)
    _reply(f, (b"x-proxai-received-key", KEY.encode()))
    a.responseheaders(f)
    assert f.response is not None
    stream = f.response.stream
    carrier = getattr(stream, "__self__", None)  # the carrier's own ``feed``, which keeps
    assert isinstance(carrier, Carrier) and stream == carrier.feed and carrier.kept is not None
    assert f.response.headers["x-proxai-received-key"] == KEY  # not ours to change
    got = _drive(a, f, WIRE, size)
    assert got == WIRE  # exactly the upstream bytes
    assert f.response.raw_content == WIRE
    assert f.metadata["proxai"]["carrier"]["client_bytes"] == len(WIRE)


def test_a_fault_goes_under_the_scrub_on_an_env_route(tctx: Any) -> None:
    """The fault stage sits right over the carrier, under the scrub and the keeper: the client's
    bytes are the faulted stream's, scrubbed, and the keeper keeps them."""
    a: ProxAI = tctx.addon
    tctx.configure(a, proxai_faults="truncate after_events=3")
    quoted = _event(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"key {KEY}"}},
    )
    start_block = _event(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    wire = START + start_block + quoted + WIRE[len(START) :]
    f = _flow("routed")
    a.request(f)  # the fault rules' part too
    _reply(f)
    a.responseheaders(f)
    assert f.response is not None
    stream = f.response.stream
    assert isinstance(stream, KeepingStream) and isinstance(stream.inner, ScrubbingStream)
    assert isinstance(stream.inner.inner, FaultedStream) and stream.inner.inner.carrier is a.flows[f].carrier
    got = _drive(a, f, wire, 11)
    assert got == (START + start_block + quoted).replace(KEY.encode(), REDACTED_B)
    assert f.response.raw_content == got
    meta = f.metadata["proxai"]
    assert meta["extra"]["fault"]["injected"] is True and KEY not in repr(meta)
