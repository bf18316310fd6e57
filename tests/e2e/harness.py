"""End-to-end harness: a real ``mitmdump -s addon/proxai.py`` subprocess, and flows read back.

Reusable by every engineer's e2e tests (see ``tests/e2e/conftest.py`` for the session
fixtures). A real mitmdump in reverse mode and in regular mode (HTTPS through
CONNECT, the client trusting mitmproxy's CA from a temporary confdir), flows saved with ``-w``
and read back with ``mitmproxy.io.FlowReader``.

Each test tags its requests with a unique ``x-proxai-test`` header (``tag()``) and then waits
for exactly its own flows (``Mitmdump.wait_flows(tag)``), so one session-scoped mitmdump can
serve many tests.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from bench.procs import free_port, stop_process
from mitmproxy import http, io
from mitmproxy.exceptions import FlowReadException

from proxai.core.model import Protocol

REPO = Path(__file__).resolve().parents[2]
ADDON_SCRIPT = REPO / "addon" / "proxai.py"
MITMDUMP = Path(sys.executable).parent / "mitmdump"
TEST_HEADER = "x-proxai-test"
# every API path a test sends to, by protocol
PATHS: dict[Protocol, str] = {
    Protocol.ANTHROPIC_MESSAGES: "/v1/messages",
    Protocol.OPENAI_CHAT: "/v1/chat/completions",
    Protocol.OPENAI_RESPONSES: "/v1/responses",
}


def tag() -> str:
    """A unique id for one test's requests (sent as the ``x-proxai-test`` header)."""
    return uuid.uuid4().hex[:12]


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Mitmdump:
    """One running mitmdump with the ProxAI addon."""

    mode: str  # "reverse" | "regular"
    port: int
    workdir: Path
    proc: subprocess.Popen[bytes]
    upstream_url: str
    args: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        """Reverse mode: the base URL clients talk to. Regular mode: the proxy URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def proxy_url(self) -> str:
        return self.url

    @property
    def confdir(self) -> Path:
        return self.workdir / "conf"

    @property
    def ca_path(self) -> Path:
        """mitmproxy's CA certificate (regular mode: the client must trust it)."""
        return self.confdir / "mitmproxy-ca-cert.pem"

    @property
    def flow_path(self) -> Path:
        return self.workdir / "flows.flow"

    @property
    def diagnostics_dir(self) -> Path:
        return self.workdir / "diagnostics"

    @property
    def log_path(self) -> Path:
        return self.workdir / "mitmdump.log"

    def base_url(self, prefix: str = "") -> str:
        """The base URL an SDK gets: the proxy itself (reverse) or the upstream (regular)."""
        root = self.url if self.mode == "reverse" else self.upstream_url
        return root + prefix

    def http_client(self, **kw: Any) -> httpx.Client:
        """An httpx client wired for this mode (proxy + mitmproxy CA in regular mode)."""
        if self.mode == "regular":
            kw.setdefault("proxy", self.proxy_url)
            kw.setdefault("verify", ssl.create_default_context(cafile=str(self.ca_path)))
        kw.setdefault("trust_env", False)  # explicit proxy only; ignore HTTP(S)_PROXY/NO_PROXY
        kw.setdefault("timeout", httpx.Timeout(60.0, connect=10.0))
        return httpx.Client(**kw)

    def sdk_http_client(self, **kw: Any) -> Any:
        """The same for the SDKs: openai and anthropic use ``httpx2`` (they reject httpx objects)."""
        import httpx2

        if self.mode == "regular":
            kw.setdefault("proxy", self.proxy_url)
            kw.setdefault("verify", ssl.create_default_context(cafile=str(self.ca_path)))
        kw.setdefault("trust_env", False)  # explicit proxy only; ignore HTTP(S)_PROXY/NO_PROXY
        kw.setdefault("timeout", httpx2.Timeout(60.0, connect=10.0))
        return httpx2.Client(**kw)

    def async_http_client(self, **kw: Any) -> httpx.AsyncClient:
        if self.mode == "regular":
            kw.setdefault("proxy", self.proxy_url)
            kw.setdefault("verify", ssl.create_default_context(cafile=str(self.ca_path)))
        kw.setdefault("trust_env", False)  # explicit proxy only; ignore HTTP(S)_PROXY/NO_PROXY
        kw.setdefault("timeout", httpx.Timeout(60.0, connect=10.0))
        return httpx.AsyncClient(**kw)

    def read_flows(self) -> list[http.HTTPFlow]:
        """Every complete flow saved so far (a record being written is skipped)."""
        if not self.flow_path.exists():
            return []
        out: list[http.HTTPFlow] = []
        with open(self.flow_path, "rb") as fh:
            reader = io.FlowReader(fh)
            with contextlib.suppress(FlowReadException, ValueError):
                for f in reader.stream():
                    if isinstance(f, http.HTTPFlow):
                        out.append(f)
        return out

    def wait_flows(
        self,
        test_tag: str,
        count: int = 1,
        *,
        timeout: float = 30.0,
        where: Callable[[http.HTTPFlow], bool] | None = None,
    ) -> list[http.HTTPFlow]:
        """Wait until ``count`` flows tagged ``test_tag`` were saved; returns them in order."""
        deadline = time.monotonic() + timeout
        found: list[http.HTTPFlow] = []
        while time.monotonic() < deadline:
            found = [
                f
                for f in self.read_flows()
                if f.request.headers.get(TEST_HEADER) == test_tag and (where is None or where(f))
            ]
            if len(found) >= count:
                return found
            self.check_alive()
            time.sleep(0.05)
        raise AssertionError(
            f"expected {count} flow(s) tagged {test_tag}, found {len(found)} after {timeout}s\n"
            + self.log_tail()
        )

    def wait_flows_all(self, count: int, *, timeout: float = 30.0) -> list[http.HTTPFlow]:
        """Wait until ``count`` flows were saved, tagged or not (a mitmdump of one test)."""
        deadline = time.monotonic() + timeout
        found: list[http.HTTPFlow] = []
        while time.monotonic() < deadline:
            found = self.read_flows()
            if len(found) >= count:
                return found
            self.check_alive()
            time.sleep(0.05)
        raise AssertionError(
            f"expected {count} flow(s), found {len(found)} after {timeout}s\n" + self.log_tail()
        )

    def wait_flow(self, test_tag: str, **kw: Any) -> http.HTTPFlow:
        flows = self.wait_flows(test_tag, 1, **kw)
        assert len(flows) == 1, f"expected exactly one flow tagged {test_tag}, got {len(flows)}"
        return flows[0]

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"mitmdump exited with {self.proc.returncode}\n{self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        stop_process(self.proc)


