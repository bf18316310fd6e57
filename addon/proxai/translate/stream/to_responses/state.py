"""Accumulating state of an OpenAI Responses target (docs/streaming-translation.md): Responses
keeps item ids, names and the accumulated content, because every item must be finalized twice -
in ``response.output_item.done`` and in the terminal snapshot's ``output``.

``ItemIdAllocator`` synthesizes stable item ids from the response id; tool calls whose source
gives an id keep it. Output indexes are dense
in ``output_item.added`` order; every item has one content part, so ``content_index`` is 0. The
id a client sees in a delta, in ``*.done`` and in the terminal snapshot is the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from proxai.core.errors import TranslationError
from proxai.stream.sink import BlockKey, BlockKind, Citation, TokenUsage
from proxai.stream.textparts import encoded_json
from proxai.translate.ir import CallShape


class ItemIdAllocator:
    __slots__ = ("_n", "_stem")

    def __init__(self, response_id: str) -> None:
        self._stem = response_id.split("_", 1)[-1] or "proxai"
        self._n = 0

    def next(self, prefix: str) -> str:
        n = self._n
        self._n += 1
        return f"{prefix}_{self._stem}_{n}"


@dataclass(slots=True)
class Item:
    kind: BlockKind
    item_id: str
    output_index: int
    # text / refusal / reasoning text / arguments: each delta's JSON string (textparts.encoded_text)
    encoded: bytearray = field(default_factory=bytearray)
    decoded: tuple[int, str] = (0, "")  # ``text()`` of the first so many encoded bytes
    joined: tuple[int, bytes] = (0, b'""')  # ``json()`` of the first so many encoded bytes
    call_id: str | None = None
    name: str | None = None
    signature: str | None = None  # thinking: encrypted_content
    data: str | None = None  # redacted thinking: encrypted_content
    summary: bool = False  # thinking written as a reasoning summary (summary_text) instead of reasoning_text
    shape: CallShape | None = None  # a call going back in the shape the client declared (call_shapes)
    held: bool = False  # its arguments are delivered whole at the block's stop (no argument deltas)
    done: bool = False
    raw: dict[str, Any] | None = None  # opaque: the upstream's item as it came (its .done once done)
    annotations: list[Any] = field(default_factory=list)  # text: url_citation and other annotations
    citations: list[Citation] = field(default_factory=list)  # text: another protocol's, written at its end
    delta_format: bytes = b""  # its delta event, pre-serialized but for seq and delta (output.delta_format)

    def json(self) -> bytes:
        """The content kept so far as one JSON string (``textparts.encoded_json``), joined once
        per length: the ``.done`` events, the part, the item and the terminal snapshot carry it
        as it is (``orjson.Fragment``), the text neither decoded nor encoded again."""
        n, data = self.joined
        if n != len(self.encoded):
            data = encoded_json(self.encoded)
            self.joined = (len(self.encoded), data)
        return data

    def text(self) -> str:
        """The content kept so far, decoded once per length (what is read as text: a freeform
        call's input, a citation's span)."""
        n, text = self.decoded
        if n != len(self.encoded):
            text = orjson.loads(self.json())
            self.decoded = (len(self.encoded), text)
        return text


@dataclass(slots=True)
class ResponsesState:
    response_id: str = ""
    model: str = ""
    items: list[Item] = field(default_factory=list)
    by_key: dict[BlockKey, Item] = field(default_factory=dict)
    ids: ItemIdAllocator = field(default_factory=lambda: ItemIdAllocator(""))
    refusal_streamed: bool = False
    usage: TokenUsage | None = None

    def add(
        self, key: BlockKey, kind: BlockKind, call_id: str | None, name: str | None, data: str | None
    ) -> Item:
        if kind in {"tool", "opaque"}:
            assert call_id is not None
            # a source tool id is passed through as the item id; an opaque item keeps
            # its own id (a client answer may quote it: mcp_approval_request)
            item_id = call_id
            if any(i.item_id == call_id for i in self.items):
                # (an upstream that started one call twice: openai-python refuses a response whose
                # output holds two items of one identity, so the client gets a typed error instead)
                raise TranslationError(
                    f"the upstream started the call {call_id!r} twice: a Responses client cannot"
                    " take two output items with one id",
                    "id",
                )
        elif kind in {"thinking", "redacted_thinking"}:
            item_id = self.ids.next("rs")
        else:
            item_id = self.ids.next("msg")
            if kind == "refusal":
                self.refusal_streamed = True
        item = Item(kind, item_id, len(self.items), call_id=call_id, name=name, data=data)
        self.items.append(item)
        self.by_key[key] = item
        return item

    def pending(self) -> list[Item]:
        return [i for i in self.items if not i.done]
