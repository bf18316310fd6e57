"""HTTP/2 transport of the fake upstream, on asyncio streams and h2.

The fake upstream's HTTP/2: concurrent streams on one connection, each its own
scenario task. Flow control is honoured (a write waits for WINDOW_UPDATE). A client's
RST_STREAM cancels only that stream's scenario; a closed connection cancels all of them;
either counts as ``closed_early`` when the scenario had not finished. ``Sink.abort`` resets
just the one stream (RST_STREAM INTERNAL_ERROR), the other streams go on.

Rule: docs/design/upstream.md, "Cancellation": a reset stream cancels only its own scenario.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions

from .play import Stats, serve
from .playback import Headers

READ_SIZE = 65536


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


@dataclass(slots=True)
class _Stream:
    headers: dict[str, str]
    body: bytearray = field(default_factory=bytearray)
    too_big: bool = False
    task: asyncio.Task[None] | None = None
    finished: bool = False


@contextlib.contextmanager
def _stream_errors() -> Iterator[None]:
    """A write on a stream the peer closed is a connection-level event for the scenario player."""
    try:
        yield
    except h2.exceptions.StreamClosedError as e:
        raise ConnectionResetError(f"HTTP/2 stream closed: {e}") from e


class H2Sink:
    def __init__(self, server: H2Server, stream_id: int) -> None:
        self.server = server
        self.stream_id = stream_id

    async def start(self, status: int, headers: Headers) -> None:
        with _stream_errors():
            self.server.conn.send_headers(self.stream_id, [(":status", str(status)), *headers])
        await self.server.flush()

    async def write(self, data: bytes) -> None:
        conn = self.server.conn
        view = memoryview(data)
        while view:
            with _stream_errors():
                window = min(conn.local_flow_control_window(self.stream_id), conn.max_outbound_frame_size)
            if window <= 0:
                self.server.window_open.clear()
                await self.server.window_open.wait()
                continue
            with _stream_errors():
                conn.send_data(self.stream_id, bytes(view[:window]))
            view = view[window:]
            await self.server.flush()

    async def end(self) -> None:
        with _stream_errors():
            self.server.conn.end_stream(self.stream_id)
        await self.server.flush()

    async def abort(self, drop: bool = False) -> None:
        code = h2.errors.ErrorCodes.CANCEL if drop else h2.errors.ErrorCodes.INTERNAL_ERROR
        with _stream_errors():
            self.server.conn.reset_stream(self.stream_id, code)
        await self.server.flush()


class H2Server:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        stats: Stats,
        time_scale: float,
        max_body: int,
    ) -> None:
        config = h2.config.H2Configuration(client_side=False, header_encoding="latin-1")
        self.conn = h2.connection.H2Connection(config=config)
        self.reader = reader
        self.writer = writer
        self.stats = stats
        self.time_scale = time_scale
        self.max_body = max_body
        self.streams: dict[int, _Stream] = {}
        self.window_open = asyncio.Event()

    async def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.writer.write(data)
            await self.writer.drain()

    async def run(self, initial: bytes = b"") -> None:
        self.conn.initiate_connection()
        await self.flush()
        shutdown = False
        try:
            data = initial
            while True:
                if data:
                    try:
                        events = self.conn.receive_data(data)
                    except h2.exceptions.ProtocolError:
                        await self.flush()
                        return
                    for event in events:
                        if not self._on_event(event):
                            await self.flush()
                            return
                    await self.flush()
                try:
                    data = await self.reader.read(READ_SIZE)
                except (ConnectionError, OSError):
                    return
                if not data:
                    return
        except asyncio.CancelledError:
            shutdown = True  # the server stops: not the client's doing
            raise
        finally:
            tasks = [t for t in (self._cancel(sid, count=not shutdown) for sid in list(self.streams)) if t]
            if tasks:
                await asyncio.wait(tasks, timeout=5)

    def _on_event(self, event: h2.events.Event) -> bool:
        match event:
            case h2.events.RequestReceived():
                headers: dict[str, str] = {}
                for raw_name, raw_value in event.headers or []:
                    key = _text(raw_name).lower()
                    value = _text(raw_value)
                    headers[key] = f"{headers[key]}, {value}" if key in headers else value
                self.streams[event.stream_id] = _Stream(headers)
                if event.stream_ended is not None:
                    self._dispatch(event.stream_id)
            case h2.events.DataReceived():
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                st = self.streams.get(event.stream_id)
                if st is not None and event.data:
                    if len(st.body) + len(event.data) > self.max_body:
                        st.too_big = True
                    else:
                        st.body += event.data
            case h2.events.StreamEnded():
                st = self.streams.get(event.stream_id)
                if st is not None and st.task is None:
                    self._dispatch(event.stream_id)
            case h2.events.StreamReset():
                self._cancel(event.stream_id)
            case h2.events.WindowUpdated():
                self.window_open.set()
            case h2.events.ConnectionTerminated():
                return False
            case _:
                pass
        return True

    def _dispatch(self, stream_id: int) -> None:
        st = self.streams[stream_id]
        st.task = asyncio.create_task(self._serve(stream_id, st))

    async def _serve(self, stream_id: int, st: _Stream) -> None:
        sink = H2Sink(self, stream_id)
        try:
            if st.too_big:
                msg = b'{"error":{"message":"Request body too large","type":"invalid_request_error"}}'
                await sink.start(
                    413, [("content-type", "application/json"), ("content-length", str(len(msg)))]
                )
                await sink.write(msg)
                await sink.end()
            else:
                h = st.headers
                await serve(
                    h.get(":method", "GET"),
                    h.get(":path", "/"),
                    h,
                    bytes(st.body),
                    http_version="HTTP/2",
                    sink=sink,
                    stats=self.stats,
                    time_scale=self.time_scale,
                )
            st.finished = True
            self.stats.completed += 1
        except (ConnectionError, OSError):
            pass  # the client reset the stream or left: _cancel counted it
        finally:
            if st.finished:
                self.streams.pop(stream_id, None)

    def _cancel(self, stream_id: int, *, count: bool = True) -> asyncio.Task[None] | None:
        """The client reset the stream or left: stop its scenario now, count it if unfinished."""
        st = self.streams.pop(stream_id, None)
        if st is None or st.finished:
            return None
        if count:
            self.stats.closed_early += 1
        if st.task is not None and not st.task.done():
            st.task.cancel()
            return st.task
        return None


async def handle_h2(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    stats: Stats,
    time_scale: float,
    *,
    max_body: int,
    initial: bytes = b"",
) -> None:
    await H2Server(reader, writer, stats, time_scale, max_body).run(initial)
