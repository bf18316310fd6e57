"""One reading per protocol: the flow's summary and the translated stream come from the same
grammar, so they cannot disagree. A translated stream ends with the client protocol's success
terminal exactly when the summary's outcome is ``completed``, and otherwise with the client
protocol's error (docs/design/protocol-grammars.md).

Over every fixture and hypothesis mutations of them, through the real ``Carrier`` (the observer's
grammar feeds the writer), for every pair and normalize mode from every upstream protocol.

No exceptions: a Responses ``response.failed`` is an in-band upstream error (outcome ``error``),
and the client gets its protocol's error.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.core.model import Outcome, Protocol, StreamSummary
from proxai.core.sse import SseScanner
from proxai.mitm.carrier import Carrier
from proxai.pipeline.flow import ClientSide, FlowPipeline, build_flow
from proxai.pipeline.observe import StreamObserver
from proxai.translate.stream import PAIRS
from tests.observe.harness import status_of
from tests.observe.test_properties import STREAMS, cut, mutated

ONE_READING = tuple(Protocol)
CLIENTS = {up: [c for u, c in PAIRS if u is up] + [up] for up in ONE_READING}
SUCCESS = {
    Protocol.ANTHROPIC_MESSAGES: ("message_stop",),
    Protocol.OPENAI_CHAT: ("[DONE]",),
    Protocol.OPENAI_RESPONSES: ("response.completed", "response.incomplete"),
}
ERROR = {
    Protocol.ANTHROPIC_MESSAGES: "error",
    Protocol.OPENAI_CHAT: "error",
    Protocol.OPENAI_RESPONSES: "response.failed",
}


def ending(client: Protocol, data: bytes) -> str:
    """``success`` or ``error``: how the client's stream ends, by its last event (Chat: ``[DONE]``,
    or a payload with a top-level ``error``); anything else is returned as it is."""
    events = SseScanner().feed(data)
    if not events:
        return "nothing"
    last = events[-1]
    if client is Protocol.OPENAI_CHAT:
        if last.data == "[DONE]":
            return "success" if not any(e.data.startswith('{"error"') for e in events) else "both"
        return "error" if last.data.startswith('{"error"') else f"chunk {last.data[:40]}"
    if last.event in SUCCESS[client]:
        return "success"
    return "error" if last.event == ERROR[client] else f"event {last.event}"


def run_summary(
    up: Protocol, client: Protocol, pieces: list[bytes], status: int = 200
) -> tuple[str, StreamSummary]:
    """How the client's stream ends, and the flow's summary."""
    tick = itertools.count(1)
    pipe = build_flow(up, ClientSide(client, created=1))
    pipe.observer.headers(status, 0.0)
    c = Carrier(pipe, decoder=None, clock=lambda: float(next(tick)))
    out = b"".join(b"".join(r) if isinstance(r, list) else r for r in [*(c(p) for p in pieces), c(b"")])
    assert c.summary is not None
    return ending(client, out), c.summary


def run(up: Protocol, client: Protocol, pieces: list[bytes], status: int = 200) -> tuple[str, Outcome]:
    end, summary = run_summary(up, client, pieces, status)
    return end, summary.outcome


def check(up: Protocol, pieces: list[bytes], status: int = 200) -> None:
    for client in CLIENTS[up]:
        end, summary = run_summary(up, client, pieces, status)
        completed = summary.outcome is Outcome.COMPLETED
        assert end == ("success" if completed else "error"), (client, summary.outcome, end)


@pytest.mark.parametrize(
    "path", [p for p in STREAMS if Protocol(p.parent.name) in ONE_READING], ids=lambda p: p.name
)
def test_client_ending_agrees_with_the_outcome_on_fixtures(path: Path) -> None:
    raw = path.read_bytes()
    for pieces in ([raw], [raw[i : i + 9] for i in range(0, len(raw), 9)]):
        check(Protocol(path.parent.name), pieces, status_of(path))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(case=mutated().filter(lambda c: c[0] in ONE_READING), data=st.data())
def test_client_ending_agrees_with_the_outcome_on_mutated_streams(
    case: tuple[Protocol, bytes], data: st.DataObject
) -> None:
    protocol, raw = case
    check(protocol, data.draw(cut(raw)))


def test_the_check_sees_both_endings() -> None:
    """The property is not vacuous: the corpus has completed streams and failed ones."""
    seen = set()
    for path in STREAMS:
        up = Protocol(path.parent.name)
        if up in ONE_READING:
            seen.add(run(up, Protocol.OPENAI_CHAT, [path.read_bytes()], status_of(path))[0])
    assert seen == {"success", "error"}


def test_chat_ends_after_finish_without_done_in_every_mode() -> None:
    """A Chat stream that ends after its ``finish_reason`` without ``[DONE]`` (and an empty
    tail): the SDK reads the answer as it stands, so every mode ends the client's stream there
    as a success, and the summary says ``completed`` with the note."""
    C = Protocol.OPENAI_CHAT
    raw = (Path(__file__).parent.parent / "fixtures" / "openai_chat" / "empty_json_tail.sse").read_bytes()
    assert b"[DONE]" not in raw
    for client in (C, Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_RESPONSES):
        end, summary = run_summary(C, client, [raw])
        assert (end, summary.outcome, summary.stop_reason) == ("success", Outcome.COMPLETED, "stop")
        notes = summary.to_metadata()["extra"]["notes"]
        assert "the stream ended after finish_reason without [DONE]" in notes


def _responses_call(args_done: str) -> bytes:
    from tests.translate_stream.build import R

    r = R()
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": "",
    }
    done = {**item, "arguments": args_done, "status": "completed"}
    return (
        r.created()
        + r.ev("response.output_item.added", output_index=0, item=item)
        + r.ev("response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta='{"city":')
        + r.ev("response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta='"Paris"}')
        + r.ev("response.output_item.done", output_index=0, item=done)
        + r.completed([done])
    )


def test_a_responses_done_event_contradicting_the_deltas_ends_both_at_that_event() -> None:
    """Translated, a ``.done`` whose arguments contradict the streamed deltas is a violation; the
    summary used to say ``completed`` (its own reading took the snapshot) while the client got an
    error. Now both say error, with the same text; observed only, the snapshot still wins."""
    R_ = Protocol.OPENAI_RESPONSES
    good, bad = _responses_call('{"city":"Paris"}'), _responses_call('{"city":"Rome"}')
    for client in (Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, R_):
        assert run(R_, client, [good]) == ("success", Outcome.COMPLETED)
        end, summary = run_summary(R_, client, [bad])
        assert (end, summary.outcome) == ("error", Outcome.ERROR)
        assert summary.error is not None
        assert summary.error.message == "response.output_item.done contradicts the streamed deltas"
    assert _observed(R_, bad) is Outcome.COMPLETED


def _observed(up: Protocol, body: bytes) -> Outcome:
    """The outcome of ``body`` observed only (no translator)."""
    return _observed_summary(up, body).outcome


def test_a_chat_empty_payload_followed_by_chunks_is_a_violation_for_both() -> None:
    """An empty ``data:`` is tolerated only as the stream's last payload. The Chat translation
    used to skip one anywhere (the client succeeded while the summary said error); now both end
    there with an error."""
    from tests.translate_stream import build as cb

    C = Protocol.OPENAI_CHAT
    body = cb.c({"role": "assistant", "content": "Hi"}) + b"data: \n\n" + cb.c({}, "stop") + cb.DONE
    for client in (Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_RESPONSES, C):
        end, summary = run_summary(C, client, [body])
        assert (end, summary.outcome) == ("error", Outcome.ERROR)


def test_an_unparsable_last_payload_is_the_tolerated_tail_and_the_client_is_told_of_a_truncation() -> None:
    """A Chat stream whose last payload does not parse (and no ``[DONE]``): the tolerated tail, so
    the summary says ``closed`` (the stream ended early) and the translated client gets an error
    of kind ``connection``, not a protocol violation."""
    from tests.translate_stream import build as cb

    C = Protocol.OPENAI_CHAT
    body = cb.c({"role": "assistant", "content": "Hi"}) + b'data: {"id":"chatcmpl-1","obj\n\n'
    assert _observed(C, body) is Outcome.CLOSED
    for client in (Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_RESPONSES):
        end, summary = run_summary(C, client, [body])
        assert (end, summary.outcome) == ("error", Outcome.CLOSED)
        assert summary.error is None


def _observed_summary(up: Protocol, body: bytes) -> StreamSummary:
    """The summary of ``body`` observed only (no translator), through the real carrier."""
    tick = itertools.count(1)
    obs = StreamObserver(up, start=0.0)
    obs.headers(200, 0.0)
    c = Carrier(FlowPipeline(obs), decoder=None, clock=lambda: float(next(tick)))
    c(body)
    c(b"")
    assert c.summary is not None
    return c.summary


def test_a_chat_empty_finish_reason_means_not_yet_for_both() -> None:
    """Some compatible servers send ``"finish_reason": ""`` on every chunk until the real one.
    The summary read it as "not yet"; the Chat translation took it for the end and failed the
    next chunk's content. One reading now: both read on, and both end with success."""
    from tests.translate_stream import build as cb

    C = Protocol.OPENAI_CHAT
    body = (
        cb.c({"role": "assistant", "content": "Hi"}, "") + cb.c({"content": " there"}, "") + cb.c({}, "stop")
    )
    body += cb.DONE
    for client in (Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_RESPONSES, C):
        end, summary = run_summary(C, client, [body])
        assert (end, summary.outcome, summary.stop_reason, summary.text_bytes) == (
            "success",
            Outcome.COMPLETED,
            "stop",
            8,
        )


