"""StreamObserver carrier state: timing, tail, limits, open tool calls, abort, HTTP errors,
observe_body, and the rules the fixture files do not pin down one by one."""

from __future__ import annotations

import orjson
import pytest

from proxai.core.errors import SemanticStreamError, SseLimitError, UpstreamProtocolError
from proxai.core.errors.shapes import error_body, error_event
from proxai.core.model import ErrorKind, Outcome, Protocol, StopClass
from proxai.core.sse import encode_event
from proxai.pipeline.observe import Limits, OpenToolCall, StreamObserver, observe_body
from tests.observe.harness import FIXTURES, bytewise, run_stream

A = Protocol.ANTHROPIC_MESSAGES
C = Protocol.OPENAI_CHAT
R = Protocol.OPENAI_RESPONSES


def fixture(protocol: Protocol, name: str) -> bytes:
    return (FIXTURES / str(protocol) / name).read_bytes()


def ant(etype: str, **fields: object) -> bytes:
    return encode_event(orjson.dumps({"type": etype, **fields}), event=etype)


def chat(delta: dict[str, object] | None = None, finish: str | None = None, **top: object) -> bytes:
    obj: dict[str, object] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o"}
    obj["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    obj.update(top)
    return encode_event(orjson.dumps(obj))


def resp(etype: str, seq: int, **fields: object) -> bytes:
    return encode_event(orjson.dumps({"type": etype, "sequence_number": seq, **fields}), event=etype)


MSG_START = ant(
    "message_start",
    message={
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "usage": {"input_tokens": 10, "output_tokens": 1},
    },
)


# -- timing -------------------------------------------------------------------------------------


def test_timing_headers_first_event_first_token_gap_total() -> None:
    obs = StreamObserver(A, start=1000.0)
    obs.headers(200, 1000.2)
    obs.feed(MSG_START, 1000.5)  # first event, no token yet
    obs.feed(ant("ping"), 1001.0)
    obs.feed(ant("content_block_start", index=0, content_block={"type": "text", "text": ""}), 1001.1)
    obs.feed(
        ant("content_block_delta", index=0, delta={"type": "text_delta", "text": "hi"}), 1004.1
    )  # gap 3.0
    obs.feed(ant("content_block_stop", index=0), 1004.2)
    s = obs.finish(1004.5)
    t = s.timing
    assert t.headers_s == pytest.approx(0.2)
    assert t.first_event_s == pytest.approx(0.5)
    assert t.first_token_s == pytest.approx(4.1)
    assert t.largest_gap_s == pytest.approx(3.0)
    assert t.total_s == pytest.approx(4.5)
    assert s.counts.chunks == 5
    assert s.counts.events == 5
    assert obs.last_byte_at == 1004.2


def test_largest_gap_includes_silence_before_the_end() -> None:
    obs = StreamObserver(A, start=0.0)
    obs.headers(200, 0.1)
    obs.feed(MSG_START, 0.2)
    obs.feed(ant("ping"), 0.3)
    s = obs.abort("upstream went silent", 30.3, kind=ErrorKind.IDLE_TIMEOUT)
    assert s.timing.largest_gap_s == pytest.approx(30.0)


def test_tool_start_counts_as_first_token() -> None:
    obs = StreamObserver(A, start=0.0)
    obs.feed(MSG_START, 1.0)
    obs.feed(
        ant("content_block_start", index=0, content_block={"type": "tool_use", "id": "t", "name": "f"}), 2.0
    )
    assert obs.summary().timing.first_token_s == 2.0


# -- tail and counts ------------------------------------------------------------------------------


def test_tail_keeps_the_last_bytes_only() -> None:
    obs = StreamObserver(C, start=0.0, limits=Limits(tail_bytes=100))
    data = b"".join(chat({"content": f"piece {i} "}) for i in range(50))
    for i in range(0, len(data), 33):
        obs.feed(data[i : i + 33], 1.0)
    assert obs.tail == data[-100:]
    assert len(obs.tail) == 100
    obs.feed(b"x" * 500, 2.0)  # one chunk larger than the tail
    assert obs.tail == b"x" * 100
    assert obs.summary().counts.bytes == len(data) + 500


def test_default_tail_is_16_kib() -> None:
    obs = StreamObserver(R, start=0.0)
    obs.feed(b": " + b"p" * 40_000 + b"\n", 1.0)
    assert len(obs.tail) == 16 * 1024


# -- limits ---------------------------------------------------------------------------------------


def test_line_limit_stops_observing_but_counts_bytes() -> None:
    obs = StreamObserver(C, start=0.0, limits=Limits(max_line=300, max_event=1000))
    first = chat({"role": "assistant", "content": "ok"})
    huge = b"data: " + b"x" * 1000 + b"\n\n"
    events = obs.feed(first + huge, 1.0)
    assert [e.data for e in events] == [first[6:-2].decode()]  # the event before the limit is kept
    assert isinstance(obs.failed, SseLimitError)
    assert obs.feed(chat({"content": "more"}) + b"data: [DONE]\n\n", 2.0) == []
    s = obs.finish(3.0)
    assert s.outcome is Outcome.ERROR
    assert s.error is not None and s.error.kind is ErrorKind.STREAM_LIMIT
    assert s.text_bytes == 2
    assert s.counts.bytes == len(first) + len(huge) + len(chat({"content": "more"})) + 14
    assert not obs.terminal


def test_limit_error_same_for_every_chunking() -> None:
    data = chat({"content": "ok"}) + b"data: " + b"y" * 5000 + b"\n\n" + b"data: [DONE]\n\n"
    lim = Limits(max_line=1000, max_event=2000)
    whole, _ = run_stream(C, [data], limits=lim)
    split, _ = run_stream(C, bytewise(data), limits=lim)
    assert whole.to_metadata()["error"] == split.to_metadata()["error"]
    assert whole.text_bytes == split.text_bytes == 2


def test_tool_arguments_past_max_tool_args_are_not_buffered() -> None:
    obs = StreamObserver(C, start=0.0, limits=Limits(max_tool_args=50), capture=True)
    obs.feed(
        chat(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "f", "arguments": ""},
                    }
                ]
            }
        ),
        1.0,
    )
    for _ in range(10):
        obs.feed(chat({"tool_calls": [{"index": 0, "function": {"arguments": '{"k": "0123456789"}'}}]}), 1.0)
    obs.feed(chat({}, "tool_calls"), 2.0)
    obs.feed(b"data: [DONE]\n\n", 2.0)
    s = obs.finish(3.0)
    (tc,) = s.tool_calls
    assert tc.arguments_complete is True
    assert tc.arguments_valid_json is False
    assert tc.arguments_bytes == 190
    assert tc.arguments is None
    assert s.outcome is Outcome.COMPLETED
    assert any("max_tool_args" in n for n in s.extra["notes"])


