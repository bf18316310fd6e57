"""The streamed scrub of the operator's key (``proxai/pipeline/scrub.py``): at every chunking the client gets
exactly ``whole.replace(key, [REDACTED])``, holding back fewer than ``len(key)`` bytes; and when
the key is not there, exactly the bytes that came."""

from __future__ import annotations

import gzip
import itertools
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.core.decode import make_decoder
from proxai.pipeline.scrub import KeyScrub, ScrubbingStream
from proxai.safety.redact import REDACTED_B
from tests.splits import cut_pieces, random_pieces

KEY = b"sk-ant-api03-operatorKEY0123456789"
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def _scrubbed(pieces: list[bytes], key: bytes = KEY) -> bytes:
    scrub = KeyScrub(key, REDACTED_B)
    out = []
    for p in pieces:
        out.append(scrub.feed(p))
        assert scrub.held < len(key)
    out.append(scrub.flush())
    assert scrub.held == 0
    return b"".join(out)


def _event(text: bytes) -> bytes:
    return b'event: error\ndata: {"type":"error","error":{"message":"Incorrect API key: ' + text + b'"}}\n\n'


STREAMS = [
    KEY,
    _event(KEY),
    _event(KEY + KEY),  # two, back to back
    _event(KEY[:-1]) + _event(KEY),  # a near miss, then the key
    b"data: " + KEY[:10] + b"\n\n" + b"data: " + KEY + b" and " + KEY[:5],  # ends on a prefix
    b"s" * 40 + KEY + b"sk-" * 5,  # many starts of the key
]


def test_the_key_split_at_every_boundary_into_two_and_three_pieces() -> None:
    for data in STREAMS:
        want = data.replace(KEY, REDACTED_B)
        assert KEY not in want
        for i in range(len(data) + 1):
            assert _scrubbed([data[:i], data[i:]]) == want, (data, i)
        # every pair of cuts inside and around the (first) key
        start = data.find(KEY)
        for i, j in itertools.combinations(
            range(max(0, start - 2), min(len(data), start + len(KEY) + 2) + 1), 2
        ):
            assert _scrubbed([data[:i], data[i:j], data[j:]]) == want, (data, i, j)
        assert _scrubbed([data[k : k + 1] for k in range(len(data))]) == want  # byte by byte


def test_self_overlapping_keys_match_bytes_replace() -> None:
    # keys whose prefix repeats inside them: a failed match must not swallow the next start
    for key in (b"abab-key-abab", b"aaaaaaaaa", b"sk-sk-sk-x"):
        for data in (b"abababab-key-abab-key-abab", b"a" * 30, b"sk-sk-sk-sk-x sk-sk-sk-x", key * 3):
            want = data.replace(key, REDACTED_B)
            for i, j in itertools.combinations(range(len(data) + 1), 2):
                assert _scrubbed([data[:i], data[i:j], data[j:]], key) == want, (key, data, i, j)


def test_a_replacement_that_ends_like_the_key_begins_is_not_matched_again() -> None:
    key = b"]secret-value"
    data = b"x]secret-value" + b"secret-value"
    for i in range(len(data) + 1):
        assert _scrubbed([data[:i], data[i:]], key) == b"x" + REDACTED_B + b"secret-value"


@settings(max_examples=200)
@given(
    st.data(),
    st.lists(
        st.sampled_from([KEY, KEY[:7], KEY[3:], b"s", b"sk-", b"\n\n", b"data: x", b"\xff\x00"]), max_size=12
    ),
)
def test_any_chunking_of_any_stream_is_bytes_replace(data: st.DataObject, parts: list[bytes]) -> None:
    whole = b"".join(parts)
    pieces = data.draw(cut_pieces(whole))
    assert _scrubbed(pieces) == whole.replace(KEY, REDACTED_B)


def test_without_the_key_every_chunk_goes_out_as_it_came() -> None:
    """The equivalence: on every real recorded stream, at random chunkings, the client's bytes are
    the upstream's; a chunk is sent whole, as the same object, unless bytes that could start the key
    are held back at its end (they then lead the next piece)."""
    files = sorted(REAL.glob("*/*.sse"))
    assert len(files) > 100
    rng = random.Random(18)
    rechunked = 0
    for path in files:
        data = path.read_bytes()
        assert KEY not in data
        pieces = random_pieces(data, rng, max_size=rng.choice([16, 512, 4096]))
        stream = ScrubbingStream(lambda c: [c] if c else [], KEY, REDACTED_B)
        got = []
        for p in pieces:
            held = stream.scrub.held
            out = stream(p)
            if held == 0 and stream.scrub.held == 0:
                assert len(out) == 1 and out[0] is p
            else:
                rechunked += 1
            got.extend(out)
        got.extend(stream(b""))
        assert b"".join(got) == data, path.name
    assert rechunked  # the holding path ran too (chunks that end on "s" or "sk-")


def test_the_same_object_goes_out_when_nothing_is_held() -> None:
    scrub = KeyScrub(KEY, REDACTED_B)
    chunk = b'data: {"type":"ping"}\n\n'
    assert scrub.feed(chunk) is chunk


def test_the_wrapper_scrubs_lists_and_ends_with_what_is_held() -> None:
    upstream = [_event(KEY[:9]), KEY[9:] + b'"}}\n\n', b"data: " + KEY[:4]]
    calls: list[bytes] = []

    def inner(chunk: bytes) -> list[bytes]:
        calls.append(chunk)
        return [chunk[:3], chunk[3:]] if chunk else [b"tail"]

    stream = ScrubbingStream(inner, KEY, REDACTED_B)
    out = [b for c in upstream for b in stream(c)]
    assert all(out)  # never b"" mid-stream
    end = stream(b"")
    assert calls == [*upstream, b""]
    assert b"".join(out) + b"".join(end) == (b"".join(upstream) + b"tail").replace(KEY, REDACTED_B)
    assert b"".join(end) == KEY[:4] + b"tail"  # what was held, then the end's own bytes


def test_a_compressed_stream_is_decoded_then_scrubbed() -> None:
    plain = _event(KEY) * 3
    packed = gzip.compress(plain)
    stream = ScrubbingStream(
        lambda c: [c] if c else [], KEY, REDACTED_B, decoder=make_decoder("gzip", 1 << 20)
    )
    out = [b for i in range(0, len(packed), 5) for b in stream(packed[i : i + 5])]
    out += stream(b"")
    assert b"".join(out) == plain.replace(KEY, REDACTED_B)
    assert stream.failed is None


def test_an_undecodable_stream_sends_nothing_more() -> None:
    stream = ScrubbingStream(
        lambda c: [c] if c else [], KEY, REDACTED_B, decoder=make_decoder("gzip", 1 << 20)
    )
    assert stream(b"not gzip at all " + KEY) == []
    assert stream(b"") == []
    assert stream.failed
