"""Incremental content-encoding for the fake upstream (gzip, deflate, br, zstd).

Upstreams that compress their SSE must still be observed as they stream: the body must
stay a live stream, so every piece is compressed and FLUSHED on its own (``Z_SYNC_FLUSH``,
brotli ``flush()``, zstd ``FLUSH_BLOCK``) and the decoder on the other side can hand each
event on as soon as it arrives. ``deflate`` is the zlib-wrapped format, as HTTP defines it.

Rule: docs/design/upstream.md ("It is a real server"); the carrier decodes each chunk before the
SSE scanner runs once over it (docs/design/README.md, "Following one chunk"), and flushed
compression keeps that per-chunk path live.
"""

from __future__ import annotations

import zlib
from typing import Protocol

import brotli  # type: ignore[import-untyped]
import zstandard

ENCODINGS = ("gzip", "deflate", "br", "zstd")


class Compressor(Protocol):
    def feed(self, data: bytes) -> bytes: ...

    def finish(self) -> bytes: ...


class _Zlib:
    def __init__(self, wbits: int) -> None:
        self._z = zlib.compressobj(6, zlib.DEFLATED, wbits)

    def feed(self, data: bytes) -> bytes:
        return self._z.compress(data) + self._z.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        return self._z.flush(zlib.Z_FINISH)


class _Brotli:
    def __init__(self) -> None:
        self._b = brotli.Compressor()

    def feed(self, data: bytes) -> bytes:
        out: bytes = self._b.process(data) + self._b.flush()
        return out

    def finish(self) -> bytes:
        out: bytes = self._b.finish()
        return out


class _Zstd:
    def __init__(self) -> None:
        self._z = zstandard.ZstdCompressor().compressobj()

    def feed(self, data: bytes) -> bytes:
        return self._z.compress(data) + self._z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)

    def finish(self) -> bytes:
        return self._z.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)


def make_compressor(encoding: str) -> Compressor:
    """A streaming compressor for an HTTP content-coding name (raises ValueError if unknown)."""
    match encoding:
        case "gzip":
            return _Zlib(16 + zlib.MAX_WBITS)
        case "deflate":
            return _Zlib(zlib.MAX_WBITS)
        case "br":
            return _Brotli()
        case "zstd":
            return _Zstd()
    raise ValueError(f"unknown content-encoding {encoding!r}")


def compress(encoding: str, data: bytes) -> bytes:
    """A whole body, compressed."""
    c = make_compressor(encoding)
    return c.feed(data) + c.finish()
