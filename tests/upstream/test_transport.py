"""Transport behaviour of the fake upstream: disconnects, HTTP/2 streams, encodings, limits, CLI."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator

import brotli  # type: ignore[import-untyped]
import h2.config
import h2.connection
import h2.events
import httpx
import pytest
import zstandard

from proxai.upstream import SCENARIOS, FakeUpstream, list_scenarios
from proxai.upstream.ops import Op, Params, Start
from proxai.upstream.scenarios import Scenario

from .test_wire import PATHS, PLAIN, post, request_body, verify
from .validators import check_anthropic, check_chat, check_responses, scan


def _read_until(r: httpx.Response, marker: bytes) -> bytes:
    seen = b""
    for chunk in r.iter_raw():
        seen += chunk
        if marker in seen:
            break
    return seen


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2"])
def test_client_disconnect_mid_stall_counts_closed_early(http2: bool) -> None:
    with FakeUpstream(tls=http2, http2=http2, time_scale=0.01) as up:
        with httpx.Client(http2=http2, verify=verify(up)) as client:
            body = request_body("anthropic", "total_stall")
            hdrs = {"x-proxai-stall": "30"}  # 30 real seconds of silence mid-arguments
            with client.stream("POST", up.url + PATHS["anthropic"], json=body, headers=hdrs) as r:
                assert b"input_json_delta" in _read_until(r, b"input_json_delta")
        # the client went away long before the 30 s stall ended
        assert up.wait_for(lambda u: u.closed_early == 1, 10)
        assert up.completed == 0
        # a normal request afterwards completes and is not counted
        r = post(up, "chat", "text")
        check_chat(r.content)
        assert up.wait_for(lambda u: u.completed == 1, 5)
        assert up.closed_early == 1


def test_http2_reset_one_stream_others_continue() -> None:
    """A raw h2 client: RST_STREAM on a stalled stream; a sibling stream on the connection completes."""
    with FakeUpstream(tls=False, http2=True, time_scale=0.01) as up:
        sock = socket.create_connection(("127.0.0.1", up.port))
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()

        def request(stream_id: int, protocol: str, model: str, stall: str) -> None:
            body = json.dumps(request_body(protocol, model)).encode()
            headers = [
                (":method", "POST"),
                (":path", PATHS[protocol]),
                (":scheme", "http"),
                (":authority", "127.0.0.1"),
                ("content-type", "application/json"),
                ("x-proxai-stall", stall),
            ]
            conn.send_headers(stream_id, headers)
            conn.send_data(stream_id, body, end_stream=True)

        request(1, "responses", "tool_stall", "30")
        request(3, "chat", "tool_stall", "0.3")
        sock.sendall(conn.data_to_send())
        bodies: dict[int, bytes] = {1: b"", 3: b""}
        ended: set[int] = set()
        reset_sent = False
        deadline = time.monotonic() + 20
        while 3 not in ended and time.monotonic() < deadline:
            data = sock.recv(65536)
            assert data
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.DataReceived):
                    bodies[ev.stream_id] += ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    ended.add(ev.stream_id)
            if not reset_sent and b"function_call_arguments.delta" in bodies[1]:
                conn.reset_stream(1)
                reset_sent = True
            sock.sendall(conn.data_to_send())
        sock.close()
        assert reset_sent and ended == {3}
        check_chat(bodies[3])  # the sibling stream finished untouched, stall and all
        assert up.wait_for(lambda u: u.closed_early == 1, 10)
        assert [r.http_version for r in up.requests] == ["HTTP/2", "HTTP/2"]


def test_http2_concurrent_streams(upstream_h2: FakeUpstream) -> None:
    async def run() -> list[httpx.Response]:
        async with httpx.AsyncClient(http2=True, verify=verify(upstream_h2)) as client:
            models = ["slow_tokens", "parallel_tools", "thinking", "tool_stall"] * 2
            return await asyncio.gather(
                *[
                    client.post(upstream_h2.url + PATHS["anthropic"], json=request_body("anthropic", m))
                    for m in models
                ]
            )

    responses = asyncio.run(run())
    assert {r.http_version for r in responses} == {"HTTP/2"}
    for r in responses:
        check_anthropic(r.content)


def _decompressor(encoding: str) -> Callable[[bytes], bytes]:
    if encoding == "gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress
    if encoding == "deflate":
        return zlib.decompressobj().decompress
    if encoding == "br":
        return brotli.Decompressor().process  # type: ignore[no-any-return]
    return zstandard.ZstdDecompressor().decompressobj().decompress


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
@pytest.mark.parametrize("protocol", ["anthropic", "chat", "responses"])
def test_compressed_stream_is_live(upstream: FakeUpstream, encoding: str, protocol: str) -> None:
    decompress = _decompressor(encoding)
    with (
        httpx.Client(verify=PLAIN) as client,
        client.stream(
            "POST",
            upstream.url + PATHS[protocol],
            json=request_body(protocol, "slow_tokens"),
            headers={"x-proxai-encoding": encoding, "x-proxai-time-scale": "0.01"},
        ) as r,
    ):
        assert r.headers["content-encoding"] == encoding
        raw = list(r.iter_raw())
    # each piece was flushed on its own: the first raw chunk already decodes to whole events
    assert scan(decompress(raw[0]))
    plain = decompress(b"".join(raw[1:]))
    whole = _decompressor(encoding)(b"".join(raw))
    assert whole.endswith(plain)
    {"anthropic": check_anthropic, "chat": check_chat, "responses": check_responses}[protocol](whole)


def test_compressed_json_body(upstream: FakeUpstream) -> None:
    r = post(upstream, "responses", "text", stream=False, x_proxai_encoding="br")
    assert r.headers["content-encoding"] == "br"
    assert r.json()["status"] == "completed"


def test_slowloris_arrives_in_many_pieces(upstream: FakeUpstream) -> None:
    with (
        httpx.Client(verify=PLAIN) as client,
        client.stream(
            "POST",
            upstream.url + PATHS["chat"],
            json=request_body("chat", "slowloris"),
            headers={"x-proxai-time-scale": "0.05"},  # 1 ms per byte
        ) as r,
    ):
        pieces = []
        for piece in r.iter_raw():
            pieces.append(piece)
            if len(pieces) == 150:
                break
    assert sum(map(len, pieces)) < 600  # one byte per write: the reads are tiny
    assert b"".join(pieces).startswith(b'data: {"id":"chatcmpl-')


def test_stall_override_is_real_seconds(upstream: FakeUpstream) -> None:
    with httpx.Client(verify=PLAIN) as client:
        body = request_body("chat", "total_stall")
        url = upstream.url + PATHS["chat"]
        with client.stream("POST", url, json=body, headers={"x-proxai-stall": "0.6"}) as r:
            gaps, last = [], time.monotonic()
            for _ in r.iter_raw():
                now = time.monotonic()
                gaps.append(now - last)
                last = now
    assert max(gaps) >= 0.5  # a lower bound only: the stall really happened


def test_scenario_header_wins_and_prefixes(upstream: FakeUpstream) -> None:
    with httpx.Client(verify=PLAIN) as client:
        r = client.post(
            upstream.url + "/openai/v1/chat/completions?api-version=1",
            json=request_body("chat", "gpt-4o"),
            headers={"x-proxai-scenario": "parallel_tools"},
        )
        seen = check_chat(r.content)
        assert len(seen.tools) == 2
        assert json.loads(r.content.split(b"\n")[0][6:])["model"] == "gpt-4o"
        r = client.post(upstream.url + PATHS["responses"], json=request_body("responses", "fake/max_tokens"))
        assert check_responses(r.content).stop == "incomplete"  # a provider prefix is ignored
        r = client.post(upstream.url + "/anthropic/v1/messages", json=request_body("anthropic", "no-such"))
        assert check_anthropic(r.content).stop == "end_turn"  # unknown -> text
        recorded = upstream.requests[-1]
        assert (recorded.method, recorded.path) == ("POST", "/anthropic/v1/messages")
        assert recorded.body["model"] == "no-such"
        assert recorded.headers["content-type"] == "application/json"
        assert recorded.http_version == "HTTP/1.1"


def test_bad_requests(upstream: FakeUpstream) -> None:
    with httpx.Client(verify=PLAIN) as client:
        assert client.post(upstream.url + "/v1/embeddings", json={}).status_code == 404
        assert client.get(upstream.url + "/v1/messages").status_code == 405
        assert client.post(upstream.url + "/v1/messages", content=b"{not json").status_code == 400
        assert client.get(upstream.url + "/healthz").json() == {"status": "ok"}
        models = client.get(upstream.url + "/v1/models").json()["data"]
        assert [m["id"] for m in models] == [n for n, _ in list_scenarios()]
        r = client.post(upstream.url + "/v1/messages/count_tokens", json={"model": "x", "messages": []})
        assert r.json() == {"input_tokens": 25}


def test_request_body_cap() -> None:
    with FakeUpstream(time_scale=0.0, max_body=1000) as up, httpx.Client(verify=PLAIN) as client:
        r = client.post(up.url + PATHS["chat"], json={"model": "text", "pad": "x" * 2000})
        assert r.status_code == 413
        assert r.headers["connection"] == "close"  # the next request must not race the close
        r = client.post(up.url + PATHS["chat"], json={"model": "text"})
        assert r.status_code == 200


def test_keep_alive_reuses_connection(upstream: FakeUpstream) -> None:
    with httpx.Client(verify=PLAIN) as client:
        for _ in range(3):
            r = client.post(upstream.url + PATHS["anthropic"], json=request_body("anthropic", "text"))
            check_anthropic(r.content)
        r = client.post(upstream.url + PATHS["responses"], json=request_body("responses", "text", False))
        assert r.json()["output"][0]["content"][0]["type"] == "output_text"


def test_cli_list_and_serve() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "proxai.upstream", "--list"], capture_output=True, text=True, check=True
    ).stdout
    assert [line.split()[0] for line in out.splitlines()] == [n for n, _ in list_scenarios()]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "proxai.upstream", "--port", str(port), "--time-scale", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert f"127.0.0.1:{port}" in proc.stdout.readline()
        r = httpx.post(
            f"http://127.0.0.1:{port}/v1/responses", json=request_body("responses", "thinking"), verify=PLAIN
        )
        check_responses(r.content)
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def _raw_exchange(up: FakeUpstream, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", up.port), timeout=10) as sock:
        sock.sendall(request)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
            if b"\r\n\r\n" in out and (b"HTTP/1.1 100" not in out or out.count(b"\r\n\r\n") > 1):
                break
        return out


def test_malformed_http_gets_400(upstream: FakeUpstream) -> None:
    assert _raw_exchange(upstream, b"NOT HTTP AT ALL\r\n\r\n").startswith(b"HTTP/1.1 400 ")


def test_expect_100_continue(upstream: FakeUpstream) -> None:
    body = json.dumps(request_body("chat", "text", stream=False)).encode()
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"expect: 100-continue\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", upstream.port), timeout=10) as sock:
        sock.sendall(head)
        assert sock.recv(65536).startswith(b"HTTP/1.1 100 ")
        sock.sendall(body)
        out = b""
        while b'"total_tokens"' not in out:
            chunk = sock.recv(65536)
            assert chunk
            out += chunk
    assert out.startswith(b"HTTP/1.1 200 ")


def test_oversized_body_refused_early() -> None:
    with FakeUpstream(time_scale=0.0, max_body=1000) as up:
        head = b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 100000000\r\n\r\n"
        assert _raw_exchange(up, head + b"x" * 5000).startswith(b"HTTP/1.1 413 ")


def _broken_script(params: Params) -> Iterator[Op]:
    yield Start()
    raise ValueError("scripted bug")


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2"])
def test_a_bug_is_a_500_or_a_reset_never_a_hang(monkeypatch: pytest.MonkeyPatch, http2: bool) -> None:
    monkeypatch.setitem(SCENARIOS, "broken", Scenario("broken", "raises", _broken_script))
    with FakeUpstream(tls=http2, http2=http2, time_scale=0.0) as up:
        r = post(up, "chat", "broken", stream=False)  # fails before the headers
        assert r.status_code == 500
        assert "scripted bug" in r.json()["error"]["message"]
        with pytest.raises(httpx.TransportError):
            post(up, "chat", "broken", stream=True)  # fails after the headers
        check_chat(post(up, "chat", "text").content)  # the server is fine


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2"])
def test_stop_mid_stream_leaves_nothing_running(caplog: pytest.LogCaptureFixture, http2: bool) -> None:
    up = FakeUpstream(tls=http2, http2=http2, time_scale=0.01).start()
    errors: list[BaseException] = []

    def client() -> None:
        try:
            with httpx.Client(http2=http2, verify=verify(up)) as c:
                c.post(
                    up.url + PATHS["chat"],
                    json=request_body("chat", "total_stall"),
                    headers={"x-proxai-stall": "30"},
                )
        except httpx.HTTPError as e:
            errors.append(e)

    thread = threading.Thread(target=client)
    thread.start()
    assert up.wait_for(lambda u: len(u.requests) == 1, 10)
    up.stop()  # in the middle of a 30 s stall
    thread.join(10)
    assert not thread.is_alive() and len(errors) == 1  # the client saw the server go
    gc.collect()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
    assert up.closed_early == 0  # a server stop is not a client disconnect
