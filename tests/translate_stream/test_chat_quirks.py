"""Chat Completions provider quirks, each through the addon's real ``Carrier`` in every mode
(observe-only, normalize, to Anthropic, to Responses), the client's bytes read back by the
official Python SDK's stream helper (``corpus.sdk``). The rules: docs/design/protocol-grammars.md,
"Chat Completions: liberal where the SDK is liberal".

No recording in ``tests/fixtures/real`` shows these streams (except content parts and whole tool
calls without ``index``: the Mistral recordings there); the bodies below are written from the
behaviour providers are reported to have: EOF without ``[DONE]``, a ``chat.completion.done``
last object, ``n > 1``, content and unknown finish reasons after the finish chunk, tool-call
deltas without ``index`` or with ``""`` ids, content parts, chunks without ``choices``,
``delta.audio``, ``max_tokens`` reached inside a tool call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus import run as corpus_run
from corpus import sdk
from corpus.streams import Stream

from proxai.core.model import Outcome, Protocol

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def sse(*objs: dict[str, Any], done: bool = True) -> bytes:
    out = b"".join(b"data: " + json.dumps(o).encode() + b"\n\n" for o in objs)
    return out + (b"data: [DONE]\n\n" if done else b"")


def ch(
    delta: dict[str, Any] | None = None, finish: str | None = None, idx: int = 0, **kw: Any
) -> dict[str, Any]:
    c = {"index": idx, "delta": delta or {}, "finish_reason": finish}
    o: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    o["choices"] = [c]
    o.update(kw)
    return o


def meta(obj: str = "chat.completion.chunk", **kw: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": obj, "created": 1, "model": "m", **kw}


TEXT = [ch({"role": "assistant", "content": ""}), ch({"content": "Hi"}), ch({}, "stop")]


def read(tmp: Path, body: bytes, client: Protocol | None) -> tuple[sdk.Reading, corpus_run.Carried]:
    path = tmp / "s.sse"
    path.write_bytes(body)
    got = corpus_run.carry(Stream("chat/s.sse", path, C, "test", "test", False), client)
    assert not got.bugs
    if client is None:
        assert got.out == body  # observe-only: the upstream's bytes
    return sdk.read(client or C, got.out), got


def reading(r: sdk.Reading) -> tuple[Any, ...]:
    return (r.verdict, r.stop, r.text, r.calls, r.reasoning, r.usage)


def notes(got: corpus_run.Carried) -> list[str]:
    return list(got.summary.extra.get("notes", []))


NO_USAGE_A = (0, 0, None, None)
NO_USAGE_R = (0, 0, 0, None)


@pytest.mark.parametrize(
    "body",
    [
        sse(*TEXT, done=False),
        sse(*TEXT, meta(choices=[], usage=USAGE), done=False),
        sse(*TEXT, meta("chat.completion.done", choices=[], usage=USAGE), done=False),
    ],
    ids=["eof", "eof-after-usage", "done-object"],
)
def test_eof_after_finish_without_done_is_completed_everywhere(tmp_path: Path, body: bytes) -> None:
    """Class: EOF after the finish chunk, no ``[DONE]`` (or a ``chat.completion.done`` object the
    SDK skips). The SDK reads the answer: the summary is ``completed`` with a note, and every
    route delivers the client's terminal event."""
    usage = body.count(b"prompt_tokens") > 0
    ref, got = read(tmp_path, body, None)
    assert reading(ref) == (
        "accepted",
        "stop",
        "Hi",
        [],
        "",
        (3, 2, None, None) if b"done" not in body and usage else (None,) * 4,
    )
    assert (got.summary.outcome, got.summary.stop_reason) == (Outcome.COMPLETED, "stop")
    assert any("without [DONE]" in n or "chat.completion.done" in n for n in notes(got))
    u = (3, 2) if usage else (0, 0)
    back, _ = read(tmp_path, body, C)
    assert reading(back) == ("accepted", "stop", "Hi", [], "", (*u, None, None))
    back, _ = read(tmp_path, body, A)
    assert reading(back) == ("accepted", "end_turn", "Hi", [], "", (*u, None, None))
    back, _ = read(tmp_path, body, R)
    assert reading(back) == ("accepted", "completed", "Hi", [], "", (*u, 0, None))


N2 = sse(
    ch({"role": "assistant", "content": "A"}),
    ch({"role": "assistant", "content": "B"}, idx=1),
    ch({}, "stop"),
    ch({}, "stop", idx=1),
)


