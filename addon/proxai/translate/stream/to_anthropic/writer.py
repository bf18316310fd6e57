"""The Anthropic Messages target writer: a ``Sink`` that emits Anthropic events.

``message_start`` first; each source block becomes one content block with a dense index in
start order; at the source's stop every still-open block is closed, then ``message_delta`` (stop
reason + usage, always present) and ``message_stop``. A failure emits ``event: error`` (the SDKs
raise) and nothing after it. An opaque Anthropic block (normalize mode: server tool blocks and
their results, citations, ...) is written as it came, under the writer's own dense index;
opaque content of another protocol is left out and counted (``foreign``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from proxai.core.errors import TranslationError
from proxai.core.errors.shapes import error_event
from proxai.core.model import ErrorKind, Protocol
from proxai.protocols.conformance import JITER_DEPTH
from proxai.protocols.fragments import DepthWatch
from proxai.stream import stop_reasons
from proxai.stream.sink import (
    NO_BLOCK,
    BlockKey,
    BlockKind,
    Citation,
    DeltaKind,
    Stop,
    TokenUsage,
    WebSearchCall,
)
from proxai.translate.stream.comments import Comments
from proxai.translate.stream.foreign import Foreign

from . import output
from .state import AnthropicState

_dumps = orjson.dumps

#: the encoded bytes of a tool input ``_ToolInput`` holds before its watch reads them
HELD_MAX = 1 << 16


class _ToolInput:
    """A tool block's ``input_json_delta`` format (``output.delta_frames``) that follows the input's
    depth: anthropic-python parses a tool input after every fragment with ``jiter``, whose recursion
    limit is 200, so the fragment that would leave a value inside more than 200 objects or arrays is
    not written (``fragments.DepthWatch``) and the translation ends there (``TranslationError``).
    ``delta`` formats every fragment with ``frames[key][kind] % encoded``: only a tool block's
    ``args`` entry is this object, so a text delta pays nothing for it.

    Until the fragments hold more than ``JITER_DEPTH`` brackets none can be too deep: they are
    counted in their JSON encoding, which has the text's brackets (a
    JSON string escapes none, and no UTF-8 sequence holds one), and kept encoded; past the count
    the watch reads their text once, joined, and each later fragment's (tests/conformance/
    test_deep_json.py: the same decision at the same fragment as the watch fed the text). What is
    held is bounded: past ``HELD_MAX`` bytes the watch reads the fragments so far too, and each
    later one alone (a long input with few brackets costs the watch's reading, never its bytes
    twice over in memory)."""

    __slots__ = ("format", "held", "index", "opens", "size", "watch")

    def __init__(self, format: bytes, index: int) -> None:
        self.format = format
        self.index = index
        self.watch = DepthWatch()
        self.opens = 0
        self.size = 0
        self.held: list[bytes] | None = []  # the encoded fragments so far (None: past the count)

    def __mod__(self, encoded: bytes) -> bytes:
        held = self.held
        if held is not None:
            self.opens += encoded.count(b"[") + encoded.count(b"{")
            self.size += len(encoded)
            held.append(encoded)
            if self.opens <= JITER_DEPTH and self.size <= HELD_MAX:
                return self.format % encoded
            self.held = None
            deep = self.watch.deep("".join([orjson.loads(e) for e in held]))
        else:
            deep = self.watch.deep(orjson.loads(encoded))
        if deep:
            raise TranslationError(
                f"the tool input nests a value in more than {JITER_DEPTH} objects or arrays, "
                "which anthropic-python cannot parse",
                f"content[{self.index}].input",
            )
        return self.format % encoded


class AnthropicWriter:
    protocol = Protocol.ANTHROPIC_MESSAGES

    __slots__ = ("comments", "foreign", "frames", "out", "st")

    def __init__(self, *, strict: bool = False) -> None:
        self.foreign = Foreign(strict=strict)
        self.out: list[bytes] = []
        self.comments = Comments()  # comment lines that wait for the end (``.comments``)
        self.st = AnthropicState()
        # Open blocks' pre-serialized delta heads (``output.delta_frames``), by source key.
        self.frames: dict[BlockKey, Mapping[str, bytes | _ToolInput]] = {}

    def take(self) -> bytes:
        out = b"".join(self.out)
        self.out.clear()
        return out

    def start(self, id: str, model: str, usage: TokenUsage | None) -> None:
        self.out.append(output.message_start(id, model, usage))

    def block_start(
        self,
        key: BlockKey,
        kind: BlockKind,
        *,
        id: str | None = None,
        name: str | None = None,
        data: str | None = None,
    ) -> None:
        idx = self.st.open_block(key)
        frames = output.delta_frames(idx)
        self.frames[key] = frames if kind != "tool" else {**frames, "args": _ToolInput(frames["args"], idx)}
        self.out.append(output.block_start(idx, kind, id, name, data))

    def delta(self, key: BlockKey, kind: DeltaKind, text: str) -> None:
        self.out.append(self.frames[key][kind] % _dumps(text))

    def opaque_start(
        self, key: BlockKey, protocol: Protocol, what: str, payload: dict[str, Any], *, neutral: bool = False
    ) -> None:
        if protocol is not Protocol.ANTHROPIC_MESSAGES:
            self.foreign.start(key, what, counted=not neutral)
            return
        self.out.append(output.raw_block_start(self.st.open_block(key), payload))

    def opaque_event(self, key: BlockKey, protocol: Protocol, payload: dict[str, Any]) -> None:
        if key == NO_BLOCK and protocol is Protocol.ANTHROPIC_MESSAGES:
            self.out.append(output.raw_event(payload))  # (normalize mode)
            return
        if protocol is not Protocol.ANTHROPIC_MESSAGES or key in self.foreign.keys:
            self.foreign.event(key, payload)
            return
        self.out.append(output.raw_block_delta(self.st.index_of[key], payload))

    def citation(self, key: BlockKey, citation: Citation) -> None:
        """A ``citations_delta`` of the text block: as it came from Anthropic, else a
        ``web_search_result_location`` (its ``encrypted_index`` exists only at Anthropic)."""
        delta = citation.raw
        if citation.protocol is not Protocol.ANTHROPIC_MESSAGES:
            location = {
                "type": "web_search_result_location",
                "url": citation.url,
                "title": citation.title,
                "cited_text": citation.cited_text,
                "encrypted_index": "",
            }
            delta = {"type": "citations_delta", "citation": location}
        self.out.append(output.raw_block_delta(self.st.index_of[key], delta))

    def web_search(self, key: BlockKey, call: WebSearchCall) -> None:
        """Another protocol's web search as Anthropic's: a ``server_tool_use`` block (its query
        as input) and a ``web_search_tool_result`` block with the pages found (their
        ``encrypted_content`` exists only at Anthropic)."""
        if call.protocol is Protocol.ANTHROPIC_MESSAGES:
            return  # written as it came
        use = {
            "type": "server_tool_use",
            "id": call.id,
            "name": "web_search",
            "input": {"query": call.query or ""},
        }
        pages = [
            {
                "type": "web_search_result",
                "url": url,
                "title": title or "",
                "encrypted_content": "",
                "page_age": None,
            }
            for url, title in call.sources
        ]
        result = {"type": "web_search_tool_result", "tool_use_id": call.id, "content": pages}
        blocks: tuple[dict[str, Any], ...] = (use, result)
        for part, block in enumerate(blocks):
            handle = (call.id, part)
            self.out.append(output.raw_block_start(self.st.open_block(handle), block))
            self.out.append(output.block_stop(self.st.close_block(handle)))

    def block_stop(self, key: BlockKey) -> None:
        if self.foreign.stop(key):
            return
        self.frames.pop(key, None)
        self.out.append(output.block_stop(self.st.close_block(key)))

    def comment(self, lines: bytes, *, hold: bool = False) -> None:
        self.comments.add(self.out, lines, hold=hold)

    def end(self, stop: Stop, usage: TokenUsage) -> None:
        self.frames.clear()
        for idx in self.st.close_all():
            self.out.append(output.block_stop(idx))
        self.out.append(output.message_delta(stop_reasons.to_anthropic(stop.cls), usage))
        self.out.append(output.MESSAGE_STOP)
        self.comments.flush(self.out)

    def upstream_error(self, kind: ErrorKind, message: str) -> None:
        self.fail(kind, message)

    def fail(self, kind: ErrorKind, message: str) -> None:
        self.out.append(error_event(Protocol.ANTHROPIC_MESSAGES, kind, message))

    def metadata(self) -> dict[str, object]:
        return self.foreign.metadata()
