"""A routed request's URL set from the route's parsed upstream URL (``routed._parsed_url``, parsed
once per URL) leaves the request as mitmproxy's ``Request.url`` setter leaves it: scheme, host,
port, path, the Host header and the authority, in HTTP/1 and HTTP/2."""

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


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("http2", [False, True])
def test_the_request_is_as_the_url_setter_leaves_it(url: str, http2: bool) -> None:
    def request() -> object:
        req = tutils.treq(headers=((b"Host", b"client.example:8443"), (b"x", b"1")))
        if http2:
            req.http_version = "HTTP/2.0"
            req.authority = "client.example:8443"
        return req

    want, got = request(), request()
    want.url = url  # type: ignore[attr-defined]
    got.scheme, got.host, got.port, got.path = routed._parsed_url(url)  # type: ignore[attr-defined]
    assert got.data == want.data  # type: ignore[attr-defined]
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
