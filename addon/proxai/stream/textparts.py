"""Streamed text kept as bytes, with memory counted as it really is (docs/design/translation.md:
memory is bounded on untrusted input).

A translator that must keep streamed content (the Responses snapshot for ``response.completed``,
the text checked against ``.done`` events, tool arguments checked as JSON) bounds it. One Python
string per delta costs about 50 bytes of object header plus a list slot, so small deltas (1-12
characters, real tokens) kept one by one use about 16x their characters, and a limit counted in
characters did not bound memory. So each keeper appends a delta's bytes to one ``bytearray`` per
part: no object per delta, and the bytes it holds are its length plus its over-allocation (CPython
grows a bytearray by at most an eighth, plus a few bytes) plus its header; a keeper counts the
lengths and ``ENCODED`` per bytearray and checks ``9 * counted`` against ``8 * max_buffer``.

The Responses grammar keeps UTF-8 (decoded at its ``.done`` checks). The Responses writer, which
serializes each delta anyway for its event, keeps that JSON string (``encoded += dumps(text)``,
quotes and all, one after another); ``encoded_text`` gives the text back, ``encoded_json`` the
JSON string of the whole text (what its final events carry).
"""

from __future__ import annotations

from sys import getsizeof

import orjson

ENCODED = getsizeof(bytearray()) + 8  # a kept bytearray's header and over-allocation constant


# An escaped backslash and an escaped quote, each set aside as two control bytes (the same length:
# replaced in place), and what the translate gives back for those bytes.
_BACKSLASH, _BACKSLASH_SET_ASIDE = b"\\\\", b"\x00\x00"
_QUOTE, _QUOTE_SET_ASIDE = b'\\"', b"\x01\x02"
_PUT_BACK = bytes.maketrans(b"\x00\x01\x02", b'\\\\"')


def encoded_json(encoded: bytes | bytearray) -> bytes:
    """The JSON strings in ``encoded`` (``dumps`` outputs, one after another) as one JSON string
    of their whole text: the bytes ``orjson.dumps(encoded_text(encoded))`` gives, since that
    escaping is one character at a time. A writer puts it in its final events as it is
    (``orjson.Fragment``), without decoding the text and encoding it again.

    Inside an encoded string every quote and backslash is escaped, and no control character is
    raw. So with each escaped backslash (``\\\\``) and then each escaped quote (``\\"``) set
    aside as two control bytes, every quote left is a string's own: one translate drops them and
    puts the escapes back, which leaves the escaped text (a pair of quotes alone is not always a
    boundary: a piece ending in an escaped quote is followed by three quotes). Three bulk passes
    over the bytes cost less than reading the pieces one by one in Python."""
    inner = (
        encoded.replace(_BACKSLASH, _BACKSLASH_SET_ASIDE)
        .replace(_QUOTE, _QUOTE_SET_ASIDE)
        .translate(_PUT_BACK, b'"')
    )
    return b'"'.join((b"", inner, b""))


def encoded_text(encoded: bytes | bytearray) -> str:
    """The text of the JSON strings in ``encoded`` (``dumps`` outputs, one after another)."""
    text: str = orjson.loads(encoded_json(encoded))
    return text
