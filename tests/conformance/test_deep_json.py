"""JSON nested deeper than orjson reads (1,024 levels) is JSON to ProxAI (docs/design/conformance.md,
"Tool arguments fragment by fragment"): ``common.json_valid`` reads what orjson refuses for its depth
again without recursion (``conformance.deep_json``), and a number past a double's range with the
standard parser, so a call's ``arguments_valid_json``, the guard
and the findings say what the JSON is; the SDKs' own limits stay the findings they were. And what
ProxAI writes for an Anthropic client: no tool input fragment that leaves a value inside more than
200 containers (anthropic-python's parse after each fragment raises there), checked on the client's
bytes with both real SDKs."""

from __future__ import annotations

import warnings
from typing import Any

import orjson
import pytest
from bench import golden

from proxai.core.model import Outcome, Protocol
from proxai.pipeline.flow import request_asks
from proxai.pipeline.observe import StreamObserver
from proxai.protocols.common import json_valid
from proxai.protocols.conformance import too_deep
from proxai.protocols.fragments import DepthWatch

from . import sdks
from .test_sdk_reactions import a_tool, c_args, r_call


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
        ('{"a": 1e400, "b": [-1E400]}', True),  # past a double's range: orjson refuses it
        ("[1e400", False),
        ("[1e400]]", False),
    ],
    ids=[
        "1024",
        "1025",
        "3000",
        "3000-empty",
        "open",
        "after",
        "comma",
        "nan",
        "colon",
        "keyless",
        "infinity",
        "infinity-cut",
        "infinity-after",
    ],
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


# -- what a translation writes for an Anthropic client ---------------------------------------------


def _args(depth: int) -> str:
    """Arguments with a number inside ``depth`` containers (an object around arrays)."""
    return '{"a":' + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "}"


def _carried(up: Protocol, data: bytes) -> tuple[bytes, Any]:
    """The Anthropic client's bytes of ``data`` (translated from Chat, or normalized), whole, and
    the flow's summary."""
    carrier = golden.build(up, Protocol.ANTHROPIC_MESSAGES, up is Protocol.ANTHROPIC_MESSAGES)
    out = b"".join(carrier.feed(data, 0.001)) + b"".join(carrier.feed(b"", 0.002))
    return out, carrier.summary


UPSTREAMS = [Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES, Protocol.ANTHROPIC_MESSAGES]


def _upstream(up: Protocol, arguments: str) -> bytes:
    half = len(arguments) // 2
    if up is Protocol.OPENAI_CHAT:
        return c_args(arguments[:half], arguments[half:])
    if up is Protocol.OPENAI_RESPONSES:
        return r_call(arguments)  # (one delta: the writer gets it whole)
    return a_tool(arguments[:half], arguments[half:])


