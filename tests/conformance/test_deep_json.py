"""JSON nested deeper than orjson reads (1,024 levels) is JSON to ProxAI (docs/design/conformance.md,
"Tool arguments fragment by fragment"): ``common.json_valid`` reads what orjson refuses for its depth
again without recursion (``conformance.deep_json``), so a call's ``arguments_valid_json``, the guard
and the findings say what the JSON is; the SDKs' own limits stay the findings they were."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from proxai.core.model import Outcome, Protocol
from proxai.pipeline.flow import request_asks
from proxai.pipeline.observe import StreamObserver
from proxai.protocols.common import json_valid

from .test_sdk_reactions import a_tool, c_args


def _nested(depth: int, inner: str = "1") -> str:
    return (
        '{"a":' * (depth // 2)
        + "[" * (depth - depth // 2)
        + inner
        + "]" * (depth - depth // 2)
        + "}" * (depth // 2)
    )


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        (_nested(1024), True),  # orjson reads it
        (_nested(1025), True),  # orjson refuses it
        (_nested(3000), True),
        (_nested(3000, "[]"), True),
        ("[" * 3000 + "]" * 2999, False),  # a bracket left open
        ("[" * 3000 + "]" * 3000 + "x", False),  # more after the value
        ("[" * 3000 + "1,]" + "]" * 2999, False),  # a comma before a bracket
        ("[" * 3000 + "NaN" + "]" * 3000, False),  # no JSON literal
        ('[{"a" 1}' + "[" * 2000 + "]" * 2000 + "]", False),
        ("{" * 1100 + "}" * 1100, False),  # an object needs a key
    ],
    ids=["1024", "1025", "3000", "3000-empty", "open", "after", "comma", "nan", "colon", "keyless"],
)
def test_json_valid_reads_any_depth(text: str, valid: bool) -> None:
    assert json_valid(text) is valid


def _summary(protocol: Protocol, data: bytes, request: dict[str, Any] | None = None) -> Any:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}], **(request or {})}
    obs = StreamObserver(protocol, start=0.0, asked=request_asks(orjson.dumps(body), protocol))
    obs.headers(200, 0.0)
    obs.observe(data, 0.0)
    return obs.finish(0.0)


def test_chat_arguments_deeper_than_orjson_reads_are_json() -> None:
    """A non-strict Chat call whose arguments nest 1,100 levels: complete JSON, no finding (no SDK
    parses a non-strict call's arguments; before, ``arguments_valid_json`` was false)."""
    arguments = _nested(1100)
    summary = _summary(Protocol.OPENAI_CHAT, c_args(arguments[:600], arguments[600:]))
    assert summary.outcome is Outcome.COMPLETED
    assert [(t.name, t.arguments_valid_json) for t in summary.tool_calls] == [("f", True)]
    assert summary.extra.get("conformance", []) == []


def test_anthropic_tool_input_deeper_than_orjson_reads_is_json() -> None:
    """A tool input 1,100 levels deep is JSON (``arguments_valid_json``) and only
    ``tool_input_depth`` (anthropic-python's jiter stops at 200, anthropic-node reads it)."""
    text = _nested(1100)
    summary = _summary(Protocol.ANTHROPIC_MESSAGES, a_tool(text[:700], text[700:]))
    assert summary.outcome is Outcome.COMPLETED
    assert [(t.name, t.arguments_valid_json) for t in summary.tool_calls] == [("f", True)]
    assert [(f["rule"], f["event_index"]) for f in summary.extra["conformance"]] == [
        ("anthropic_messages.tool_input_depth", 4)
    ]