def test_capture_is_bounded_by_max_capture() -> None:
    obs = StreamObserver(A, start=0.0, limits=Limits(max_capture=10), capture=True)
    obs.feed(MSG_START, 1.0)
    obs.feed(ant("content_block_start", index=0, content_block={"type": "text", "text": ""}), 1.0)
    for _ in range(5):
        obs.feed(ant("content_block_delta", index=0, delta={"type": "text_delta", "text": "abcd"}), 1.0)
    s = obs.finish(2.0)
    assert s.text == "abcdabcdab"
    assert s.text_bytes == 20
    assert any("max_capture" in n for n in s.extra["notes"])


def test_no_capture_by_default() -> None:
    s, _ = run_stream(A, [fixture(A, "parallel_tools.sse")], capture=False)
    assert s.text is None and s.reasoning is None
    assert all(t.arguments is None for t in s.tool_calls)
    assert "text" not in s.to_metadata()


# -- open tool calls (the guard's view) -------------------------------------------------------------


def test_open_tool_calls_track_progress_per_call() -> None:
    obs = StreamObserver(A, start=0.0)
    obs.feed(MSG_START, 1.0)
    obs.feed(
        ant("content_block_start", index=0, content_block={"type": "tool_use", "id": "t0", "name": "a"}), 2.0
    )
    obs.feed(
        ant("content_block_start", index=1, content_block={"type": "tool_use", "id": "t1", "name": "b"}), 3.0
    )
    obs.feed(
        ant("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": '{"x":'}), 4.0
    )
    obs.feed(ant("ping"), 9.0)
    assert obs.open_tool_calls() == [
        OpenToolCall(
            id="t0", name="a", kind="function", started_at=2.0, last_progress_at=4.0, arguments_bytes=5
        ),
        OpenToolCall(
            id="t1", name="b", kind="function", started_at=3.0, last_progress_at=3.0, arguments_bytes=0
        ),
    ]
    obs.feed(ant("content_block_stop", index=1), 10.0)
    assert [c.id for c in obs.open_tool_calls()] == ["t0"]
    assert obs.summary().outcome is Outcome.UNFINISHED_TOOL


