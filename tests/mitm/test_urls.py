"""``proxai.mitm.urls``: a request's ``url`` and ``pretty_url`` as mitmproxy's own properties give
them, on HTTP/1, HTTP/2 and HTTP/3 requests in every request form, with and without (repeated,
mixed-case, non-UTF-8) Host headers, and again after each part the key is made of changes."""

from __future__ import annotations

import itertools

from mitmproxy import http
from mitmproxy.test import tutils

from proxai.mitm import urls

HOSTS = [
    None,
    b"api.openai.com",
    b"Api.Example:8443",
    b"[::1]:8080",
    b"xn--bcher-kva.example",
    b"h\xff:1",
    b"",
]
TARGETS = [
    # (method, scheme, host, port, authority, path)
    ("POST", "https", "api.openai.com", 443, "", "/v1/chat/completions"),
    ("POST", "http", "127.0.0.1", 9, "", "/v1/messages?beta=true&key=x"),
    ("POST", "https", "10.0.0.1", 8443, "api.anthropic.com:8443", "/v1/messages"),
    ("CONNECT", "", "api.openai.com", 443, "api.openai.com:443", ""),
    ("OPTIONS", "http", "localhost", 11434, "", "*"),
    ("GET", "https", "bücher.example", 443, "", "/v1/responses#f"),
]
VERSIONS = ["HTTP/1.1", "HTTP/2.0", "HTTP/3"]


def _requests() -> list[http.Request]:
    out = []
    for (method, scheme, host, port, authority, path), version, hosthdr, name in itertools.product(
        TARGETS, VERSIONS, HOSTS, [b"Host", b"host", b"HOST"]
    ):
        req = tutils.treq(method=method.encode())
        req.http_version = version
        req.scheme, req.host, req.port, req.authority, req.path = scheme, host, port, authority, path
        # after the host, whose setter rewrites a Host header
        req.headers.fields = ((b"x", b"1"),) + (((name, hosthdr),) if hosthdr is not None else ())
        out.append(req)
    twice = tutils.treq(headers=((b"Host", b"a.example"), (b"host", b"b.example")))
    out.append(twice)
    return out


def test_url_and_pretty_url_are_mitmproxys() -> None:
    reqs = _requests()
    assert len({r.pretty_url for r in reqs}) == 32  # the cases differ where it matters
    for _ in range(2):  # the second pass answers from the memo
        for req in reqs:
            assert urls.url(req) == req.url
            assert urls.pretty_url(req) == req.pretty_url


def test_a_changed_part_gives_the_changed_url() -> None:
    req = tutils.treq(headers=((b"Host", b"a.example"),))
    seen = [(urls.url(req), urls.pretty_url(req))]
    for change in (
        lambda r: setattr(r, "path", "/other"),
        lambda r: setattr(r, "port", 8080),
        lambda r: setattr(r, "scheme", "https"),
        lambda r: setattr(r, "host", "b.example"),
        lambda r: r.headers.__setitem__("Host", "c.example:99"),
        lambda r: setattr(r, "authority", "d.example"),  # (HTTP/1: neither reads it)
        lambda r: setattr(r, "http_version", "HTTP/2.0"),  # pretty_url: the authority now
        lambda r: setattr(r, "authority", "e.example"),
        lambda r: setattr(r, "method", "CONNECT"),
    ):
        change(req)
        got = (urls.url(req), urls.pretty_url(req))
        assert got == (req.url, req.pretty_url)
        seen.append(got)
    assert len(set(seen)) == len(seen) - 1  # every other change changed one of them


def test_the_memo_is_bounded() -> None:
    for i in range(urls.MEMO + 5):
        req = tutils.treq(path=f"/v1/{i}".encode())
        assert urls.url(req) == req.url and urls.pretty_url(req) == req.pretty_url
    assert len(urls._URLS) <= urls.MEMO and len(urls._PRETTY) <= urls.MEMO


def test_without_a_host_header_the_host_and_port_count() -> None:
    req = tutils.treq(headers=((b"x", b"1"),))
    seen = [(urls.url(req), urls.pretty_url(req))]
    for change in (
        lambda r: setattr(r, "port", 8080),
        lambda r: setattr(r, "host", "b.example"),
    ):
        change(req)
        got = (urls.url(req), urls.pretty_url(req))
        assert got == (req.url, req.pretty_url)
        seen.append(got)
    assert len(set(seen)) == len(seen)
