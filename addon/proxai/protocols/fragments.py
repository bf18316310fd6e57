"""A tool call's arguments as the SDKs parse them fragment by fragment, and as anthropic-node parses
them once (docs/design/conformance.md, "Tool arguments fragment by fragment"). Sans-IO.

anthropic-python (``accumulate_event``, every ``tool_use`` / ``server_tool_use`` block) and, for a
tool the request declares ``strict``, openai-python (``ChatCompletionStreamState._accumulate_chunk``)
and openai-node (``#accumulateChatCompletion``) parse the arguments joined so far after every
fragment; anthropic-node parses the whole input once, when it is read. The partial parsers read any
start of a JSON object or array (measured on every prefix of 400 generated documents), so once the
first character that is not whitespace opens one, nothing here looks again: the check per fragment
is an attribute test. What they refuse is a start that is whitespace alone (an empty one none of
them parses) or a top-level string, number or ``true`` / ``false`` / ``null`` cut short:

- anthropic-python raises ``ValueError`` on each (``jiter``'s partial mode), where anthropic-node,
  reading the whole input, reads it: ``anthropic_messages.tool_input_partial``;
- openai-python and openai-node both raise on whitespace alone and on a number cut short (``-``,
  ``1.``, ``1e``): ``openai_chat.strict_tool_arguments_partial``; on a string or literal cut short
  only openai-python does: ``openai_chat.strict_tool_arguments_scalar``.

anthropic-node's parser drops a number that ends the text as unfinished, so a whole input that is a
top-level number with nothing after it makes it raise (``anthropic_messages.tool_input_number``),
and an input that is whitespace alone or a top-level value cut short is no more JSON to it than to
anthropic-python (``anthropic_messages.tool_input_json``): ``input_fault`` judges the whole input.
A whole object or array with more after it jiter reads as the value alone; anthropic-node raises
where its vendored ``partialParse`` keeps what follows (``node_refuses``, a model of that parser:
``anthropic_messages.tool_input_trailing``).

``DepthWatch`` reads a call's arguments fragment by fragment as ``conformance.too_deep`` reads the
text so far, for a writer that must not send an Anthropic client a fragment jiter's parse after it
would refuse for its depth (``proxai.translate.stream.to_anthropic.writer``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from proxai.core.model import Protocol

from .conformance import _DEEP, _NOT_JSON, JITER_DEPTH, Asked, _json, deep_json, json_prefix, too_deep

if TYPE_CHECKING:
    from .common import ToolBuffer

_WS = " \t\n\r"
_DIGITS = frozenset("0123456789")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_NUMBER_START = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][-+]?[0-9]*)?)?")
_LITERALS = ("true", "false", "null")
# a number the parse of a later fragment may still find cut short is followed this far, no further
_MAX_NUMBER = 64

# what the start of the arguments is, for the finding's detail
_WHAT = {
    "blank": "whitespace alone",
    "number": "a top-level number cut short",
    "scalar": "a top-level string or literal cut short",
}


_A, _C = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT
# (protocol, the start the parse after a fragment refuses) -> the rule it breaks
_RULES = {
    (_A, "blank"): "anthropic_messages.tool_input_partial",
    (_A, "number"): "anthropic_messages.tool_input_partial",
    (_A, "scalar"): "anthropic_messages.tool_input_partial",
    (_C, "blank"): "openai_chat.strict_tool_arguments_partial",
    (_C, "number"): "openai_chat.strict_tool_arguments_partial",
    (_C, "scalar"): "openai_chat.strict_tool_arguments_scalar",
}
#: the rules judged fragment by fragment (``Accum.tool_args``)
RULES = frozenset(_RULES.values())


@dataclass(frozen=True, slots=True)
class PerFragment:
    """Whose tool calls an SDK parses after every fragment on a flow, and the rule each refused
    start breaks: ``kinds`` of tool call (``ToolBuffer.kind``), of these ``names`` only (None: any)."""

    protocol: Protocol
    kinds: frozenset[str]
    names: frozenset[str] | None = None

    def parses(self, kind: str, name: str | None) -> bool:
        return kind in self.kinds and (self.names is None or name in self.names)

    def rule(self, start: str) -> str:
        """The rule a start of the arguments (``torn``'s kind) breaks."""
        return _RULES[(self.protocol, start)]

    def detail(self, tb: ToolBuffer, start: str) -> str:
        return f"tool call {tb.id or tb.key!s}: a fragment leaves its arguments {_WHAT[start]}"


_ANTHROPIC = PerFragment(_A, frozenset({"function", "server_tool"}))


def per_fragment(protocol: Protocol, asked: Asked) -> PerFragment | None:
    """The flow's per-fragment parses: every Anthropic tool block's, a Chat call's of a tool the
    request declares ``strict`` (the Responses helpers parse a completed response only)."""
    if protocol is _A:
        return _ANTHROPIC
    if protocol is _C and asked.strict_tools:
        return PerFragment(protocol, frozenset({"function"}), asked.strict_tools)
    return None


def torn(tb: ToolBuffer, s: str) -> str | None:
    """Fragment ``s`` (not empty) joins the arguments so far (``tb.lead``: what came before, while
    it is whitespace alone or a top-level number): the kind of start the SDKs' partial parse
    refuses that it leaves (``blank``, ``number``, ``scalar``), or None. ``tb.lead`` becomes what
    the next fragment must be judged after, or None once no later fragment can leave a start they
    refuse that the whole arguments would not show (a container opened, a whole string or literal,
    text that is no JSON at all) or a finding was made."""
    lead = tb.lead
    assert lead is not None
    text = lead + s
    rest = text.lstrip(_WS)
    tb.lead = None
    if not rest:
        return "blank"
    first = rest[0]
    if first in "{[":
        return None
    if first in "-0123456789":
        token = rest.rstrip(_WS)
        if _NUMBER.fullmatch(token):
            if token == rest and len(token) < _MAX_NUMBER:
                tb.lead = text  # more digits may follow
            return None
        return "number" if token == rest and _NUMBER_START.fullmatch(token) else None
    if first == '"':
        whole = _json(rest) is not _NOT_JSON
        return None if whole or not json_prefix(rest) else "scalar"
    return "scalar" if any(lit != rest and lit.startswith(rest) for lit in _LITERALS) else None


#: what the input does, for each fault ``input_fault`` names
FAULTS = {
    "json": "is not JSON",
    "number": "ends with a top-level number",
    "depth": f"nests a value in more than {JITER_DEPTH} objects or arrays",
    "trailing": "has text after its JSON value that anthropic-node's parser keeps",
    "after": "has text after its JSON value that both SDKs' parsers drop",
    "surrogate": "escapes a lone surrogate in a string",
}
# a ``\uXXXX`` escape of a high surrogate without its low half after it (nor the end of the text
# or an escape cut there: jiter drops a string cut short), or of a low one without its high half
# before it (an even number of backslashes before the escape: not itself escaped)
_LONE = re.compile(
    r"(?:^|[^\\])(?:\\\\)*(?:\\u[dD][89abAB][0-9a-fA-F]{2}"
    r"(?!\\u[dD][c-fC-F][0-9a-fA-F]{2}|(?:\\(?:u[0-9a-fA-F]{0,3})?)?\Z)"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)


def input_fault(text: str, valid: bool) -> str | None:
    """How a tool block's whole input (``text``, as the SDKs join it; ``valid``: it is JSON) breaks
    what both Anthropic SDKs read: ``json`` (not JSON, nor a JSON object or array cut short: both
    raise), ``number`` (a top-level number with nothing after it: anthropic-node raises), ``depth``
    (a value deeper than ``jiter``'s recursion limit: anthropic-python's parse after the fragment
    that brought it raises, and every later one; judged once, here), ``trailing`` (a whole object
    or array with more after it that anthropic-node's parser keeps: it raises, where
    anthropic-python reads the value alone), ``after`` (more that both parsers drop: a note),
    ``surrogate`` (a ``\\ud800`` escape without its other half, which jiter refuses and
    ``JSON.parse`` reads; orjson refuses it too, so valid JSON holds none), or None."""
    if valid:  # (JSON that ends with a digit is a number)
        return "number" if text[-1:] in _DIGITS else "depth" if too_deep(text) else None
    rest = text.lstrip(_WS)
    if rest[:1] in ("{", "["):
        python = "depth" if too_deep(text) else "surrogate" if _lone(text) else None  # jiter raises
        if json_prefix(rest):
            return python
        if json_prefix(rest, trailing=True):  # a whole value, then more: jiter reads the value
            if not node_refuses(text):
                return python or "after"
            return "json" if python else "trailing"  # (both raise: each on its own count)
    return "json"


def _lone(text: str) -> bool:
    """``text`` escapes a lone surrogate (a ``\\u`` found first, in C)."""
    return "\\u" in text and _LONE.search(text) is not None


# a whole JSON string, number or literal at the start of a text (what ``jiter`` reads before it
# stops: anything after a whole value is not read)
_SCALAR = re.compile(
    r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"'
    r"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?(?![0-9.eE])"
    r"|true|false|null"
)


def python_refuses(text: str) -> bool:
    """anthropic-python's parse of a tool block's fragments so far (``jiter.from_json`` in partial
    mode, after every fragment that leaves them not empty) raises on ``text``: whitespace alone, a
    start that is no JSON object or array cut short, a top-level value cut short; what follows a
    whole value is not read (``{"a":1}x`` parses)."""
    rest = text.lstrip(_WS)
    if not rest:
        return True
    if rest[0] in "{[":
        return not json_prefix(rest, trailing=True) or too_deep(rest)
    return _SCALAR.match(rest) is None


# anthropic-node's vendored ``partialParse`` (``_vendor/partial-json-parser/parser.js``), the parse of
# a tool block's whole input it makes when the input is read (at ``content_block_stop``): its
# tokens, the ones it strips from the end as unfinished, the brackets it closes, then ``JSON.parse``
# of what it wrote (of the text itself where it found no tokens or a closer that matches nothing).
_NODE_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_NODE_SCALARS = frozenset(("string", "number", "name"))
_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_PUNCTUATION = {"{": "brace", "}": "brace", "[": "paren", "]": "paren", ":": "separator", ",": "delimiter"}


def _node_tokens(text: str) -> list[tuple[str, str, bool]] | None:
    """``tokenize``: (type, value, a number that runs to the end of the text), or None where it
    meets a character no token starts with or a word that is no literal (nor one cut short at the
    end)."""
    out: list[tuple[str, str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        kind = _PUNCTUATION.get(c)
        if kind is not None:
            out.append((kind, c, False))
            i += 1
        elif c == '"':  # closed by a quote after an even number of backslashes
            end = i + 1
            while (end := text.find('"', end)) != -1:
                j = end - 1
                while j > i and text[j] == "\\":
                    j -= 1
                if (end - 1 - j) % 2 == 0:
                    break
                end += 1
            if end == -1:
                i = n  # a string cut short: no token
            else:
                out.append(("string", text[i + 1 : end], False))
                i = end + 1
        elif c in _WS:
            i += 1
        elif c in _DIGITS or c in "-.":
            j = i + 1 if c == "-" else i
            while j < n and (
                (d := text[j]) in _DIGITS or d in ".eE" or (d in "-+" and text[j - 1] in "eE" and j > i)
            ):
                j += 1
            out.append(("number", text[i:j], j == n))
            i = j
        elif c in _ASCII_LETTERS:
            j = i
            while j < n and text[j] in _ASCII_LETTERS:
                j += 1
            word = text[i:j]
            if word in _LITERALS:
                out.append(("name", word, False))
            elif not (
                any(lit != word and lit.startswith(word) for lit in _LITERALS) and not text[j:].strip(_WS)
            ):
                return None
            i = j
        else:
            return None
    return out


def _node_strip(tokens: list[tuple[str, str, bool]]) -> list[tuple[str, str, bool]]:
    """``strip``: the unfinished tokens at the end dropped (separators; a number that runs to the
    end or is no JSON number; a key without its value; one comma)."""
    opened: list[str] = []
    for kind, value, _ in tokens:
        if kind in ("brace", "paren"):
            if value in "{[":
                opened.append(value)
            elif opened:
                opened.pop()
    innermost = opened[-1] if opened else None
    n = len(tokens)
    while n > 0:
        kind, value, to_end = tokens[n - 1]
        if kind == "separator" or (kind == "number" and (to_end or not _NODE_NUMBER.fullmatch(value))):
            n -= 1
            continue
        if kind == "string" and innermost == "{" and n >= 2:
            before = tokens[n - 2]
            if before[0] == "delimiter" or before[:2] == ("brace", "{"):
                n -= 1
                continue
        elif kind == "delimiter":
            n -= 1
        break
    return tokens[:n]


def _node_text(text: str) -> str:
    """What anthropic-node's ``partialParse`` hands ``JSON.parse`` for ``text``."""
    tokens = _node_tokens(text)
    if tokens is None:
        return text
    tokens = _node_strip(tokens)
    tail: list[str] = []
    for kind, value, _ in tokens:
        if kind in ("brace", "paren"):
            if value in "{[":
                tail.append("}" if value == "{" else "]")
            elif (tail.pop() if tail else None) != value:
                return text  # a closer that matches nothing
    parts: list[str] = []
    scalar = False
    for kind, value, _ in tokens:
        if scalar and kind in _NODE_SCALARS:
            parts.append(" ")  # adjacent scalars kept apart
        scalar = kind in _NODE_SCALARS
        parts.append(f'"{value}"' if kind == "string" else value)
    return "".join(parts) + "".join(reversed(tail))


def node_refuses(text: str) -> bool:
    """anthropic-node raises reading a tool block's whole input ``text`` (an empty one is ``{}``):
    ``JSON.parse`` (any depth, any number) refuses what its ``partialParse`` makes of it."""
    if not text:
        return False
    parsed = _node_text(text)
    if not parsed:
        return True
    value = _json(parsed)  # orjson, then the standard parser (numbers past a double, depth)
    return not deep_json(parsed) if value is _DEEP else value is _NOT_JSON


# a piece of the depth count in a fragment, as ``conformance.too_deep`` reads the whole text: a
# string (group 1: its closing quote, empty where the fragment cuts it), a bracket or separator, a
# scalar; and the rest of a string a fragment cut (group 1 likewise)
_PIECE = re.compile(r'"(?:[^"\\]|\\.)*("?)|[\[\]{}:,]|[^\s\[\]{}:,"]+')
_STRING_REST = re.compile(r'(?:[^"\\]|\\.)*("?)')


class DepthWatch:
    """A tool call's arguments read fragment by fragment, and whether the text so far nests a value
    in more than ``JITER_DEPTH`` objects or arrays (``conformance.too_deep`` of it: where the parse
    after each fragment, ``jiter``'s, raises): each fragment is read alone, the reading's state
    carried over (the open containers, a string cut by the fragment, a backslash that ends it). Its
    holder skips the reading while too few brackets came for any value to be so deep (the writer's
    ``_ToolInput``) and then gives it the text so far once, joined."""

    __slots__ = ("arrays", "depth", "escape", "string", "value")

    def __init__(self) -> None:
        self.depth = 0
        self.value = True  # a value may start here (not a key, not after a value)
        self.arrays: list[bool] | None = []  # each open container: an array (None: a closer matched nothing)
        self.string = False  # inside a string the last fragment cut
        self.escape = False  # and that fragment ended with its backslash

    def deep(self, s: str) -> bool:
        """``s`` is the next fragment: the text so far is too deep."""
        arrays = self.arrays
        if arrays is None or not s:
            return False
        i, n = 0, len(s)
        if self.string:
            if self.escape:
                i, self.escape = 1, False
            rest = _STRING_REST.match(s, i)
            assert rest is not None  # (it matches the empty text too)
            i = rest.end()
            if not rest.group(1):
                self.escape = i < n
                return False
            self.string = False
        for m in _PIECE.finditer(s, i):
            c = m.group()[0]
            if c in "]}":
                if not arrays:
                    self.arrays = None  # (``too_deep`` says False there, and so at every later text)
                    return False
                arrays.pop()
                self.depth -= 1
                self.value = False
            elif c == ",":
                self.value = bool(arrays) and arrays[-1]
            elif c == ":":
                self.value = True
            elif self.value:
                if self.depth > JITER_DEPTH:
                    return True
                self.value = c == "["
                if c in "[{":
                    arrays.append(c == "[")
                    self.depth += 1
            if c == '"' and not m.group(1):  # the fragment cuts the string
                self.string = True
                self.escape = m.end() < n
                break
        return False
