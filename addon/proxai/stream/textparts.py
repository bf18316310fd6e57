"""Streamed text kept as pieces, with memory counted as it really is (docs/design/translation.md:
memory is bounded on untrusted input).

A translator that must keep streamed content (the Responses snapshot for
``response.completed``, the text checked against ``.done`` events, tool arguments checked as JSON)
bounds it. One Python string per delta costs about 50 bytes of object header plus a list slot, so
small deltas (1-12 characters, real tokens) kept one by one use about 16x their characters; a
limit counted in characters did not bound memory. ``keep`` appends a piece and joins the trailing
run of small pieces once it is ``RUN`` long: every kept string is then either at least ``SMALL``
characters or one of at most ``RUN`` trailing pieces (overhead under a quarter of the text plus a
constant), and each character is copied a bounded number of times (about ``SMALL / RUN`` + 1:
linear in the stream). It returns the bytes the list now holds more than before (string objects
as ``sys.getsizeof`` sizes them, so one emoji widening a joined piece to 4 bytes per character is
counted too, plus a pointer per slot): the caller's limit bounds real memory. ``"".join(parts)``
still gives the text.
"""

from __future__ import annotations

from _json import scanstring
from sys import getsizeof

import orjson

RUN = 64  # trailing small pieces joined at once
SMALL = 256  # characters: a piece at least this long is left alone
SLOT = 8  # a list slot (pointer)
# ``sys.getsizeof`` of a string is ``str.__sizeof__`` (a string is not tracked by the garbage
# collector: no header is added), which it finds by a lookup per call that costs about 8x the
# call itself (a join sized every piece of its run with it). ``sizeof`` is ``str.__sizeof__``
# when the two agree, checked here; else ``getsizeof``. Either sizes a non-ASCII string with
# its cached UTF-8 form once ``orjson.dumps`` made one (so the callers keep their order of
# ``keep`` and ``dumps``: the count is what it was).
_SIZES = ("", "x", "\xe9", "\xe9" * 300, "\u65e5\u672c", "\U0001f642", "a\U0001f642" * 100)
sizeof = str.__sizeof__ if all(getsizeof(s) == str.__sizeof__(s) for s in _SIZES) else getsizeof
# ``getsizeof`` of an ASCII string is this plus its length (CPython's compact ASCII strings,
# PEP 393), checked here: a joined ASCII run is sized without sizing its pieces.
_ASCII = getsizeof("")
_ASCII_SIZES = all(getsizeof("x" * n) == _ASCII + n for n in (1, 2, 255, 4096))


def keep(parts: list[str], text: str) -> int:
    """``parts.append(text)``; join the trailing small pieces when there are ``RUN`` of them.
    Returns the change in bytes held (may be negative after a join)."""
    parts.append(text)
    added = sizeof(text) + SLOT
    n = len(parts)
    if n >= RUN and len(parts[n - RUN]) < SMALL:
        added += join_run(parts, n)
    return added


def join_run(parts: list[str], n: int) -> int:
    """``keep``'s join, once the ``n`` pieces end in ``RUN`` small ones: the trailing run of
    small pieces becomes one. Returns the change in bytes held (negative)."""
    start = n - RUN
    while start > 0 and len(parts[start - 1]) < SMALL:
        start -= 1
    run = parts[start:]
    joined = "".join(run)
    parts[start:] = [joined]
    if _ASCII_SIZES and joined.isascii():  # so is every piece: one header and slot instead of many
        return -(_ASCII + SLOT) * (len(run) - 1)
    return sizeof(joined) + SLOT - sum(map(sizeof, run)) - SLOT * len(run)


# -- kept JSON-encoded ---------------------------------------------------------------------------
# A writer that serializes each delta anyway (``orjson.dumps(text)``, the delta event's field) can
# keep that encoding instead of the string: ``encoded += dumps(text)`` appends the pieces' JSON
# strings, quotes and all, one after another to one ``bytearray`` (no object per delta, so the
# bytes it holds are its length plus its over-allocation: at most an eighth, plus ``ENCODED``).
# ``encoded_text`` gives the text back.
ENCODED = getsizeof(bytearray()) + 8  # a kept bytearray's header and over-allocation constant


def encoded_text(encoded: bytes | bytearray) -> str:
    """The text of the JSON strings in ``encoded`` (``dumps`` outputs, one after another).

    Inside an encoded string every quote is escaped (``\\"``), so where one string ends and the
    next begins is ``""``: dropping every ``""`` leaves one JSON string of the whole text, unless
    some ``\\""`` makes a pair ambiguous (an escaped quote or backslash ending a piece); those
    texts are read piece by piece."""
    if not encoded:
        return ""
    if b'\\""' not in encoded:
        whole = encoded.replace(b'""', b"")
        text: str = orjson.loads(whole) if whole else ""
        return text
    s = encoded.decode()
    pieces = []
    pos, n = 0, len(s)
    while pos < n:
        piece, pos = scanstring(s, pos + 1)
        pieces.append(piece)
    return "".join(pieces)