def test_n_choices_pass_through_in_normalize_and_are_refused_across(tmp_path: Path) -> None:
    """Class: ``n > 1``. Normalize passes every choice through (the SDK's final object has both);
    a cross route ends with a typed error in the client's protocol naming the choices (its
    request translation refuses ``n > 1`` up front, so these are choices nobody asked for)."""
    ref, got = read(tmp_path, N2, None)
    assert reading(ref) == ("accepted", "stop", "A", [], "", (None,) * 4)
    assert got.summary.outcome is Outcome.COMPLETED
    path = tmp_path / "s.sse"
    out = corpus_run.carry(Stream("chat/s.sse", path, C, "t", "t", False), C).out
    import openai

    client = openai.OpenAI(
        api_key="sk-t", base_url="http://127.0.0.1:9/v1", http_client=sdk._http(out), max_retries=0
    )
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "hi"}]) as s:
        final = s.get_final_completion()
    assert [(c.index, c.message.content, c.finish_reason) for c in final.choices] == [
        (0, "A", "stop"),
        (1, "B", "stop"),
    ]
    for client_protocol in (A, R):
        back, carried = read(tmp_path, N2, client_protocol)
        assert back.verdict == "error_event"
        assert "only choice index 0 can be translated" in back.detail
        assert carried.translation["error"].startswith("TranslationError")


@pytest.mark.parametrize(
    ("body", "text", "stop"),
    [
        (sse(*TEXT, ch({}, None, usage=USAGE)), "Hi", "stop"),
        (sse(*TEXT, ch({"content": ""}, None, text="Hi", token={"id": 5})), "Hi", "stop"),
        (sse(*TEXT, ch({"content": " there"})), "Hi there", "stop"),
        (sse(ch({"role": "assistant", "content": "Hi"}), ch({}, "eos")), "Hi", "eos"),
    ],
    ids=["usage-after", "token-after", "content-after", "eos"],
)
def test_content_after_finish_and_unknown_finish_reasons(
    tmp_path: Path, body: bytes, text: str, stop: str
) -> None:
    """Class: content after the finish chunk (usage, a ``text`` field and a token id, more
    text: the SDK appends it) and ``finish_reason: "eos"`` (read as end_turn, with a note)."""
    ref, got = read(tmp_path, body, None)
    assert (ref.verdict, ref.stop, ref.text) == ("accepted", stop, text)
    assert (got.summary.outcome, got.summary.stop_reason, got.summary.text_bytes) == (
        Outcome.COMPLETED,
        stop,
        len(text),
    )
    if stop == "eos":
        assert got.summary.stop_class.value == "end_turn"
        assert "finish_reason 'eos' is not one of the protocol's: read as end_turn" in notes(got)
    if text == "Hi there":
        assert "choice 0 got content after its finish_reason" in notes(got)
    for client, want in ((C, "stop"), (A, "end_turn"), (R, "completed")):
        back, _ = read(tmp_path, body, client)
        assert (back.verdict, back.stop, back.text) == ("accepted", want, text)


WHOLE_CALLS = sse(
    ch(
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
            ],
        }
    ),
    ch({"tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}),
    ch({}, "tool_calls"),
)
EMPTY_IDS = sse(
    ch(
        {
            "role": "assistant",
            "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
            ],
        }
    ),
    ch(
        {
            "tool_calls": [
                {"index": 0, "id": "", "type": "function", "function": {"name": "", "arguments": '{"a":'}}
            ]
        }
    ),
    ch({"tool_calls": [{"index": 0, "id": "call_1", "function": {"arguments": "1}"}}]}),
    ch({}, "tool_calls"),
)


def test_tool_call_deltas_without_index_or_with_empty_and_repeated_ids(tmp_path: Path) -> None:
    """Class: tool calls sent whole without ``index`` (the SDK fails only for want of one: read
    as whole calls), and continuations with ``"id": ""`` / ``"name": ""`` or the id repeated
    (the SDK concatenates the id: ``call_1call_1``; never a doubled id here)."""
    ref, got = read(tmp_path, WHOLE_CALLS, None)
    assert ref.verdict == "rejected" and "NoneType" in ref.detail
    two = [("call_1", "f", '{"a":1}'), ("call_2", "g", "{}")]
    assert [(t.id, t.name, t.arguments) for t in got.summary.tool_calls] == two
    assert got.summary.outcome is Outcome.COMPLETED
    ref, got = read(tmp_path, EMPTY_IDS, None)
    assert ref.calls == [("call_1call_1", "f", '{"a":1}')]
    one = [("call_1", "f", '{"a":1}')]
    assert [(t.id, t.name, t.arguments) for t in got.summary.tool_calls] == one
    for body, calls in ((WHOLE_CALLS, two), (EMPTY_IDS, one)):
        for client, stop in ((C, "tool_calls"), (A, "tool_use"), (R, "completed")):
            back, _ = read(tmp_path, body, client)
            assert (back.verdict, back.stop, back.calls) == ("accepted", stop, calls)


PARTS = sse(
    ch(
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]}],
        }
    ),
    ch({"content": [{"type": "text", "text": "Hi"}]}),
    ch({"content": "!"}),
    ch({}, "stop"),
)


