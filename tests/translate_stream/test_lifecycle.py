"""The protocol-independent lifecycle carrier (docs/design/translation.md): one transition table,
typed errors, identity outside the phases, and an errored object that stays errored."""

from __future__ import annotations

import pytest

from proxai.errors import SemanticStreamError
from proxai.model import ErrorKind
from proxai.sse import SseScanner
from proxai.translate.stream import Lifecycle, Phase, StreamIdentity, make_stream_translator

from . import build as b
from .harness import A, C, R


def test_happy_path() -> None:
    life = Lifecycle()
    assert life.phase is Phase.WAITING and life.identity is None
    life.start(StreamIdentity("id1", "m"))
    life.delta()
    life.terminal()
    life.tail()
    life.stop()
    assert life.phase.value == "stopped" and life.done
    assert life.identity == StreamIdentity("id1", "m")


@pytest.mark.parametrize(
    ("steps", "bad"),
    [
        ([], "terminal"),
        ([], "stop"),
        (["start"], "start"),
        (["start"], "stop"),
        (["start"], "tail"),
        (["start", "terminal"], "delta"),
        (["start", "terminal", "stop"], "delta"),
        (["start", "terminal", "stop"], "start"),
    ],
)
def test_illegal_steps_are_semantic_errors(steps: list[str], bad: str) -> None:
    life = Lifecycle()
    for step in steps:
        if step == "start":
            life.start(StreamIdentity("x", "m"))
        else:
            getattr(life, step)()
    with pytest.raises(SemanticStreamError, match=f"'{bad}' is not allowed in phase"):
        if bad == "start":
            life.start(StreamIdentity("y", "m"))
        else:
            getattr(life, bad)()


def test_chat_identity_must_match() -> None:
    life = Lifecycle()
    life.start(StreamIdentity("chatcmpl-1", "gpt"))
    life.check_identity("chatcmpl-1")
    life.check_identity(None)
    with pytest.raises(SemanticStreamError, match="does not match"):
        life.check_identity("chatcmpl-2")


def test_fail_is_idempotent_and_final() -> None:
    life = Lifecycle()
    life.start(StreamIdentity("x", "m"))
    life.fail()
    life.fail()
    assert life.phase is Phase.ERRORED and life.done
    with pytest.raises(SemanticStreamError):
        life.delta()
    stopped = Lifecycle()
    stopped.start(StreamIdentity("x", "m"))
    stopped.terminal()
    stopped.stop()
    stopped.fail()
    assert stopped.phase is Phase.STOPPED  # a complete stream stays complete


def test_translator_after_error_emits_nothing_more() -> None:
    t = make_stream_translator(A, C)
    sc = SseScanner()
    with pytest.raises(SemanticStreamError):
        t.feed(sc.feed(b.a_start() + b.a_start()))
    first = t.finish()  # a carrier that calls finish() instead of fail() still sends the error
    assert b'"error"' in first and b"duplicate message_start" in first
    assert t.fail(ErrorKind.UNKNOWN, "x") == b"" and t.finish() == b"" and t.feed(sc.feed(b.a_end())) == b""


def test_translator_after_stop_ignores_more_input_and_fail() -> None:
    t = make_stream_translator(C, R)
    sc = SseScanner()
    body = b.c({"role": "assistant", "content": "hi"}) + b.c(finish="stop") + b.c_usage() + b.DONE
    out = t.feed(sc.feed(body))
    assert out.rstrip().endswith(b"}") and b"response.completed" in out
    assert t.feed(sc.feed(b.c({"content": "late"}))) == b""
    assert t.fail(ErrorKind.TOOL_STALL, "late stall") == b""
    assert t.finish() == b""
    assert t.phase is Phase.STOPPED


def test_guard_fail_mid_stream_gives_client_protocol_error() -> None:
    for client in (A, C, R):
        t = make_stream_translator(A, client, normalize=client is A)
        sc = SseScanner()
        t.feed(
            sc.feed(
                b.a_start() + b.a("content_block_start", index=0, content_block={"type": "text", "text": ""})
            )
        )
        out = t.fail(ErrorKind.TOOL_STALL, "tool call arguments stalled for 30 s")
        assert b"tool call arguments stalled" in out
        assert t.metadata()["phase"] == "errored"
