"""Observe-only mode is byte-exact: the client receives exactly what the upstream sent.

Reverse mode with a TCP tap between mitmdump and the fake upstream records the upstream's
wire bytes; the client's raw bytes (``iter_raw``: de-chunked, still content-encoded) must
equal one recorded response body byte for byte, for every content-encoding. The saved flow
shows the compressed stream was still observed (decoded) correctly.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import brotli
import orjson
import pytest
import zstandard

from proxai.upstream.scenarios import TEXT

from .harness import PATHS, TEST_HEADER, Mitmdump, proxai_meta, running_mitmdump, tag
from .tap import TcpTap

pytestmark = pytest.mark.e2e

DECODERS: dict[str, Any] = {
    "identity": lambda b: b,
    "gzip": gzip.decompress,
    "deflate": zlib.decompress,
    "br": brotli.decompress,
    "zstd": lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b),
}


@pytest.fixture(scope="module")
def tapped(upstream: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Mitmdump, TcpTap]]:
    u = urlsplit(upstream.url)
    assert u.hostname is not None and u.port is not None
    tap = TcpTap(u.hostname, u.port)
    try:
        with running_mitmdump(tap.url, mode="reverse", workdir=tmp_path_factory.mktemp("mitm-tap")) as md:
            yield md, tap
    finally:
        tap.close()


def _post_raw(md: Mitmdump, path: str, t: str, scenario: str, encoding: str) -> tuple[bytes, dict[str, str]]:
    body: dict[str, Any] = {"model": scenario, "stream": True, "max_tokens": 64}
    if "responses" in path:
        body["input"] = "hi"
    else:
        body["messages"] = [{"role": "user", "content": "hi"}]
    headers = {TEST_HEADER: t, "x-proxai-encoding": encoding, "accept-encoding": encoding}
    with (
        md.http_client() as client,
        client.stream("POST", md.base_url(path), content=orjson.dumps(body), headers=headers) as r,
    ):
        assert r.status_code == 200
        raw = b"".join(r.iter_raw())
        return raw, dict(r.headers)


@pytest.mark.parametrize("encoding", sorted(DECODERS))
@pytest.mark.parametrize("protocol", sorted(PATHS))
def test_client_gets_the_upstream_bytes_exactly(
    tapped: tuple[Mitmdump, TcpTap], protocol: str, encoding: str
) -> None:
    md, tap = tapped
    t = tag()
    raw, headers = _post_raw(md, PATHS[protocol], t, "text", encoding)
    if encoding != "identity":
        assert headers.get("content-encoding") == encoding
    assert raw in tap.upstream_bodies()  # byte for byte what the upstream put on the wire
    decoded = DECODERS[encoding](raw)
    m = proxai_meta(md.wait_flow(t))
    assert m["protocol"] == protocol and m["outcome"] == "completed" and m["stop_class"] == "end_turn"
    assert m["text_bytes"] == len(TEXT.encode())
    assert m["counts"]["bytes"] == len(decoded)  # the observer saw the decoded stream
    assert m["carrier"]["upstream_bytes"] == m["carrier"]["client_bytes"] == len(raw)
    assert "observe_error" not in m


def test_parallel_tools_bytes_exact(tapped: tuple[Mitmdump, TcpTap]) -> None:
    md, tap = tapped
    t = tag()
    raw, _ = _post_raw(md, "/v1/chat/completions", t, "parallel_tools", "identity")
    assert raw in tap.upstream_bodies()
    m = proxai_meta(md.wait_flow(t))
    assert len(m["tool_calls"]) == 2 and m["counts"]["bytes"] == len(raw)


@pytest.mark.parametrize("encoding", ["gzip", "br"])
def test_regular_mode_compressed_stream(mitm_regular: Mitmdump, encoding: str) -> None:
    """Through CONNECT/TLS: the compressed bytes pass unchanged and are observed decoded."""
    t = tag()
    raw, headers = _post_raw(mitm_regular, "/v1/messages", t, "text", encoding)
    assert headers.get("content-encoding") == encoding
    decoded = DECODERS[encoding](raw)
    assert decoded.startswith(b"event: message_start") and b"event: message_stop" in decoded
    m = proxai_meta(mitm_regular.wait_flow(t))
    assert m["outcome"] == "completed" and m["text_bytes"] == len(TEXT.encode())
    assert m["counts"]["bytes"] == len(decoded)
    assert m["carrier"]["upstream_bytes"] == m["carrier"]["client_bytes"] == len(raw)
