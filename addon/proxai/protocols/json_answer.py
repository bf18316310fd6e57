"""The structured answer the SDKs' parse helpers parse, kept on the flows whose request asks for a
``json_schema`` format, and judged there (docs/design/conformance.md, "Rules that depend on the
request").

The Chat and Anthropic grammars keep no content. On a flow whose request asks for a ``json_schema``
format (``conformance.Asked.json_format``), ``proxai.pipeline.observe.make_grammar`` builds the
protocol's grammar with this module's subclass, which keeps the text a parse helper parses:

- ``ChatJsonGrammar``: each choice's content, as openai-python's ``ChatCompletionStreamState`` and
  openai-node's ``ChatCompletionStream`` accumulate it (a choice with a refusal is not parsed);
  ``final_texts`` gives it to ``conformance.at_end``;
- ``AnthropicJsonGrammar``: each text block's text (its start's ``text`` and its ``text_delta``s),
  judged at its ``content_block_stop``, where anthropic-python's ``accumulate_event`` parses it.

Every other flow's grammar is the protocol's own, its fast paths untouched. What is kept is bounded:
``limit`` characters in all (``Limits.max_tool_args``, the bound on what is kept to judge JSON);
past it nothing more is kept and the answer is not judged.
"""

from __future__ import annotations

from typing import Any

from proxai.core.sse import RawName
from proxai.stream.sink import Output

from .anthropic import AnthropicGrammar
from .chat import ChatGrammar
from .common import Accum
from .conformance import Asked, judge_answer


class Kept:
    """Answer texts by key (a Chat choice index, an Anthropic block index), at most ``room``
    characters in all (``over``: more came, nothing is judged)."""

    __slots__ = ("over", "refused", "room", "texts")

    def __init__(self, limit: int) -> None:
        self.texts: dict[int, list[str]] = {}
        self.refused: set[int] = set()
        self.room = limit
        self.over = False

    def add(self, key: int, s: str, *, start: bool = False) -> None:
        """``s`` appended to the text of ``key`` (``start``: a new text, only ``s``)."""
        if self.over:
            return
        self.room -= len(s)
        if self.room < 0:
            self.over = True
            self.texts.clear()
            return
        if start or key not in self.texts:
            self.texts[key] = [s]
        else:
            self.texts[key].append(s)

    def text(self, key: int) -> str | None:
        parts = self.texts.get(key)
        return None if parts is None or self.over else "".join(parts)


class ChatJsonGrammar(ChatGrammar):
    """The Chat grammar, keeping each choice's content (``final_texts``)."""

    __slots__ = ("kept",)

    def __init__(self, acc: Accum, output: Output | None, limit: int) -> None:
        super().__init__(acc, output)
        self.kept = Kept(limit)

    def _fast(self, name: RawName, obj: dict[str, Any], now: float) -> bool:
        if not ChatGrammar._fast(self, name, obj, now):
            return False
        # the fast path read one choice, index 0, of a delta of one field
        s = obj["choices"][0]["delta"].get("content")
        if type(s) is str and s:
            self.kept.add(0, s)
        return True

    def _event(self, name: str, obj: dict[str, Any], now: float) -> None:
        super()._event(name, obj, now)
        choices = obj.get("choices")
        if self.errored or type(choices) is not list or obj.get("error") is not None:
            return
        for choice in choices:
            if type(choice) is not dict or type(delta := choice.get("delta")) is not dict:
                continue
            index = choice.get("index")
            key = index if type(index) is int else 0  # as the grammar reads it
            content = delta.get("content")
            if type(content) is str and content:
                self.kept.add(key, content)
            if delta.get("refusal"):
                self.kept.refused.add(key)

    @property
    def final_texts(self) -> list[str]:
        """Each choice's content the parse helpers parse (not empty, no refusal), in index order."""
        kept = self.kept
        texts = (kept.text(k) for k in sorted(kept.texts) if k not in kept.refused)
        return [t for t in texts if t]


class AnthropicJsonGrammar(AnthropicGrammar):
    """The Anthropic grammar, keeping each text block's text and judging it at its stop."""

    __slots__ = ("asked", "kept")

    def __init__(self, acc: Accum, output: Output | None, limit: int, asked: Asked) -> None:
        super().__init__(acc, output)
        self.kept = Kept(limit)
        self.asked = asked

    def _text(self, index: int, s: str) -> None:
        super()._text(index, s)
        if index in self.kept.texts:
            self.kept.add(index, s)

    def _event(self, name: str, obj: dict[str, Any], now: float) -> None:
        etype = obj.get("type")
        index = obj.get("index")
        named = etype == name  # the SDKs read a named event by its type (an unnamed one is skipped)
        if named and type(index) is int:
            if etype == "content_block_start":
                block = obj.get("content_block")
                if type(block) is dict and block.get("type") == "text":
                    text = block.get("text")
                    self.kept.add(index, text if type(text) is str else "", start=True)
            elif etype == "content_block_delta" and index in self.kept.texts:
                delta = obj.get("delta")
                if type(delta) is dict and delta.get("type") == "text_delta":
                    text = delta.get("text")
                    if type(text) is str:
                        self.kept.add(index, text)
        super()._event(name, obj, now)
        if named and etype == "content_block_stop" and type(index) is int and not self.errored:
            text = self.kept.text(index)
            if text is not None:
                judged = judge_answer(self.protocol, self.asked, text)
                if judged is not None:
                    self.conform(*judged)
