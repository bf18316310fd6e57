"""``FakeUpstream``: the embedded loopback LLM server, on its own asyncio loop in a thread.

A real server for all three protocols, used in-process by
tests and the demo and standalone through ``python -m proxai.upstream``. Plain HTTP speaks
HTTP/1.1 (and HTTP/2 with prior knowledge, detected from the connection preface); with
``tls=True`` a throw-away CA and certificate are made at start and ALPN offers ``h2`` (when
``http2=True``) and ``http/1.1``. This module and its transports are the one part of ProxAI
that opens sockets and reads clocks (docs/design/upstream.md, "It is a real server").

Rule: docs/design/upstream.md, "Cancellation": streams whose client left early are counted
(``closed_early``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from .cert import CertFiles, make_certs
from .http1 import handle_h1
from .http2 import handle_h2
from .play import RecordedRequest, Stats
from .profiles import ProfileName

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
MAX_BODY = 16 * 1024 * 1024


class FakeUpstream:
    """A scripted LLM upstream. Use as a context manager, or ``start()`` / ``stop()``."""

    def __init__(
        self,
        tls: bool = False,
        http2: bool = False,
        time_scale: float = 1.0,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_body: int = MAX_BODY,
        scenario: str | None = None,
        profile: ProfileName | None = None,
    ) -> None:
        """``scenario``: played when the model (or header) names no scenario (``"agent"`` for
        agent CLIs that send their own model names); ``profile``: validate requests like a real
        server (``"openai"``, ``"vllm"``; ``proxai.upstream.profiles``)."""
        self.tls = tls
        self.http2 = http2
        self.time_scale = time_scale
        self.host = host
        self.port = port
        self.max_body = max_body
        self.certs: CertFiles | None = None
        self._stats = Stats(default_scenario=scenario, profile=profile)
        self._tmp: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._connections: set[asyncio.Task[None]] = set()

    # ---- public API ----

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    @property
    def ca_path(self) -> str | None:
        """The CA certificate to trust (TLS only)."""
        return str(self.certs.ca_path) if self.certs else None

    @property
    def cert_path(self) -> str | None:
        """The server certificate chain (TLS only)."""
        return str(self.certs.cert_path) if self.certs else None

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far (a copy)."""
        return list(self._stats.requests)

    @property
    def closed_early(self) -> int:
        """Responses whose client disconnected or reset before the scenario ended."""
        return self._stats.closed_early

    @property
    def completed(self) -> int:
        """Responses played to their end (including scenarios that reset on purpose)."""
        return self._stats.completed

    def wait_for(self, predicate: Callable[[FakeUpstream], bool], timeout: float = 10.0) -> bool:
        """Poll ``predicate(self)`` until true or ``timeout`` seconds passed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self):
                return True
            time.sleep(0.01)
        return predicate(self)

    def start(self) -> FakeUpstream:
        if self.tls:
            self._tmp = tempfile.mkdtemp(prefix="proxai-upstream-")
            self.certs = make_certs(Path(self._tmp), self.host)
        self._thread = threading.Thread(target=self._run, name="proxai-fake-upstream", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise RuntimeError(f"fake upstream failed to start: {self._error}") from self._error
        return self

    def stop(self) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(15)
            self._thread = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> FakeUpstream:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ---- loop thread ----

    def _ssl_context(self) -> ssl.SSLContext | None:
        if self.certs is None:
            return None
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.certs.cert_path, self.certs.key_path)
        ctx.set_alpn_protocols(["h2", "http/1.1"] if self.http2 else ["http/1.1"])
        return ctx

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as e:  # startup failure: reported by start()
            self._error = e
        finally:
            self._ready.set()
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(
            self._on_connection, self.host, self.port, ssl=self._ssl_context(), limit=1024 * 1024
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            server.close()
            for task in list(self._connections):
                task.cancel()
            if self._connections:
                await asyncio.wait(self._connections, timeout=5)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 5)

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            ssl_object = writer.get_extra_info("ssl_object")
            alpn = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
            if alpn == "h2":
                await handle_h2(reader, writer, self._stats, self.time_scale, max_body=self.max_body)
                return
            initial = b""
            if ssl_object is None and self.http2:
                # h2c with prior knowledge: the preface decides
                while len(initial) < len(H2_PREFACE) and H2_PREFACE.startswith(initial):
                    chunk = await reader.read(len(H2_PREFACE) - len(initial))
                    if not chunk:
                        return
                    initial += chunk
                if initial == H2_PREFACE:
                    await handle_h2(
                        reader, writer, self._stats, self.time_scale, max_body=self.max_body, initial=initial
                    )
                    return
            await handle_h1(
                reader, writer, self._stats, self.time_scale, max_body=self.max_body, initial=initial
            )
        except (ConnectionError, OSError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # server shutdown; finishing normally keeps asyncio's stream callback quiet
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 2)