def test_responses_server_tools_are_not_open_argument_streams() -> None:
    obs = StreamObserver(R, start=0.0)
    obs.feed(resp("response.created", 0, response={"id": "resp_1", "model": "m"}), 1.0)
    obs.feed(
        resp(
            "response.output_item.added",
            1,
            output_index=0,
            item={"id": "ws_1", "type": "web_search_call", "status": "in_progress"},
        ),
        1.0,
    )
    assert obs.open_tool_calls() == []
    s = obs.finish(2.0)
    assert s.outcome is Outcome.CLOSED
    assert [(t.kind, t.arguments_complete) for t in s.tool_calls] == [("server_tool", False)]


# -- abort ------------------------------------------------------------------------------------------


def test_abort_mid_text_is_error_with_the_given_kind() -> None:
    obs = StreamObserver(C, start=0.0)
    obs.feed(chat({"content": "hi"}), 1.0)
    s = obs.abort("connection reset by peer", 2.0)
    assert s.outcome is Outcome.ERROR
    assert s.error is not None
    assert (s.error.kind, s.error.source, s.error.message) == (
        ErrorKind.CONNECTION,
        "proxy",
        "connection reset by peer",
    )
    assert obs.finish(3.0) is s  # the first end wins


def test_abort_with_open_tool_is_unfinished_tool() -> None:
    obs = StreamObserver(R, start=0.0)
    obs.feed(fixture(R, "unfinished_tool.sse"), 1.0)
    s = obs.abort("tool arguments stalled for 30 s", 31.0, kind=ErrorKind.TOOL_STALL)
    assert s.outcome is Outcome.UNFINISHED_TOOL
    assert s.error is not None and s.error.kind is ErrorKind.TOOL_STALL


def test_abort_after_terminal_stays_completed() -> None:
    obs = StreamObserver(C, start=0.0)
    obs.feed(fixture(C, "text.sse"), 1.0)
    assert obs.terminal
    s = obs.abort("client went away", 2.0)
    assert s.outcome is Outcome.COMPLETED
    # e.g. the openai SDK closes the connection right after [DONE]: not an error of the stream
    assert s.error is None
    assert s.to_metadata()["extra"]["notes"] == [
        "the connection closed after the terminal event: client went away"
    ]


def _end_findings(obs: StreamObserver, end: str) -> list[tuple[str, bool]]:
    s = obs.abort("client went away", 2.0) if end == "abort" else obs.finish(2.0)
    return [(f["rule"], f["raises"]) for f in s.to_metadata()["extra"]["conformance"]]


@pytest.mark.parametrize("end", ["finish", "abort"])
def test_a_client_that_hangs_up_after_the_terminal_event_gets_the_end_findings(end: str) -> None:
    # openai-python's stream helper reads to [DONE], then its final completion raises on
    # finish_reason length and the client closes the connection, often before the upstream's end of
    # message: the answer is whole, so the findings of its end are the same as at EOF.
    obs = StreamObserver(C, start=0.0)
    obs.feed(chat({"role": "assistant", "content": "Par"}) + chat({}, finish="length"), 1.0)
    obs.feed(chat(None, usage={"prompt_tokens": 25, "completion_tokens": 8, "total_tokens": 33}), 1.1)
    obs.feed(b"data: [DONE]\n\n", 1.2)
    assert obs.terminal
    assert _end_findings(obs, end) == [("openai_chat.finish_length", True)]


def test_feed_after_finish_is_ignored() -> None:
    obs = StreamObserver(C, start=0.0)
    obs.feed(chat({"content": "a"}), 1.0)
    s = obs.finish(2.0)
    assert obs.feed(chat({"content": "b"}), 3.0) == []
    assert obs.finish(4.0) is s
    assert s.text_bytes == 1


# -- HTTP errors on the streaming path --------------------------------------------------------------


@pytest.mark.parametrize("protocol", [A, C, R])
def test_http_error_json_body_through_stream_observer(protocol: Protocol) -> None:
    body = error_body(protocol, ErrorKind.RATE_LIMITED, "Rate limit exceeded, retry in 20s")
    obs = StreamObserver(protocol, start=0.0)
    obs.headers(429, 0.1)
    for piece in bytewise(body):
        assert obs.feed(piece, 0.2) == []
    s = obs.finish(0.3)
    assert s.outcome is Outcome.ERROR
    assert s.status_code == 429
    assert s.error is not None
    assert (s.error.kind, s.error.source, s.error.status) == (ErrorKind.RATE_LIMITED, "http", 429)
    assert s.error.message == "Rate limit exceeded, retry in 20s"


