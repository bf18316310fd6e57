"""The Anthropic grammar's tables (docs/design/protocol-grammars.md, "Anthropic Messages"): the
event types the SDKs read, the block types that are tool calls, each block type's family (what
its deltas may be), each delta type's family and the payload field it carries."""

from __future__ import annotations

from typing import Any

from proxai.stream.sink import BlockKind

KNOWN_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
    }
)

# content block type -> tool kind
TOOL_KINDS: dict[str, str] = {
    "tool_use": "function",
    "server_tool_use": "server_tool",
    "mcp_tool_use": "mcp",
}
# content block type -> block family (what its deltas may be)
FAMILIES: dict[str, str] = {"text": "text", "thinking": "thinking", "redacted_thinking": "redacted"}
# block family -> the writer's block kind (a family the other protocols cannot carry has none)
KINDS: dict[str, BlockKind] = {
    "text": "text",
    "thinking": "thinking",
    "redacted": "redacted_thinking",
    "tool": "tool",
}
# delta type -> the block family it belongs to
DELTA_FAMILY: dict[str, str] = {
    "text_delta": "text",
    "citations_delta": "text",
    "input_json_delta": "tool",
    "thinking_delta": "thinking",
    "signature_delta": "thinking",
}
# delta type -> (the payload field it carries, the writer's delta kind); citations are not carried
DELTA_FIELD: dict[str, tuple[str, Any]] = {
    "text_delta": ("text", "text"),
    "input_json_delta": ("partial_json", "args"),
    "thinking_delta": ("thinking", "thinking"),
    "signature_delta": ("signature", "signature"),
}
