"""``json_fit.misfit`` against the schemas the SDKs derive from pydantic models (openai-python's
``to_strict_json_schema``, anthropic-python's ``transform_schema``) and against pydantic itself: what
it calls a misfit the model refuses (never a finding the SDK would not raise on, for these models),
and the plain violations are found. The request a client that parses with a model class sends
(openai-python ``response_format=`` / ``text_format=``, anthropic-python ``output_format=``, beta
too) gives the proxy that schema. The structured-answer grammars (``json_answer``) are built only
for a request with a ``json_schema`` format, and keep a bounded answer."""

from __future__ import annotations

import contextlib
import enum
import json
from collections.abc import Callable
from typing import Any, Literal

import httpx2
import pydantic
import pytest
from anthropic.lib._parse._transform import transform_schema
from openai.lib._pydantic import to_strict_json_schema

from proxai.core.model import Protocol
from proxai.pipeline.flow import request_asks
from proxai.pipeline.observe import Limits, StreamObserver, make_grammar
from proxai.protocols.anthropic import AnthropicGrammar
from proxai.protocols.chat import ChatGrammar
from proxai.protocols.conformance import Asked
from proxai.protocols.json_answer import AnthropicJsonGrammar, ChatJsonGrammar
from proxai.protocols.json_fit import misfit

from .test_sdk_reactions import C_DONE, C_ROLE, C_STOP, _c


class Color(enum.Enum):
    red = "red"
    blue = "blue"


class Inner(pydantic.BaseModel):
    n: int
    tags: list[str]


class Model(pydantic.BaseModel):
    a: int
    b: float
    c: bool
    s: str
    o: str | None = None
    e: Color
    lit: Literal["x", "y"]
    inner: Inner
    items: list[Inner]
    u: int | str
    d: int = 5
    tree: Model | None = None


GOOD: dict[str, Any] = {
    "a": 1,
    "b": 1.5,
    "c": True,
    "s": "s",
    "o": None,
    "e": "red",
    "lit": "x",
    "inner": {"n": 1, "tags": ["a"]},
    "items": [{"n": 2, "tags": []}],
    "u": "q",
    "d": 1,
    "tree": None,
}


def _without(key: str) -> dict[str, Any]:
    return {k: v for k, v in GOOD.items() if k != key}


# (the answer, where misfit finds it wrong: None when it fits)
VARIANTS: list[tuple[Any, str | None]] = [
    (GOOD, None),
    ({**GOOD, "a": "3"}, None),  # pydantic reads a string of an integer
    ({**GOOD, "a": 1.0}, None),
    ({**GOOD, "a": True}, None),
    ({**GOOD, "b": "1.5"}, None),
    ({**GOOD, "c": "yes"}, None),
    ({**GOOD, "zz": 1}, None),  # extra keys: ignored by the model
    (_without("o"), None),  # admits null: may have a default
    (_without("d"), None),  # has a default
    ({**GOOD, "tree": GOOD}, None),
    ({**GOOD, "a": "x"}, "$.a"),
    ({**GOOD, "a": 1.5}, "$.a"),
    ({**GOOD, "a": None}, "$.a"),
    ({**GOOD, "c": 2}, "$.c"),
    ({**GOOD, "s": 3}, "$.s"),
    (_without("a"), "$: the required property 'a'"),
    ({**GOOD, "e": "green"}, "$.e"),
    ({**GOOD, "lit": "z"}, "$.lit"),
    ({**GOOD, "inner": {"n": "x", "tags": []}}, "$.inner.n"),
    ({**GOOD, "inner": None}, "$.inner"),
    ({**GOOD, "items": [{"n": 1, "tags": [1]}]}, "$.items[0].tags[0]"),
    ({**GOOD, "u": [1]}, "$.u"),
    ({**GOOD, "tree": {**GOOD, "a": "x"}}, "$.tree.a"),  # through the recursive $ref
    ([1], "$"),
    ("x", "$"),
]

SCHEMAS = {
    "openai to_strict_json_schema": to_strict_json_schema(Model),
    "anthropic transform_schema": transform_schema(Model.model_json_schema()),
}


@pytest.mark.parametrize("schema_name", sorted(SCHEMAS))
@pytest.mark.parametrize(("value", "where"), VARIANTS)
def test_misfit_is_what_the_model_refuses(schema_name: str, value: Any, where: str | None) -> None:
    schema = SCHEMAS[schema_name]
    bad = misfit(value, schema)
    try:
        Model.model_validate_json(json.dumps(value))
        refused = False
    except pydantic.ValidationError:
        refused = True
    if where is None:
        assert bad is None
        assert not refused
    else:
        assert bad is not None and bad.startswith(where), bad
        assert refused  # a misfit is never one the model reads


