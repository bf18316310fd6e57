"""A translated stream's phases (docs/streaming-translation.md, "Lifecycle"): an errored or
stopped translator stays so, and every later call returns nothing."""

from __future__ import annotations

import pytest

from proxai.core.errors import SemanticStreamError
from proxai.core.model import ErrorKind
from proxai.core.sse import SseScanner
from proxai.pipeline.flow import make_stream_translator
from proxai.translate.stream import Phase

from . import build as b
from .harness import A, C, R


def test_translator_after_error_emits_nothing_more() -> None:
    t = make_stream_translator(A, C)
    sc = SseScanner()
    tool = b.a("content_block_start", index=0, content_block={"type": "tool_use", "id": "t", "name": "f"})
    with pytest.raises(SemanticStreamError):
        t.feed(sc.feed(b.a_start() + tool + b.a("content_block_stop", index=0) + b.a_args(0, "[1]")))
    first = t.finish()  # a carrier that calls finish() instead of fail() still sends the error
    assert b'"error"' in first and b"input_json_delta for tool block 0 after its" in first
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
