"""A loopback upstream that replays registered bytes exactly (HTTP/1.1), for the hardening tests.

``FakeUpstream`` plays scripted scenarios; mutated fixture streams need a server that sends
arbitrary bytes verbatim. ``Replay.register(body, ...)`` returns a token; a request carrying
``x-replay: <token>`` (on any path) gets ``body`` with the given status and content type, in
chunks of ``chunk`` bytes (chunked transfer encoding), optionally cut off by a TCP reset after
``reset_after`` bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import struct
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Reply:
    body: bytes
    status: int = 200
    content_type: str | None = "text/event-stream"
    chunk: int = 4096
    reset_after: int | None = None
    gap: float = 0.0  # seconds between chunks


class Replay:
    def __init__(self) -> None:
        self.replies: dict[str, Reply] = {}
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def register(self, body: bytes, **kw: object) -> str:
        token = f"r{next(self._ids)}"
        self.replies[token] = Reply(body, **kw)  # type: ignore[arg-type]
        return token

    def __enter__(self) -> Replay:
        self._thread = threading.Thread(target=self._run, name="replay-upstream", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        loop.run_until_complete(self._main())
        loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=512)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                headers = {}
                for line in head.decode("latin-1").split("\r\n")[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                n = int(headers.get("content-length", "0"))
                if n:
                    await reader.readexactly(n)
                reply = self.replies.get(headers.get("x-replay", ""))
                if reply is None:
                    writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                if not await self._send(reply, writer):
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _send(self, r: Reply, writer: asyncio.StreamWriter) -> bool:
        """False when the connection was reset on purpose."""
        head = f"HTTP/1.1 {r.status} X\r\n"
        if r.content_type is not None:
            head += f"content-type: {r.content_type}\r\n"
        head += "transfer-encoding: chunked\r\n\r\n"
        writer.write(head.encode())
        sent = 0
        for i in range(0, len(r.body), r.chunk):
            piece = r.body[i : i + r.chunk]
            if r.reset_after is not None and sent + len(piece) > r.reset_after:
                piece = piece[: r.reset_after - sent]
                if piece:
                    writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
                sock = writer.get_extra_info("socket")
                if sock is not None:  # RST instead of FIN
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return False
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            sent += len(piece)
            await writer.drain()
            if r.gap:
                await asyncio.sleep(r.gap)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True