def start_mitmdump(
    upstream_url: str,
    *,
    mode: str = "reverse",
    workdir: Path | None = None,
    extra: Sequence[str] = (),
    options: dict[str, Any] | None = None,
    script: Path = ADDON_SCRIPT,
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
    command: Sequence[str] | None = None,
    cwd: Path = REPO,
) -> Mitmdump:
    """Start mitmdump with the addon; returns once it accepts connections. ``env``: extra
    environment variables for the mitmdump process (a route's key variable). ``command``: what
    starts a mitmdump that loads the addon itself (``proxai mitmdump`` of an installed package),
    instead of ``mitmdump -s script``; ``cwd``: its working directory."""
    if mode not in ("reverse", "regular"):
        raise ValueError(mode)
    workdir = Path(workdir or tempfile.mkdtemp(prefix="proxai-e2e-"))
    (workdir / "conf").mkdir(parents=True, exist_ok=True)
    port = free_port()
    opts: dict[str, Any] = {
        "confdir": str(workdir / "conf"),
        "connection_strategy": "lazy",
        "ssl_insecure": "true",  # the fake upstream's certificate is self-signed
        "proxai_diagnostics_dir": str(workdir / "diagnostics"),
        "termlog_verbosity": "info",
        "flow_detail": "0",
    }
    opts.update({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (options or {}).items()})
    args = [
        *(command or [str(MITMDUMP), "-s", str(script)]),
        "--listen-host",
        "127.0.0.1",
        "--listen-port",
        str(port),
        "-w",
        str(workdir / "flows.flow"),
    ]
    if mode == "reverse":
        args += ["--mode", f"reverse:{upstream_url}"]
    for k, v in opts.items():
        args += ["--set", f"{k}={v}"]
    args += list(extra)
    log = open(workdir / "mitmdump.log", "wb")  # noqa: SIM115 - the process owns it
    env = {**os.environ, **(env or {})}
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(var, None)
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=str(cwd), env=env)
    log.close()
    md = Mitmdump(mode=mode, port=port, workdir=workdir, proc=proc, upstream_url=upstream_url, args=args)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md.check_alive()
        if _listening(port) and (mode != "regular" or md.ca_path.exists()):
            return md
        time.sleep(0.05)
    md.stop()
    raise AssertionError(f"mitmdump did not listen on {port} within {timeout}s\n{md.log_tail()}")


@contextlib.contextmanager
def running_mitmdump(upstream_url: str, **kw: Any) -> Iterator[Mitmdump]:
    md = start_mitmdump(upstream_url, **kw)
    try:
        yield md
    finally:
        md.stop()


def openai_client(md: Mitmdump, test_tag: str, **kw: Any) -> Any:
    """The real ``openai.OpenAI`` SDK pointed through ``md`` (no key, no retries)."""
    import openai

    return openai.OpenAI(
        base_url=md.base_url("/v1"),
        api_key="sk-proxai-test-not-a-secret",
        http_client=md.sdk_http_client(),
        default_headers={TEST_HEADER: test_tag, **kw.pop("default_headers", {})},
        max_retries=0,
        **kw,
    )


def anthropic_client(md: Mitmdump, test_tag: str, **kw: Any) -> Any:
    """The real ``anthropic.Anthropic`` SDK pointed through ``md`` (no key, no retries)."""
    import anthropic

    return anthropic.Anthropic(
        base_url=md.base_url(),
        api_key="sk-ant-proxai-test-not-a-secret",
        http_client=md.sdk_http_client(),
        default_headers={TEST_HEADER: test_tag, **kw.pop("default_headers", {})},
        max_retries=0,
        **kw,
    )


def proxai_meta(flow: http.HTTPFlow) -> dict[str, Any]:
    meta = flow.metadata.get("proxai")
    assert isinstance(meta, dict), f"flow {flow.request.path} has no proxai metadata: {flow.metadata!r}"
    return meta