def test_http_error_with_empty_body() -> None:
    obs = StreamObserver(C, start=0.0)
    obs.headers(503, 0.1)
    s = obs.finish(0.2)
    assert s.outcome is Outcome.ERROR
    assert s.error is not None and s.error.kind is ErrorKind.OVERLOADED and s.error.message == "HTTP 503"


# -- the shared error shapes are observed as errors --------------------------------------------------


@pytest.mark.parametrize("protocol", [A, C, R])
@pytest.mark.parametrize("kind", [ErrorKind.OVERLOADED, ErrorKind.PROMPT_TOO_LONG, ErrorKind.TOOL_STALL])
def test_error_shapes_error_event_is_an_error(protocol: Protocol, kind: ErrorKind) -> None:
    head = {
        A: MSG_START,
        C: chat({"role": "assistant", "content": "x"}),
        R: resp("response.created", 0, response={"id": "resp_1", "model": "m"}),
    }[protocol]
    ev = error_event(
        protocol,
        kind,
        "prompt is too long" if kind is ErrorKind.PROMPT_TOO_LONG else "stop",
        response_id="resp_1",
        model="m",
        sequence_number=1,
    )
    obs = StreamObserver(protocol, start=0.0)
    obs.feed(head + ev, 1.0)
    s = obs.finish(2.0)
    assert s.outcome is Outcome.ERROR
    assert s.error is not None and s.error.source == "event"
    if kind is ErrorKind.PROMPT_TOO_LONG:
        assert s.error.kind is ErrorKind.PROMPT_TOO_LONG
    assert obs.failed is None
    assert s.sequence_gaps == 0


# -- protocol rules not covered by a fixture ------------------------------------------------------


def _violation(protocol: Protocol, data: bytes) -> tuple[Outcome, BaseException | None]:
    s, obs = run_stream(protocol, [data])
    return s.outcome, obs.failed


def test_anthropic_arguments_after_the_tool_block_stopped_are_read_as_the_sdks_read_them() -> None:
    """Both SDKs append a late fragment to the block's fragments (a block that stopped without one:
    the late one alone is its input). What a client gets: tests/translate_stream/test_anthropic_quirks.py."""
    start = ant("content_block_start", index=0, content_block={"type": "tool_use", "id": "t", "name": "f"})
    stop = ant("content_block_stop", index=0)

    def args(part: str) -> bytes:
        return ant("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": part})

    for body, want in (
        (start + stop + args('{"a":1}'), '{"a":1}'),
        (start + args('{"a":') + stop + args("1") + args("}"), '{"a":1}'),
        (start + args('{"a":1}') + stop + args(""), '{"a":1}'),
    ):
        s, obs = run_stream(A, [MSG_START + body + ant("message_stop")], capture=True)
        assert (s.outcome, obs.failed) == (Outcome.COMPLETED, None)
        assert [(t.arguments, t.arguments_valid_json, t.arguments_bytes) for t in s.tool_calls] == [
            (want, True, len(want))
        ]
        assert [f.rule for f in obs.findings] == ["anthropic.args_after_stop"]


def test_anthropic_event_before_message_start_is_not_read() -> None:
    """The SDKs read nothing before ``message_start``; with none at all they raise."""
    s, obs = run_stream(A, [ant("content_block_start", index=0, content_block={"type": "text"})])
    assert (s.outcome, obs.failed) == (Outcome.CLOSED, None)
    assert [(c["rule"], c["event_index"]) for c in s.extra["conformance"]] == [
        ("anthropic_messages.before_message_start", 0),
        ("anthropic_messages.no_message_start", 1),
    ]


def test_anthropic_sparse_block_index_is_a_quirk() -> None:
    """Block indexes that are not dense are read as the provider meant them: the summary is
    complete, with a note at the start (the SDKs append it) and a finding at the delta naming the
    index (the SDKs find no block there: Python raises, Node loses it)."""
    body = (
        MSG_START
        + ant("content_block_start", index=1, content_block={"type": "text", "text": ""})
        + ant("content_block_delta", index=1, delta={"type": "text_delta", "text": "hi"})
        + ant("content_block_stop", index=1)
        + ant("message_stop")
    )
    obs = StreamObserver(A, start=0.0)
    obs.headers(200, 0.0)
    obs.observe(body, 1.0)
    s = obs.finish(2.0)
    assert s.outcome is Outcome.COMPLETED and s.text_bytes == 2 and obs.failed is None
    assert [(f.rule, f.severity, f.event) for f in obs.findings] == [
        ("anthropic.sparse_index", "quirk", 1),
        ("anthropic_messages.block_index", "quirk", 2),  # the Python SDK raises, the Node SDK loses it
    ]
    assert s.extra["notes"] == [
        "content_block_start index 1 is block 0 in the content: blocks are read by place, as the SDKs "
        "read them",
        "content_block_delta for block 1, which is block 0 in the content",
    ]


