"""A request's ``url`` and ``pretty_url`` as mitmproxy gives them, remembered by what they are made
of, for the response hook that reads them on every flow (docs/performance.md, "Per-flow work: the
response hook").

mitmproxy builds both on each read through several Python properties (the method, authority,
scheme and path decoded, the Host header looked up through ``Headers``, ``url.unparse`` and the
host's port rules): about 30,000 instructions for ``pretty_url``. Each is a pure function of the
request's data it reads: ``url`` of the method, scheme, host, port and path; ``pretty_url`` of
those, the authority, the HTTP version and the Host header. Those are the key; a key not seen
yet is answered by mitmproxy's own property. Bounded: the memo is emptied when it holds ``MEMO``
entries. Like the header memo of the redaction (``safety/redact.py``), it holds URLs (and a query's
credentials) in memory only, as the flows themselves do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proxai.mitm import fields

if TYPE_CHECKING:
    from mitmproxy import http

MEMO = 512

_URLS: dict[tuple[object, ...], str] = {}
_PRETTY: dict[tuple[object, ...], str] = {}


def url(req: http.Request) -> str:
    """``req.url``."""
    d = req.data
    key = (d.method, d.scheme, d.host, d.port, d.path)
    got = _URLS.get(key)
    return _remember(_URLS, key, req.url) if got is None else got


def pretty_url(req: http.Request) -> str:
    """``req.pretty_url``."""
    d = req.data
    key = (
        d.method,
        d.authority,
        d.http_version,
        fields.header(d.headers, b"host"),
        d.scheme,
        d.host,
        d.port,
        d.path,
    )
    got = _PRETTY.get(key)
    return _remember(_PRETTY, key, req.pretty_url) if got is None else got


def _remember(memo: dict[tuple[object, ...], str], key: tuple[object, ...], value: str) -> str:
    """``value`` kept under ``key`` (the memo emptied first when full)."""
    if len(memo) >= MEMO:
        memo.clear()
    memo[key] = value
    return value