def test_a_schema_nested_too_deep_is_not_judged() -> None:
    schema: dict[str, Any] = {"type": "integer"}
    value: Any = "x"
    for _ in range(100):
        schema = {"type": "array", "items": schema}
        value = [value]
    assert misfit(value, schema) is None
    assert misfit("x", {"$ref": "#"}) is None  # a $ref to itself ends at the depth bound


def test_only_a_json_schema_request_gets_the_keeping_grammars() -> None:
    limits = Limits()
    asked = Asked(json_format=True)
    assert type(make_grammar(Protocol.OPENAI_CHAT, limits, False)) is ChatGrammar
    assert type(make_grammar(Protocol.ANTHROPIC_MESSAGES, limits, False)) is AnthropicGrammar
    assert type(make_grammar(Protocol.OPENAI_CHAT, limits, False, asked=asked)) is ChatJsonGrammar
    chosen = make_grammar(Protocol.ANTHROPIC_MESSAGES, limits, False, asked=asked)
    assert type(chosen) is AnthropicJsonGrammar


def _rules(stream: bytes, limits: Limits) -> list[str]:
    obs = StreamObserver(Protocol.OPENAI_CHAT, start=0.0, limits=limits, asked=Asked(json_format=True))
    obs.headers(200, 0.0)
    obs.observe(stream, 0.0)
    return [f["rule"] for f in obs.finish(0.0).extra.get("conformance", [])]


def test_the_kept_answer_is_bounded() -> None:
    stream = C_ROLE + _c({"content": "Hi"}) + _c({"content": " there"}) + C_STOP + C_DONE
    assert _rules(stream, Limits()) == ["openai_chat.json_content"]
    # past the bound nothing is kept, and the answer is not judged
    assert _rules(stream, Limits(max_tool_args=4)) == []


def _sent(call: Callable[[Any], object]) -> bytes:
    """The body an SDK sends for ``call(http_client)`` (answered with a 400: the SDK raises)."""
    bodies: list[bytes] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        bodies.append(request.content)
        return httpx2.Response(400, json={"error": {"type": "invalid_request_error", "message": "x"}})

    http = httpx2.Client(transport=httpx2.MockTransport(answer))
    with contextlib.suppress(Exception):
        call(http)
    http.close()
    assert bodies
    return bodies[0]


def _openai(http: Any) -> Any:
    import openai

    return openai.OpenAI(api_key="x", http_client=http, max_retries=0)


def _anthropic(http: Any) -> Any:
    import anthropic

    return anthropic.Anthropic(api_key="x", http_client=http, max_retries=0)


_HI = [{"role": "user", "content": "hi"}]


def _chat(http: Any) -> None:
    with _openai(http).chat.completions.stream(model="m", messages=_HI, response_format=Model) as s:
        s.get_final_completion()


def _responses(http: Any) -> None:
    with _openai(http).responses.stream(model="m", input="hi", text_format=Model) as s:
        s.get_final_response()


def _messages(http: Any) -> None:
    with _anthropic(http).messages.stream(model="m", max_tokens=16, messages=_HI, output_format=Model) as s:
        s.get_final_message()


def _beta_messages(http: Any) -> None:
    with _anthropic(http).beta.messages.stream(
        model="m", max_tokens=16, messages=_HI, output_format=Model
    ) as s:
        s.get_final_message()


@pytest.mark.parametrize(
    ("call", "protocol", "schema"),
    [
        (_chat, Protocol.OPENAI_CHAT, SCHEMAS["openai to_strict_json_schema"]),
        (_responses, Protocol.OPENAI_RESPONSES, SCHEMAS["openai to_strict_json_schema"]),
        (_messages, Protocol.ANTHROPIC_MESSAGES, SCHEMAS["anthropic transform_schema"]),
        (_beta_messages, Protocol.ANTHROPIC_MESSAGES, SCHEMAS["anthropic transform_schema"]),
    ],
    ids=["chat response_format", "responses text_format", "messages output_format", "beta output_format"],
)
def test_the_proxy_reads_the_schema_the_sdk_sends(
    call: Callable[[Any], object], protocol: Protocol, schema: dict[str, Any]
) -> None:
    """A client that parses with a model class sends its schema: the request asks for a json_schema
    format, and the schema ``misfit`` judges with is the one the SDK derived from the class."""
    asked = request_asks(_sent(call), protocol)
    assert asked.json_format
    assert asked.schema == schema
    assert misfit({**GOOD, "a": "x"}, asked.schema) is not None
    assert misfit(GOOD, asked.schema) is None
