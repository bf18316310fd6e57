"""Fuzzing the SSE scanner against an independent whole-stream reference (issue 7, "Fuzzing").

The reference below follows the WHATWG event-stream interpretation rules directly on the
whole byte string; the scanner must give exactly the same events (type, data, id, raw bytes)
and ``retry`` for any input and any chunking, and must raise nothing but ``SseLimitError``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.errors import ProxaiError, SseLimitError
from proxai.sse import SseEvent, SseScanner

_BOM = b"\xef\xbb\xbf"
_TERM = re.compile(rb"\r\n|\r|\n")


def reference(stream: bytes) -> tuple[list[SseEvent], int | None, int]:
    """Events, retry and the longest line (terminated or not) of ``stream``."""
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


def run_scanner(
    stream: bytes, cuts: list[int], max_line: int, max_event: int
) -> tuple[list[SseEvent], int | None]:
    sc = SseScanner(max_line=max_line, max_event=max_event)
    out: list[SseEvent] = []
    prev = 0
    for c in [*sorted(set(cuts)), len(stream)]:
        out += sc.feed(stream[prev:c])
        prev = c
    out += sc.close()
    return out, sc.retry


def cut_points(stream: bytes, data: st.DataObject) -> list[int]:
    if not stream:
        return []
    return data.draw(st.lists(st.integers(0, len(stream)), max_size=12))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(stream=any_bytes, data=st.data())
def test_scanner_equals_reference_at_any_chunking(stream: bytes, data: st.DataObject) -> None:
    expected, retry, _ = reference(stream)
    got, got_retry = run_scanner(stream, cut_points(stream, data), 1 << 20, 1 << 21)
    assert got == expected
    assert got_retry == retry


def test_scanner_byte_by_byte_equals_reference() -> None:
    stream = b"".join(_PIECES) * 3 + b"\n\ndata: end\r\n\r\n"
    expected, _, _ = reference(stream)
    assert expected  # the sample does dispatch events
    assert run_scanner(stream, list(range(len(stream))), 1 << 20, 1 << 21)[0] == expected


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
