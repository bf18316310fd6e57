"""A routed request's URL set from the route's parsed upstream URL (``routed._retarget``: the URL
parsed once, ``routed._parsed_url``, the Host header and authority written once) leaves the
request as mitmproxy's ``Request.url`` setter leaves it: scheme, host, port, path, the Host
header (none, one, or repeated) and the authority, in HTTP/1 and HTTP/2."""

from __future__ import annotations

import pytest
from mitmproxy.test import tutils

from proxai.mitm import routed

URLS = [
    "http://127.0.0.1:9/v1/chat/completions",
    "https://api.openai.com/v1/responses",
    "https://api.anthropic.com/v1/messages?beta=true",
    "http://localhost:11434/v1/chat/completions?a=1&b=%20x",
    "https://xn--bcher-kva.example/v1/messages",
    "http://[::1]:8080/v1/responses",
]


HEADERS = [
    ((b"Host", b"client.example:8443"), (b"x", b"1")),
    ((b"x", b"1"),),
    ((b"x", b"1"), (b"HOST", b"a.example"), (b"y", b"2"), (b"host", b"b.example")),
]


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("http2", [False, True])
@pytest.mark.parametrize("headers", HEADERS)
def test_the_request_is_as_the_url_setter_leaves_it(
    url: str, http2: bool, headers: tuple[tuple[bytes, bytes], ...]
) -> None:
    def request() -> object:
        req = tutils.treq(headers=headers)
        if http2:
            req.http_version = "HTTP/2.0"
            req.authority = "client.example:8443"
        return req

    want, got = request(), request()
    want.url = url  # type: ignore[attr-defined]
    routed._retarget(got, url)  # type: ignore[arg-type]
    assert got.data == want.data  # type: ignore[attr-defined]
    assert got.headers.fields == want.headers.fields  # type: ignore[attr-defined]
    assert got.url == want.url  # type: ignore[attr-defined]
    assert routed._parsed_url(url) is routed._parsed_url(url)  # parsed once


@pytest.mark.parametrize(
    ("url", "error"),
    [("/no/host", "No hostname given"), ("https://bücher.example/v1", "codec can't encode")],
)
def test_a_bad_url_raises_as_the_setter_does(url: str, error: str) -> None:
    req = tutils.treq()
    with pytest.raises(ValueError, match=error):
        req.url = url
    with pytest.raises(ValueError, match=error):
        routed._parsed_url(url)


@pytest.mark.parametrize(
    "headers",
    [
        ((b"Content-Length", b"2"), (b"x", b"1")),
        ((b"x", b"1"),),
        ((b"content-length", b"2"), (b"Transfer-Encoding", b"chunked")),
        ((b"CONTENT-LENGTH", b"2"), (b"x", b"1"), (b"content-length", b"3")),
    ],
)
def test_a_new_body_is_set_as_the_content_setter_sets_it(headers: tuple[tuple[bytes, bytes], ...]) -> None:
    want, got = tutils.treq(headers=headers, content=b"{}"), tutils.treq(headers=headers, content=b"{}")
    want.content = b'{"model":"m\xc3\xa9"}'
    routed._set_body(got, b'{"model":"m\xc3\xa9"}')
    assert got.data == want.data
    assert got.headers.fields == want.headers.fields
