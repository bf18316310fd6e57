"""HTTP/1.1 transport of the fake upstream, on asyncio streams and h11.

A streamed response uses chunked transfer encoding and every piece the scenario writes is
its own chunk, written and drained at once, so delays between events are real on the wire.
While a response plays, the connection is watched for the client going away: an EOF or a
reset cancels the scenario and counts the stream in ``closed_early`` (a client that
disconnects mid-stream gets its upstream closed promptly). A reset (``Sink.abort``) sets
``SO_LINGER`` 0 so the peer sees a TCP RST. Request bodies over ``max_body`` get 413.

Rule: docs/design/upstream.md, "Cancellation": a client that goes away cancels the scenario
(``closed_early``).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct

import h11
import orjson

from .play import Stats, serve
from .playback import Headers

READ_SIZE = 65536
DISCARD_LIMIT = 64 * 1024 * 1024
SERVER_HEADER = ("server", "proxai-fake-upstream")


class _Gone(Exception):
    """The client went away."""


class H1Sink:
    def __init__(self, conn: h11.Connection, writer: asyncio.StreamWriter) -> None:
        self.conn = conn
        self.writer = writer
        self.aborted = False
        self.ended = False

    async def _send(self, event: h11.Event) -> None:
        data = self.conn.send(event)
        if data:
            self.writer.write(data)
            await self.writer.drain()

    async def start(self, status: int, headers: Headers) -> None:
        await self._send(h11.Response(status_code=status, headers=[SERVER_HEADER, *headers]))

    async def write(self, data: bytes) -> None:
        await self._send(h11.Data(data=data))

    async def end(self) -> None:
        await self._send(h11.EndOfMessage())
        self.ended = True

    async def abort(self, drop: bool = False) -> None:
        self.aborted = True
        if drop:
            self.writer.close()  # FIN after the bytes already written; the body stays unfinished
        else:
            reset(self.writer)


def reset(writer: asyncio.StreamWriter) -> None:
    """Close the connection with a TCP RST."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def _refuse(sink: H1Sink, status: int, message: str) -> None:
    msg = orjson.dumps({"error": {"message": message, "type": "invalid_request_error"}})
    # The connection ends after a refusal: say so, or a keep-alive client may send its next request
    # on it and race the close (a reset instead of an answer).
    await sink.start(
        status,
        [("content-type", "application/json"), ("content-length", str(len(msg))), ("connection", "close")],
    )
    await sink.write(msg)
    await sink.end()


async def _discard(conn: h11.Connection, reader: asyncio.StreamReader) -> None:
    """Read (and drop) the rest of a refused body, up to DISCARD_LIMIT, so the client sees our answer."""
    left = DISCARD_LIMIT
    while left > 0:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await reader.read(READ_SIZE)
            if not data:
                return
            left -= len(data)
            conn.receive_data(data)
        elif not isinstance(event, h11.Data):
            return


async def handle_h1(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    stats: Stats,
    time_scale: float,
    *,
    max_body: int,
    initial: bytes = b"",
) -> None:
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=256 * 1024)
    if initial:
        conn.receive_data(initial)
    while True:
        request: h11.Request | None = None
        body = bytearray()
        sink = H1Sink(conn, writer)
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    if conn.they_are_waiting_for_100_continue:
                        writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b"")
                    data = await reader.read(READ_SIZE)
                    conn.receive_data(data)
                    continue
                if isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    if len(body) + len(event.data) > max_body:
                        await _refuse(sink, 413, "Request body too large")
                        await _discard(conn, reader)
                        return
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:  # ConnectionClosed, PAUSED
                    return
        except h11.RemoteProtocolError as e:
            if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                await _refuse(sink, e.error_status_hint, "Malformed HTTP request")
            return
        assert request is not None
        headers: dict[str, str] = {}
        for name, value in request.headers:
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        task = asyncio.create_task(
            serve(
                request.method.decode(),
                request.target.decode("latin-1"),
                headers,
                bytes(body),
                http_version="HTTP/1.1",
                sink=sink,
                stats=stats,
                time_scale=time_scale,
            )
        )
        pending = b""
        gone = False
        try:
            while not task.done():
                watcher = asyncio.ensure_future(reader.read(READ_SIZE))
                try:
                    await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not watcher.done():
                        watcher.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await watcher
                if watcher.cancelled():
                    break
                try:
                    data = watcher.result()
                except (ConnectionError, OSError):
                    data = b""
                if not data:
                    gone = True
                    break
                pending += data  # a pipelined request: handled after this response
        except asyncio.CancelledError:  # server shutdown: never leave the scenario running
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            raise
        if gone and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            stats.closed_early += 1
            return
        try:
            await task
        except (ConnectionError, OSError):
            stats.closed_early += 1
            return
        stats.completed += 1
        if sink.aborted or gone or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
            return
        conn.start_next_cycle()
        if pending:
            conn.receive_data(pending)
