"""The shared grammar machinery: one transition function over one table, a typed error that names
the event and the state, and the classified deviations (findings) a grammar reports with the index
of their event."""

from __future__ import annotations

from enum import Enum

import orjson
import pytest

from proxai.core.errors import UpstreamProtocolError
from proxai.core.model import Protocol
from proxai.core.sse import encode_event
from proxai.pipeline.observe import StreamObserver
from proxai.protocols.machine import Finding, Machine, ProtocolStateError, as_dict, as_int, as_list, as_str


class S(Enum):
    A = "a"
    B = "b"
    END = "end"


M = Machine[S]({S.A: {"go": S.B}, S.B: {"go": S.B, "stop": S.END}}, "p: event {event!r} in state {state}")


def test_step_follows_the_table() -> None:
    assert M.step(S.A, "go") is S.B
    assert M.step(S.B, "stop") is S.END
    assert M.allows(S.B, "go") and not M.allows(S.A, "stop") and not M.allows(S.END, "go")


def test_an_illegal_step_names_the_event_and_the_state() -> None:
    with pytest.raises(ProtocolStateError) as info:
        M.step(S.A, "stop")
    assert str(info.value) == "p: event 'stop' in state A"
    assert (info.value.event, info.value.state) == ("stop", S.A)
    assert isinstance(info.value, UpstreamProtocolError)  # the outcome's kind: upstream_protocol
    with pytest.raises(ProtocolStateError) as info:
        M.step(S.END, "kind", "response.output_text.delta")  # a state with no row accepts nothing
    assert str(info.value) == "p: event 'response.output_text.delta' in state END"


def test_shape_helpers_take_only_their_json_type() -> None:
    assert [as_int(v) for v in (3, True, 3.0, "3")] == [3, None, None, None]
    assert [as_str(v) for v in ("x", 1, None)] == ["x", None, None]
    assert as_dict({"a": 1}) == {"a": 1} and as_dict([1]) == {} and as_dict(None) == {}
    assert as_list([1]) == [1] and as_list({"a": 1}) == [] and as_list("x") == []


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    c = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return encode_event(orjson.dumps(c))


def test_findings_carry_rule_severity_and_event_index() -> None:
    body = (
        _chunk({"role": "assistant", "content": ""})
        + _chunk({"content": "hi"}, "stop")
        + _chunk({"content": "late"})
        + b"data: {\n\n"
    )
    obs = StreamObserver(Protocol.OPENAI_CHAT, start=0.0)
    obs.headers(200, 0.0)
    obs.observe(body[:40], 1.0)
    obs.observe(body[40:], 2.0)
    s = obs.finish(3.0)
    assert obs.findings == [
        # the chunks have no "object": the Python SDK skips them
        Finding("openai_chat.chunk_object", "quirk", 0, "a chunk with choices and object None"),
        Finding(
            "openai_chat.content_after_finish", "quirk", 2, "choice 0 got content after its finish_reason"
        ),
        Finding(
            "stream.empty_json_tail",
            "quirk",
            3,
            "ignored an empty or unparsable JSON tail after valid data",
        ),
        # which the OpenAI SDKs parse, and raise on
        Finding("openai_chat.tail_json", "quirk", 3, "openai_chat: event 'message' data is not JSON: '{'"),
        Finding("openai_chat.no_done", "quirk", 4, "the stream ended after finish_reason without [DONE]"),
        # and since no chunk has it, openai-python keeps none and its final completion fails
        Finding("openai_chat.no_valid_chunk", "quirk", 4, "no chunk has object chat.completion.chunk"),
    ]
    assert s.extra["notes"] == [f.detail for f in obs.findings]  # the notes come from the findings
