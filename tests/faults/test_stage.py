"""The fault stage, sans-IO: where a fault starts, and that chunking never moves it.

Every case runs the stream whole, byte by byte and at random splits, and checks the bytes the
client gets against the stream's own SSE blocks.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from proxai.core.model import Outcome, Protocol
from proxai.faults.rules import FaultRule
from proxai.faults.stage import Act, FaultStage, Phase
from tests.splits import random_pieces

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STREAMS = {
    Protocol.ANTHROPIC_MESSAGES: FIXTURES / "anthropic_messages" / "parallel_tools.sse",
    Protocol.OPENAI_CHAT: FIXTURES / "openai_chat" / "parallel_tools.sse",
    Protocol.OPENAI_RESPONSES: FIXTURES / "openai_responses" / "parallel_tools.sse",
}


def _blocks(data: bytes) -> list[bytes]:
    parts = data.split(b"\n\n")
    assert parts[-1].strip() == b""
    return [p + b"\n\n" for p in parts[:-1]]


def _chunkings(data: bytes) -> list[list[bytes]]:
    return [[data], [data[i : i + 1] for i in range(len(data))], random_pieces(data, random.Random(3), 40)]


def _run(
    rule: FaultRule, protocol: Protocol, pieces: list[bytes]
) -> tuple[FaultStage, list[bytes], Act | None]:
    stage = FaultStage(rule, protocol, now=0.0)
    sent: list[bytes] = []
    act = None
    for p in pieces:
        step = stage.feed([p], 1.0)
        sent += step.send
        act = act or step.act
    return stage, sent, act


@pytest.mark.parametrize("protocol", list(STREAMS))
@pytest.mark.parametrize("k", [0, 1, 3, 7])
def test_truncate_after_k_events_cuts_at_a_block_boundary(protocol: Protocol, k: int) -> None:
    data = STREAMS[protocol].read_bytes()
    blocks = _blocks(data)
    for pieces in _chunkings(data):
        stage, sent, act = _run(FaultRule(fault="truncate", after_events=k), protocol, pieces)
        assert act is Act.TRUNCATE and stage.phase is Phase.ENDED
        assert b"".join(sent) == b"".join(blocks[:k])
        assert stage.at_event == k and stage.sent_bytes == len(b"".join(blocks[:k]))


@pytest.mark.parametrize("protocol", list(STREAMS))
def test_tool_args_point_is_right_after_the_first_argument_delta(protocol: Protocol) -> None:
    data = STREAMS[protocol].read_bytes()
    blocks = _blocks(data)
    results = set()
    for pieces in _chunkings(data):
        stage, sent, act = _run(FaultRule(fault="error_event", at="tool_args"), protocol, pieces)
        assert act is Act.ERROR
        results.add(b"".join(sent))
        n = stage.at_event
        assert n is not None and b"".join(sent) == b"".join(blocks[:n])
        # the last block sent carries argument bytes; the client's view has an unfinished call
        last = blocks[n - 1]
        assert any(key in last for key in (b"input_json_delta", b"arguments", b"function_call_arguments"))
        assert stage.client_outcome(2.0) is Outcome.UNFINISHED_TOOL
    assert len(results) == 1


@pytest.mark.parametrize("protocol", list(STREAMS))
def test_stall_holds_then_releases_everything_in_order(protocol: Protocol) -> None:
    data = STREAMS[protocol].read_bytes()
    for pieces in _chunkings(data):
        stage, sent, act = _run(FaultRule(fault="stall", at="first_token", seconds=10), protocol, pieces)
        assert act is None and stage.phase is Phase.HOLDING and stage.holding
        assert stage.next_release == pytest.approx(11.0)  # the point came at now=1.0
        assert stage.release(5.0) == []
        rest = stage.release(11.0)
        assert b"".join(sent) + b"".join(rest) == data
        assert stage.phase is Phase.PASSING and not stage.holding
        # after the stall bytes pass at once
        assert stage.feed([b": keepalive\n\n"], 12.0).send == [b": keepalive\n\n"]
        end = stage.end([], 13.0)
        assert end.send == [] and stage.client_outcome(13.0) is Outcome.COMPLETED
        assert stage.metadata(13.0)["client_outcome"] == "completed"


def test_first_token_point_is_before_the_first_content_event() -> None:
    data = STREAMS[Protocol.ANTHROPIC_MESSAGES].read_bytes()
    blocks = _blocks(data)
    _, sent, _ = _run(FaultRule(fault="truncate", at="first_token"), Protocol.ANTHROPIC_MESSAGES, [data])
    assert sent == blocks[:2]  # message_start, content_block_start: the text delta is held back
    assert b"text_delta" in blocks[2]


def test_slow_spaces_content_events() -> None:
    data = STREAMS[Protocol.ANTHROPIC_MESSAGES].read_bytes()
    blocks = _blocks(data)
    stage = FaultStage(FaultRule(fault="slow", rate=2), Protocol.ANTHROPIC_MESSAGES, now=0.0)
    first = stage.feed([data], 0.0).send
    assert first == blocks[:2]  # nothing before the first content waits
    got = list(first)
    times = []
    while stage.holding:
        at = stage.next_release
        assert at is not None
        times.append(at)
        got += stage.release(at)
    assert b"".join(got) == data
    # the content deltas: every content_block_delta but the one with an empty partial_json
    contents = sum(1 for b in blocks if b"content_block_delta" in b and b'"partial_json":""' not in b)
    assert contents == 6
    assert times[-1] == pytest.approx(contents * 0.5)
    assert all(b - a >= 0 for a, b in itertools.pairwise(times))


def test_held_bytes_are_bounded() -> None:
    data = STREAMS[Protocol.ANTHROPIC_MESSAGES].read_bytes()
    stage = FaultStage(
        FaultRule(fault="stall", seconds=100), Protocol.ANTHROPIC_MESSAGES, now=0.0, max_held=200
    )
    sent = stage.feed([data], 1.0).send
    assert b"".join(sent) == data and stage.cut_short and not stage.holding
    assert stage.metadata(1.0)["cut_short"] is True


def test_end_flushes_a_stall_and_says_it_was_cut_short() -> None:
    data = STREAMS[Protocol.OPENAI_CHAT].read_bytes()
    stage = FaultStage(FaultRule(fault="stall", at="tool_args", seconds=100), Protocol.OPENAI_CHAT, now=0.0)
    sent = stage.feed([data], 1.0).send
    sent += stage.end([], 2.0).send
    assert b"".join(sent) == data and stage.cut_short


def test_a_fault_whose_point_never_comes() -> None:
    data = _blocks(STREAMS[Protocol.ANTHROPIC_MESSAGES].read_bytes())
    stage = FaultStage(FaultRule(fault="reset", after_events=1000), Protocol.ANTHROPIC_MESSAGES, now=0.0)
    sent = stage.feed(data, 1.0).send + stage.end([], 2.0).send
    assert sent == data
    meta = stage.metadata(2.0)
    assert meta["injected"] is False and meta["reason"] == "the stream ended before the fault's point"
