"""``proxai.mitm.fields``: one pass over the raw header fields gives what mitmproxy's ``Headers``
lookups give (folded repeats, any case, missing, empty, bytes that are not UTF-8), and a body as
``get_content(strict=False)`` gives it (none, identity, gzip, an encoding that cannot be decoded)."""

from __future__ import annotations

import gzip

import pytest
from mitmproxy import http
from mitmproxy.test import tutils

from proxai.mitm import fields

FIELDS = [
    (),
    ((b"Host", b"example.com"),),
    ((b"Content-Type", b"text/event-stream"), (b"X-Other", b"1")),
    ((b"accept", b"text/html"), (b"Host", b"h"), (b"ACCEPT", b"application/xml"), (b"Accept", b"")),
    ((b"x-empty", b""),),
    ((b"X-Bytes", b"caf\xc3\xa9 \xff"), (b"x-bytes", b"\xfe")),
    ((b"Content-Encoding", b"gzip"), (b"content-encoding", b"br")),
    ((b"N\xc3\xa4me", b"v"), (b"n\xc3\xa4me", b"w")),
]
NAMES = ["host", "content-type", "accept", "x-empty", "x-bytes", "content-encoding", "missing", "n\xe4me"]


@pytest.mark.parametrize("raw", FIELDS)
def test_lookups_give_what_headers_give(raw: tuple[tuple[bytes, bytes], ...]) -> None:
    headers = http.Headers(raw)
    for name in NAMES:
        low = name.encode("utf-8", "surrogateescape")
        assert fields.header(headers, low) == headers.get(name)
        assert fields.has(headers, low) is (name in headers)
    want = {name: headers[name] for name in headers}
    got = fields.as_dict(headers)
    assert got == want
    assert list(got) == list(want)  # the same order


@pytest.mark.parametrize("raw", FIELDS)
@pytest.mark.parametrize("name", [*NAMES, "Host", "Content-Length", "X-New"])
def test_put_and_drop_change_what_headers_change(raw: tuple[tuple[bytes, bytes], ...], name: str) -> None:
    want, got = http.Headers(raw), http.Headers(raw)
    want[name] = "v\xe9 \udcff"
    fields.put(got, name.encode("utf-8", "surrogateescape"), "v\xe9 \udcff")
    assert got.fields == want.fields
    want, got = http.Headers(raw), http.Headers(raw)
    gone = [name, "x-other"]
    for n in gone:
        if n in want:
            del want[n]
    fields.drop(got, frozenset(n.encode("utf-8", "surrogateescape").lower() for n in gone))
    assert got.fields == want.fields


@pytest.mark.parametrize(
    ("encoding", "raw"),
    [
        (None, b'{"model": "m"}'),
        ("identity", b'{"model": "m"}'),
        ("gzip", gzip.compress(b'{"model": "m"}', mtime=0)),
        ("gzip", b"not gzip at all"),  # cannot be decoded: the raw bytes
        ("", b"x"),
    ],
)
def test_content_is_get_content_not_strict(encoding: str | None, raw: bytes) -> None:
    req = tutils.treq(content=b"")
    req.raw_content = raw
    if encoding is not None:
        req.headers["content-encoding"] = encoding
    assert fields.content(req) == req.get_content(strict=False)
    req.raw_content = None
    assert fields.content(req) is None
