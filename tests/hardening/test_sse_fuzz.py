"""Fuzzing the SSE scanner against an independent whole-stream reference.

The reference below follows the WHATWG event-stream interpretation rules directly on the
whole byte string; the scanner must give exactly the same events (type, data, id, raw bytes),
``retry`` and comment lines (each at its place among the events) for any input and any chunking,
and must raise nothing but ``SseLimitError``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.core.errors import ProxaiError, SseLimitError
from proxai.core.sse import Payloads, SseEvent, SseScanner, iter_payloads

_BOM = b"\xef\xbb\xbf"
_TERM = re.compile(rb"\r\n|\r|\n")


Comment = tuple[int, bytes]  # (the number of events before it in the stream, the line)


def reference(stream: bytes, comments: list[Comment] | None = None) -> tuple[list[SseEvent], int | None, int]:
    """Events, retry and the longest line (terminated or not) of ``stream``; its comment lines
    into ``comments``."""
    if stream.startswith(_BOM):
        stream = stream[3:]
    events: list[SseEvent] = []
    data: list[str] = []
    etype, last_id, retry = "", "", None
    pos = block_start = longest = 0
    for m in _TERM.finditer(stream):
        line = stream[pos : m.start()]
        longest = max(longest, len(line))
        pos = m.end()
        if not line:
            if data:
                events.append(SseEvent(etype or "message", "\n".join(data), last_id, stream[block_start:pos]))
            data, etype, block_start = [], "", pos
            continue
        if line.startswith(b":"):
            if comments is not None:
                comments.append((len(events), line))
            continue
        field, sep, value = line.partition(b":")
        if sep and value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value.decode("utf-8", "replace"))
        elif field == b"event":
            etype = value.decode("utf-8", "replace")
        elif field == b"id" and b"\x00" not in value:
            last_id = value.decode("utf-8", "replace")
        elif field == b"retry" and value.isdigit() and value.isascii():
            retry = int(value)
    longest = max(longest, len(stream) - pos)
    return events, retry, longest


_PIECES = [
    b"data: ", b"data:", b"data", b"event: ", b"event:x", b"id: 7", b"id:a\x00b", b"retry: 15", b"retry:1x",
    b": comment", b":", b"\n", b"\n", b"\r", b"\r\n", b"\n\n", b"x", b'{"a":1}', b"[DONE]", _BOM, b"\xef",
    b"\xff\xfe", "é日🙂".encode(), b" ", b"foo: bar",
]  # fmt: skip

sse_like = st.lists(st.one_of(st.sampled_from(_PIECES), st.binary(max_size=8)), max_size=60).map(b"".join)
any_bytes = st.one_of(sse_like, st.binary(max_size=300))


def _taken(sc: SseScanner, seen: int, into: list[Comment]) -> None:
    """The comment lines the scanner kept in its last call (whose list began after ``seen``
    events), one entry per line, placed in the stream; the scanner's list emptied."""
    assert sc.comments is not None
    into += [(seen + i, line) for i, lines in sc.comments for line in lines]
    sc.comments.clear()


def run_scanner(
    stream: bytes, cuts: list[int], max_line: int, max_event: int, comments: list[Comment] | None = None
) -> tuple[list[SseEvent], int | None]:
    sc = SseScanner(max_line=max_line, max_event=max_event)
    if comments is not None:
        sc.comments = []
    out: list[SseEvent] = []
    prev = 0
    for c in [*sorted(set(cuts)), len(stream)]:
        seen = len(out)
        out += sc.feed(stream[prev:c])
        if comments is not None:
            _taken(sc, seen, comments)
        prev = c
    seen = len(out)
    out += sc.close()
    if comments is not None:
        _taken(sc, seen, comments)
        assert sc.comment_lines == len(comments)
    return out, sc.retry


def cut_points(stream: bytes, data: st.DataObject) -> list[int]:
    if not stream:
        return []
    return data.draw(st.lists(st.integers(0, len(stream)), max_size=12))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(stream=any_bytes, data=st.data())
def test_scanner_equals_reference_at_any_chunking(stream: bytes, data: st.DataObject) -> None:
    comments: list[Comment] = []
    expected, retry, _ = reference(stream, comments)
    got_comments: list[Comment] = []
    got, got_retry = run_scanner(stream, cut_points(stream, data), 1 << 20, 1 << 21, got_comments)
    assert got == expected
    assert got_retry == retry
    assert got_comments == comments


