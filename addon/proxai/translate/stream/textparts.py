"""Streamed text kept as pieces, with memory counted as it really is (issue 7, "memory bounded").

Seed 001 ("内存有界"): a translator that must keep streamed content (the Responses snapshot for
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

from sys import getsizeof

RUN = 64  # trailing small pieces joined at once
SMALL = 256  # characters: a piece at least this long is left alone
_SLOT = 8  # a list slot (pointer)
# ``getsizeof`` of an ASCII string is this plus its length (CPython's compact ASCII strings,
# PEP 393), checked here; ``getsizeof`` costs a method lookup per call, more than the rest of
# ``keep``, so ASCII pieces (the usual deltas) are sized without it.
_ASCII = getsizeof("")
_ASCII_SIZES = all(getsizeof("x" * n) == _ASCII + n for n in (1, 2, 255, 4096))


def keep(parts: list[str], text: str) -> int:
    """``parts.append(text)``; join the trailing small pieces when there are ``RUN`` of them.
    Returns the change in bytes held (may be negative after a join)."""
    parts.append(text)
    added = (_ASCII + len(text) if _ASCII_SIZES and text.isascii() else getsizeof(text)) + _SLOT
    n = len(parts)
    if n >= RUN and len(parts[n - RUN]) < SMALL:
        start = n - RUN
        while start > 0 and len(parts[start - 1]) < SMALL:
            start -= 1
        run = parts[start:]
        joined = "".join(run)
        parts[start:] = [joined]
        if _ASCII_SIZES and joined.isascii():  # so is every piece: one header and slot instead of many
            added -= (_ASCII + _SLOT) * (len(run) - 1)
        else:
            added += getsizeof(joined) + _SLOT - sum(map(getsizeof, run)) - _SLOT * len(run)
    return added
