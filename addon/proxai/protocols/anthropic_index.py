"""Anthropic Messages: a content block's ``index`` as both official SDKs read it (docs/design/
protocol-grammars.md, "Anthropic Messages: liberal where the SDKs are"; docs/conformance.md, the
rules ``index_type``, ``index_type_python``, ``index_form``, ``block_index``,
``duplicate_block_start``).

Both stream helpers append each ``content_block_start``'s block to the message's content and never
read the start's ``index``; a delta or a stop names its block by its place in that list.

- anthropic-python (``accumulate_event`` in ``lib/streaming/_messages.py``) gets the event from
  ``_models.construct_type``: pydantic's lax validation of the whole event (``"01"``, ``" 1"``,
  ``"1.0"``, ``1.0``, ``true`` are integers then: ``lax_int``), the event as it came when that
  fails. It indexes its content list with the index: negative counts from the end, past the end
  raises IndexError, anything but an integer TypeError.
- @anthropic-ai/sdk (``MessageStream#accumulateMessage``) reads ``content.at(index)`` (a number
  made of anything, negative from the end) and writes the grown block back to
  ``content[index]``: only an index whose text is its place's (``1``, ``"1"``, ``[1]``:
  ``node_place``) lands in the content, any other delta is lost. A stop only reads.

The grammar keys a block by its place in that content, which is the index its start gives in a
dense stream (the fast path looks blocks up by integer index, so it reads exactly these). A start
whose index is not its place (``start_key``: past the blocks before it, below it, or repeated) is
kept apart, under ``("started", index)`` or, when that index already names a block,
``("duplicate", place)``: once indexes and places part, the fast path never finds the blocks they
name, and every delta and stop is read here as the SDKs read it, by place (``by_place``). One whose
index names no place but a block started with it is read into that block as the provider meant it,
with the rule ``block_index`` (the SDKs find no block there). A start's index that is not an
integer, or is negative, is its place, as the SDKs read it. Normalize mode keys a block it opens
for a delta without a start by the delta's index (a repair: the SDKs raise on such a stream).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from proxai.core.errors import UpstreamProtocolError

from .common import json_valid
from .fragments import input_fault

if TYPE_CHECKING:
    from .anthropic import AnthropicGrammar, Key

# pydantic's lax ``int`` from a string: stripped of Unicode white space (not Python's wider
# ``str.strip`` set), ASCII digits with single underscores between them, a fraction of zeros.
_WHITE = " \t\n\r\x0b\x0c\x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(
    map(chr, range(0x2000, 0x200B))
)
_LAX_INT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?")
_CANONICAL = re.compile(r"0|[1-9][0-9]*")
_I64 = 2.0**63
_JS_INDEX_END = 2**32 - 1  # a JavaScript array index is below it

# The delta types anthropic-python's event union validates, with the string field each carries.
_DELTA_FIELDS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
    "input_json_delta": "partial_json",
}


def lax_int(v: Any) -> int | None:
    """The integer pydantic's lax validation makes of JSON value ``v`` (``None``: it raises)."""
    t = type(v)
    if t is int or t is bool:
        return int(v)
    if t is float:
        return int(v) if v.is_integer() and -_I64 <= v < _I64 else None
    if t is str:
        s = v.strip(_WHITE)
        if _LAX_INT.fullmatch(s) is None:
            return None
        return int(s.partition(".")[0].replace("_", ""))
    return None


def _js_string(v: Any, nested: bool = False) -> str:
    """JavaScript's ``String(v)`` of JSON value ``v`` (only as far as telling an array index)."""
    if v is None:
        return "" if nested else "null"
    if type(v) is bool:
        return "true" if v else "false"
    if type(v) is float:
        return str(int(v)) if v.is_integer() and abs(v) < 1e21 else "x"
    if type(v) is list:
        return ",".join(_js_string(e, True) for e in v)
    if type(v) is dict:
        return "[object Object]"
    return str(v)


def node_place(v: Any) -> int | None:
    """The content place anthropic-node writes a delta of index ``v`` back to (``None``: a key that
    is no place in the array, the delta is lost)."""
    s = _js_string(v)
    if _CANONICAL.fullmatch(s) is None or int(s) >= _JS_INDEX_END:
        return None
    return int(s)


