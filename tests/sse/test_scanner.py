"""The SSE scanner against every WHATWG rule (docs/design/scanner.md), fed whole, byte by byte and split.

Each rule is one test with an exact expected event list; ``scan_all`` runs the input in every
chunking and asserts they agree before returning the events.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.core.errors import ProxaiError, SseLimitError
from proxai.core.sse import SseEvent, SseScanner, encode_event
from tests.splits import cut_pieces


def _feed(chunks: list[bytes], **kw: int) -> tuple[list[SseEvent], SseScanner]:
    s = SseScanner(**kw)
    out: list[SseEvent] = []
    for c in chunks:
        out += s.feed(c)
    out += s.close()
    return out, s


def _chunkings(data: bytes) -> list[list[bytes]]:
    rng = random.Random(data)
    ways = [[data], [data[i : i + 1] for i in range(len(data))]]
    for _ in range(5):
        cuts = (
            sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 6))))
            if len(data) > 1
            else []
        )
        pieces, prev = [], 0
        for c in [*cuts, len(data)]:
            pieces.append(data[prev:c])
            prev = c
        ways.append(pieces)
    return ways


def scan_all(data: bytes) -> list[tuple[str, str, str]]:
    """Events as (event, data, id), identical for every chunking (raw bytes included)."""
    results = [_feed(ch)[0] for ch in _chunkings(data)]
    for r in results[1:]:
        assert r == results[0]
    return [(e.event, e.data, e.id) for e in results[0]]


# -- line terminators ---------------------------------------------------------------------------


@pytest.mark.parametrize("nl", [b"\n", b"\r", b"\r\n"])
def test_each_line_terminator(nl: bytes) -> None:
    data = b"event: a" + nl + b"data: x" + nl + nl + b"data: y" + nl + nl
    assert scan_all(data) == [("a", "x", ""), ("message", "y", "")]


def test_mixed_terminators_in_one_stream() -> None:
    assert scan_all(b"data: 1\r\n\r\ndata: 2\r\rdata: 3\n\n") == [
        ("message", "1", ""),
        ("message", "2", ""),
        ("message", "3", ""),
    ]


# An empty ``data`` line (``data:`` and ``data: `` alike) is a data line whose value is empty: the
# block is dispatched with empty data (one empty line: "", two: "\n"), whatever the line ends.
_EMPTY_DATA = [
    (b"data:\r\n\r\n", [("message", "")]),
    (b"data: \r\n\r\n", [("message", "")]),
    (b"data:\r\r", [("message", "")]),
    (b"data: \n\n", [("message", "")]),
    (b"data: x\r\ndata:\r\n\r\n", [("message", "x\n")]),
    (b"data:\r\ndata: \r\n\r\n", [("message", "\n")]),
    (b"event: e\r\ndata:\r\n\r\ndata: 1\r\n\r\n", [("e", ""), ("message", "1")]),
    (b"data:\r\n", []),  # no blank line: not dispatched
    (b"data:\r\n\r", [("message", "")]),  # the CR at the end ends its line
]


@pytest.mark.parametrize(("data", "events"), _EMPTY_DATA, ids=[repr(d) for d, _ in _EMPTY_DATA])
def test_an_empty_data_line_as_the_spec_and_the_python_sdks_read_it(
    data: bytes, events: list[tuple[str, str]]
) -> None:
    """The spec's rules, and the two Python SDKs' line decoders (openai's ``_SSELineDecoder``,
    anthropic's ``_iter_chunks``) at every chunking; the Node SDKs' decoders read the same
    (tests/conformance/test_liberal_reads.py runs them on such events in a whole stream)."""
    from anthropic._streaming import SSEDecoder as AnthropicDecoder
    from openai._streaming import SSEDecoder as OpenAIDecoder

    assert [(e, d) for e, d, _ in scan_all(data)] == events
    for chunks in _chunkings(data):
        for decoder in (OpenAIDecoder(), AnthropicDecoder()):
            assert [(e.event or "message", e.data) for e in decoder.iter_bytes(iter(chunks))] == events


def test_crlf_split_across_chunks_is_one_terminator() -> None:
    s = SseScanner()
    assert s.feed(b"data: a\r") == []
    assert s.feed(b"\n\r") == []  # the LF completes the CRLF, not a blank line
    assert [e.data for e in s.feed(b"\n")] == ["a"]
    assert s.close() == []


def test_cr_at_end_of_stream_ends_its_line() -> None:
    s = SseScanner()
    assert s.feed(b"data: a\n\r") == []
    # the pending CR is a blank line at EOF: the block is complete and dispatched
    assert [e.data for e in s.close()] == ["a"]


def test_raw_bytes_are_kept_per_event() -> None:
    data = b": hi\r\nevent: e\r\ndata: 1\r\n\r\ndata: 2\n\n"
    for ch in _chunkings(data):
        events, _ = _feed(ch)
        assert [e.raw for e in events] == [b": hi\r\nevent: e\r\ndata: 1\r\n\r\n", b"data: 2\n\n"]


# -- BOM ----------------------------------------------------------------------------------------


def test_bom_stripped_at_start() -> None:
    assert scan_all(b"\xef\xbb\xbfdata: x\n\n") == [("message", "x", "")]


def test_bom_split_across_chunks() -> None:
    s = SseScanner()
    assert s.feed(b"\xef") == []
    assert s.feed(b"\xbb") == []
    assert s.feed(b"\xbfdata: x\n") == []
    assert [e.data for e in s.feed(b"\n")] == ["x"]


def test_bom_only_at_the_very_start() -> None:
    # A second BOM is content: a field named "\ufeffdata" is unknown, so nothing is dispatched.
    assert scan_all(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n") == []
    assert scan_all(b"data: a\n\n\xef\xbb\xbfdata: b\n\n") == [("message", "a", "")]


def test_lone_bom_prefix_is_content() -> None:
    # Two bytes that look like the start of a BOM, then EOF: they are content (an invalid line).
    s = SseScanner()
    assert s.feed(b"\xef\xbb") == []
    assert s.close() == []


# -- fields -------------------------------------------------------------------------------------


def test_comments_are_ignored() -> None:
    assert scan_all(b": ping\n:\ndata: x\n: between\n\n") == [("message", "x", "")]


def test_field_without_colon_has_empty_value() -> None:
    # "data" alone appends an empty line to the data buffer.
    assert scan_all(b"data\n\n") == [("message", "", "")]
    assert scan_all(b"data\ndata\n\n") == [("message", "\n", "")]
    assert scan_all(b"event\ndata: x\n\n") == [("message", "x", "")]


def test_only_one_leading_space_removed() -> None:
    assert scan_all(b"data:  two\n\n") == [("message", " two", "")]
    assert scan_all(b"data:none\n\n") == [("message", "none", "")]
    assert scan_all(b"data: \n\n") == [("message", "", "")]


def test_data_lines_joined_with_newline() -> None:
    assert scan_all(b"data: a\ndata: b\ndata:\ndata: c\n\n") == [("message", "a\nb\n\nc", "")]


def test_block_without_data_is_not_dispatched() -> None:
    assert scan_all(b"event: ping\n\nid: 4\n\nretry: 10\n\n") == []


def test_event_type_resets_after_dispatch() -> None:
    assert scan_all(b"event: a\ndata: 1\n\ndata: 2\n\n") == [("a", "1", ""), ("message", "2", "")]


def test_event_type_of_undispatched_block_does_not_leak() -> None:
    assert scan_all(b"event: a\n\ndata: 2\n\n") == [("message", "2", "")]


def test_last_event_id_persists() -> None:
    assert scan_all(b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n") == [
        ("message", "a", "1"),
        ("message", "b", "1"),
        ("message", "c", ""),
    ]


def test_id_with_nul_is_ignored() -> None:
    assert scan_all(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n") == [
        ("message", "a", "1"),
        ("message", "b", "1"),
    ]


def test_last_event_id_property() -> None:
    s = SseScanner()
    s.feed(b"id: 9\n\n")
    assert s.last_event_id == "9"


@pytest.mark.parametrize(
    ("line", "retry"),
    [(b"retry: 3000", 3000), (b"retry:0", 0), (b"retry: 30s", None), (b"retry: -1", None), (b"retry:", None)],
)
def test_retry_takes_ascii_digits_only(line: bytes, retry: int | None) -> None:
    _, s = _feed([line + b"\n\n"])
    assert s.retry == retry


def test_retry_rejects_non_ascii_digits() -> None:
    _, s = _feed([b"retry: \xef\xbc\x93\n\n"])  # U+FF13 FULLWIDTH DIGIT THREE
    assert s.retry is None


def test_unknown_fields_ignored() -> None:
    assert scan_all(b"foo: bar\ndata: x\nDATA: y\n\n") == [("message", "x", "")]


def test_invalid_utf8_replaced() -> None:
    assert scan_all(b"data: a\xffb\n\n") == [("message", "a\ufffdb", "")]
    assert scan_all(b"event: \xc3\ndata: x\n\n") == [("\ufffd", "x", "")]


def test_multibyte_char_split_across_chunks() -> None:
    s = SseScanner()
    raw = "data: 日本\n\n".encode()
    out: list[SseEvent] = []
    for i in range(len(raw)):
        out += s.feed(raw[i : i + 1])
    assert [e.data for e in out] == ["日本"]


def test_unfinished_block_at_eof_not_dispatched() -> None:
    assert scan_all(b"data: a\n\ndata: b\n") == [("message", "a", "")]
    assert scan_all(b"data: a\n\ndata: b") == [("message", "a", "")]


def test_close_resets_but_keeps_last_id() -> None:
    s = SseScanner()
    s.feed(b"id: 5\nevent: x\ndata: partial\n")
    assert s.close() == []
    assert s.last_event_id == "5"


# -- limits -------------------------------------------------------------------------------------


def test_line_limit_raises_typed_error_and_stays_errored() -> None:
    s = SseScanner(max_line=16, max_event=1024)
    with pytest.raises(SseLimitError) as exc:
        s.feed(b"data: " + b"x" * 20 + b"\n\n")
    assert exc.value.what == "line"
    with pytest.raises(SseLimitError):
        s.feed(b"data: ok\n\n")
    with pytest.raises(SseLimitError):
        s.close()


def test_line_limit_bytewise_raises_before_the_line_ends() -> None:
    s = SseScanner(max_line=16, max_event=1024)
    with pytest.raises(SseLimitError):
        for _ in range(1000):
            s.feed(b"x")
    # memory stayed bounded: the partial line never grew past the limit
    assert s._line_size <= 16 + 1


def test_event_limit_counts_data_lines() -> None:
    s = SseScanner(max_line=100, max_event=50)
    with pytest.raises(SseLimitError) as exc:
        s.feed(b"data: 0123456789\n" * 10 + b"\n")
    assert exc.value.what == "event"


def test_event_limit_counts_comment_only_blocks() -> None:
    s = SseScanner(max_line=100, max_event=50)
    with pytest.raises(SseLimitError):
        for _ in range(10):
            s.feed(b": keepalive padding\n")


def test_events_before_the_limit_are_delivered_on_the_exception() -> None:
    data = b"data: a\n\ndata: b\n\ndata: " + b"x" * 40 + b"\n\n"
    for ch in _chunkings(data):
        s = SseScanner(max_line=20, max_event=1000)
        got: list[str] = []
        with pytest.raises(SseLimitError):
            for c in ch:
                try:
                    got += [e.data for e in s.feed(c)]
                except SseLimitError as exc:
                    got += [e.data for e in exc.events]
                    raise
        assert got == ["a", "b"]


def test_reraised_limit_error_carries_no_stale_events() -> None:
    s = SseScanner(max_line=10, max_event=1000)
    with pytest.raises(SseLimitError) as first:
        s.feed(b"data: a\n\ndata: " + b"x" * 20)
    assert [e.data for e in first.value.events] == ["a"]
    with pytest.raises(SseLimitError) as again:
        s.feed(b"\n\n")
    assert again.value.events == []


def test_limit_exactly_at_the_bound_passes() -> None:
    s = SseScanner(max_line=8, max_event=1000)
    assert [e.data for e in s.feed(b"data: ab\n\n")] == ["ab"]  # "data: ab" is 8 bytes


# -- encoder ------------------------------------------------------------------------------------


def test_encode_event_round_trips() -> None:
    raw = encode_event('{"a":1}', event="x", id="7") + encode_event("l1\nl2")
    assert scan_all(raw) == [("x", '{"a":1}', "7"), ("message", "l1\nl2", "7")]


# -- hypothesis -----------------------------------------------------------------------------------

_ALPHABET = st.sampled_from(
    [
        *(b"data: ", b"data:", b"event: x", b"id: 1", b"id\x00", b"retry: 5", b": c", b"\n", b"\r", b"\r\n"),
        *(b"\xef\xbb\xbf", b"\xff", b"a", b" ", "é".encode(), b"{}", b"data"),
    ]
)


@st.composite
def _sse_like(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()):
        return draw(st.binary(max_size=300))
    return b"".join(draw(st.lists(_ALPHABET, max_size=60)))


def _cuts(data: bytes) -> st.SearchStrategy[list[bytes]]:
    return cut_pieces(data, max_cuts=12)


def _outcome(
    chunks: list[bytes], max_line: int, max_event: int
) -> tuple[list[SseEvent], str | None, int | None]:
    s = SseScanner(max_line=max_line, max_event=max_event)
    out: list[SseEvent] = []
    try:
        for c in chunks:
            out += s.feed(c)
        out += s.close()
    except SseLimitError as exc:
        out += exc.events
        return out, exc.what, s.retry
    return out, None, s.retry


@settings(max_examples=300, deadline=None)
@given(data=st.data(), raw=_sse_like())
def test_any_chunking_equals_whole(data: st.DataObject, raw: bytes) -> None:
    pieces = data.draw(_cuts(raw))
    assert _outcome(pieces, 1 << 20, 1 << 20) == _outcome([raw], 1 << 20, 1 << 20)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), raw=_sse_like(), max_line=st.integers(1, 40), max_event=st.integers(1, 80))
def test_limits_are_chunking_independent_and_typed(
    data: st.DataObject, raw: bytes, max_line: int, max_event: int
) -> None:
    pieces = data.draw(_cuts(raw))
    whole_events, whole_err, _ = _outcome([raw], max_line, max_event)
    split_events, split_err, _ = _outcome(pieces, max_line, max_event)
    # Whether a limit is crossed never depends on chunking, and neither do the events before it.
    assert (split_err is None) == (whole_err is None)
    assert split_events == whole_events


@pytest.mark.parametrize("crlf", [b"\r\n", b"\r"])
def test_a_blank_line_cr_at_the_end_of_a_read_is_not_counted_against_the_event_limit(crlf: bytes) -> None:
    # The block's one line is exactly ``max_event`` bytes with its CRLF; the blank line that ends
    # it is never checked when it arrives whole, so a read ending on its CR must not trip the
    # limit either (hypothesis found this cut, behind a split BOM).
    raw = b"\xef\xbb\xbf\xef\xbb\xbfdata: \r\n" + crlf
    cuts = [b"", b"\xef", raw[1:-1] if crlf == b"\r\n" else raw[1:], b"\n"]
    assert b"".join(cuts) == raw + (b"\n" if crlf == b"\r" else b"")
    assert _outcome([raw], 9, 11) == ([], None, None)
    assert _outcome(cuts, 9, 11) == ([], None, None)
    # One byte more in the line is over the limit however the reads fall.
    longer = raw.replace(b"data: ", b"data:  ")
    assert _outcome([longer], 10, 11)[1] == "event"
    assert _outcome([longer[:-1], longer[-1:]], 10, 11)[1] == "event"


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=2000))
def test_arbitrary_bytes_raise_only_typed_errors(raw: bytes) -> None:
    s = SseScanner(max_line=64, max_event=256)
    try:
        for i in range(0, len(raw), 7):
            s.feed(raw[i : i + 7])
        s.close()
    except ProxaiError as exc:
        assert isinstance(exc, SseLimitError)
    # bounded memory: buffered bytes never exceed the limits by more than one chunk
    assert s._line_size <= 64 + 7
    assert s._block_size + s._data_size <= 256 + 64 + 7


_RETRIES = [b"5", b"+5", b"-1", b" 5", b"5 ", b"1_0", b"\xd9\xa5", b"x", b"5s", b"1.5", b"0x1", b"", b"+"]


@pytest.mark.parametrize("value", _RETRIES, ids=repr)
def test_a_retry_block_is_marked_where_openai_python_dispatches_it(value: bytes) -> None:
    """A block of a ``retry:`` line alone: openai-python's SSE decoder keeps a value ``int()`` reads
    (``+5``, ``-1``, ``1_0``, an Arabic-Indic digit) and dispatches the block with empty data, which
    it fails to parse; the scanner marks exactly those blocks (``dataless``), and takes a retry
    time from ASCII digits alone, as the standard says."""
    from openai._streaming import SSEDecoder

    block = b"retry: " + value + b"\n\n"
    dispatched = [e for e in SSEDecoder().iter_bytes(iter([block]))]
    _, s = _feed([block])
    assert [(i, named) for i, named in s.dataless] == ([(0, False)] if dispatched else [])
    assert s.retry == (5 if value == b"5" else None)
    assert (value in (b"5", b"+5", b"-1", b" 5", b"5 ", b"1_0", b"\xd9\xa5")) == bool(dispatched)


@pytest.mark.parametrize(
    ("stream", "bom"),
    [
        (b"\xef\xbb\xbfdata: 1\n\n", b"data"),
        (b"\xef\xbb\xbfevent: x\ndata: 1\n\n", b"event"),
        (b"\xef\xbb\xbf: c\n\ndata: 1\n\n", b""),
        (b"\xef\xbb\xbfdata\n\n", b"data"),
        (b"\xef\xbb\xbfdat", b"dat"),  # a first line that never ends
        (b"data: 1\n\n", None),
        (b"\xef\xbbdata: 1\n\n", None),  # no whole BOM: content
    ],
)
def test_the_first_field_after_a_bom_is_kept_whatever_the_cuts(stream: bytes, bom: bytes | None) -> None:
    """``bom``: the field name of the line the BOM came before (the Python SDKs lose that line),
    the same for any cut of the stream; the events are the standard's (the BOM stripped)."""
    whole, s = _feed([stream])
    assert s.bom == bom
    for cut in range(1, len(stream)):
        events, s = _feed([stream[:cut], stream[cut:]])
        assert (s.bom, [e.data for e in events]) == (bom, [e.data for e in whole])
    events, s = _feed([stream[i : i + 1] for i in range(len(stream))])
    assert (s.bom, [e.data for e in events]) == (bom, [e.data for e in whole])
