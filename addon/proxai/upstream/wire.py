"""Pieces every protocol renderer shares: SSE framing, huge-line filler, the non-streamed driver.

A renderer (``render_anthropic.py``, ``render_chat.py``, ``render_responses.py``) implements
``Renderer``: ``stream(ops)`` yields the SSE wire actions of that protocol, ``body(t)`` builds
the non-streamed JSON body of a finished transcript, ``error_response(name)`` the protocol's
HTTP error. ``json_actions`` drives ``body`` for non-streamed requests the same way for all
three protocols: it keeps the scenario's delays, answers an error op with the HTTP error, and
cuts the body of a scenario that never finishes (truncation).

Rule: docs/design/upstream.md, "Boundedness": the bounded SSE scanner and the per-protocol
completeness checks are what the huge-line filler and the truncated non-streamed body exercise.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import orjson

from .ops import Abort, Action, Delay, ErrorName, Fail, HugeLine, Malformed, Op, Params, Reset, Respond, Wait
from .transcript import Transcript

FILLER_PIECE = 64 * 1024
COMMENT_KEEPALIVE = b": keepalive\n\n"


def sse(obj: Any, event: str | None = None) -> bytes:
    """One SSE event: optional ``event:`` line, one ``data:`` line of compact JSON."""
    data = orjson.dumps(obj)
    if event is None:
        return b"data: " + data + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"


def filler(size: int) -> Iterator[bytes]:
    """``size`` bytes of one never-ending JSON string, lazily, in 64 KiB pieces (no newline)."""
    piece = b"x" * FILLER_PIECE
    left = size
    while left > 0:
        n = min(left, FILLER_PIECE)
        yield piece if n == FILLER_PIECE else piece[:n]
        left -= n


def delay(op: Wait, keepalive: bytes) -> Delay:
    return Delay(op.seconds, keepalive if op.keepalive else b"", op.every, op.stall)


class Renderer(Protocol):
    params: Params

    def stream(self, ops: Iterable[Op]) -> Iterator[Action]: ...

    def body(self, t: Transcript) -> bytes: ...

    def error_response(self, name: ErrorName) -> Respond: ...


def json_actions(renderer: Renderer, ops: Iterable[Op]) -> Iterator[Action]:
    """Play a scenario as a non-streamed request: delays, then one ``Respond``."""
    t = Transcript(keep_text=True)
    malformed = False
    pause: Delay | None = None
    for op in ops:
        match op:
            case Wait() if op.in_body:
                pause = Delay(op.seconds, stall=op.stall)
            case Wait():
                yield Delay(op.seconds, stall=op.stall)
            case Reset():
                yield Abort(op.drop)
                return
            case Fail():
                yield renderer.error_response(op.error)
                return
            case Malformed():
                malformed = True
            case HugeLine():
                break
            case _:
                t.apply(op)
    body = renderer.body(t)
    if t.stop is None:
        yield Respond(200, body, cut=max(1, len(body) // 2))
    elif malformed:
        yield Respond(200, body[: len(body) // 2])
    else:
        yield Respond(200, body, pause=pause)