# comment lines in a block of their own, among an event's lines, CR-terminated, and at the end
_COMMENTED = b": keep-alive\n\ndata: x\n: in a block\ndata: y\n\n:\r\r\ndata: z\n\n: last\n"


def test_scanner_byte_by_byte_equals_reference() -> None:
    stream = b"".join(_PIECES) * 3 + b"\n\ndata: end\r\n\r\n" + _COMMENTED
    comments: list[Comment] = []
    expected, _, _ = reference(stream, comments)
    assert expected  # the sample does dispatch events
    assert [line for _, line in comments] == [b": keep-alive", b": in a block", b":", b": last"]
    got_comments: list[Comment] = []
    assert run_scanner(stream, list(range(len(stream))), 1 << 20, 1 << 21, got_comments)[0] == expected
    assert got_comments == comments
    # a scanner whose reader asks for no comment lines counts them and keeps none
    sc = SseScanner()
    sc.feed(stream)
    sc.close()
    assert (sc.comment_lines, sc.comments) == (4, None)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(stream=any_bytes, data=st.data(), max_line=st.integers(1, 40), max_event=st.integers(1, 80))
def test_scanner_limits_raise_only_typed_errors(
    stream: bytes, data: st.DataObject, max_line: int, max_event: int
) -> None:
    expected, _, longest = reference(stream)
    try:
        got, _ = run_scanner(stream, cut_points(stream, data), max_line, max_event)
    except SseLimitError as exc:
        assert exc.what in ("line", "event")
        return
    assert longest <= max_line  # a line past the limit never goes unnoticed
    assert got == expected


def test_scanner_stays_errored() -> None:
    sc = SseScanner(max_line=10)
    try:
        sc.feed(b"data: " + b"x" * 20)
    except SseLimitError:
        pass
    else:  # pragma: no cover
        raise AssertionError("no limit error")
    calls: list[Callable[[], list[SseEvent]]] = [lambda: sc.feed(b"\n\n"), sc.close]
    for call in calls:
        try:
            call()
        except ProxaiError as exc:
            assert isinstance(exc, SseLimitError)
        else:  # pragma: no cover
            raise AssertionError("the scanner recovered from an error")


def test_comment_flood_is_bounded() -> None:
    """A block of comment lines that never ends must hit the event limit, whatever the chunking."""
    for chunk in (b": keepalive\n" * 100, b": keepalive\r\n" * 100):
        sc = SseScanner(max_line=64, max_event=1000)
        try:
            for _ in range(20):
                sc.feed(chunk)
        except SseLimitError as exc:
            assert exc.what == "event"
        else:  # pragma: no cover
            raise AssertionError("unbounded comment block")


# -- the payload path (``feed_payloads``) against ``feed`` -------------------------------------

_PLAIN = [
    b'data: {"a":1}\n\n', b"event: delta\ndata: x\n\n", b"event: \ndata: \n\n", b"data: [DONE]\n\n",
    'event: é\ndata: "日🙂"\n\n'.encode(), b"data: \xff\xfe\n\n", b"event: e\xffv\ndata: 1\n\n",
    b": OPENROUTER PROCESSING\n\n", b"data: a\n: between\n\n", b": x\n",
]  # fmt: skip
# Mostly the fast path's block shapes, with everything else mixed in, so that the scanner keeps
# switching between its fast path and the general rules.
_sized_plain = st.builds(
    lambda event, n: (b"event: " + event + b"\n" if event else b"") + b"data: " + b"y" * n + b"\n\n",
    st.sampled_from([b"", b"e", b"content_block_delta"]),
    st.integers(0, 90),
)  # blocks around the limits of the limit tests
plain_heavy = st.lists(
    st.one_of(st.sampled_from(_PLAIN), _sized_plain, st.sampled_from(_PIECES)), max_size=40
).map(b"".join)


def _text(data: bytes | str) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def _texts(payloads: Payloads) -> list[tuple[str, str]]:
    return [(t, _text(d)) for t, d in iter_payloads(payloads)]


