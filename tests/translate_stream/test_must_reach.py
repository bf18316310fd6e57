"""Nothing the client must act on disappears (docs/design/translation.md, "What the client must
act on"): a Responses answer that is a call the client must answer (a built-in client tool, an MCP
approval request, a freeform tool call) or content that is the answer itself (a generated image)
reaches an Anthropic or Chat client as a typed error in its protocol naming the item type, never
as an empty answer ending ``end_turn`` / ``stop``. A server-executed item beside the answer (web
search, xAI's hosted custom tool calls: test_hosted_custom_call.py) is left out with a note, and
the answer's text still arrives.

Every stream is a real recording (tests/fixtures/real/SOURCES.md) carried by the addon's real
``Carrier`` in every mode: observe-only (the client gets the upstream bytes), normalize (the
Python SDK's final response holds the item), and to Anthropic and to Chat (the Python SDK raises
the typed error). The request side is in ``test_request_declares_no_hosted_tool``.
"""

from __future__ import annotations

import anthropic
import openai
import pytest
from corpus import run as corpus_run
from corpus import streams

from proxai.core.model import Outcome, Protocol
from proxai.translate.request import translate_request

from .harness import sdk_anthropic, sdk_chat, sdk_responses

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
_BY_NAME = {s.name: s for s in streams.load()}

# recording -> (the item type, the id of its first such item, the id the client's answer quotes)
CASES: dict[str, tuple[str, str, str | None]] = {
    "responses/openai--vercel-ai--openai-local-shell-tool-1.rebuilt.sse": (
        "local_shell_call",
        "lsh_68da7fd99b3c8194bd624b18c0c0851b0faf5df54b42d9a6",
        "call_h3nm8hUG0KO9tVNuRACkL1ri",
    ),
    "responses/openai--vercel-ai--openai-apply-patch-tool-1.rebuilt.sse": (
        "apply_patch_call",
        "apc_0372d86dfc1762fe00692741f3f3dc8190879cba489ff2fc8b",
        "call_kA46f91ZwocQyMCKyyZqRyC5",
    ),
    "responses/openai--vercel-ai--openai-shell-tool-1-part1of2.rebuilt.sse": (
        "shell_call",
        "sh_0434d6d64b12b08900692f639c9f0481959c30e03ca0bb2ef8",
        None,
    ),
    "responses/openai--vercel-ai--openai-mcp-tool-approval-1.rebuilt.sse": (
        "mcp_approval_request",
        "mcpr_04a97b4fce127879006949a83ac9308195a7f7b69ea82e91fe",
        None,
    ),
    "responses/openai--vercel-ai--openai-image-generation-tool-1.rebuilt.sse": (
        "image_generation_call",
        "ig_0df93c0bb83a72f20068c979f589c0819e9f0fc2d1a27aa1b8",
        None,
    ),
}


def _message(itype: str) -> str:
    return (
        f"output[].type: the upstream answered with a {itype!r} item, which the client must act on"
        " and its protocol has no counterpart for"
    )


def _item(name: str) -> tuple[str, list[str], str | None]:
    """The case's item type, the ids of its items in the Python SDK's reading of the recording,
    and the first one's call id."""
    itype, iid, call_id = CASES[name]
    final = sdk_responses(_BY_NAME[name].body())
    found = [o for o in final.output if o.type == itype]
    assert found[0].id == iid
    if call_id is not None:
        assert found[0].call_id == call_id
    return itype, [o.id for o in found], call_id


@pytest.mark.parametrize("name", sorted(CASES))
def test_observe_only_hands_on_the_bytes(name: str) -> None:
    stream = _BY_NAME[name]
    _item(name)
    got = corpus_run.carry(stream, None)
    assert got.out == stream.body()
    assert got.summary.outcome is Outcome.COMPLETED
    assert got.bugs == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_normalize_keeps_the_item(name: str) -> None:
    itype, ids, call_id = _item(name)
    got = corpus_run.carry(_BY_NAME[name], R)
    assert "error" not in got.translation
    final = sdk_responses(got.out)
    assert final.status == "completed"
    kept = [o for o in final.output if o.type == itype]
    assert [o.id for o in kept] == ids
    if call_id is not None:
        assert kept[0].call_id == call_id


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_anthropic_client_gets_a_typed_error_naming_the_item(name: str) -> None:
    itype, _, _ = _item(name)
    got = corpus_run.carry(_BY_NAME[name], A)
    assert got.translation["error"] == f"TranslationError: {_message(itype)}"
    with pytest.raises(anthropic.APIStatusError) as info:
        sdk_anthropic(got.out)
    assert info.value.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": _message(itype)},
    }
    assert b"message_stop" not in got.out and b"end_turn" not in got.out


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_chat_client_gets_a_typed_error_naming_the_item(name: str) -> None:
    itype, _, _ = _item(name)
    got = corpus_run.carry(_BY_NAME[name], C)
    assert got.translation["error"] == f"TranslationError: {_message(itype)}"
    with pytest.raises(openai.APIError) as info:
        sdk_chat(got.out)
    assert info.value.message == _message(itype)
    assert b"[DONE]" not in got.out and b'"finish_reason":"stop"' not in got.out


WEB_SEARCH = "responses/openai--vercel-ai--openai-web-search-tool-1.rebuilt.sse"


def test_a_server_side_search_beside_the_answer_is_left_out_with_a_note() -> None:
    """Web search calls ran at the server and their results are cited in the text: a Chat client
    gets the whole text and a note counts the six calls; an Anthropic client gets them as its own
    server tool blocks."""
    stream = _BY_NAME[WEB_SEARCH]
    ref = sdk_responses(stream.body())
    text = "".join(p.text for o in ref.output if o.type == "message" for p in o.content)
    chat = corpus_run.carry(stream, C)
    assert chat.translation["left_out"] == {"web_search": 6}
    assert chat.translation["notes"] == ["left out (no counterpart in the client protocol): web_search x6"]
    final = sdk_chat(chat.out)
    assert final.choices[0].message.content == text
    assert final.choices[0].finish_reason == "stop"
    msg = sdk_anthropic(corpus_run.carry(stream, A).out)
    assert [b.type for b in msg.content] == ["server_tool_use", "web_search_tool_result"] * 6 + ["text"]
    assert msg.content[-1].text == text
    assert msg.stop_reason == "end_turn"


@pytest.mark.parametrize("client", [A, C])
def test_request_declares_no_hosted_tool(client: Protocol) -> None:
    """A request translated to Responses declares the client's function tools and nothing else: the
    upstream is never offered a hosted tool whose items the client could not receive."""
    tool = {"name": "get_weather", "description": "d", "parameters": {"type": "object", "properties": {}}}
    if client is A:
        body = {
            "model": "m",
            "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": tool["name"], "description": "d", "input_schema": tool["parameters"]}],
        }
    else:
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": tool}],
        }
    out = translate_request(body, client, R)
    assert [(t["type"], t["name"]) for t in out.body["tools"]] == [("function", "get_weather")]