def test_anthropic_message_delta_usage_is_cumulative() -> None:
    s, _ = run_stream(
        A,
        [
            MSG_START
            + ant("message_delta", delta={"stop_reason": None}, usage={"output_tokens": 5})
            + ant("message_delta", delta={"stop_reason": "pause_turn"}, usage={"output_tokens": 9})
            + ant("message_stop")
        ],
    )
    assert (s.usage.input_tokens, s.usage.output_tokens, s.usage.total_tokens) == (10, 9, 19)
    assert (s.stop_reason, s.stop_class) == ("pause_turn", StopClass.PAUSE_TURN)


def test_anthropic_tool_without_deltas_has_empty_object_input() -> None:
    s, _ = run_stream(
        A,
        [
            MSG_START
            + ant(
                "content_block_start", index=0, content_block={"type": "tool_use", "id": "t", "name": "now"}
            )
            + ant("content_block_stop", index=0)
            + ant("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 3})
            + ant("message_stop")
        ],
        capture=True,
    )
    (tc,) = s.tool_calls
    assert (tc.arguments_complete, tc.arguments_valid_json, tc.arguments) == (True, True, "{}")


def test_anthropic_server_and_mcp_tool_kinds() -> None:
    s, _ = run_stream(
        A,
        [
            MSG_START
            + ant(
                "content_block_start",
                index=0,
                content_block={
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "web_search",
                    "input": {},
                },
            )
            + ant(
                "content_block_delta",
                index=0,
                delta={"type": "input_json_delta", "partial_json": '{"query":"x"}'},
            )
            + ant("content_block_stop", index=0)
            + ant(
                "content_block_start",
                index=1,
                content_block={
                    "type": "mcp_tool_use",
                    "id": "mcptoolu_1",
                    "name": "echo",
                    "server_name": "s",
                },
            )
            + ant("content_block_stop", index=1)
            + ant("message_stop")
        ],
    )
    assert [(t.kind, t.arguments_valid_json) for t in s.tool_calls] == [("server_tool", True), ("mcp", True)]


def test_events_after_terminal_are_not_interpreted() -> None:
    s, obs = run_stream(C, [fixture(C, "text.sse") + chat({"content": "ghost"})])
    assert s.outcome is Outcome.COMPLETED
    assert s.text_bytes == 24
    assert obs.failed is None


def test_chat_model_change_is_a_note_not_a_violation() -> None:
    """The official SDK reads a stream whose chunks change model (a model router does): a quirk,
    noted once, the first model stays the stream's."""
    body = (
        chat({"content": "a"})
        + chat({"content": "b"}, model="gpt-4o-mini")
        + chat({"content": "c"}, model="gpt-4o-mini")
        + b"data: [DONE]\n\n"
    )
    s, obs = run_stream(C, [body])
    assert obs.failed is None
    assert s.outcome is Outcome.COMPLETED and s.error is None
    assert (s.model, s.text) == ("gpt-4o", "abc")
    assert s.extra["notes"] == [
        "chunk model 'gpt-4o-mini' differs from the stream's 'gpt-4o'",
        "choice 0 got no finish_reason",  # this stream has none: a conformance finding (openai-node raises)
        "choice 0 got no role",  # nor a role (openai-node raises)
    ]


def test_chat_done_without_finish_reason_completes_tool_calls() -> None:
    body = (
        chat(
            {
                "tool_calls": [
                    {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ]
            }
        )
        + b"data: [DONE]\n\n"
    )
    s, _ = run_stream(C, [body])
    assert s.outcome is Outcome.COMPLETED
    assert s.stop_reason is None
    assert [(t.arguments_complete, t.arguments_valid_json) for t in s.tool_calls] == [(True, True)]


def test_chat_custom_tool_and_reasoning_content() -> None:
    body = (
        chat({"reasoning_content": "think"})
        + chat(
            {
                "tool_calls": [
                    {"index": 0, "id": "c", "type": "custom", "custom": {"name": "sh", "input": "ls"}}
                ]
            }
        )
        + chat({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    s, _ = run_stream(C, [body], capture=True)
    assert s.reasoning == "think" and s.reasoning_bytes == 5
    (tc,) = s.tool_calls
    assert (tc.kind, tc.name, tc.arguments, tc.arguments_valid_json) == ("custom", "sh", "ls", False)


def test_chat_multiple_choices_key_tools_per_choice() -> None:
    def two(i: int, args: str, finish: str | None = None) -> bytes:
        tc = {"index": 0, "function": {"arguments": args}}
        if finish is None and args.startswith("{"):
            tc.update({"id": f"call_{i}", "type": "function"})
        obj = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": i, "delta": {"tool_calls": [tc]}, "finish_reason": finish}],
        }
        return encode_event(orjson.dumps(obj))

    body = (
        two(0, '{"a":')
        + two(1, '{"b":')
        + two(0, "1}")
        + two(1, "2}", "tool_calls")
        + two(0, "", "tool_calls")
    )
    s, _ = run_stream(C, [body + b"data: [DONE]\n\n"], capture=True)
    assert [(t.id, t.arguments) for t in s.tool_calls] == [("call_0", '{"a":1}'), ("call_1", '{"b":2}')]


def test_responses_delta_for_unknown_item_is_semantic_error() -> None:
    body = resp("response.created", 0, response={"id": "resp_1"}) + resp(
        "response.output_text.delta", 1, item_id="msg_nope", output_index=0, content_index=0, delta="x"
    )
    s, obs = run_stream(R, [body])
    assert s.outcome is Outcome.ERROR
    assert isinstance(obs.failed, SemanticStreamError)


def test_responses_item_event_before_any_start_is_a_resumed_stream() -> None:
    """A stream whose first event is an item's is a background response resumed mid-way
    (``starting_after``), read on: here it ends at EOF, so closed, never a violation."""
    s, obs = run_stream(
        R, [resp("response.output_item.added", 7, output_index=0, item={"id": "m", "type": "message"})]
    )
    assert s.outcome is Outcome.CLOSED
    assert obs.failed is None
    assert [(f.rule, f.event) for f in obs.findings] == [
        ("openai_responses.created_first", 0),
        ("openai_responses.resumed", 0),
        ("openai_responses.no_terminal", 1),
    ]


def test_responses_terminal_snapshot_completes_tool_without_done_events() -> None:
    fc = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"a": 1}'}
    body = (
        resp("response.created", 0, response={"id": "resp_1", "model": "m"})
        + resp("response.output_item.added", 1, output_index=0, item={**fc, "arguments": ""})
        + resp("response.function_call_arguments.delta", 2, item_id="fc_1", output_index=0, delta='{"a"')
        + resp(
            "response.completed",
            3,
            response={
                "id": "resp_1",
                "status": "completed",
                "output": [fc],
                "usage": {"input_tokens": 3, "output_tokens": 4},
            },
        )
    )
    s, _ = run_stream(R, [body], capture=True)
    assert s.outcome is Outcome.COMPLETED
    assert s.stop_class is StopClass.TOOL_USE
    (tc,) = s.tool_calls
    assert (tc.id, tc.arguments, tc.arguments_valid_json, tc.arguments_bytes) == (
        "call_1",
        '{"a": 1}',
        True,
        8,
    )
    assert (s.usage.total_tokens, s.usage.cache_read_tokens) == (7, None)


def test_responses_id_change_is_protocol_error() -> None:
    body = resp("response.created", 0, response={"id": "resp_1"}) + resp(
        "response.completed", 1, response={"id": "resp_2", "status": "completed", "output": []}
    )
    s, obs = run_stream(R, [body])
    assert s.outcome is Outcome.ERROR
    assert isinstance(obs.failed, UpstreamProtocolError)


def test_responses_next_sequence_number() -> None:
    obs = StreamObserver(R, start=0.0)
    assert obs.next_sequence_number == 0
    obs.feed(fixture(R, "function_call_reasoning_gap.sse")[:2000], 1.0)
    n = obs.next_sequence_number
    assert n > 0
    assert StreamObserver(C, start=0.0).next_sequence_number == 0


def test_responses_custom_and_mcp_tools() -> None:
    body = (
        resp("response.created", 0, response={"id": "resp_1", "model": "m"})
        + resp(
            "response.output_item.added",
            1,
            output_index=0,
            item={"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_c", "name": "sh", "input": ""},
        )
        + resp("response.custom_tool_call_input.delta", 2, item_id="ctc_1", output_index=0, delta="echo ")
        + resp("response.custom_tool_call_input.done", 3, item_id="ctc_1", output_index=0, input="echo hi")
        + resp(
            "response.output_item.added",
            4,
            output_index=1,
            item={"id": "mcp_1", "type": "mcp_call", "name": "add", "server_label": "calc", "arguments": ""},
        )
        + resp("response.mcp_call_arguments.delta", 5, item_id="mcp_1", output_index=1, delta='{"a":1}')
        + resp("response.mcp_call_arguments.done", 6, item_id="mcp_1", output_index=1, arguments='{"a":1}')
    )
    s, _ = run_stream(R, [body], capture=True)
    assert s.outcome is Outcome.CLOSED
    # no request declared a custom tool "sh": a call the server ran (xAI's X Search streams so)
    assert [(t.id, t.kind, t.arguments, t.arguments_complete) for t in s.tool_calls] == [
        ("call_c", "server_tool", "echo hi", True),
        ("mcp_1", "mcp", '{"a":1}', True),
    ]


# -- observe_body ---------------------------------------------------------------------------------


def test_observe_body_sse_content_type_equals_streaming() -> None:
    data = fixture(A, "thinking.sse")
    s = observe_body(
        A, data, status_code=200, start=0.0, headers_at=0.1, end=0.5, content_type="text/event-stream"
    )
    streamed, _ = run_stream(A, [data], capture=False)
    assert s.streaming is True
    assert s.to_metadata()["usage"] == streamed.to_metadata()["usage"]
    assert s.outcome is Outcome.COMPLETED
    assert s.timing.total_s == 0.5


@pytest.mark.parametrize("content_type", [None, "application/json", "text/plain; charset=utf-8"])
def test_observe_body_sniffs_sse_whatever_the_label(content_type: str | None) -> None:
    for protocol, name in [(A, "text.sse"), (C, "text.sse"), (R, "text.sse")]:
        data = fixture(protocol, name)
        s = observe_body(
            protocol, data, status_code=200, start=0, headers_at=0, end=1, content_type=content_type
        )
        assert s.streaming is True and s.outcome is Outcome.COMPLETED
    # a JSON body is never mistaken for SSE
    s = observe_body(C, fixture(C, "body_tool_calls.json"), status_code=200, start=0, headers_at=0, end=1)
    assert s.streaming is False and s.outcome is Outcome.COMPLETED


def test_observe_body_json_timing_and_counts() -> None:
    body = fixture(C, "body_tool_calls.json")
    s = observe_body(
        C, body, status_code=200, start=5.0, headers_at=5.25, end=6.0, content_type="application/json"
    )
    assert s.streaming is False
    assert (s.timing.headers_s, s.timing.total_s, s.timing.first_event_s) == (0.25, 1.0, None)
    assert (s.counts.bytes, s.counts.chunks, s.counts.events) == (len(body), 1, 0)


@pytest.mark.parametrize("protocol", [A, C, R])
def test_observe_body_not_json_is_protocol_error(protocol: Protocol) -> None:
    s = observe_body(protocol, b"<html>oops</html>", status_code=200, start=0, headers_at=0, end=0)
    assert s.outcome is Outcome.ERROR
    assert s.error is not None and s.error.kind is ErrorKind.UPSTREAM_PROTOCOL


@pytest.mark.parametrize("protocol", [A, C, R])
@pytest.mark.parametrize("body", [b"", b'{"id": "trunc', b'{"id": "x", "content": [1, '])
def test_observe_body_cut_short_is_closed(protocol: Protocol, body: bytes) -> None:
    s = observe_body(protocol, body, status_code=200, start=0, headers_at=0, end=0)
    assert (s.outcome, s.error) == (Outcome.CLOSED, None)
    assert s.extra["notes"] == [
        f"the JSON body ended after {len(body)} bytes, before the document was complete"
    ]


@pytest.mark.parametrize("protocol", [A, C, R])
def test_observe_body_error_object_with_200(protocol: Protocol) -> None:
    body = error_body(protocol, ErrorKind.OVERLOADED, "Overloaded")
    s = observe_body(
        protocol, body, status_code=200, start=0, headers_at=0, end=0, content_type="application/json"
    )
    assert s.outcome is Outcome.ERROR
    assert s.error is not None and s.error.kind is ErrorKind.OVERLOADED


def test_observe_body_responses_failed_and_incomplete() -> None:
    failed = {
        "id": "resp_1",
        "object": "response",
        "status": "failed",
        "model": "m",
        "output": [],
        "error": {"code": "rate_limit_exceeded", "message": "slow down"},
    }
    s = observe_body(R, orjson.dumps(failed), status_code=200, start=0, headers_at=0, end=0)
    # an in-band upstream error, as the streamed response.failed is
    assert (s.outcome, s.stop_reason, s.stop_class) == (Outcome.ERROR, "failed", StopClass.ERROR)
    assert s.error is not None and s.error.kind is ErrorKind.RATE_LIMITED
    inc = {
        "id": "resp_2",
        "object": "response",
        "status": "incomplete",
        "output": [],
        "incomplete_details": {"reason": "content_filter"},
    }
    s = observe_body(R, orjson.dumps(inc), status_code=200, start=0, headers_at=0, end=0)
    assert (s.stop_reason, s.stop_class, s.error) == ("content_filter", StopClass.CONTENT_FILTER, None)


# -- diagnostics and metadata -----------------------------------------------------------------------


def test_diagnostics_hold_tail_and_state() -> None:
    obs = StreamObserver(A, start=0.0)
    obs.feed(fixture(A, "unfinished_tool.sse"), 1.0)
    d = obs.diagnostics()
    assert d["summary"]["outcome"] == "unfinished_tool"
    assert d["open_tool_calls"][0]["id"] == "toolu_01StallStallStallStall"
    assert d["state"] == "MESSAGE"
    assert d["tail"].endswith('data: {"type": "ping"}\n\n')
    orjson.dumps(d)  # JSON-able


def test_metadata_is_plain_json() -> None:
    for protocol, name in [(A, "thinking.sse"), (C, "empty_json_tail.sse"), (R, "failed.sse")]:
        s, _ = run_stream(protocol, [fixture(protocol, name)])
        md = s.to_metadata()
        assert orjson.loads(orjson.dumps(md)) == md


def test_chat_empty_finish_reason_means_not_yet() -> None:
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a":'}}
    body = (
        chat({"tool_calls": [call]}, "")
        + chat({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}, "")
        + chat({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    s, _ = run_stream(C, [body], capture=True)
    assert (s.outcome, s.stop_reason) == (Outcome.COMPLETED, "tool_calls")
    assert [(t.arguments, t.arguments_valid_json) for t in s.tool_calls] == [('{"a":1}', True)]
    assert s.extra["notes"] == ["choice 0 got no role"]  # no role delta: openai-node raises


@pytest.mark.parametrize("events", [True, False])
def test_responses_delta_whose_type_is_not_a_string_is_an_event_of_no_type(events: bool) -> None:
    """A ``"type"`` that is a JSON array or object: the fast path does not take it (a list cannot
    be looked up; it used to raise and the stream was reported malformed), the general rules
    read it as both SDKs do, as an event of no type (openai-python passes over it, openai-node
    raises: the rule ``unknown_event``), whatever its SSE event name: its text is counted from
    the terminal response, which holds it (the final object of both SDKs)."""
    data = fixture(R, "text.sse")
    delta = b'{"type":"response.output_text.delta",'
    assert data.count(delta) >= 2
    odd = data.replace(delta, b'{"type":["response.output_text.delta"],', 1)
    expected, _ = run_stream(R, [data[: len(data) // 2], data[len(data) // 2 :]], events=events)
    for pieces in ([odd], bytewise(odd), [odd[: len(odd) // 2], odd[len(odd) // 2 :]]):
        summary, _ = run_stream(R, pieces, events=events)
        assert summary.outcome is Outcome.COMPLETED
        assert summary.error is None
        assert (
            summary.to_metadata()["text_bytes"]
            == expected.to_metadata()["text_bytes"]
            == len("Hi there! \N{WAVING HAND SIGN}".encode())
        )
        assert [c["rule"] for c in summary.extra["conformance"]] == ["openai_responses.unknown_event"]


@pytest.mark.parametrize("events", [True, False])
def test_a_ping_first_counts_as_data_received_for_the_tolerated_tail(events: bool) -> None:
    """Seed 002 tolerates an unparsable last payload after valid data: a ``ping`` before
    ``message_start`` is valid data (the general path takes it, and the fast path never runs
    before an event the general path took)."""
    bad = b"event: content_block_delta\ndata: {not json\n\n"  # (named: the SDKs parse it)
    data = ant("ping") + bad
    for pieces in ([data], bytewise(data)):
        summary, _ = run_stream(A, pieces, events=events)
        assert summary.error is None
        assert summary.outcome is Outcome.CLOSED
        assert summary.to_metadata()["extra"]["tolerated_tail"] is True
    # Before any valid data the same payload is a protocol error.
    summary, _ = run_stream(A, [bad], events=events)
    assert summary.outcome is Outcome.ERROR
    assert summary.error is not None and summary.error.kind is ErrorKind.UPSTREAM_PROTOCOL
