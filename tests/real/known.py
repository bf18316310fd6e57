"""The checks of ``test_corpus`` that do not hold yet, per stream (see docs/real-streams.md for
why). Written by ``python -m corpus --known tests/real/known.py``. Remove an entry as soon as
its check holds; never add one to hide a regression."""

KNOWN: dict[str, str] = {
    "anthropic/anthropic--pydantic-ai--pause-turn-web-search-streaming-vcr.sse": "chat responses",
    "chat/openai--req-llm--gpt-4-object-streaming.sse": "responses",
    "chat/openai--req-llm--gpt-4-turbo-object-streaming.sse": "responses",
    "chat/openai--req-llm--gpt-4o-object-streaming.sse": "responses",
    "responses/azure--vercel-ai--azure-image-generation-tool-1.rebuilt.sse": "anthropic chat",
    "responses/openai--vercel-ai--openai-apply-patch-tool-1.rebuilt.sse": "anthropic chat",
    "responses/openai--vercel-ai--openai-image-generation-tool-1.rebuilt.sse": "anthropic chat",
    "responses/openai--vercel-ai--openai-local-shell-tool-1.rebuilt.sse": "anthropic chat",
    "responses/openai--vercel-ai--openai-mcp-tool-approval-1.rebuilt.sse": "anthropic chat",
    "responses/openai--vercel-ai--openai-mcp-tool-approval-3.rebuilt.sse": "anthropic chat",
    "responses/openai--vercel-ai--openai-shell-skills-1.rebuilt.sse": "anthropic chat",
    "responses/openai--vercel-ai--openai-shell-tool-1-part1of2.rebuilt.sse": "anthropic chat",
}
