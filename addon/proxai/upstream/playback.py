"""Play a renderer's actions into one HTTP response with real, scaled delays.

The timing half of the fake upstream (docs/upstream.md): a ``Delay`` sleeps ``seconds x time_scale``
(a stall can be overridden in real seconds) while writing the protocol's keepalive every ``every``
seconds, each keepalive at its fixed offset from the pause's start so the pause lasts its own length
however late the loop wakes; bytes are compressed and flushed per write; ``byte_delay`` writes one
byte at a time (slowloris); an ``Abort`` resets or drops. A ``Sink`` is one response on one HTTP/1.1
connection or HTTP/2 stream (``http1.py``, ``http2.py``). The scaled pauses, with and without
keepalives, are what the guard's stall and idle rules meet (docs/design/guard.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from .compress import Compressor, compress, make_compressor
from .ops import Abort, Action, Delay, Respond

Headers = list[tuple[str, str]]
MIN_SLEEP = 0.001  # shorter per-byte delays only yield to the loop
COALESCE = 32 * 1024  # undelayed events are written together up to this many bytes


def _now() -> float:
    return asyncio.get_running_loop().time()


_sleep = asyncio.sleep


class Sink(Protocol):
    """One response on one connection (HTTP/1.1) or stream (HTTP/2)."""

    async def start(self, status: int, headers: Headers) -> None: ...

    async def write(self, data: bytes) -> None: ...

    async def end(self) -> None: ...

    async def abort(self, drop: bool = False) -> None: ...


@dataclass(frozen=True, slots=True)
class Timing:
    scale: float
    stall: float | None  # x-proxai-stall: absolute seconds for stall waits

    def seconds(self, d: Delay) -> float:
        if d.stall and self.stall is not None:
            return self.stall
        return d.seconds * self.scale

    async def sleep(self, d: Delay, write: Callable[[bytes], Any] | None = None) -> None:
        total = self.seconds(d)
        if total <= 0:
            return
        every = d.every * self.scale if self.scale > 0 else d.every  # unscaled when only a stall is set
        if not d.keepalive or write is None or every <= 0:
            await _sleep(total)
            return
        # Each keepalive is due at a fixed offset from the start and the pause ends at start + total:
        # sleeping ``every`` per keepalive would add every wake-up's lateness and the write's time,
        # so a 0.6 s pause with 30 keepalives lasted 1 s on a loaded machine.
        start = _now()
        end = start + total
        due = start
        while True:
            due = min(due + every, end)
            await _sleep(max(0.0, due - _now()))
            if due >= end - 1e-9:
                return
            await write(d.keepalive)


async def respond(
    sink: Sink, resp: Respond, encoding: str | None = None, timing: Timing | None = None
) -> None:
    body = compress(encoding, resp.body) if encoding else resp.body
    headers: Headers = [("content-type", resp.content_type), ("content-length", str(len(body)))]
    if encoding:
        headers.append(("content-encoding", encoding))
    headers.extend(resp.headers)
    await sink.start(resp.status, headers)
    if resp.cut:
        await sink.write(body[: resp.cut])
        await sink.abort(drop=True)
        return
    if resp.pause is not None and timing is not None and len(body) > 1:
        await sink.write(body[: len(body) // 2])
        await timing.sleep(resp.pause)
        body = body[len(body) // 2 :]
    if body:
        await sink.write(body)
    await sink.end()


async def play_json(actions: Iterator[Action], sink: Sink, encoding: str | None, timing: Timing) -> None:
    for action in actions:
        match action:
            case Delay():
                await timing.sleep(action)
            case Abort():
                await sink.abort(action.drop)
                return
            case Respond():
                await respond(sink, action, encoding, timing)
                return
            case bytes():
                pass


async def play_stream(
    actions: Iterator[Action],
    sink: Sink,
    *,
    byte_delay: float,
    content_type: str | None,
    encoding: str | None,
    timing: Timing,
) -> None:
    headers: Headers = []
    if content_type and content_type != "none":
        headers.append(("content-type", content_type))
    headers.append(("cache-control", "no-cache"))
    compressor: Compressor | None = None
    if encoding:
        headers.append(("content-encoding", encoding))
        compressor = make_compressor(encoding)
    await sink.start(200, headers)
    byte_delay *= timing.scale

    async def write(data: bytes) -> None:
        if compressor is not None:
            data = compressor.feed(data)
        if byte_delay > 0:
            for i in range(len(data)):
                await sink.write(data[i : i + 1])
                await asyncio.sleep(byte_delay if byte_delay >= MIN_SLEEP else 0)
        elif data:
            await sink.write(data)

    # Events with no delay between them leave in one write (as a real server's buffer would),
    # up to COALESCE bytes; any real delay flushes first, so paced events stay separate writes.
    pending: list[bytes] = []
    pending_size = 0

    async def flush() -> None:
        nonlocal pending_size
        if pending:
            data = b"".join(pending)
            pending.clear()
            pending_size = 0
            await write(data)

    for action in actions:
        match action:
            case bytes():
                if byte_delay > 0:
                    await write(action)
                    continue
                pending.append(action)
                pending_size += len(action)
                if pending_size >= COALESCE:
                    await flush()
            case Delay():
                if timing.seconds(action) > 0:
                    await flush()
                    await timing.sleep(action, write)
            case Abort():
                await flush()
                await sink.abort(action.drop)
                return
            case Respond():
                pass
    await flush()
    if compressor is not None:
        tail = compressor.finish()
        if tail:
            await sink.write(tail)
    await sink.end()