@pytest.mark.parametrize("up", UPSTREAMS, ids=["chat", "responses", "normalize"])
@pytest.mark.parametrize("depth", [201, 1100])
def test_an_anthropic_client_never_gets_a_tool_input_anthropic_python_cannot_parse(
    up: Protocol, depth: int
) -> None:
    """Arguments with a value inside more than 200 containers, for an Anthropic client: the
    fragment that would bring that value is not written (anthropic-python's parse after it, jiter,
    would raise ValueError); the translation ends there with an error event, which both SDKs raise
    as the API error it is. The flow's outcome is not ``completed``."""
    out, summary = _carried(up, _upstream(up, _args(depth)))
    # the first half (199 containers open) went out; at 1,100 levels it is too deep itself
    assert out.count(b"input_json_delta") == (
        1 if depth == 201 and up is not Protocol.OPENAI_RESPONSES else 0
    )
    assert b"1]" not in out
    assert summary.outcome is Outcome.UNFINISHED_TOOL
    assert summary.error is not None and summary.error.message == (
        "content[0].input: the tool input nests a value in more than 200 objects or arrays, "
        "which anthropic-python cannot parse"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        py = sdks.python("anthropic", out)
    (nd,) = sdks.node([("anthropic", out)])
    assert (py.ok, py.error, nd.ok, nd.error) == (False, "APIStatusError", False, "APIError")
    assert "anthropic-python cannot parse" in py.message and "anthropic-python cannot parse" in nd.message


@pytest.mark.parametrize("up", UPSTREAMS, ids=["chat", "responses", "normalize"])
def test_a_tool_input_200_containers_deep_reaches_an_anthropic_client(up: Protocol) -> None:
    out, summary = _carried(up, _upstream(up, _args(200)))
    assert summary.outcome is Outcome.COMPLETED
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        py = sdks.python("anthropic", out)
    (nd,) = sdks.node([("anthropic", out)])
    want = {"a": orjson.loads("[" * 199 + "1" + "]" * 199)}
    assert py.ok and nd.ok
    assert py.final["content"][0]["input"] == want == nd.final["content"][0]["input"]


def _cut_docs() -> list[str]:
    """Arguments around jiter's limit with strings full of brackets, escapes and keys, and texts
    that are no JSON (a closer that matches nothing, a string a backslash cuts)."""
    texts = [
        '{"k": "' + "[{" * 150 + '\\"]", "d": ' + "[" * 199 + '{"e": "x\\\\"}' + "]" * 199 + "}",
        '[{"a": ' * 101 + "1" + "}]" * 101,
        "[" * 199 + '"' + "\\\\" * 3 + '"' + "]" * 198 + "," + "[" * 201 + "1",
        "]" + "[" * 300 + "1",
        '"ab\\' + "[" * 250,
        "[" * 200 + "[]" + "]" * 200,
        '{"a":' * 200 + '{"b": 1}',
    ]
    return texts


def test_depth_watch_is_too_deep_of_the_text_so_far() -> None:
    """``fragments.DepthWatch``, fed a text in pieces (every cut into two, and into pieces of 1 to
    9 characters), says after each piece what ``conformance.too_deep`` says of the text so far."""
    wrong = []
    for text in _cut_docs():
        cuts = [[text[:i], text[i:]] for i in range(1, len(text))]
        cuts += [[text[i : i + n] for i in range(0, len(text), n)] for n in range(1, 10)]
        for pieces in cuts:
            watch, so_far = DepthWatch(), ""
            for piece in pieces:
                so_far += piece
                if watch.deep(piece) != too_deep(so_far):
                    wrong.append((text[:20], len(so_far)))
                    break
                if too_deep(so_far):
                    break
    assert wrong == []
    assert [too_deep(t) for t in _cut_docs()] == [True, True, True, False, False, False, True]


def test_the_anthropic_writers_tool_input_refuses_the_fragment_the_watch_refuses() -> None:
    """The writer's tool input format (``to_anthropic.writer._ToolInput``: the first count on the
    encoded fragments), fed the same pieces JSON-encoded, refuses exactly the first piece after
    which ``conformance.too_deep`` says the text so far is too deep, and formats every piece before
    it as it came."""
    from proxai.core.errors import TranslationError
    from proxai.translate.stream.to_anthropic.writer import _ToolInput

    wrong = []
    for text in [*_cut_docs(), "é[" * 150 + '"\\u005b\\"' + "{" * 60]:
        cuts = [[text[:i], text[i:]] for i in range(1, len(text), 7)]
        cuts += [[text[i : i + n] for i in range(0, len(text), n)] for n in (1, 4, 9)]
        for pieces in cuts:
            fmt, so_far = _ToolInput(b"<%b>", 0), ""
            for piece in pieces:
                so_far += piece
                encoded = orjson.dumps(piece)
                try:
                    got = fmt % encoded
                except TranslationError:
                    got = None
                if (got is None) != too_deep(so_far) or (got is not None and got != b"<" + encoded + b">"):
                    wrong.append((text[:20], len(so_far)))
                    break
                if got is None:
                    break
    assert wrong == []


def test_the_writers_tool_input_holds_a_bounded_count_of_bytes() -> None:
    """Past ``HELD_MAX`` encoded bytes the writer's tool input holds nothing more (its watch reads
    the text so far, then each fragment alone), and still refuses exactly where
    ``conformance.too_deep`` does: a long string with brackets in it, then nesting past 200."""
    from proxai.core.errors import TranslationError
    from proxai.translate.stream.to_anthropic.writer import HELD_MAX, _ToolInput

    head = '{"k": "' + "[{ab" * (HELD_MAX // 3) + '", "d": '
    pieces = [head[i : i + 1000] for i in range(0, len(head), 1000)] + ["[" * 50] * 5 + ["1"]
    fmt, so_far, refused = _ToolInput(b"%b", 0), "", None
    for n, piece in enumerate(pieces):
        so_far += piece
        try:
            fmt % orjson.dumps(piece)
        except TranslationError:
            refused = n
            break
        assert not too_deep(so_far)
        if len(so_far) > HELD_MAX + 1000:
            assert fmt.held is None  # nothing held past the bound
    assert refused == len(pieces) - 2 and too_deep(so_far)  # the fifth fragment of 50 opens


def test_responses_arguments_deeper_than_orjson_reads_reach_a_chat_client() -> None:
    """A Responses call whose arguments nest 1,100 levels, for a Chat client: the arguments are
    JSON, so the call is delivered whole (before, the Responses grammar's writer end read them with
    orjson alone and refused the stream as "not valid JSON"); neither OpenAI SDK parses a
    non-strict call's arguments, and both give them as sent."""
    arguments = _nested(1100)
    carrier = golden.build(Protocol.OPENAI_RESPONSES, Protocol.OPENAI_CHAT, False)
    out = b"".join(carrier.feed(r_call(arguments), 0.001)) + b"".join(carrier.feed(b"", 0.002))
    assert carrier.summary.outcome is Outcome.COMPLETED
    assert carrier.summary.error is None
    py = sdks.python("chat", out)
    (nd,) = sdks.node([("chat", out)])
    for got in (py, nd):
        assert got.ok, got
        (call,) = got.final["choices"][0]["message"]["tool_calls"]
        assert call["function"]["arguments"] == arguments