def test_chat_tool_calls_without_an_index_are_keyed_by_their_id_for_both() -> None:
    """Tool calls without ``index``, each sent whole with its id in a chunk of its own (Mistral):
    the translation keyed them by id, the summary by their position in the chunk and so merged
    the second into the first. Now both key them by id: two calls."""
    from tests.translate_stream import build as cb

    C = Protocol.OPENAI_CHAT

    def call(cid: str, name: str, args: str) -> dict[str, object]:
        return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}

    body = (
        cb.c({"role": "assistant", "tool_calls": [call("call_a", "get_weather", '{"city":"Paris"}')]})
        + cb.c({"tool_calls": [call("call_b", "get_time", '{"tz":"CET"}')]})
        + cb.c({}, "tool_calls")
        + cb.DONE
    )
    observed = _observed_summary(C, body)
    assert [(t.id, t.name, t.arguments_bytes) for t in observed.tool_calls] == [
        ("call_a", "get_weather", 16),
        ("call_b", "get_time", 12),
    ]
    end, summary = run_summary(C, Protocol.ANTHROPIC_MESSAGES, [body])
    assert (end, summary.outcome, len(summary.tool_calls)) == ("success", Outcome.COMPLETED, 2)


def test_a_chat_finish_reason_that_is_not_a_string_has_one_error_text() -> None:
    """The two halves worded a non-string ``finish_reason`` differently; the summary of an
    observed flow and a translated client now get the grammar's one text."""
    from tests.translate_stream import build as cb

    C = Protocol.OPENAI_CHAT
    body = cb.c({"role": "assistant", "content": "Hi"}).replace(b'"finish_reason":null', b'"finish_reason":7')
    want = "openai_chat: finish_reason 7 is not a string"
    observed = _observed_summary(C, body + cb.DONE)
    assert observed.error is not None and observed.error.message == want
    for client in (Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_RESPONSES):
        end, summary = run_summary(C, client, [body + cb.DONE])
        assert end == "error" and summary.error is not None and summary.error.message == want


