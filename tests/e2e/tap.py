"""A TCP tap between mitmdump and the fake upstream: records the exact bytes the upstream sent.

Used to prove observe-only mode is byte-exact: what the client received (``httpx`` ``iter_raw``,
still compressed) must equal the body the upstream put on the wire. The tap forwards bytes
unchanged in both directions and keeps the upstream -> proxy bytes of every connection; the
HTTP/1.1 responses in them are parsed with h11.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import h11


class TcpTap:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._recorded: list[bytearray] = []
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._closed = False
        t = threading.Thread(target=self._accept, name="proxai-tap", daemon=True)
        t.start()
        self._threads.append(t)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            buf = bytearray()
            with self._lock:
                self._recorded.append(buf)
                self._sockets += [client, server]
            for src, dst, rec in ((client, server, None), (server, client, buf)):
                t = threading.Thread(target=self._pump, args=(src, dst, rec), daemon=True)
                t.start()
                self._threads.append(t)

    def _pump(self, src: socket.socket, dst: socket.socket, rec: bytearray | None) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if rec is not None:
                    with self._lock:
                        rec.extend(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def upstream_bodies(self) -> list[bytes]:
        """The raw (still content-encoded, de-chunked) body of every response the upstream sent."""
        with self._lock:
            recordings = [bytes(b) for b in self._recorded]
        bodies: list[bytes] = []
        for raw in recordings:
            bodies.extend(_responses(raw))
        return bodies

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for s in self._sockets:
                with contextlib.suppress(OSError):
                    s.close()


def _responses(raw: bytes) -> Iterator[bytes]:
    """Parse consecutive HTTP/1.1 responses (keep-alive) out of one connection's bytes."""
    conn = h11.Connection(h11.CLIENT)
    conn.receive_data(raw)
    while True:
        conn.send(h11.Request(method="POST", target="/", headers=[("host", "tap"), ("content-length", "0")]))
        conn.send(h11.EndOfMessage())
        body = bytearray()
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError:
                if body:
                    yield bytes(body)
                return
            if event is h11.NEED_DATA:
                conn.receive_data(b"")
                if body:
                    yield bytes(body)
                return
            if isinstance(event, h11.Data):
                body.extend(event.data)
            elif isinstance(event, h11.EndOfMessage):
                yield bytes(body)
                break
            elif isinstance(event, h11.ConnectionClosed):
                return
        if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
            return
        try:
            conn.start_next_cycle()
        except h11.LocalProtocolError:
            return
