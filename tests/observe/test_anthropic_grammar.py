"""The Anthropic grammar's classification of deviations, each checked on both of its consumers:
the flow's summary (pass-through) and a translated client's stream (the same reading), so that a
deviation is a quirk, a repair or a violation for both alike (docs/design/protocol-grammars.md)."""

from __future__ import annotations

import pytest

from proxai.core.model import Outcome, Protocol
from proxai.pipeline.observe import StreamObserver
from tests.observe.test_one_reading import run
from tests.translate_stream import build as b

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
TEXT0 = b.a("content_block_start", index=0, content_block={"type": "text", "text": ""}) + b.a_text(0, "hi")


def _summary(body: bytes) -> tuple[Outcome, list[tuple[str, str]], str | None, int]:
    obs = StreamObserver(A, start=0.0)
    obs.headers(200, 0.0)
    obs.observe(body, 1.0)
    s = obs.finish(2.0)
    return s.outcome, [(f.rule, f.severity) for f in obs.findings], s.error and s.error.message, s.text_bytes


def _clients(body: bytes) -> set[str]:
    return {run(A, client, [body])[0] for client in (C, R, A)}


def test_a_second_message_delta_is_accepted() -> None:
    body = b.a_start() + TEXT0 + b.a("content_block_stop", index=0) + b.a_end()[: -0 or None]
    body = b.a_start() + TEXT0 + b.a("content_block_stop", index=0)
    body += b.a("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 1}) * 2
    body += b.a("message_stop")
    assert _summary(body) == (Outcome.COMPLETED, [], None, 2)
    assert _clients(body) == {"success"}


def test_blocks_left_open_are_closed_at_the_end_of_the_message() -> None:
    tool = b.a(
        "content_block_start",
        index=1,
        content_block={"type": "tool_use", "id": "t1", "name": "f", "input": {}},
    )
    body = b.a_start() + TEXT0 + tool + b.a_args(1, '{"a": 1}') + b.a_end("tool_use")
    outcome, findings, error, _ = _summary(body)
    assert (outcome, error) == (Outcome.COMPLETED, None)
    assert findings == [("anthropic.block_not_stopped", "quirk")] * 2
    assert _clients(body) == {"success"}


def test_a_tool_call_left_open_with_incomplete_arguments_stays_unfinished() -> None:
    tool = b.a(
        "content_block_start",
        index=0,
        content_block={"type": "tool_use", "id": "t1", "name": "f", "input": {}},
    )
    body = b.a_start() + tool + b.a_args(0, '{"a": ') + b.a_end("tool_use")
    assert _summary(body)[0] is Outcome.UNFINISHED_TOOL
    for client in (C, R, A):  # a translation cannot carry the call: a violation, at that event
        assert run(A, client, [body]) == ("error", Outcome.ERROR)


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize(
    ("event", "note"),
    [
        (b"event: content_block_delta\ndata: \n\n", "a 'content_block_delta' event with an empty payload"),
        (b"event: message_stop\ndata:\n\n", "a 'message_stop' event with an empty payload"),
        (b"data: \n\n", "an event without an event: line whose payload is not a JSON object"),
        (b"data: x\ndata:\n\n", "an event without an event: line whose payload is not a JSON object"),
    ],
)
def test_a_payload_the_sdks_skip_is_a_quirk(event: bytes, note: str, crlf: bool) -> None:
    """Both SDKs skip an event without an ``event:`` line whatever its payload, and a named event
    whose data is empty (tests/conformance/test_liberal_reads.py runs them): a note, whatever the
    line ends, and every client reads the message."""
    body = b.a_start() + TEXT0 + event + b.a("content_block_stop", index=0) + b.a_end()
    if crlf:
        body = body.replace(b"\n", b"\r\n")
    obs = StreamObserver(A, start=0.0)
    obs.headers(200, 0.0)
    obs.observe(body, 1.0)
    s = obs.finish(2.0)
    assert (s.outcome, s.error, s.text_bytes, s.stop_reason) == (Outcome.COMPLETED, None, 2, "end_turn")
    assert [(f.rule, f.severity, f.detail) for f in obs.findings] == [
        ("anthropic.unread_payload", "quirk", f"ignored {note} (the SDKs skip it)")
    ]
    assert _clients(body) == {"success"}


def test_a_payload_of_spaces_followed_by_events_is_a_violation() -> None:
    """Data of spaces is not empty: both SDKs parse it as JSON and raise."""
    body = (
        b.a_start()
        + TEXT0
        + b"event: content_block_delta\ndata:  \n\n"
        + b.a("content_block_stop", index=0)
        + b.a_end()
    )
    outcome, _, error, _ = _summary(body)
    assert (outcome, error) == (Outcome.ERROR, "Anthropic event 'content_block_delta' with an empty payload")
    assert _clients(body) == {"error"}


@pytest.mark.parametrize(
    ("name", "rules"),
    [
        (b"ping", []),
        # the SDKs parse any named event but a ping as JSON, and raise (a conformance finding)
        (b"x-unknown", [("anthropic_messages.event_json", "quirk")]),
    ],
)
def test_a_payload_we_do_not_read_is_a_quirk(name: bytes, rules: list[tuple[str, str]]) -> None:
    body = (
        b.a_start()
        + TEXT0
        + b"event: "
        + name
        + b"\ndata: {not json\n\n"
        + b.a("content_block_stop", index=0)
        + b.a_end()
    )
    outcome, findings, error, text = _summary(body)
    assert (outcome, error, text) == (Outcome.COMPLETED, None, 2)
    assert findings == [("anthropic.unread_payload", "quirk"), *rules]
    assert _clients(body) == {"success"}


def test_the_event_is_what_its_event_field_names() -> None:
    """As in the SDKs: a ``ping`` is a ping whatever its payload says (the delta is not read)."""
    ping = b"event: ping\ndata: " + b.a_text(0, "lost").split(b"data: ")[1]
    body = b.a_start() + TEXT0 + ping + b.a("content_block_stop", index=0) + b.a_end()
    assert _summary(body) == (Outcome.COMPLETED, [], None, 2)
    for client in (C, R, A):
        end, outcome = run(A, client, [body])
        assert (end, outcome) == ("success", Outcome.COMPLETED)


def test_normalize_repairs_are_findings_and_the_summary_completes() -> None:
    body = b.a_text(0, "hi") + b.a_end()  # no message_start, no content_block_start
    end, outcome = run(A, A, [body])
    assert (end, outcome) == ("success", Outcome.COMPLETED)
    # pass-through: the SDKs read nothing before message_start, and raise without one
    assert _summary(body) == (
        Outcome.CLOSED,
        [
            ("anthropic_messages.before_message_start", "quirk"),
            ("anthropic_messages.no_message_start", "quirk"),
        ],
        None,
        0,
    )
    for client in (C, R):  # a translation does not repair: the stream ends before it began
        assert run(A, client, [body]) == ("error", Outcome.CLOSED)