def _run_both(stream: bytes, cuts: list[int], max_line: int, max_event: int) -> None:
    """``feed`` and ``feed_payloads`` over the same chunks: the same events, pending bytes after
    every chunk, limit errors at the same chunk (with the same events before them), retry and id."""
    a = SseScanner(max_line=max_line, max_event=max_event)
    b = SseScanner(max_line=max_line, max_event=max_event)
    a.comments, b.comments = [], []
    prev = 0
    chunks = []
    for c in [*sorted(set(cuts)), len(stream)]:
        chunks.append(stream[prev:c])
        prev = c
    steps: list[Callable[[SseScanner], list[tuple[str, str]]]] = [
        *((lambda sc, ch=ch: [(e.event, e.data) for e in sc.feed(ch)]) for ch in chunks),
        lambda sc: [(e.event, e.data) for e in sc.close()],
    ]
    payload_steps: list[Callable[[SseScanner], list[tuple[str, str]]]] = [
        *((lambda sc, ch=ch: _texts(sc.feed_payloads(ch))) for ch in chunks),
        lambda sc: _texts(sc.close_payloads()),
    ]
    seen = 0
    marks_a: list[tuple[int, bool]] = []
    marks_b: list[tuple[int, bool]] = []
    comments_a: list[Comment] = []
    comments_b: list[Comment] = []
    for step, payload_step in zip(steps, payload_steps, strict=True):
        try:
            expected = step(a)
        except SseLimitError as exc:
            with pytest.raises(SseLimitError) as info:
                payload_step(b)
            assert info.value.what == exc.what
            assert [(e.event, e.data) for e in info.value.events] == [(e.event, e.data) for e in exc.events]
            # the comment lines up to the error (the fast path reads the ones of a block it held
            # only in the read that ends the block, or here)
            _taken(a, seen, comments_a)
            _taken(b, seen, comments_b)
            assert comments_b == comments_a
            return
        assert payload_step(b) == expected
        assert b.pending_bytes == a.pending_bytes
        # the data-less blocks an SDK dispatches, at the same place in the stream on both paths
        for sc, marks in ((a, marks_a), (b, marks_b)):
            marks += [(seen + i, named) for i, named in sc.dataless]
            sc.dataless.clear()
        # and the comment lines, each at the same place, read once
        _taken(a, seen, comments_a)
        _taken(b, seen, comments_b)
        seen += len(expected)
    assert (b.retry, b.last_event_id) == (a.retry, a.last_event_id)
    assert marks_b == marks_a
    assert comments_b == comments_a
    assert b.comment_lines == a.comment_lines == len(comments_a)


_WARM = b"data: 0\n\n"  # a first read: the general rules settle the BOM question on it


def block_cuts(stream: bytes, data: st.DataObject) -> list[int]:
    """Cuts after blank lines (reads of whole blocks, which the fast path takes in one piece),
    after the warm-up read, plus a few anywhere."""
    ends = [i + 2 for i in range(len(stream)) if stream.startswith(b"\n\n", i)]
    chosen = data.draw(st.lists(st.sampled_from(ends), max_size=12)) if ends else []
    return [len(_WARM), *chosen, *data.draw(st.lists(st.integers(0, len(stream)), max_size=2))]


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(stream=st.one_of(plain_heavy, any_bytes), data=st.data())
def test_payloads_equal_events_at_any_chunking(stream: bytes, data: st.DataObject) -> None:
    _run_both(stream, cut_points(stream, data), 1 << 20, 1 << 21)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(stream=st.one_of(plain_heavy, any_bytes).map(lambda s: _WARM + s), data=st.data())
def test_payloads_equal_events_in_reads_of_whole_blocks(stream: bytes, data: st.DataObject) -> None:
    _run_both(stream, block_cuts(stream, data), 1 << 20, 1 << 21)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(
    stream=st.one_of(plain_heavy, any_bytes),
    data=st.data(),
    max_line=st.integers(1, 60),
    max_event=st.integers(1, 120),
)
def test_payloads_equal_events_with_limits(
    stream: bytes, data: st.DataObject, max_line: int, max_event: int
) -> None:
    _run_both(stream, cut_points(stream, data), max_line, max_event)
    warm = _WARM + stream
    _run_both(warm, block_cuts(warm, data), max_line, max_event)


def test_payloads_byte_by_byte_and_whole() -> None:
    plain = b"".join(_PLAIN)
    stream = plain * 3 + b"".join(_PIECES) + plain * 2 + b"\n\ndata: end\r\n\r\n" + plain + _COMMENTED
    for cuts in (list(range(len(stream))), [], list(range(0, len(stream), 5))):
        _run_both(stream, cuts, 1 << 20, 1 << 21)


