"""xAI's ``custom_tool_call`` items in a non-streamed Responses reply (docs/design/translation.md,
"xAI's custom_tool_call"), the same rule as the streamed translation's
(tests/translate_stream/test_hosted_custom_call.py): a call of a tool the client did not declare
ran at the server and is left out and counted, the answer arrives; a reply that ends on one with no
answer after it is refused; a call of a custom tool the Chat client declared is its tool call. The
reply is the recording's terminal snapshot (tests/fixtures/real/SOURCES.md), read by the real SDKs'
models."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from corpus import streams

from proxai.core.errors import TranslationError
from proxai.core.model import Protocol, StopClass
from proxai.translate.request import translate_request
from proxai.translate.response import translate_response

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
XAI = "responses/xai--vercel-ai--xai-x-search-tool.rebuilt.sse"


def _snapshot() -> dict[str, Any]:
    body = {s.name: s for s in streams.load()}[XAI].body().decode()
    last = [line for line in body.splitlines() if line.startswith("data: ")][-1]
    event = json.loads(last[len("data: ") :])
    assert event["type"] == "response.completed"
    return dict(event["response"])


def _answer(snap: dict[str, Any]) -> str:
    return "".join(p["text"] for o in snap["output"] if o["type"] == "message" for p in o["content"])


def test_an_anthropic_client_gets_the_answer() -> None:
    snap = _snapshot()
    out = translate_response(snap, R, A, created=1)
    assert out.left_out == {"custom_tool_call": 2, "web_search_call": 4}
    assert out.stop is StopClass.END_TURN
    msg = anthropic.types.Message.model_validate(out.body)
    assert [b.type for b in msg.content] == ["text"]
    assert isinstance(msg.content[0], anthropic.types.TextBlock)
    assert msg.content[0].text == _answer(snap)
    assert msg.stop_reason == "end_turn"


def test_a_chat_client_gets_the_answer() -> None:
    snap = _snapshot()
    out = translate_response(snap, R, C, created=1)
    assert out.left_out == {"custom_tool_call": 2, "web_search_call": 4}
    final = openai.types.chat.ChatCompletion.model_validate(out.body)
    assert final.choices[0].message.content == _answer(snap)
    assert final.choices[0].message.tool_calls is None
    assert final.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("client", [A, C])
def test_a_reply_that_ends_on_a_hosted_call_is_refused(client: Protocol) -> None:
    snap = _snapshot()
    snap["output"] = [o for o in snap["output"] if o["type"] != "message"]
    with pytest.raises(TranslationError) as info:
        translate_response(snap, R, client, created=1)
    assert str(info.value) == (
        "output[].type: the upstream ended on a 'custom_tool_call' item its server ran, with no answer"
        " after it: the client's protocol has no counterpart for it"
    )


def test_declared_custom_tools_are_the_chat_clients_calls() -> None:
    snap = _snapshot()
    snap["output"] = [o for o in snap["output"] if o["type"] != "message"]
    declared = frozenset({"x_keyword_search", "view_x_video"})
    out = translate_response(snap, R, C, created=1, custom_tools=declared)
    assert out.left_out == {"web_search_call": 4}
    assert out.stop is StopClass.TOOL_USE
    final = openai.types.chat.ChatCompletion.model_validate(out.body)
    calls = final.choices[0].message.tool_calls
    assert calls is not None
    assert [(c.type, c.id, c.custom.name, c.custom.input) for c in calls] == [  # type: ignore[union-attr]
        (
            "custom",
            "xs_call_24148162",
            "x_keyword_search",
            '{"query":"from:xai filter:media","limit":20,"mode":"Latest"}',
        ),
        (
            "custom",
            "xs_call_14963218",
            "view_x_video",
            '{"video_url":"https://video.twimg.com/amplify_video/1991284765027364866/vid/avc1/468x270/kRkbodV96jk4PmbG.mp4"}',
        ),
    ]
    assert final.choices[0].finish_reason == "tool_calls"


def test_the_request_translation_names_the_clients_custom_tools() -> None:
    """What the route hands to the reply's translation: the Chat request's custom tools."""
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {"type": "custom", "custom": {"name": "apply_patch"}},
            {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
        ],
    }
    out = translate_request(body, C, R)
    assert out.custom_tools == frozenset({"apply_patch"})
    assert translate_request({**body, "tools": body["tools"][1:]}, C, R).custom_tools == frozenset()
