"""Reading recorded runs for replay (proxai.mitm.replay.load): what a flow holds becomes an entry
(the client's request, what the client received, the recorded timing), a flow without a body is
skipped with a note, and a file that is not a recorded run is one clear error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import http
from mitmproxy.test import tflow

from proxai.core.model import Protocol
from proxai.mitm.flowrows import write_flows
from proxai.mitm.replay import parse_speed
from proxai.mitm.replay_load import ReplayFileError, load
from proxai.replay.match import conversation

SSE = b"event: message_stop\ndata: {}\n\n"
ASK = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


def llm_flow(
    body: bytes | None = SSE, meta: dict[str, Any] | None = None, request: dict[str, Any] = ASK
) -> http.HTTPFlow:
    f = tflow.tflow(resp=True)
    f.request.method, f.request.path = "POST", "/v1/messages"
    f.request.content = orjson.dumps(request)
    assert f.response is not None
    f.response.headers["content-type"] = "text/event-stream"
    f.response.headers["x-request-id"] = "req_1"
    f.response.headers["set-cookie"] = "a=b"
    f.response.raw_content = body
    f.metadata["proxai"] = (
        meta if meta is not None else {"protocol": "anthropic_messages", "outcome": "completed"}
    )
    return f


@pytest.mark.parametrize(
    "reads",
    [
        {"offsets": [10, len(SSE)], "seconds": [0.4, 1.2]},
        [[10, 0.4], [len(SSE), 1.2]],  # the form flow files saved before hold
    ],
)
def test_an_entry_holds_the_client_side_and_the_recorded_reads(tmp_path: Path, reads: object) -> None:
    chat_ask = {"model": "gpt", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    translated = llm_flow(
        meta={
            "protocol": "anthropic_messages",
            "client_protocol": "openai_chat",
            "client_request": {
                "url": "http://x/v1/chat/completions",
                "body": orjson.dumps(chat_ask).decode(),
            },
            "timing": {"headers_s": 0.1, "first_token_s": 0.4, "total_s": 1.2},
            "reads": reads,
            "outcome": "completed",
        }
    )
    path = tmp_path / "run.flow"
    write_flows(str(path), [tflow.tflow(), translated])
    cassette, notes = load([str(path)])
    assert notes == []
    [e] = cassette.entries
    assert (e.source.file, e.source.index) == (str(path), 2)
    assert e.conversation == conversation(Protocol.OPENAI_CHAT, chat_ask)
    a = e.answer
    assert (a.status, a.streaming, a.body, a.reset) == (200, True, SSE, False)
    assert a.headers == (("content-type", "text/event-stream"), ("x-request-id", "req_1"))
    assert (a.headers_s, a.first_s, a.total_s) == (0.1, 0.4, 1.2)
    assert a.reads == ((10, 0.4), (len(SSE), 1.2))


def test_a_flow_without_a_body_is_skipped_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "run.flow"
    meta = {
        "protocol": "anthropic_messages",
        "outcome": "completed",
        "body_not_kept": "the response body was not kept: it passed proxai_keep_body_max (8 bytes)",
    }
    write_flows(str(path), [llm_flow(None, meta), llm_flow()])
    cassette, notes = load([str(path)])
    assert len(cassette) == 1 and cassette.entries[0].source.index == 2
    assert notes == [
        f"{path}, flow 1 (POST /v1/messages) skipped: the response body was not kept: it passed "
        "proxai_keep_body_max (8 bytes)"
    ]
    write_flows(str(path), [llm_flow(None, meta)])
    with pytest.raises(ReplayFileError) as err:
        load([str(path)])
    assert str(err.value) == f"{path}: none of its 1 LLM flows can be replayed ({notes[0]})"


def test_a_replay_miss_is_not_an_answer(tmp_path: Path) -> None:
    path = tmp_path / "run.flow"
    miss = llm_flow(b"{}", {"protocol": "anthropic_messages", "replay": {"replayed": False, "miss": "error"}})
    write_flows(str(path), [miss, llm_flow()])
    cassette, notes = load([str(path)])
    assert len(cassette) == 1
    assert notes == [
        f"{path}, flow 1 (POST /v1/messages) skipped: it is a replay miss (its answer is the divergence "
        "error, not a recorded one)"
    ]


def bad_file(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.flow"
    if kind == "text":
        path.write_text("this is not a flow file\n")
    elif kind == "har":
        path.write_text('{"log": {"entries": "no"}}')
    elif kind == "truncated":
        good = tmp_path / "good.flow"
        write_flows(str(good), [llm_flow(), llm_flow()])
        data = good.read_bytes()
        path.write_bytes(data[: len(data) - 40])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "no_llm":
        write_flows(str(path), [tflow.tflow(resp=True)])
    return path


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("text", "cannot read {path}: not a mitmproxy flow file (Invalid data format.)"),
        (
            "har",
            "cannot read {path}: not a mitmproxy flow file (Unable to read HAR file. Please provide a "
            "valid HAR file)",
        ),
        ("truncated", "cannot read {path}: cut short or damaged after 1 flow (Invalid data format.)"),
        ("empty", "{path}: holds no LLM flow (a run saved with mitmdump -w)"),
        ("no_llm", "{path}: holds no LLM flow (a run saved with mitmdump -w)"),
        ("missing", "cannot read {path}: [Errno 2] No such file or directory: '{path}'"),
    ],
)
def test_a_file_that_is_not_a_recorded_run(tmp_path: Path, kind: str, message: str) -> None:
    path = bad_file(tmp_path, kind)
    with pytest.raises(ReplayFileError) as err:
        load([str(path)])
    assert str(err.value) == message.format(path=path)


def test_speed() -> None:
    assert [parse_speed(s) for s in ("1", "0", "2.5")] == [1.0, 0.0, 2.5]
    for bad in ("-1", "nan", "inf", "fast"):
        with pytest.raises(ValueError):
            parse_speed(bad)


def test_recorded_reads_in_either_form_and_nothing_from_anything_else() -> None:
    from proxai.mitm.replay_load import _reads

    pairs = ((3, 0.25), (9, 1.0))
    assert _reads({"offsets": [3, 9], "seconds": [0.25, 1]}) == pairs  # seconds as a replay reads them
    assert _reads([[3, 0.25], [9, 1.0]]) == pairs
    for bad in (
        None,
        {"offsets": [3, 9], "seconds": [0.25]},
        {"offsets": [3, "9"], "seconds": [0.25, 1.0]},
        {"offsets": [3, 9], "seconds": [0.25, float("nan")]},
        {"seconds": [0.25]},
        [[3, 0.25], [9]],
        [[3, 0.25], "x"],
    ):
        assert _reads(bad) == ()