@pytest.mark.parametrize(
    ("event", "want"),
    [
        ("added twice", "openai_responses: output item 'msg_1' added twice"),
        (
            "unknown item",
            "openai_responses: response.output_text.delta for item 'msg_2' that was never added",
        ),
    ],
)
def test_a_responses_item_violation_has_one_error_text(event: str, want: str) -> None:
    """The Responses translation worded a duplicate item and an event for an unknown item in its
    own words; the observed flow's summary and a translated client now get the grammar's."""
    from tests.translate_stream.build import R

    R_ = Protocol.OPENAI_RESPONSES
    r = R()
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    body = r.created() + r.ev("response.output_item.added", output_index=0, item=item)
    if event == "added twice":
        body += r.ev("response.output_item.added", output_index=1, item=item)
    else:
        body += r.ev(
            "response.output_text.delta", item_id="msg_2", output_index=1, content_index=0, delta="x"
        )  # (no item at output_index 1 either: the SDKs place an item event by its output_index)
    body += r.completed([])
    observed = _observed_summary(R_, body)
    assert observed.error is not None and observed.error.message == want
    for client in (Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, R_):
        end, summary = run_summary(R_, client, [body])
        assert (end, summary.outcome) == ("error", Outcome.ERROR)
        assert summary.error is not None and summary.error.message == want


def test_a_responses_failed_is_an_in_band_upstream_error() -> None:
    """``response.failed`` is the upstream's own error, as Anthropic's ``error`` event and a Chat
    error chunk are: the outcome is ``error`` (kind from ``response.error.code``), ``stop_reason``
    stays ``failed``, and every translated client gets its protocol's error. The outcome used to
    be ``completed`` while the client got an error."""
    from proxai.core.model import ErrorKind, StopClass

    R_ = Protocol.OPENAI_RESPONSES
    raw = (Path(__file__).parent.parent / "fixtures" / "openai_responses" / "failed.sse").read_bytes()
    observed = _observed_summary(R_, raw)
    assert (observed.outcome, observed.stop_reason, observed.stop_class) == (
        Outcome.ERROR,
        "failed",
        StopClass.ERROR,
    )
    assert observed.error is not None
    assert (observed.error.kind, observed.error.source, observed.error.message) == (
        ErrorKind.SERVER,
        "event",
        "The model failed to generate a response.",
    )
    for client in CLIENTS[R_]:
        end, summary = run_summary(R_, client, [raw])
        assert (end, summary.outcome, summary.error) == ("error", Outcome.ERROR, observed.error)
