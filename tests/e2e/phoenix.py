"""Arize Phoenix as a real OTLP/HTTP receiver: started as a local process on loopback, its spans
read back through its REST API (``GET /v1/projects/{project}/spans``).

Phoenix lives in its own virtual environment, made by ``.ci/install-phoenix``
(``.ci/phoenix/venv``; ``PROXAI_PHOENIX`` may name another ``phoenix`` executable). Without it the
tests that need it fail with the command to run (never a skip: ``bash .ci/run`` installs it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench.procs import free_port, stop_process

from .harness import REPO

PHOENIX = Path(os.environ.get("PROXAI_PHOENIX") or REPO / ".ci" / "phoenix" / "venv" / "bin" / "phoenix")
START_TIMEOUT_S = 300.0  # its first start creates the database (about 30 s alone, more on a busy machine)


@dataclass
class Phoenix:
    port: int
    proc: subprocess.Popen[bytes]
    workdir: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def spans(self, project: str) -> list[dict[str, Any]]:
        """Every span of a project (404 -> none yet: the project appears with its first span)."""
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        with httpx.Client(trust_env=False, timeout=30.0) as client:
            while True:
                params: dict[str, Any] = {"limit": 1000}
                if cursor:
                    params["cursor"] = cursor
                r = client.get(f"{self.url}/v1/projects/{project}/spans", params=params)
                if r.status_code == 404:
                    return out
                r.raise_for_status()
                doc = r.json()
                out.extend(doc["data"])
                cursor = doc.get("next_cursor")
                if not cursor:
                    return out

    def wait_spans(self, project: str, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        found: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            found = self.spans(project)
            if len(found) >= count:
                return found
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(
            f"Phoenix holds {len(found)} spans in {project!r}, expected {count}\n{self.log()}"
        )

    def log(self) -> str:
        try:
            return (self.workdir / "phoenix.log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""


def require_phoenix() -> None:
    if PHOENIX.exists():
        return
    pytest.fail(
        f"Arize Phoenix is not installed at {PHOENIX}: run `bash .ci/install-phoenix` (or set PROXAI_PHOENIX)"
    )


@contextlib.contextmanager
def running_phoenix() -> Iterator[Phoenix]:
    require_phoenix()
    workdir = Path(tempfile.mkdtemp(prefix="proxai-phoenix-"))
    port, grpc_port = free_port(), free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))},
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = open(workdir / "phoenix.log", "wb")  # noqa: SIM115 - the process owns it
    proc = subprocess.Popen(
        [str(PHOENIX), "serve"], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=workdir
    )
    log.close()
    phx = Phoenix(port=port, proc=proc, workdir=workdir)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        with httpx.Client(trust_env=False, timeout=5.0) as client:
            while True:
                if proc.poll() is not None:
                    raise AssertionError(f"Phoenix exited with {proc.returncode}\n{phx.log()}")
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"{phx.url}/healthz").status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise AssertionError(f"Phoenix did not answer within {START_TIMEOUT_S}s\n{phx.log()}")
                time.sleep(0.5)
        yield phx
    finally:
        stop_process(proc)
        shutil.rmtree(workdir, ignore_errors=True)
