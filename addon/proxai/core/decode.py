"""Incremental, bounded content decoders: gzip, deflate (zlib and raw), br, zstd, identity.

Upstreams that gzip, deflate, brotli or zstd their SSE must still be observed correctly. The
carrier (docs/design/README.md, "Following one chunk") hands each upstream chunk to a
decoder and gives the DECODED bytes to the observer, while in observe-only mode the client
still receives the original compressed bytes untouched (docs/design/core.md, "Observe-only is
byte-exact").

Memory is bounded: ``max_output`` caps the decoded bytes a single ``feed()`` / ``flush()``
may produce (a decompression bomb in one small chunk). Past it the decoder raises
``DecodeError`` and stays errored, like every state machine here (after h11).

Sans-IO: bytes in, bytes out, no clock, no logging.
"""

from __future__ import annotations

import zlib
from enum import StrEnum
from typing import IO, Protocol, cast

from proxai.core.errors import DecodeError

DEFAULT_MAX_DECODED = 64 * 1024 * 1024

_GZIP_MAGIC = b"\x1f\x8b"


class Encoding(StrEnum):
    IDENTITY = "identity"
    GZIP = "gzip"
    DEFLATE = "deflate"
    BR = "br"
    ZSTD = "zstd"


_ALIASES = {"x-gzip": Encoding.GZIP, "none": Encoding.IDENTITY}


class Decoder(Protocol):
    """Feed compressed bytes, get decoded bytes; ``flush()`` at end of message."""

    encoding: str

    def feed(self, data: bytes) -> bytes: ...

    def flush(self) -> bytes: ...


class _Base:
    """The errored-state bookkeeping every decoder shares."""

    encoding = "identity"

    def __init__(self, max_output: int) -> None:
        if max_output <= 0:
            raise DecodeError(f"max_output must be positive, got {max_output}")
        self.max_output = max_output
        self._failed: DecodeError | None = None
        self._flushed = False

    def feed(self, data: bytes) -> bytes:
        if self._failed is not None:
            raise self._failed
        if self._flushed:
            raise self._fail(f"{self.encoding}: data after end of message")
        if not data:
            return b""
        try:
            return self._feed(data)
        except DecodeError as exc:
            self._failed = exc
            raise
        except Exception as exc:  # zlib.error, brotli.error, ZstdError: all bad input
            raise self._fail(f"{self.encoding}: {exc}") from exc

    def flush(self) -> bytes:
        if self._failed is not None:
            raise self._failed
        if self._flushed:
            return b""
        self._flushed = True
        try:
            return self._flush()
        except DecodeError as exc:
            self._failed = exc
            raise
        except Exception as exc:
            raise self._fail(f"{self.encoding}: {exc}") from exc

    def _fail(self, message: str) -> DecodeError:
        self._failed = DecodeError(message)
        return self._failed

    def _too_big(self) -> DecodeError:
        return DecodeError(f"{self.encoding}: decoded chunk exceeds the limit of {self.max_output} bytes")

    def _feed(self, data: bytes) -> bytes:
        raise NotImplementedError

    def _flush(self) -> bytes:
        return b""


class IdentityDecoder(_Base):
    encoding = "identity"

    def _feed(self, data: bytes) -> bytes:
        return data


class ZlibDecoder(_Base):
    """gzip (several members allowed) and deflate (zlib-wrapped or raw, sniffed)."""

    def __init__(self, encoding: Encoding, max_output: int) -> None:
        super().__init__(max_output)
        self.encoding = str(encoding)
        self._gzip = encoding is Encoding.GZIP
        self._pending = b""  # deflate: the first byte, until the zlib header can be judged
        self._obj: zlib._Decompress | None = zlib.decompressobj(16 + zlib.MAX_WBITS) if self._gzip else None
        self._trailing_garbage = False

    def _feed(self, data: bytes) -> bytes:
        if self._obj is None:
            data = self._pending + data
            if len(data) < 2:
                self._pending = data
                return b""
            self._pending = b""
            # RFC 1950: CM = 8 and (CMF*256 + FLG) % 31 == 0 means a zlib header; else raw deflate
            # (RFC 9110 says "deflate" is zlib, but servers send raw deflate too).
            zlib_wrapped = (data[0] & 0x0F) == 8 and ((data[0] << 8) | data[1]) % 31 == 0
            self._obj = zlib.decompressobj(zlib.MAX_WBITS if zlib_wrapped else -zlib.MAX_WBITS)
        return self._run(data)

    def _run(self, data: bytes) -> bytes:
        assert self._obj is not None
        out: list[bytes] = []
        size = 0
        while data and not self._trailing_garbage:
            piece = self._obj.decompress(data, self.max_output + 1 - size)
            size += len(piece)
            if size > self.max_output:
                raise self._too_big()
            out.append(piece)
            if self._obj.unconsumed_tail:
                data = self._obj.unconsumed_tail
                continue
            if self._obj.eof and self._obj.unused_data:
                rest = self._obj.unused_data
                if self._gzip and rest.startswith(_GZIP_MAGIC[: len(rest)]):
                    self._obj = zlib.decompressobj(16 + zlib.MAX_WBITS)  # next gzip member
                    data = rest
                    continue
                self._trailing_garbage = True  # bytes after the end of the stream are ignored
            break
        return b"".join(out)

    def _flush(self) -> bytes:
        if self._obj is None:
            if self._pending:
                # One lone byte can never be a complete deflate stream.
                return b""
            return b""
        out = self._obj.flush()
        if len(out) > self.max_output:
            raise self._too_big()
        return out