# The citation types anthropic-python's ``CitationsDelta.citation`` union validates (``citations_delta.py``
# and the five location models): the fields each requires, a JSON string ("s") or pydantic's lax
# int ("i"), and its optional ones (a string or null).
_CITATIONS: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "char_location": (
        {"cited_text": "s", "document_index": "i", "start_char_index": "i", "end_char_index": "i"},
        ("document_title", "file_id"),
    ),
    "page_location": (
        {"cited_text": "s", "document_index": "i", "start_page_number": "i", "end_page_number": "i"},
        ("document_title", "file_id"),
    ),
    "content_block_location": (
        {"cited_text": "s", "document_index": "i", "start_block_index": "i", "end_block_index": "i"},
        ("document_title", "file_id"),
    ),
    "web_search_result_location": ({"cited_text": "s", "encrypted_index": "s", "url": "s"}, ("title",)),
    "search_result_location": (
        {
            "cited_text": "s",
            "search_result_index": "i",
            "source": "s",
            "start_block_index": "i",
            "end_block_index": "i",
        },
        ("title",),
    ),
}


def _citation_validates(c: Any) -> bool:
    """pydantic validates ``c`` as one of the citation models (``_CITATIONS``; extra keys allowed)."""
    if type(c) is not dict or type(c.get("type")) is not str or c["type"] not in _CITATIONS:
        return False
    required, optional = _CITATIONS[c["type"]]
    for name, kind in required.items():
        if name not in c or (type(c[name]) is not str if kind == "s" else lax_int(c[name]) is None):
            return False
    return all(c.get(name) is None or type(c[name]) is str for name in optional)


def _validates(delta: Any) -> bool:
    """anthropic-python's event union validates a ``content_block_delta`` with this delta (pydantic's
    lax mode on the whole event: then its index is ``lax_int``'s; checked against the SDK's own
    ``construct_type`` in tests/conformance/test_anthropic_index.py)."""
    if type(delta) is not dict:
        return False
    dtype = delta.get("type")
    if dtype == "citations_delta":
        return _citation_validates(delta.get("citation"))
    field = _DELTA_FIELDS.get(dtype) if type(dtype) is str else None
    return field is not None and type(delta.get(field)) is str


def python_index(raw: Any, delta: Any) -> int | None:
    """The place anthropic-python reads a delta of index ``raw`` at (``None``: TypeError; negative:
    from the end): the lax int when the event validates, else the index as it came, which a list
    takes only as an integer (a boolean is one: ``true`` is place 1 either way)."""
    return lax_int(raw) if type(raw) is int or type(raw) is bool or _validates(delta) else None


def key_at(g: AnthropicGrammar, idx: int, *, from_end: bool = False) -> Key | None:
    """The block integer index ``idx`` names, as the SDKs read it: the block at that place in their
    content (``from_end``: a negative one counted from the end), else one started with that index
    away from its place (``None``: neither)."""
    blocks = g.blocks
    if idx in blocks:  # an integer key is its block's place
        return idx
    n = len(blocks)
    if 0 <= idx < n or (from_end and -n <= idx < 0):
        return list(blocks)[idx]
    started = ("started", idx)
    return started if started in blocks else None


def by_place(g: AnthropicGrammar, idx: int, what: str, *, from_end: bool = False) -> Key:
    """``key_at``, with its finding: a place whose block started with another index (or none), a
    note (both SDKs read it there); a block started with ``idx`` at no place ``idx`` names, the
    rule ``block_index``; else ``idx`` (no block: the caller's rules)."""
    key = key_at(g, idx, from_end=from_end)
    if key is None or key == idx:
        return idx
    if key == ("started", idx):
        place = list(g.blocks).index(key)
        g.conform(
            "anthropic_messages.block_index", f"{what} for block {idx}, which is block {place} in the content"
        )
        return key
    g.acc.finding_once(
        "anthropic.index_by_place",
        "quirk",
        f"{what} index {idx}: read as the block at that place in the content ({_named(key)}), "
        "as the SDKs read it",
    )
    return key


def _named(key: Key) -> str:
    if isinstance(key, int):
        return f"block {key}"
    return f"started with index {key[1]}" if key[0] == "started" else "a repeated start's block"


def start_index(g: AnthropicGrammar, obj: dict[str, Any]) -> int:
    """A ``content_block_start``'s index: the one it gives, or (not an integer, or negative) its place
    in the content, where both SDKs put it."""
    raw = obj.get("index")
    if type(raw) is int and raw >= 0:
        return raw
    n = len(g.blocks)
    g.acc.finding_once(
        "anthropic.index_not_integer",
        "quirk",
        f"content_block_start index {raw!r}: the SDKs append the block, read as block {n}",
    )
    return n