# Blocks one test of the fast path's block reading refuses each (an event line without data, a
# second line of either kind, another line between them, a field without its space, a blank line
# after a block), beside the two shapes it takes.
_NEAR_SHAPES = [
    b"event: x\n\n", b"event: x\nid: 1\ndata: y\n\n", b"event: x\ndata: a\ndata: b\n\n",
    b"event: a\nevent: b\ndata: c\n\n", b"data: a\ndata: b\n\n", b"data: a\nevent: b\n\n",
    b"data: a\n\n\n", b"data: a\n\n\n\n", b"event:x\ndata: y\n\n", b"xevent: x\ndata: y\n\n",
    b"event: x\ndata:y\n\n", b"event: x\ndata: y\nid: 2\n\n", b"id: 1\n\n", b": c\n\n", b"\n\n",
    b"data\n\n", b"event: \ndata: \n\n", b"data: \n\n", b"event: x\n\ndata: y\n\n",
]  # fmt: skip


@pytest.mark.parametrize("shape", _NEAR_SHAPES)
def test_payloads_each_shape_near_the_fast_path_at_every_cut(shape: bytes) -> None:
    """Each shape between blocks the fast path takes, read in two pieces cut anywhere (and after
    a blank line first): ``feed_payloads`` gives ``feed``'s events and pending bytes."""
    stream = _WARM + b"event: e\ndata: 1\n\n" + shape + b"data: 2\n\nevent: f\ndata: 3\n\n"
    for cut in range(len(_WARM), len(stream) + 1):
        _run_both(stream, [len(_WARM), cut], 1 << 20, 1 << 21)
        for second in range(cut, len(stream) + 1, 3):
            _run_both(stream, [len(_WARM), cut, second], 1 << 20, 1 << 21)


def test_payloads_fast_path_gives_bytes_and_hands_back_after_the_general_rules() -> None:
    """The fast path's data are the payload bytes; after a block of another shape (a comment, a
    CR) the scanner goes back to the fast path, so a long stream is not read by the general rules
    for good because of one odd block."""
    sc = SseScanner()
    # The first bytes go through the general rules (a BOM may start the stream): text data.
    assert sc.feed_payloads(b"data: 0\n\n") == [("message", "0")]
    assert sc.feed_payloads(b'event: a\ndata: {"x":1}\n\ndata: 2\n\nevent: b\nda') == [
        (b"a", b'{"x":1}'), (None, b"2"),
    ]  # fmt: skip
    assert sc.pending_bytes == len(b"event: b\nda")
    assert list(iter_payloads(sc.feed_payloads(b"ta: 3\n\n: ping\n\ndata: 4\r\n\r\nevent: c\ndata: 5"))) == [
        ("b", "3"),
        ("message", "4"),
    ]
    assert sc.pending_bytes == len(b"event: c\ndata: 5")
    # The fast path again:
    assert sc.feed_payloads(b"\n\ndata: 6\n\n") == [(b"c", b"5"), (None, b"6")]
    assert list(iter_payloads(sc.close_payloads())) == []


def test_payloads_long_line_in_small_pieces_hits_the_limit_like_feed() -> None:
    a, b = SseScanner(max_line=1000, max_event=4000), SseScanner(max_line=1000, max_event=4000)
    piece = b"x" * 7
    first = b"data: "
    for feed in (a.feed, b.feed_payloads):
        feed(first)
        with pytest.raises(SseLimitError) as info:
            for _ in range(1000):
                feed(piece)
        assert info.value.what == "line"
    assert a.pending_bytes == b.pending_bytes


def test_payloads_limits_at_every_block_size() -> None:
    """Every block size around both limits, alone and after a held piece: the fast path never
    takes a block that the general rules would refuse (an event counts its bytes and its data's)."""
    for max_line, max_event in ((40, 200), (200, 60), (30, 30), (64, 100)):
        for n in range(0, 110):
            for event in (b"", b"event: e\n"):
                block = event + b"data: " + b"y" * n + b"\n\n"
                for cuts in ([], [len(event) + 3], list(range(0, len(block), 9))):
                    _run_both(block + b'data: {"a":1}\n\n', cuts, max_line, max_event)
                # After a first read, the block in a read of whole blocks, alone and with the next.
                w = len(_WARM)
                for cuts in ([w], [w, w + len(block)], [w, w + len(event) + 3]):
                    _run_both(_WARM + block + b'data: {"a":1}\n\n', cuts, max_line, max_event)