class BrotliDecoder(_Base):
    encoding = "br"

    def __init__(self, max_output: int) -> None:
        super().__init__(max_output)
        import brotli  # type: ignore[import-untyped]

        self._obj = brotli.Decompressor()

    def _feed(self, data: bytes) -> bytes:
        limit = self.max_output + 1
        out = [self._obj.process(data, output_buffer_limit=limit)]
        size = len(out[0])
        while size <= self.max_output and not self._obj.can_accept_more_data():
            piece = self._obj.process(b"", output_buffer_limit=limit)
            if not piece:
                break
            out.append(piece)
            size += len(piece)
        if size > self.max_output:
            raise self._too_big()
        return b"".join(out)


class _TooBig(Exception):
    pass


class _Sink:
    """The zstd stream writer's output: counts and refuses to grow past the limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self.limit:
            raise _TooBig
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts.clear()
        self.size = 0
        return out


class ZstdDecoder(_Base):
    encoding = "zstd"

    def __init__(self, max_output: int) -> None:
        super().__init__(max_output)
        import zstandard

        self._sink = _Sink(max_output)
        # The stream writer hands output to the sink in pieces of write_size: memory stays bounded.
        self._writer = zstandard.ZstdDecompressor().stream_writer(
            cast("IO[bytes]", self._sink), write_size=min(max_output, 1 << 17), closefd=False
        )

    def _feed(self, data: bytes) -> bytes:
        try:
            self._writer.write(data)
        except _TooBig:
            self._sink.parts.clear()
            raise self._too_big() from None
        return self._sink.take()

    def _flush(self) -> bytes:
        try:
            self._writer.flush()  # type: ignore[no-untyped-call]
        except _TooBig:
            raise self._too_big() from None
        return self._sink.take()


class ChainDecoder(_Base):
    """``Content-Encoding: gzip, br`` means br was applied last: decode in reverse order."""

    def __init__(self, decoders: list[Decoder], max_output: int) -> None:
        super().__init__(max_output)
        self.decoders = decoders
        self.encoding = ", ".join(reversed([d.encoding for d in decoders]))

    def _feed(self, data: bytes) -> bytes:
        for d in self.decoders:
            data = d.feed(data)
        return data

    def _flush(self) -> bytes:
        data = b""
        for d in self.decoders:
            data = (d.feed(data) if data else b"") + d.flush()
        return data


def parse_encodings(content_encoding: str | None) -> list[Encoding]:
    """The codings in the order they were applied; identity dropped. Unknown ones raise."""
    if not content_encoding:
        return []
    out: list[Encoding] = []
    for token in content_encoding.split(","):
        name = token.strip().lower()
        if not name:
            continue
        try:
            enc = _ALIASES.get(name) or Encoding(name)
        except ValueError:
            raise DecodeError(f"unsupported content-encoding {name!r}") from None
        if enc is not Encoding.IDENTITY:
            out.append(enc)
    return out


def _single(enc: Encoding, max_output: int) -> Decoder:
    if enc is Encoding.GZIP or enc is Encoding.DEFLATE:
        return ZlibDecoder(enc, max_output)
    if enc is Encoding.BR:
        return BrotliDecoder(max_output)
    if enc is Encoding.ZSTD:
        return ZstdDecoder(max_output)
    return IdentityDecoder(max_output)


def make_decoder(content_encoding: str | None, max_output: int = DEFAULT_MAX_DECODED) -> Decoder:
    """A fresh incremental decoder for a ``Content-Encoding`` header value.

    Raises ``DecodeError`` for an encoding it does not know (the caller then passes the bytes
    through unobserved and records why).
    """
    encodings = parse_encodings(content_encoding)
    if not encodings:
        return IdentityDecoder(max_output)
    if len(encodings) == 1:
        return _single(encodings[0], max_output)
    return ChainDecoder([_single(e, max_output) for e in reversed(encodings)], max_output)
