"""The Responses buffers of stream translation bound real memory.

``max_buffer`` (the snapshot kept for ``response.completed``, the text kept for ``.done`` checks)
counted characters while one Python string was kept per delta: with small deltas (real tokens are
1-12 characters) memory was about 16x the count (bench: 200 MB of Anthropic deltas translated to
Responses grew the process by 176 MB and never hit the 64 MiB limit). Now each part's text is one
bytearray, counted in the bytes it really holds (``proxai.stream.textparts``):
memory stays within a small multiple of ``max_buffer``, or the stream fails with ``SseLimitError``.
"""

from __future__ import annotations

import sys
import tracemalloc

import pytest
from bench import streams
from bench.upstream import _DELTA_START, blocks
from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.core.errors import SseLimitError
from proxai.core.model import Protocol
from proxai.core.sse import SseScanner
from proxai.pipeline.flow import make_stream_translator
from proxai.stream import textparts

MAX_BUFFER = 1024 * 1024


@pytest.mark.parametrize(
    ("upstream", "client"),
    [
        ("anthropic_messages", "openai_responses"),
        ("openai_chat", "openai_responses"),
        ("openai_responses", "openai_chat"),
    ],
)
def test_responses_buffers_bound_memory(upstream: str, client: str) -> None:
    bl = blocks(upstream, 30000)
    start = _DELTA_START[upstream]
    head, middle = b"".join(bl[:start]), b"".join(bl[start : start + 1000])
    tr = make_stream_translator(Protocol(upstream), Protocol(client), max_buffer=MAX_BUFFER)
    sc = SseScanner()
    tr.feed(sc.feed(head))
    tracemalloc.start()
    try:
        for _ in range(400):  # about 40 MB of small deltas
            for c in streams.chunks(middle, 16384):
                tr.feed(sc.feed(c))
    except SseLimitError:
        pass  # the limit was hit: fine, as long as memory stayed bounded until then
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 4 * MAX_BUFFER, f"kept {peak / 1e6:.1f} MB with max_buffer = {MAX_BUFFER / 1e6:.1f} MB"


_QUOTES = st.text(alphabet='"\\ax\u00e9\U0001f642\n', max_size=6)  # what makes ``""`` ambiguous


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.one_of(st.text(max_size=12), _QUOTES), max_size=200))
def test_encoded_text_is_the_text_of_the_kept_json_strings(pieces: list[str]) -> None:
    """``encoded_text`` over ``dumps`` outputs one after another: the joined text, whether the
    pairs of quotes are all boundaries (dropped at once) or some are ambiguous (read piece by
    piece), with empty pieces, escaped quotes and backslashes at their ends."""
    import orjson

    encoded = bytearray()
    for i, p in enumerate(pieces):
        encoded += orjson.dumps(p)
        assert textparts.encoded_text(encoded) == "".join(pieces[: i + 1])
    assert textparts.encoded_text(bytes(encoded)) == "".join(pieces)


def test_encoded_text_reads_both_ways() -> None:
    """The two readings of ``encoded_text``, each on a case that takes it."""
    import orjson

    plain = [b'"a"', b'""', b'"\\u00e9\\n"', b'"x\\"y"']
    assert textparts.encoded_text(b"".join(plain)) == "a" + "\u00e9\n" + 'x"y'
    for ends in (['x"', "y"], ["x\\", "y"], ["", 'x\\"', "", '"y']):
        enc = b"".join(orjson.dumps(p) for p in ends)
        assert b'\\""' in enc
        assert textparts.encoded_text(enc) == "".join(ends)
    assert textparts.encoded_text(b"") == textparts.encoded_text(b'""""') == ""


@settings(max_examples=100, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(
            st.text(alphabet=st.characters(max_codepoint=127), max_size=12), st.text(max_size=300), _QUOTES
        ),
        max_size=200,
    )
)
def test_responses_writer_keeps_the_text_and_counts_more_than_it_holds(pieces: list[str]) -> None:
    """The Responses writer keeps each delta as its event carries it (JSON-encoded, one
    ``bytearray`` per item): the text it gives back is the deltas', and the bytes it counts
    against ``max_buffer`` bound the bytes its items really hold."""
    from proxai.translate.stream.to_responses.writer import ResponsesWriter

    w = ResponsesWriter()
    w.start("resp_1", "m", None)
    w.block_start(0, "text")
    w.block_start(1, "tool", id="call_1", name="f")
    for i, p in enumerate(pieces):
        w.delta(i % 2, "text" if i % 2 == 0 else "args", p)
        held = sum(sys.getsizeof(item.encoded) for item in w.st.items)
        assert held <= w.kept * 9 / 8
    assert w.by_key[0].text() == "".join(pieces[0::2])
    assert w.by_key[1].text() == "".join(pieces[1::2])


_BLOCKS = ("text", "thinking", "function", "custom")


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(("start", "delta", "delta", "delta", "signature")),
            st.integers(min_value=0, max_value=3),
            st.one_of(st.text(max_size=12), _QUOTES),
        ),
        max_size=120,
    ),
    max_buffer=st.integers(min_value=200, max_value=2000),
)
def test_responses_writer_fails_at_the_delta_that_passes_its_limit(
    steps: list[tuple[str, int, str]], max_buffer: int
) -> None:
    """Whichever item a delta goes to (the one started last, another one, a held custom call) and
    whatever else is kept (signatures, a constant per item), the writer counts exactly the bytes
    kept: ``kept`` is their sum, and ``SseLimitError`` comes at the first delta that takes the
    sum past the limit, not before."""
    import orjson

    from proxai.stream.textparts import ENCODED
    from proxai.translate.call_shapes import CallShape
    from proxai.translate.stream.to_responses.writer import ResponsesWriter

    w = ResponsesWriter(max_buffer=max_buffer, call_shapes={"patch": CallShape("custom_tool_call", "patch")})
    limit = max_buffer - max_buffer // 9
    w.start("resp_1", "m", None)
    started: dict[int, str] = {}
    expected = 0
    kept: dict[int, list[str]] = {}
    for op, key, text in steps:
        if op == "start" or key not in started:
            if key in started:
                continue
            block = _BLOCKS[key]
            started[key] = block
            kept[key] = []
            expected += ENCODED
            if block in ("function", "custom"):
                w.block_start(key, "tool", id=f"call_{key}", name="f" if block == "function" else "patch")
            else:
                w.block_start(key, block)  # type: ignore[arg-type]
            assert w.kept == expected
            continue
        if op == "signature":
            if started[key] != "thinking":
                continue
            w.delta(key, "signature", text)
            expected += len(text)
        else:
            kind = {"text": "text", "thinking": "thinking"}.get(started[key], "args")
            expected += len(orjson.dumps(text))
            if expected > limit:
                with pytest.raises(SseLimitError):
                    w.delta(key, kind, text)  # type: ignore[arg-type]
                return
            w.delta(key, kind, text)  # type: ignore[arg-type]
            kept[key].append(text)
        assert w.kept == expected
    for key, texts in kept.items():
        assert w.by_key[key].text() == "".join(texts)
