"""The same-process floor every hot-path benchmark is divided by.

The floor is what a plain observer does with the same 512-byte chunks: join the chunks into
lines (a linear carry of the partial line, never a re-scan) and ``orjson.loads`` every
``data:`` payload. It does no SSE field handling, no UTF-8 replacement, no event objects and
no protocol state, so a ratio near 2 means the observer costs about one extra floor. (The
Anthropic grammar's lean reading parses only the string of its commonest delta, not the whole
payload: docs/design/protocol-grammars.md, "The event loop".)

The rule (docs/design/scanner.md): "the SSE scanner runs once per chunk": the floor is
that one linear pass.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson

_loads = orjson.loads


def floor(chunks: Iterable[bytes]) -> int:
    """Split ``chunks`` into lines and parse each data payload; returns the payload count."""
    n = 0
    pending: list[bytes] = []
    for chunk in chunks:
        if b"\n" not in chunk:
            pending.append(chunk)
            continue
        lines = chunk.split(b"\n")
        if pending:
            pending.append(lines[0])
            lines[0] = b"".join(pending)
            pending.clear()
        pending.append(lines.pop())
        for line in lines:
            if line[:6] == b"data: " and line != b"data: [DONE]":
                _loads(line[6:])
                n += 1
    return n
