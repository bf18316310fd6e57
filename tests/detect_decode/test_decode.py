"""decode.py: incremental, bounded content decoders; chunking never changes the output."""

from __future__ import annotations

import gzip
import random
import zlib

import brotli
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.core.decode import make_decoder, parse_encodings
from proxai.core.errors import DecodeError
from tests.splits import random_pieces

_EVENT = b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"tok%d"}}\n\n'
PLAIN = b"".join(_EVENT % i for i in range(400))


def _raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


ENCODERS = {
    "gzip": gzip.compress,
    "x-gzip": gzip.compress,
    "deflate": zlib.compress,
    "deflate-raw": _raw_deflate,
    "br": brotli.compress,
    "zstd": lambda d: zstandard.ZstdCompressor().compress(d),
}


def _header(name: str) -> str:
    return "deflate" if name == "deflate-raw" else name


def _decode_in(encoding: str | None, pieces: list[bytes], max_output: int = 1 << 26) -> bytes:
    d = make_decoder(encoding, max_output)
    return b"".join(d.feed(p) for p in pieces) + d.flush()


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_whole_bytewise_random(name: str) -> None:
    enc = ENCODERS[name](PLAIN)
    assert _decode_in(_header(name), [enc]) == PLAIN
    assert _decode_in(_header(name), [enc[i : i + 1] for i in range(len(enc))]) == PLAIN
    rng = random.Random(name)
    for _ in range(5):
        assert _decode_in(_header(name), random_pieces(enc, rng)) == PLAIN


@pytest.mark.parametrize("encoding", [None, "", "identity", "IDENTITY"])
def test_identity_passthrough(encoding: str | None) -> None:
    d = make_decoder(encoding, 10)
    assert d.feed(b"abc") == b"abc"
    assert d.flush() == b""


def test_gzip_multi_member() -> None:
    enc = gzip.compress(b"first ") + gzip.compress(b"second")
    assert _decode_in("gzip", [enc[i : i + 1] for i in range(len(enc))]) == b"first second"


def test_chained_encodings_decode_in_reverse() -> None:
    enc = brotli.compress(gzip.compress(PLAIN))  # gzip applied first, then br
    assert parse_encodings("gzip, br") == ["gzip", "br"]
    assert _decode_in("gzip, br", random_pieces(enc, random.Random(1))) == PLAIN


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_bomb_is_bounded(name: str) -> None:
    bomb = ENCODERS[name](b"\0" * (4 << 20))
    d = make_decoder(_header(name), 1 << 20)
    with pytest.raises(DecodeError, match="limit"):
        d.feed(bomb)
    with pytest.raises(DecodeError):  # stays errored
        d.feed(b"x")


@pytest.mark.parametrize("name", ["gzip", "br", "zstd"])
def test_garbage_raises_decode_error(name: str) -> None:
    d = make_decoder(name, 1 << 20)
    with pytest.raises(DecodeError):
        d.feed(b"this is not compressed at all, not even close" * 3)
        d.flush()


def test_unknown_encoding() -> None:
    with pytest.raises(DecodeError, match="unsupported"):
        make_decoder("compress", 100)


def test_truncated_gzip_gives_what_arrived() -> None:
    enc = gzip.compress(PLAIN)
    d = make_decoder("gzip", 1 << 26)
    got = d.feed(enc[: len(enc) // 2]) + d.flush()
    assert PLAIN.startswith(got) and len(got) > 0


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(sorted(ENCODERS)),
    st.binary(max_size=2000),
    st.lists(st.integers(min_value=1, max_value=50), max_size=40),
)
def test_chunking_never_changes_output(name: str, data: bytes, cuts: list[int]) -> None:
    enc = ENCODERS[name](data)
    pieces, i = [], 0
    for c in cuts:
        pieces.append(enc[i : i + c])
        i += c
    pieces.append(enc[i:])
    assert _decode_in(_header(name), pieces) == data


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["gzip", "deflate", "br", "zstd"]), st.binary(max_size=300))
def test_arbitrary_bytes_raise_only_decode_error(encoding: str, data: bytes) -> None:
    d = make_decoder(encoding, 1 << 16)
    try:
        d.feed(data)
        d.flush()
    except DecodeError:
        pass
