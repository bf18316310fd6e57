"""Faults through a real mitmdump with the addon.

Each case leaves the right outcome in ``flow.metadata["proxai"]`` and no traceback (nor any
logged internal error of ours) in mitmdump's log. The upstream is the embedded fake upstream
(``proxai.upstream``), plus an HTTP/2 one; memory is read from /proc.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import brotli  # type: ignore[import-untyped]
import httpx
import pytest
import zstandard
from bench.procs import fd_count, status_kb

from proxai.core.model import Protocol
from proxai.core.sse import SseScanner
from tests.e2e.harness import PATHS, TEST_HEADER, Mitmdump, proxai_meta, running_mitmdump, tag

from .logcheck import assert_clean_log
from .mutate import PROTOCOLS

pytestmark = pytest.mark.e2e

BODY = {"model": "m", "stream": True, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


def h2_client(md: Mitmdump) -> Any:
    """HTTP/2 over TLS straight to mitmdump (reverse mode), ALPN h2 first: mitmproxy then speaks
    HTTP/2 to an HTTP/2 upstream too (it offers the upstream the client's ALPN). ``httpx2`` (as
    tests/guard does): this httpx sends an HTTP/2 preface without TLS ALPN when ``http1=False``."""
    import httpx2

    ctx = ssl.create_default_context(cafile=str(md.ca_path))
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    return httpx2.Client(http1=False, http2=True, verify=ctx, timeout=httpx2.Timeout(60.0, connect=10.0))


def call(
    md: Mitmdump, protocol: Protocol, scenario: str, *, h2: bool = False, **headers: str
) -> tuple[Any, dict[str, Any], str]:
    """POST a streamed request for ``scenario``; returns (response or None if it failed, meta, tag)."""
    import httpx2

    t = tag()
    hdrs = {
        "x-proxai-scenario": scenario,
        TEST_HEADER: t,
        **{k.replace("_", "-"): v for k, v in headers.items()},
    }
    resp: Any
    base = f"https://127.0.0.1:{md.port}" if h2 else md.url
    try:
        with h2_client(md) if h2 else md.http_client() as c:
            resp = c.post(base + PATHS[protocol], json=BODY, headers=hdrs)
    except (httpx.HTTPError, httpx2.HTTPError):
        resp = None
    return resp, proxai_meta(md.wait_flow(t)), t


@pytest.fixture
def md(mitm_fake: Mitmdump) -> Iterator[Mitmdump]:
    yield mitm_fake
    mitm_fake.check_alive()
    assert_clean_log(mitm_fake)


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_upstream_reset_mid_stream(md: Mitmdump, protocol: Protocol) -> None:
    resp, meta, _ = call(md, protocol, "reset")
    assert resp is None  # the client sees the broken stream, not a clean end
    assert meta["outcome"] == "error"
    assert meta["error"]["kind"] == "connection"
    assert meta["counts"]["events"] > 0  # what arrived before the reset was observed


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_upstream_closes_without_terminal_event(md: Mitmdump, protocol: Protocol) -> None:
    resp, meta, _ = call(md, protocol, "truncated")
    assert resp is not None and resp.status_code == 200
    assert meta["outcome"] == "closed"
    assert meta["error"] is None
    assert meta["counts"]["bytes"] == len(resp.content)


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_client_disconnects_mid_stream(md: Mitmdump, fake: Any, protocol: Protocol) -> None:
    pid = md.proc.pid
    fds_before = fd_count(pid)
    closed_before = fake.closed_early
    t = tag()
    # slow_tokens at real time: 0.3 s between tokens, several seconds in all.
    hdrs = {"x-proxai-scenario": "slow_tokens", "x-proxai-time-scale": "1", TEST_HEADER: t}
    with md.http_client() as c, c.stream("POST", md.url + PATHS[protocol], json=BODY, headers=hdrs) as r:
        assert r.status_code == 200
        got = b""
        for piece in r.iter_raw():
            got += piece
            if got.count(b"\n\n") >= 3:
                break  # leave mid-stream: closing the client drops the connection
    # The upstream is closed promptly (bound with a wide margin: the stream would run on for seconds).
    assert fake.wait_for(lambda up: up.closed_early > closed_before, timeout=10)
    meta = proxai_meta(md.wait_flow(t))
    assert meta["outcome"] == "error"
    assert meta["error"]["kind"] == "connection"
    # Nothing of that flow is left open in mitmdump.
    deadline = time.monotonic() + 10
    while fd_count(pid) > fds_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fd_count(pid) <= fds_before


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_5xx_with_html_body(md: Mitmdump, protocol: Protocol) -> None:
    resp, meta, _ = call(md, protocol, "html_500")
    assert resp is not None and resp.status_code == 502
    assert b"<html>" in resp.content
    assert meta["outcome"] == "error"
    assert meta["status_code"] == 502
    assert meta["error"]["kind"] == "server"


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_malformed_json_in_one_event(md: Mitmdump, protocol: Protocol) -> None:
    resp, meta, _ = call(md, protocol, "malformed_json")
    assert resp is not None and resp.status_code == 200
    assert meta["outcome"] == "error"
    assert meta["error"]["kind"] == "upstream_protocol"
    assert "not JSON" in meta["error"]["message"]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_missing_content_type_on_sse_body(md: Mitmdump, protocol: Protocol) -> None:
    resp, meta, _ = call(md, protocol, "wrong_content_type", x_proxai_content_type="none")
    assert resp is not None and resp.status_code == 200
    assert "content-type" not in resp.headers
    assert meta["outcome"] == "completed"
    assert meta["counts"]["events"] > 0


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_one_enormous_line_is_bounded(md: Mitmdump, protocol: Protocol) -> None:
    """A 48 MiB line without newline: a stream_limit error, the bytes still reach the client, and
    mitmdump's peak memory grows by far less than the line (the scanner keeps at most max_line)."""
    pid = md.proc.pid
    size = 48 * 1024 * 1024
    rss0 = status_kb(pid, "VmRSS")
    peak_reset = True
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        peak_reset = False
    t = tag()
    hdrs = {"x-proxai-scenario": "huge_line", "x-proxai-size": str(size), TEST_HEADER: t}
    received = 0
    with md.http_client() as c, c.stream("POST", md.url + PATHS[protocol], json=BODY, headers=hdrs) as r:
        for piece in r.iter_raw():
            received += len(piece)
    meta = proxai_meta(md.wait_flow(t))
    assert meta["outcome"] == "error"
    assert meta["error"]["kind"] == "stream_limit"
    assert "line" in meta["error"]["message"]
    assert received > size  # observe-only: passed through whole
    if peak_reset:
        growth_mb = (status_kb(pid, "VmHWM") - rss0) / 1024
        assert growth_mb < 40, f"mitmdump's peak RSS grew {growth_mb:.1f} MB for a 48 MiB line"


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_slowloris_upstream(md: Mitmdump, protocol: Protocol) -> None:
    resp, meta, _ = call(md, protocol, "slowloris", x_proxai_time_scale="0.05")
    assert resp is not None and resp.status_code == 200
    assert meta["outcome"] == "completed"
    assert meta["counts"]["chunks"] > 100  # it really arrived in tiny pieces
    assert meta["text_bytes"] > 0


