"""The cassette (proxai.replay.cassette) and the timing plan (proxai.replay.plan)."""

from __future__ import annotations

from typing import Any

from proxai.core.model import Protocol
from proxai.replay.cassette import Cassette, Entry, Hit, Miss, Source
from proxai.replay.match import conversation
from proxai.replay.plan import Answer, plan

A, C = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT


def body(*texts: str, model: str = "m") -> dict[str, Any]:
    return {"model": model, "max_tokens": 10, "messages": [{"role": "user", "content": t} for t in texts]}


def answer(tag: bytes) -> Answer:
    return Answer(200, (), tag, False, 0.0, 0.0, 0.0)


def entry(i: int, b: dict[str, Any], protocol: Protocol = A) -> Entry:
    return Entry(Source("run.flow", i, f"id{i}"), conversation(protocol, b), answer(b"answer %d" % i))


def test_identical_requests_are_served_in_recorded_order() -> None:
    tape = Cassette([entry(1, body("hi")), entry(2, body("other")), entry(3, body("hi"))])
    got = [tape.take(conversation(A, body("hi"))) for _ in range(3)]
    assert all(isinstance(h, Hit) for h in got)
    hits = [h for h in got if isinstance(h, Hit)]
    assert [(h.entry.source.index, h.again) for h in hits] == [(1, False), (3, False), (3, True)]
    tape.give_back(hits[2].entry)
    tape.give_back(hits[1].entry)
    again = tape.take(conversation(A, body("hi")))
    assert isinstance(again, Hit) and (again.entry.source.index, again.again) == (3, False)


def test_a_miss_names_the_closest_recording_and_the_field() -> None:
    tape = Cassette(
        [
            entry(1, body("hi", "again", model="other")),
            entry(2, body("hi", "there")),
            entry(3, body("hello")),
        ]
    )
    miss = tape.take(conversation(A, body("hi", "where")))
    assert isinstance(miss, Miss)
    assert miss.closest == Source("run.flow", 2, "id2")
    assert miss.message == (
        "proxai replay: no recorded request matches: messages[1].content (user text) differs from "
        'the closest recording (run.flow, flow 2): recorded "there", got "where"'
    )


def test_a_miss_of_another_protocol() -> None:
    tape = Cassette([entry(1, body("hi"))])
    miss = tape.take(conversation(C, body("hi")))
    assert isinstance(miss, Miss) and miss.closest is None
    assert miss.message == (
        "proxai replay: no recorded openai_chat request to compare with (the recordings hold: "
        "anthropic_messages)"
    )


SSE = b"".join(b"data: %d\n\n" % i for i in range(5))


def stream(**kw: Any) -> Answer:
    fields: dict[str, Any] = {
        "status": 200,
        "headers": (("content-type", "text/event-stream"),),
        "body": SSE,
        "streaming": True,
        "headers_s": 0.1,
        "first_s": 0.3,
        "total_s": 1.1,
    }
    fields.update(kw)
    return Answer(**fields)


def test_a_stream_is_played_at_its_recorded_reads() -> None:
    reads = ((9, 0.3), (27, 0.5), (45, 1.1))
    p = plan(stream(reads=reads), 1.0)
    assert p.timed_by == "reads" and p.headers_at == 0.1
    assert p.pieces == ((0.3, SSE[:9]), (0.5, SSE[9:27]), (1.1, SSE[27:45]))
    assert plan(stream(reads=reads), 2.0).pieces == ((0.15, SSE[:9]), (0.25, SSE[9:27]), (0.55, SSE[27:45]))
    fast = plan(stream(reads=reads), 0)
    assert fast.headers_at == 0 and [at for at, _ in fast.pieces] == [0, 0, 0] and fast.waits == 0
    assert b"".join(d for _, d in fast.pieces) == SSE


def test_bytes_past_the_last_read_go_with_it() -> None:
    p = plan(stream(reads=((9, 0.3),)), 1.0)
    assert p.pieces == ((0.3, SSE[:9]), (0.3, SSE[9:]))


def test_without_reads_the_summary_timing_is_spread_over_the_events() -> None:
    p = plan(stream(), 1.0)
    assert p.timed_by == "summary"
    assert [round(at, 6) for at, _ in p.pieces] == [0.3, 0.5, 0.7, 0.9, 1.1]
    assert [d for _, d in p.pieces] == [b"data: %d\n\n" % i for i in range(5)]
    gz = plan(stream(headers=(("content-encoding", "gzip"),)), 1.0)
    assert gz.pieces == ((0.3, SSE),)


def test_a_json_answer_comes_whole_at_its_total_time() -> None:
    p = plan(Answer(429, (("retry-after", "2"),), b"{}", False, 0.2, 0.2, 0.25), 1.0)
    assert (p.status, p.headers, p.headers_at, p.pieces) == (
        429,
        (("retry-after", "2"),),
        0.2,
        ((0.25, b"{}"),),
    )


def test_a_two_thousand_event_stream_at_speed_zero_waits_nowhere() -> None:
    body = b"".join(b'data: {"n": %d}\n\n' % i for i in range(2000))
    reads = tuple((len(body) * (k + 1) // 1000, 0.01 * (k + 1)) for k in range(1000))
    p = plan(stream(body=body, reads=reads, total_s=10.0), 0)
    assert p.waits == 0 and all(at == 0 for at, _ in p.pieces) and p.headers_at == 0
    assert b"".join(d for _, d in p.pieces) == body