def test_content_as_a_list_of_parts(tmp_path: Path) -> None:
    """Class: ``delta.content`` as typed parts (the SDK cannot merge them and raises): the text is
    exactly the text parts, the thinking parts are reasoning on every route."""
    ref, got = read(tmp_path, PARTS, None)
    assert ref.verdict == "rejected"
    assert (got.summary.outcome, got.summary.text_bytes, got.summary.reasoning_bytes) == (
        Outcome.COMPLETED,
        3,
        3,
    )
    assert "content arrives as a list of parts" in notes(got)
    for client, stop, usage in (
        (C, "stop", NO_USAGE_A),
        (A, "end_turn", NO_USAGE_A),
        (R, "completed", NO_USAGE_R),
    ):
        back, _ = read(tmp_path, PARTS, client)
        assert reading(back) == ("accepted", stop, "Hi!", [], "hmm", usage)


NO_CHOICES = sse(meta(service_tier="default"), *TEXT)
AUDIO = sse(
    ch({"role": "assistant", "audio": {"id": "audio_1", "transcript": "Hi"}}),
    ch({"audio": {"data": "AAAA", "transcript": " there"}}),
    ch({}, "stop"),
)


def test_chunks_without_choices_and_audio(tmp_path: Path) -> None:
    """Class: a chunk without ``choices`` (the SDK's helper raises on it) is read as a
    ``choices: []`` chunk and carried in normalize with ``choices: []``; ``delta.audio`` passes
    through in normalize and is left out (counted, with a note) on a cross route."""
    ref, got = read(tmp_path, NO_CHOICES, None)
    assert ref.verdict == "rejected" and "choices" in ref.detail
    assert got.summary.outcome is Outcome.COMPLETED
    for client, stop, usage in (
        (C, "stop", NO_USAGE_A),
        (A, "end_turn", NO_USAGE_A),
        (R, "completed", NO_USAGE_R),
    ):
        back, _ = read(tmp_path, NO_CHOICES, client)
        assert reading(back) == ("accepted", stop, "Hi", [], "", usage)
    path = tmp_path / "s.sse"
    path.write_bytes(NO_CHOICES)
    carried_nc = corpus_run.carry(Stream("chat/s.sse", path, C, "t", "t", False), C)
    # Before the stream's first chunk there is no identity to give a chunk without choices (every
    # chunk the client gets carries the stream's id, created and model): it is counted as left out
    assert carried_nc.out.startswith(
        b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"m",'
        b'"choices":[{"index":0,"delta":{"role":"assistant"}'
    )
    assert carried_nc.translation["left_out"] == {"chunk": 1}

    ref, got = read(tmp_path, AUDIO, None)
    assert reading(ref) == ("accepted", "stop", "", [], "", (None,) * 4)
    path.write_bytes(AUDIO)
    out = corpus_run.carry(Stream("chat/s.sse", path, C, "t", "t", False), C).out
    import openai

    client = openai.OpenAI(
        api_key="sk-t", base_url="http://127.0.0.1:9/v1", http_client=sdk._http(out), max_retries=0
    )
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "hi"}]) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.audio is not None
    audio = final.choices[0].message.audio
    assert (audio.id, audio.data, audio.transcript) == ("audio_1", "AAAA", "Hi there")
    for client_protocol, stop in ((A, "end_turn"), (R, "completed")):
        back, carried = read(tmp_path, AUDIO, client_protocol)
        assert (back.verdict, back.stop, back.text) == ("accepted", stop, "")
        assert carried.translation["left_out"] == {"audio": 2}
        assert "audio output has no counterpart in the client's protocol: left out" in notes(carried)


CUT = sse(
    ch(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a":'},
                }
            ],
        }
    ),
    ch({}, "length"),
)


def test_max_tokens_inside_a_tool_call(tmp_path: Path) -> None:
    """Class: ``max_tokens`` reached inside a tool call (its arguments are not JSON). The summary
    says ``unfinished_tool`` with the truncation stop; normalize passes it as it came; a cross
    route delivers the partial call with the client's truncation stop, never a refusal."""
    ref, got = read(tmp_path, CUT, None)
    assert reading(ref) == ("accepted", "length", "", [("call_1", "f", '{"a":')], "", (None,) * 4)
    assert (got.summary.outcome, got.summary.stop_reason) == (Outcome.UNFINISHED_TOOL, "length")
    assert [(t.id, t.name, t.arguments) for t in got.summary.tool_calls] == [("call_1", "f", '{"a":')]
    back, _ = read(tmp_path, CUT, C)
    assert reading(back) == ("accepted", "length", "", [("call_1", "f", '{"a":')], "", NO_USAGE_A)
    back, _ = read(tmp_path, CUT, A)  # the SDK parses the partial input as far as it goes
    assert reading(back) == ("accepted", "max_tokens", "", [("call_1", "f", "{}")], "", NO_USAGE_A)
    back, _ = read(tmp_path, CUT, R)
    assert reading(back) == (
        "incomplete",
        "incomplete:max_output_tokens",
        "",
        [("call_1", "f", '{"a":')],
        "",
        NO_USAGE_R,
    )
