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
quotes and all, one after another); ``encoded_text`` gives the text back.
"""

from __future__ import annotations

from sys import getsizeof

import orjson

ENCODED = getsizeof(bytearray()) + 8  # a kept bytearray's header and over-allocation constant


def encoded_text(encoded: bytes | bytearray) -> str:
    """The text of the JSON strings in ``encoded`` (``dumps`` outputs, one after another).

    Inside an encoded string every quote and backslash is escaped, and no control character is
    raw. So with each escaped backslash (``\\\\``) and then each escaped quote (``\\"``) set
    aside as a control byte, every quote left is a string's own: dropping them and putting the
    escapes back leaves one JSON string of the whole text, read at once (a pair of quotes alone
    is not always a boundary: a piece ending in an escaped quote is followed by three quotes).
    Six bulk passes over the bytes cost less than reading the pieces one by one in Python."""
    if not encoded:
        return ""
    inner = (
        encoded.replace(b"\\\\", b"\x00")
        .replace(b'\\"', b"\x01")
        .translate(None, b'"')
        .replace(b"\x01", b'\\"')
        .replace(b"\x00", b"\\\\")
    )
    text: str = orjson.loads(b'"' + inner + b'"')
    return text
