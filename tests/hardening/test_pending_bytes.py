"""``SseScanner.pending_bytes``: the carrier forwards guarded pass-through bytes only up to the last
complete SSE block, so the size of the scanner's unfinished block must be exact at any chunking.

Property: after each ``feed``, the bytes fed minus ``pending_bytes`` end exactly at a block boundary
(an independent whole-stream reference dispatches the same events from them, and an event appended
to them parses as an event of its own).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.core.errors import SseLimitError
from proxai.core.model import Protocol
from proxai.core.sse import SseEvent, SseScanner
from proxai.pipeline.observe import StreamObserver

from .test_sse_fuzz import any_bytes, cut_points, reference

_MARK = b"data: proxai-mark\n\n"


def _check_boundary(fed: bytes, pending: int, so_far: list[SseEvent]) -> None:
    assert 0 <= pending <= len(fed)
    done = fed[: len(fed) - pending]
    assert reference(done)[0] == so_far
    events = reference(done + _MARK)[0]
    assert events[-1].raw == _MARK and events[-1].data == "proxai-mark"


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(stream=any_bytes, data=st.data())
def test_pending_bytes_marks_the_last_block_boundary(stream: bytes, data: st.DataObject) -> None:
    sc = SseScanner(max_line=1 << 20, max_event=1 << 21)
    so_far: list[SseEvent] = []
    prev = 0
    for c in [*sorted(set(cut_points(stream, data))), len(stream)]:
        so_far += sc.feed(stream[prev:c])
        prev = c
        _check_boundary(stream[:c], sc.pending_bytes, so_far)


def test_pending_bytes_byte_by_byte_with_crlf_and_bom() -> None:
    stream = b"\xef\xbb\xbfevent: a\r\ndata: 1\r\n\r\n: ping\r\rdata: 2\r\r" + b"data: 3\n\n"
    sc = SseScanner()
    so_far: list[SseEvent] = []
    pendings = []
    for i in range(len(stream)):
        so_far += sc.feed(stream[i : i + 1])
        pendings.append(sc.pending_bytes)
        _check_boundary(stream[: i + 1], sc.pending_bytes, so_far)
    assert [e.data for e in so_far] == ["1", "2", "3"]
    assert pendings[-1] == 0


def test_pending_bytes_bounded_by_max_event() -> None:
    sc = SseScanner(max_line=100, max_event=200)
    sc.feed(b"data: " + b"x" * 90 + b"\n")
    assert sc.pending_bytes == 97
    try:
        for _ in range(10):
            sc.feed(b"data: " + b"x" * 90 + b"\n")
    except SseLimitError:
        return
    raise AssertionError("the event limit was not hit")


def test_observer_pending_bytes_unknown_after_a_limit() -> None:
    from proxai.pipeline.observe import Limits

    obs = StreamObserver(Protocol.OPENAI_CHAT, start=0.0, limits=Limits(max_line=10, max_event=20))
    obs.feed(b"data: {}\n\ndata: ", 1.0)
    assert obs.pending_bytes == 6
    obs.feed(b"x" * 30, 2.0)
    assert obs.pending_bytes is None