def start_key(g: AnthropicGrammar, obj: dict[str, Any]) -> Key:
    """The key of a ``content_block_start``'s block: its place, where its index is its place (or
    not an integer, or negative: the place, as the SDKs read it); else kept apart (the module's
    docstring), with a note, or the rule ``duplicate_block_start`` when another block has that index."""
    idx = start_index(g, obj)
    blocks = g.blocks
    n = len(blocks)
    if idx == n and idx not in blocks:
        return idx
    if idx in blocks or ("started", idx) in blocks:
        g.conform(
            "anthropic_messages.duplicate_block_start",
            f"content block {idx} started again: the SDKs append it as block {n}",
        )
        return ("duplicate", n)
    g.acc.finding_once(
        "anthropic.sparse_index",
        "quirk",
        f"content_block_start index {idx} is block {n} in the content: blocks are read by place, "
        "as the SDKs read them",
    )
    return ("started", idx)


def delta_index(g: AnthropicGrammar, obj: dict[str, Any]) -> Key | None:
    """The block a ``content_block_delta`` goes to, as the SDK that reads it does: both (a note),
    anthropic-python only (``index_form``: Node writes it where it is lost), anthropic-node only
    (``index_type_python``: Python raises TypeError); ``None`` when neither does (``index_type``:
    dropped; a translation ends with an error, having nothing to carry; before any block, an index
    that names none, for the caller's ``no_block``)."""
    raw = obj.get("index")
    if type(raw) is int:
        return by_place(g, raw, "content_block_delta")
    py = python_index(raw, obj.get("delta"))
    node = node_place(raw)
    n = len(g.blocks)
    if py is None:
        if node is not None and node < n:
            g.conform(
                "anthropic_messages.index_type_python",
                f"content_block_delta index {raw!r}: anthropic-node reads it as {node}",
            )
            return by_place(g, node, "content_block_delta")
        g.conform("anthropic_messages.index_type", f"content_block_delta index {raw!r}: no SDK reads it")
        if g.out is not None:
            raise UpstreamProtocolError(f"content_block_delta index {raw!r} names no block")
        # Before any block anthropic-node raises (it reads the last block's type): the caller's
        # rules judge it as a delta for no block (``no_block``).
        return -1 if not n else None
    if node == py:
        g.acc.finding_once(
            "anthropic.index_not_integer", "quirk", f"content_block_delta index {raw!r} read as {py}"
        )
    elif 0 <= py < n:
        g.conform(
            "anthropic_messages.index_form",
            f"content_block_delta index {raw!r}: anthropic-python reads it as {py}, anthropic-node loses it",
        )
    return by_place(g, py, "content_block_delta")


def stop_index(g: AnthropicGrammar, obj: dict[str, Any]) -> Key | None:
    """The block a ``content_block_stop`` stops: anthropic-python's reading (anthropic-node only
    reads the block), ``None`` where it raises TypeError (``index_type_python``; no block stops
    there, the message's end closes it)."""
    raw = obj.get("index")
    if type(raw) is not int:
        py = lax_int(raw)
        if py is None:
            g.conform(
                "anthropic_messages.index_type_python",
                f"content_block_stop index {raw!r}: anthropic-python raises",
            )
            return None
        g.acc.finding_once(
            "anthropic.index_not_integer", "quirk", f"content_block_stop index {raw!r} read as {py}"
        )
        raw = py
    return by_place(g, raw, "content_block_stop", from_end=True)


def missing_block(g: AnthropicGrammar, idx: Key, want: str | None, delta: dict[str, Any]) -> None:
    """A delta for no block the grammar has: dropped, with the SDKs' rule. Before any block both
    raise (``no_block``); a negative index is a block counted from the end for anthropic-python
    (``negative_index``: anthropic-node loses it), whose tool fragments it buffers by that index
    (``json_bufs[index]``) and parses alone: ``tool_input_partial`` when they are no JSON cut short;
    any other ``block_index`` (Python IndexError)."""
    n = len(g.blocks)
    back = type(idx) is int and -n <= idx < 0
    rule = "no_block" if want and not n else "negative_index" if back else "block_index"
    g.conform(f"anthropic_messages.{rule}", f"a delta for block {idx}, never started")
    part = delta.get("partial_json")
    if rule == "negative_index" and want == "tool" and type(part) is str and type(idx) is int:
        blk = g.blocks[list(g.blocks)[idx]]
        if blk.tool is not None:
            buf = blk.neg[idx] = blk.neg.get(idx, "") + part
            if buf and (not buf.strip() or input_fault(buf, json_valid(buf)) == "json"):
                g.conform(
                    "anthropic_messages.tool_input_partial",
                    f"tool fragments of index {idx}: anthropic-python parses them alone ({buf[:20]!r})",
                )
