"""The real front ends for UI tests and screenshots: mitmproxy's console in tmux, and mitmweb in Debian's
headless chromium driven over the DevTools protocol (a websocket, from Python).

Every wait polls for a condition with a generous overall limit; nothing waits on a sleep. A tool that
is missing fails with a message that says how to install it (``.ci/install-ui``); it never skips.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

LIMIT = 60.0  # seconds any one condition may take on a loaded machine
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--remote-allow-origins=*",
]


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise AssertionError(
            f"{tool} is not installed: the UI tests use Debian's {tool}; "
            "run `sudo bash .ci/install-ui` (apt-get install -y chromium tmux fonts-noto-color-emoji)"
        )
    return path


def poll[T](
    what: str, probe: Callable[[], T | None], limit: float = LIMIT, last: Callable[[], str] = str
) -> T:
    """``probe()`` until it returns something (not None / False); fails after ``limit`` seconds
    saying what did not happen and, with ``last``, what was there instead."""
    deadline = time.monotonic() + limit
    while True:
        got = probe()
        if got is not None and got is not False:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last seen:\n{last()}")
        time.sleep(0.1)


# -- the console under tmux -------------------------------------------------------------------------


class Tmux:
    """One tmux server on a private socket, one session running ``command``."""

    def __init__(self, command: list[str], *, width: int = 160, height: int = 48, cwd: Path) -> None:
        self.tmux = need("tmux")
        self.socket = f"proxai-{id(self):x}"
        subprocess.run(
            [
                self.tmux,
                "-L",
                self.socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                str(width),
                "-y",
                str(height),
                "-s",
                "ui",
                "-c",
                str(cwd),
                "env",
                "TERM=xterm-256color",
                "LANG=C.UTF-8",
                *command,
            ],
            check=True,
        )

    def run(self, *args: str) -> str:
        out = subprocess.run(
            [self.tmux, "-L", self.socket, *args], check=True, capture_output=True, text=True
        )
        return out.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "ui")

    def screen_ansi(self) -> str:
        return self.run("capture-pane", "-p", "-e", "-t", "ui")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "ui", *keys)

    def wait_for(self, text: str, limit: float = LIMIT) -> str:
        """The screen once it shows ``text`` and has settled: two captures in a row alike. The
        console paints a screen in several writes, and on a loaded machine a capture can fall
        between them (the first lines of a view drawn, the rest still the old screen)."""
        seen = [""]

        def probe() -> str | None:
            screen = self.screen()
            settled, seen[0] = screen == seen[0], screen
            return screen if settled and text in screen else None

        return poll(repr(text), probe, limit, self.screen)

    def close(self) -> None:
        subprocess.run([self.tmux, "-L", self.socket, "kill-server"], check=False, capture_output=True)


@contextlib.contextmanager
def tmux_session(command: list[str], *, cwd: Path, width: int = 160, height: int = 48) -> Iterator[Tmux]:
    t = Tmux(command, width=width, height=height, cwd=cwd)
    try:
        yield t
    finally:
        t.close()


# -- chromium over the DevTools protocol ------------------------------------------------------------


class WebSocket:
    """A small blocking websocket client over wsproto (sans-IO, installed with mitmproxy): text
    messages only, what the DevTools protocol speaks."""

    def __init__(self, url: str) -> None:
        from urllib.parse import urlsplit

        from wsproto import ConnectionType, WSConnection
        from wsproto.events import Request

        parts = urlsplit(url)
        assert parts.hostname is not None and parts.port is not None
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=LIMIT)
        self.conn = WSConnection(ConnectionType.CLIENT)
        self.sock.sendall(self.conn.send(Request(host=f"{parts.hostname}:{parts.port}", target=parts.path)))
        self.events = self._events()
        from wsproto.events import AcceptConnection

        first = next(self.events)
        assert isinstance(first, AcceptConnection), first

    def _events(self) -> Iterator[Any]:
        from wsproto.events import CloseConnection, Ping

        while True:
            data = self.sock.recv(1 << 20)
            self.conn.receive_data(data or None)
            for ev in self.conn.events():
                if isinstance(ev, Ping):
                    self.sock.sendall(self.conn.send(ev.response()))
                elif isinstance(ev, CloseConnection):
                    raise AssertionError("chromium closed the DevTools connection")
                else:
                    yield ev
            if not data:
                raise AssertionError("chromium closed the DevTools socket")

    def send(self, text: str) -> None:
        from wsproto.events import TextMessage

        self.sock.sendall(self.conn.send(TextMessage(data=text)))

    def recv(self) -> str:
        from wsproto.events import TextMessage

        parts: list[str] = []
        for ev in self.events:
            if isinstance(ev, TextMessage):
                parts.append(ev.data)
                if ev.message_finished:
                    return "".join(parts)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.sock.close()


class Chromium:
    """A headless chromium with one page, driven over its DevTools websocket."""

    def __init__(self, *, width: int = 1400, height: int = 900) -> None:
        binary = need("chromium")
        self.profile = tempfile.mkdtemp(prefix="proxai-chromium-")
        self.proc = subprocess.Popen(
            [
                binary,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        port = poll(
            "chromium's DevTools port",
            lambda: (
                port_file.read_text().split()[0] if port_file.exists() and port_file.read_text() else None
            ),
        )
        base = f"http://127.0.0.1:{port}"

        def page_ws() -> str | None:
            try:
                targets = httpx.get(f"{base}/json/list", timeout=5).json()
            except httpx.HTTPError:
                return None
            pages = [t for t in targets if t.get("type") == "page"]
            return str(pages[0]["webSocketDebuggerUrl"]) if pages else None

        self.ws = WebSocket(poll("chromium's page", page_ws))
        self._id = 0
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._id += 1
        mid = self._id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params or {}}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise AssertionError(f"DevTools {method}: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result

    def goto(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})

    def js(self, expression: str) -> Any:
        """The value of ``expression`` in the page (a promise is awaited)."""
        res = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in res:
            raise AssertionError(f"page script failed: {res['exceptionDetails']}")
        return res.get("result", {}).get("value")

    def text(self, selector: str) -> str | None:
        """The visible text of the first element matching ``selector`` (None when there is none)."""
        value = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
            "return e ? e.innerText : null; })()"
        )
        return value if isinstance(value, str) else None

    def texts(self, selector: str) -> list[str]:
        """The visible text of every element matching ``selector``, trimmed, in document order."""
        found = self.js(
            f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.innerText.trim())"
        )
        return [str(t) for t in found]

    def attrs(self, selector: str, name: str) -> list[str | None]:
        """Attribute ``name`` of every element matching ``selector``, in document order."""
        found = self.js(
            f"[...document.querySelectorAll({json.dumps(selector)})]"
            f".map(e => e.getAttribute({json.dumps(name)}))"
        )
        return list(found)

    def assert_inert(self) -> None:
        """The page ran none of the hostile markup a flow carried (``HOSTILE`` of the run report's
        tests sets ``window.__pwned``), holds no element that runs or loads anything, and loaded
        nothing at all."""
        assert self.js("typeof window.__pwned") == "undefined"
        assert self.js("document.querySelectorAll('script, img, link, iframe, object, embed').length") == 0
        assert self.js("performance.getEntriesByType('resource').length") == 0

    def wait_text(self, selector: str, text: str, limit: float = LIMIT) -> str:
        def probe() -> str | None:
            found = self.text(selector)
            return found if found is not None and text in found else None

        return poll(f"{text!r} in {selector}", probe, limit, lambda: str(self.text(selector)))

    def click(self, selector: str) -> None:
        ok = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
            "if (!e) return false; e.click(); return true; })()"
        )
        assert ok, f"nothing to click at {selector}"

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        shutil.rmtree(self.profile, ignore_errors=True)


@contextlib.contextmanager
def chromium(*, width: int = 1400, height: int = 900) -> Iterator[Chromium]:
    c = Chromium(width=width, height=height)
    try:
        yield c
    finally:
        c.close()
