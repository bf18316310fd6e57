"""Conformance findings on real recorded streams (tests/fixtures/real, SOURCES.md): the streams of the
corpus that break a rule, the rule the grammar reports, and the real SDKs' reaction to those exact
bytes, as the catalogue says (a Node SDK that raises on a stream OpenAI itself sent, for one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from proxai.core.model import Protocol
from proxai.pipeline.observe import StreamObserver
from proxai.protocols.conformance import RULES

from . import sdks

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
KINDS = {
    "anthropic": Protocol.ANTHROPIC_MESSAGES,
    "chat": Protocol.OPENAI_CHAT,
    "responses": Protocol.OPENAI_RESPONSES,
}

# (file, the rules found with their event index)
FOUND: dict[str, list[tuple[str, int]]] = {
    "chat/centml--huggingface-hub--chat-completion-with-stream.sse": [("openai_chat.finish_length", 9)],
    "chat/deepseek--vercel-ai--deepseek-text.rebuilt.sse": [("openai_chat.finish_length", 403)],
    "chat/hf-fireworks--huggingface-hub--chat-completion-with-stream.sse": [("openai_chat.finish_length", 7)],
    "chat/hf-hyperbolic--huggingface-hub--chat-completion-with-stream.sse": [
        ("openai_chat.finish_length", 22)
    ],
    "chat/hf-inference--huggingface-hub--chat-completion-with-stream.sse": [
        ("openai_chat.finish_length", 21)
    ],
    "chat/hf-nebius--huggingface-hub--chat-completion-with-stream.sse": [("openai_chat.finish_length", 22)],
    "chat/sambanova--huggingface-hub--chat-completion-with-stream.sse": [("openai_chat.finish_length", 6)],
    "chat/together--huggingface-hub--chat-completion-with-stream.sse": [("openai_chat.finish_length", 21)],
    "chat/cloudflare-workers-ai--chatlas--cloudflare-data-extraction.sse": [("openai_chat.no_role", 10)],
    "chat/cloudflare-workers-ai--chatlas--cloudflare-respects-turns-interface-2.sse": [
        ("openai_chat.no_role", 5)
    ],
    "chat/cloudflare-workers-ai--chatlas--cloudflare-respects-turns-interface-3.sse": [
        ("openai_chat.no_role", 4)
    ],
    "chat/cloudflare-workers-ai--chatlas--cloudflare-respects-turns-interface.sse": [
        ("openai_chat.no_role", 5)
    ],
    "chat/cloudflare-workers-ai--chatlas--cloudflare-simple-request.sse": [("openai_chat.no_role", 4)],
    "chat/cloudflare-workers-ai--chatlas--cloudflare-simple-streaming-request.sse": [
        ("openai_chat.no_role", 4)
    ],
    "chat/github-copilot--codecompanion--copilot-streaming.rebuilt.sse": [
        ("openai_chat.chunk_object", 0),
        ("openai_chat.no_valid_chunk", 11),
    ],
    "chat/github-copilot--codecompanion--copilot-tools-streaming.rebuilt.sse": [
        ("openai_chat.chunk_object", 0),
        ("openai_chat.no_valid_chunk", 18),
    ],
    "chat/groq--pydantic-ai--groq-model-web-search-tool-stream.sse": [
        ("openai_chat.node_replaced_field", 1),
        ("openai_chat.no_role", 226),
    ],
    "chat/mistral--vercel-ai--mistral-incremental-tool-call.rebuilt.sse": [("openai_chat.no_role", 3)],
    "chat/mistral--vercel-ai--mistral-tool-call.rebuilt.sse": [("openai_chat.tool_call_no_index", 1)],
    "chat/mistral--vercel-ai--mistral-reasoning.rebuilt.sse": [("openai_chat.content_list_index", 1)],
    "chat/openrouter--pydantic-ai--openrouter-web-search-annotations-stream.sse": [
        ("openai_chat.delta_list_index", 1)
    ],
    "chat/perplexity--vercel-ai--perplexity-citations.rebuilt.sse": [("openai_chat.chunk_object", 7)],
    "chat/perplexity--vercel-ai--perplexity-text.rebuilt.sse": [("openai_chat.chunk_object", 7)],
    "chat/snowflake--pydantic-ai--snowflake-model-streaming.sse": [("openai_chat.no_finish_reason", 3)],
    "chat/snowflake--pydantic-ai--snowflake-thinking-streaming.sse": [
        ("openai_chat.node_replaced_field", 1),
        ("openai_chat.no_finish_reason", 16),
    ],
    "chat/azure--req-llm--deepseek-r1-0528-streaming.sse": [
        ("openai_chat.node_replaced_field", 3),
        ("openai_chat.finish_length", 51),
    ],
    "chat/cerebras--req-llm--qwen-3-235b-a22b-thinking-2507-streaming.sse": [
        ("openai_chat.finish_length", 37)
    ],
    "chat/zai--req-llm--coding-glm-4-5-streaming.sse": [
        ("openai_chat.chunk_object", 0),
        ("openai_chat.node_replaced_field", 1),
        ("openai_chat.no_valid_chunk", 153),
    ],
    "chat/zai--req-llm--coding-glm-4-6-object-streaming.sse": [
        ("openai_chat.chunk_object", 0),
        ("openai_chat.node_replaced_field", 1),
        ("openai_chat.no_valid_chunk", 144),
    ],
    "chat/zai--req-llm--glm-4-5-object-streaming.sse": [
        ("openai_chat.chunk_object", 0),
        ("openai_chat.node_replaced_field", 1),
        ("openai_chat.no_valid_chunk", 185),
    ],
    "chat/zai--req-llm--glm-4-5-reasoning-streaming.sse": [
        ("openai_chat.chunk_object", 0),
        ("openai_chat.node_replaced_field", 1),
        ("openai_chat.no_valid_chunk", 226),
    ],
    "chat/zai--req-llm--glm-4-5-streaming.sse": [
        ("openai_chat.chunk_object", 0),
        ("openai_chat.node_replaced_field", 1),
        ("openai_chat.no_valid_chunk", 154),
    ],
    "chat/zai--req-llm--glm-4-6-object-streaming.sse": [
        ("openai_chat.chunk_object", 0),
        ("openai_chat.node_replaced_field", 1),
        ("openai_chat.no_valid_chunk", 131),
    ],
    "responses/github--vercel-ai--github-copilot-id-rotation-1.rebuilt.sse": [
        ("openai_responses.lifecycle_id", 1)
    ],
    "responses/openai--pydantic-ai--background-mode-streaming-starting-after-vcr-2.sse": [
        ("openai_responses.created_first", 0)
    ],
    "responses/openai--req-llm--codex-mini-latest-streaming.sse": [("openai_responses.not_completed", 4)],
    "responses/openai--vercel-ai--openai-apply-patch-tool-1.rebuilt.sse": [
        ("openai_responses.unknown_event", 3)
    ],
    "responses/openai--vercel-ai--openai-client-tool-search-1.rebuilt.sse": [
        ("openai_responses.item_identity", 3)
    ],
    "responses/openai--vercel-ai--openai-shell-skills-1.rebuilt.sse": [("openai_responses.unknown_event", 3)],
    "responses/openai--vercel-ai--openai-shell-tool-1-part1of2.rebuilt.sse": [
        ("openai_responses.unknown_event", 3)
    ],
    "chat/alibaba--vercel-ai--alibaba-reasoning.rebuilt.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/azure--req-llm--deepseek-r1-0528-reasoning-streaming.sse": [("openai_chat.node_replaced_field", 3)],
    "chat/azure--req-llm--deepseek-r1-streaming.sse": [("openai_chat.node_replaced_field", 3)],
    "chat/azure--vercel-ai--azure-deepseek-reasoning-1.rebuilt.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/cerebras--req-llm--gpt-oss-120b-object-streaming.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/cerebras--req-llm--gpt-oss-120b-reasoning-streaming.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/cerebras--req-llm--gpt-oss-120b-streaming.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--chatlas--deepseek-respects-turns-interface-2.sse": [
        ("openai_chat.node_replaced_field", 2)
    ],
    "chat/deepseek--chatlas--deepseek-respects-turns-interface-3.sse": [
        ("openai_chat.node_replaced_field", 2)
    ],
    "chat/deepseek--chatlas--deepseek-respects-turns-interface.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--chatlas--deepseek-simple-request.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--chatlas--deepseek-simple-streaming-request.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--chatlas--deepseek-tool-variations-2.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--chatlas--deepseek-tool-variations-3.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--chatlas--deepseek-tool-variations-async-2.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--chatlas--deepseek-tool-variations-async-3.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--chatlas--deepseek-tool-variations-async-4.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--chatlas--deepseek-tool-variations-async.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--chatlas--deepseek-tool-variations.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--codecompanion--deepseek-streaming.rebuilt.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--codecompanion--deepseek-tools-no-params-streaming.rebuilt.sse": [
        ("openai_chat.node_replaced_field", 2)
    ],
    "chat/deepseek--codecompanion--deepseek-tools-streaming.rebuilt.sse": [
        ("openai_chat.node_replaced_field", 2)
    ],
    "chat/deepseek--pydantic-ai--deepseek-model-thinking-stream.sse": [
        ("openai_chat.node_replaced_field", 2)
    ],
    "chat/deepseek--vercel-ai--deepseek-reasoning.rebuilt.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/deepseek--vercel-ai--deepseek-tool-call.rebuilt.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/groq--pydantic-ai--groq-model-thinking-part-iter-2.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/groq--pydantic-ai--tool-use-failed-error-streaming-2.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/groq--pydantic-ai--tool-use-failed-error-streaming-3.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/groq--pydantic-ai--tool-use-failed-error-streaming-with-text-2.sse": [
        ("openai_chat.node_replaced_field", 2)
    ],
    "chat/groq--pydantic-ai--tool-use-failed-error-streaming-with-text.sse": [
        ("openai_chat.node_replaced_field", 2)
    ],
    "chat/groq--pydantic-ai--tool-use-failed-error-streaming.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/groq--req-llm--openai-gpt-oss-120b-object-streaming.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/groq--req-llm--openai-gpt-oss-120b-reasoning-streaming.sse": [
        ("openai_chat.node_replaced_field", 2)
    ],
    "chat/groq--req-llm--openai-gpt-oss-120b-streaming.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/groq--req-llm--openai-gpt-oss-20b-object-streaming.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/groq--req-llm--openai-gpt-oss-20b-reasoning-streaming.sse": [
        ("openai_chat.node_replaced_field", 2)
    ],
    "chat/groq--req-llm--openai-gpt-oss-20b-streaming.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/groq--vercel-ai--groq-reasoning.rebuilt.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/openrouter--codecompanion--openrouter-reasoning-streaming.rebuilt.sse": [
        ("openai_chat.node_replaced_field", 1)
    ],
    "chat/openrouter--codecompanion--openrouter-tools-streaming.rebuilt.sse": [
        ("openai_chat.node_replaced_field", 1)
    ],
    "chat/openrouter--pydantic-ai--openrouter-stream-error.sse": [("openai_chat.node_replaced_field", 1)],
    "chat/openrouter--pydantic-ai--openrouter-streaming-reasoning.sse": [
        ("openai_chat.node_replaced_field", 2)
    ],
    "chat/openrouter--req-llm--anthropic-claude-haiku-4-5-streaming.sse": [
        ("openai_chat.node_replaced_field", 2)
    ],
    "chat/openrouter--req-llm--google-gemini-2-5-flash-lite-preview-09-2025-streaming.sse": [
        ("openai_chat.node_replaced_field", 1)
    ],
    "chat/openrouter--req-llm--google-gemini-2-5-flash-lite-streaming.sse": [
        ("openai_chat.node_replaced_field", 1)
    ],
    "chat/openrouter--req-llm--google-gemini-2-5-flash-preview-09-2025-streaming.sse": [
        ("openai_chat.node_replaced_field", 1)
    ],
    "chat/openrouter--req-llm--google-gemini-2-5-flash-streaming.sse": [
        ("openai_chat.node_replaced_field", 1)
    ],
    "chat/openrouter--req-llm--google-gemini-2-5-pro-preview-05-06-streaming.sse": [
        ("openai_chat.node_replaced_field", 1)
    ],
    "chat/openrouter--req-llm--google-gemini-2-5-pro-preview-06-05-streaming.sse": [
        ("openai_chat.node_replaced_field", 1)
    ],
    "chat/openrouter--req-llm--google-gemini-2-5-pro-streaming.sse": [("openai_chat.node_replaced_field", 1)],
    "chat/openrouter--req-llm--google-gemini-3-flash-preview-streaming.sse": [
        ("openai_chat.node_replaced_field", 1)
    ],
    "chat/openrouter--req-llm--minimax-minimax-m2-free-streaming.sse": [
        ("openai_chat.node_replaced_field", 1)
    ],
    "chat/openrouter--req-llm--openai-gpt-5-codex-streaming.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/openrouter--req-llm--openai-gpt-oss-120b-exacto-streaming.sse": [
        ("openai_chat.node_replaced_field", 2)
    ],
    "chat/openrouter--req-llm--openai-gpt-oss-120b-streaming.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/openrouter--req-llm--x-ai-grok-code-fast-1-streaming.sse": [("openai_chat.node_replaced_field", 2)],
    "chat/xai--req-llm--grok-3-mini-streaming.sse": [("openai_chat.node_replaced_field", 1)],
    "chat/xai--req-llm--grok-code-fast-1-streaming.sse": [("openai_chat.node_replaced_field", 1)],
    "chat/xai--vercel-ai--xai-text-2.rebuilt.sse": [("openai_chat.node_replaced_field", 1)],
    "chat/xai--vercel-ai--xai-text.rebuilt.sse": [("openai_chat.node_replaced_field", 1)],
    "chat/xai--vercel-ai--xai-tool-call-2.rebuilt.sse": [("openai_chat.node_replaced_field", 1)],
    "chat/xai--vercel-ai--xai-tool-call.rebuilt.sse": [("openai_chat.node_replaced_field", 1)],
    "chat/z--pydantic-ai--zai-thinking-stream.sse": [("openai_chat.node_replaced_field", 1)],
}


# GitHub Copilot and Z.ai send no "object" on any chunk: the Python helper skips every chunk and has
# no completion to finish (``ChatCompletionStreamState.current_completion_snapshot`` asserts one):
# rule openai_chat.no_valid_chunk, after chunk_object.
NO_CHUNK_KEPT = {
    "chat/github-copilot--codecompanion--copilot-streaming.rebuilt.sse",
    "chat/github-copilot--codecompanion--copilot-tools-streaming.rebuilt.sse",
    *(n for n in FOUND if n.startswith("chat/zai--req-llm--")),
}


def _summary(kind: str, data: bytes) -> Any:
    obs = StreamObserver(KINDS[kind], start=0.0)
    obs.headers(200, 0.0)
    obs.observe(data, 0.0)
    return obs.finish(0.0)


NODE_REPLACED = "openai_chat.node_replaced_field"


def test_the_corpus_breaks_exactly_these_rules() -> None:
    found: dict[str, list[tuple[str, int]]] = {}
    for kind in KINDS:
        for f in sorted((REAL / kind).glob("*.sse")):
            rules = [
                (c["rule"], c["event_index"])
                for c in _summary(kind, f.read_bytes()).extra.get("conformance", [])
            ]
            if rules:
                found[f"{kind}/{f.name}"] = rules
    assert found == FOUND


@pytest.fixture(scope="module")
def node_reactions() -> dict[str, sdks.Reaction]:
    names = sorted(FOUND)
    got = sdks.node([(n.split("/")[0], (REAL / n).read_bytes()) for n in names])
    return dict(zip(names, got, strict=True))


def _expect(got: sdks.Reaction, does: str, error: str | None, message: str) -> None:
    if does == "raises":
        assert not got.ok and got.error == error and got.message.startswith(message), got
    else:
        assert got.ok, got


@pytest.mark.parametrize("name", sorted(FOUND))
def test_the_sdks_react_to_the_real_stream_as_the_finding_says(
    name: str, node_reactions: dict[str, sdks.Reaction]
) -> None:
    kind = name.split("/", maxsplit=1)[0]
    # the first rule but openai-node's replaced reasoning, which most reasoning streams break too
    rules = [r for r, _ in FOUND[name] if r != NODE_REPLACED] or [NODE_REPLACED]
    rule = RULES[rules[0]]
    py = sdks.python(kind, (REAL / name).read_bytes())
    if rules == [NODE_REPLACED] and not py.ok and py.error == "APIError":
        # the stream ends with the upstream's error event: both SDKs raise it before any final object
        assert (node_reactions[name].ok, node_reactions[name].error) == (False, "APIError")
        return
    if name in NO_CHUNK_KEPT:
        assert not py.ok and py.error == "AssertionError", py
        node = node_reactions[name]
        assert node.ok and node.final["choices"][0]["finish_reason"] in ("stop", "tool_calls"), node
        return
    _expect(py, rule.python.does, rule.python.error, rule.python.message)
    _expect(node_reactions[name], rule.node.does, rule.node.error, rule.node.message)
    if rule.id == "openai_chat.chunk_object":
        # the Python SDK skips the chunks without "object": here the last ones, with the finish_reason
        py_choice, node_choice = py.final["choices"][0], node_reactions[name].final["choices"][0]
        assert (py_choice["finish_reason"], node_choice["finish_reason"]) == (None, "stop")
        assert py_choice["message"]["content"] == node_choice["message"]["content"]
    if rule.id == "openai_chat.no_finish_reason":
        assert py.final["choices"][0]["finish_reason"] is None  # what the Python SDK loses
    if rule.id == NODE_REPLACED:
        # openai-python joins the reasoning; openai-node keeps its last piece (or null)
        py_msg, node_msg = (
            py.final["choices"][0]["message"],
            node_reactions[name].final["choices"][0]["message"],
        )
        field = "reasoning_content" if py_msg.get("reasoning_content") else "reasoning"
        assert py_msg[field] and node_msg.get(field) != py_msg[field], (
            py_msg.get(field),
            node_msg.get(field),
        )
        assert node_msg.get(field) is None or py_msg[field].endswith(node_msg[field])


def test_openai_node_loses_the_reasoning_of_most_reasoning_streams_of_the_corpus() -> None:
    """The corpus's Chat streams whose reasoning openai-node loses (every one whose reasoning comes
    in more than one chunk, or with a null after it; three of them end with an error event)."""
    replaced = sorted(n for n, rules in FOUND.items() if NODE_REPLACED in [r for r, _ in rules])
    assert len(replaced) == 72
