"""The loopback HTTP/1.1 server a replayed request is sent to (docs/replay.md, "How a replay is served").

mitmproxy answers a request an addon sets ``flow.response`` on in one piece, with no stream and no
timing. So a matched request is sent on, to this server inside the proxy process (on mitmproxy's
own event loop), which plays the recorded answer's ``Plan`` (``proxai.replay.plan``): the headers
and every piece at its time after the request reached the proxy (the addon's clock,
``time.monotonic``), as the recorded times count from the recorded request's arrival. mitmproxy's
response path runs on it exactly as on a live upstream's answer: the carrier observes it, the guard
watches it, fault rules shape it, the body is kept. Each plan is registered under a random token
(the request's path names it) and played once; a plan of a request that never arrives (a fault
answered it) is discarded by the addon.

Only ``127.0.0.1`` listens; a request for an unknown token gets 404. A client that goes away
ends the playing (the write fails, the connection is closed). Rules: docs/design/replay.md, 6 to 8.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
import struct
import time

import h11

from proxai.replay.plan import Plan

logger = logging.getLogger(__name__)

PATH_PREFIX = "/proxai-replay/"
READ_SIZE = 65536
MAX_REQUEST = 256 * 1024 * 1024  # the replayed request's body is read and dropped


class PlayServer:
    """Plans by token, and the server that plays them."""

    def __init__(self) -> None:
        self.port: int | None = None
        self._plans: dict[str, tuple[Plan, float]] = {}
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        if self._server is not None:
            return
        self._server = await asyncio.start_server(self._on_connection, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._connections):
            task.cancel()
        self.port = None

    def add(self, plan: Plan, start: float) -> str:
        """Register ``plan`` for a request that reached the proxy at ``start`` (``time.monotonic``):
        its times count from then, as the recorded ones counted from the recorded request's arrival,
        so the proxy's own work before the request got here is not added to them."""
        token = secrets.token_hex(12)
        self._plans[token] = (plan, start)
        return token

    def forget(self, token: str) -> bool:
        """Drop ``token``; True when its plan was never played (its request never arrived)."""
        return self._plans.pop(token, None) is not None

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, OSError, h11.ProtocolError):
            pass
        except asyncio.CancelledError:
            pass  # the proxy shuts down; ending normally keeps asyncio's stream callback quiet
        except Exception:  # a bug of ours: logged, the connection closed
            logger.warning("proxai: replay server error", exc_info=True)
        finally:
            if task is not None:
                self._connections.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            request: h11.Request | None = None
            size = 0
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await reader.read(READ_SIZE)
                    conn.receive_data(data)
                    continue
                if isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    size += len(event.data)
                    if size > MAX_REQUEST:
                        return
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:  # ConnectionClosed
                    return
            assert request is not None
            path = request.target.decode("latin-1")
            token = path.removeprefix(PATH_PREFIX) if path.startswith(PATH_PREFIX) else ""
            found = self._plans.pop(token, None)
            if found is None:
                await _send(writer, conn, _not_found())
                await _send(writer, conn, h11.Data(data=_NOT_FOUND))
                await _send(writer, conn, h11.EndOfMessage())
            elif not await play(*found, conn, writer):
                return
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()


_NOT_FOUND = b'{"error":{"type":"not_found_error","message":"proxai replay: no such recorded answer"}}'


def _not_found() -> h11.Response:
    headers = [("content-type", "application/json"), ("content-length", str(len(_NOT_FOUND)))]
    return h11.Response(status_code=404, headers=headers)


async def _send(writer: asyncio.StreamWriter, conn: h11.Connection, event: h11.Event) -> None:
    data = conn.send(event)
    if data:
        writer.write(data)
        await writer.drain()


async def _until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)


async def play(plan: Plan, t0: float, conn: h11.Connection, writer: asyncio.StreamWriter) -> bool:
    """Play ``plan`` as one response, its times counted from ``t0`` (``time.monotonic``); False when
    the connection was reset on purpose."""
    headers = list(plan.headers)
    if not plan.streaming:
        size = sum(len(d) for _, d in plan.pieces)
        headers.append(("content-length", str(size)))
    await _until(t0 + plan.headers_at)
    await _send(writer, conn, h11.Response(status_code=plan.status, headers=headers))
    for at, data in plan.pieces:
        await _until(t0 + at)
        await _send(writer, conn, h11.Data(data=data))
    if plan.reset:
        _reset(writer)
        return False
    await _send(writer, conn, h11.EndOfMessage())
    return True


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