def _decode(encoding: str, data: bytes) -> bytes:
    import gzip
    import zlib

    if encoding == "gzip":
        return gzip.decompress(data)
    if encoding == "deflate":
        try:
            return zlib.decompress(data)
        except zlib.error:
            return zlib.decompress(data, -zlib.MAX_WBITS)
    if encoding == "br":
        return bytes(brotli.decompress(data))
    if encoding == "zstd":
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    raise ValueError(encoding)


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd", "deflate"])
@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_compressed_sse_upstream(md: Mitmdump, protocol: Protocol, encoding: str) -> None:
    plain_resp, plain, _ = call(md, protocol, "text")
    t = tag()
    hdrs = {"x-proxai-scenario": "text", "x-proxai-encoding": encoding, TEST_HEADER: t}
    with md.http_client() as c, c.stream("POST", md.url + PATHS[protocol], json=BODY, headers=hdrs) as r:
        assert r.headers.get("content-encoding") == encoding
        raw = b"".join(r.iter_raw())
    meta = proxai_meta(md.wait_flow(t))
    assert meta["outcome"] == "completed"
    # Observed through the compression exactly as the uncompressed stream is.
    for key in ("stop_reason", "usage", "text_bytes", "tool_calls"):
        assert meta[key] == plain[key], key
    assert meta["counts"]["events"] == plain["counts"]["events"]
    # The client gets the compressed bytes, and they are the stream.
    sc = SseScanner()
    assert len(sc.feed(_decode(encoding, raw)) + sc.close()) == plain["counts"]["events"]
    assert plain_resp is not None


@pytest.fixture(scope="module")
def h2_mitm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Mitmdump, Any]]:
    from proxai.upstream import FakeUpstream

    with (
        FakeUpstream(tls=True, http2=True, time_scale=0.02) as up,
        running_mitmdump(up.url, workdir=tmp_path_factory.mktemp("hard-h2")) as md,
    ):
        yield md, up


@pytest.mark.parametrize(("scenario", "outcome"), [("parallel_tools", "completed"), ("reset", "error")])
@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_http2_upstream(
    h2_mitm: tuple[Mitmdump, Any], protocol: Protocol, scenario: str, outcome: str
) -> None:
    md, _ = h2_mitm
    resp, meta, t = call(md, protocol, scenario, h2=True)
    assert meta["outcome"] == outcome
    if outcome == "completed":
        assert resp is not None and resp.status_code == 200
        assert [t["arguments_valid_json"] for t in meta["tool_calls"]] == [True, True]
    else:
        assert meta["error"]["kind"] == "connection"
    flow = md.wait_flow(t)
    assert flow.server_conn.alpn == b"h2"
    md.check_alive()
    assert_clean_log(md)
