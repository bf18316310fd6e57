"""The bounds of one translated stream (docs/design/translation.md): what a grammar or a writer
may keep per tool call and per stream, in bytes really held."""

from __future__ import annotations

DEFAULT_MAX_TOOL_ARGS = 8 * 1024 * 1024  # per call, as observe.Limits.max_tool_args
DEFAULT_MAX_BUFFER = 64 * 1024 * 1024  # content a Responses grammar / writer must keep, per stream
