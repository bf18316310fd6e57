"""Process helpers for the end-to-end benchmarks: start mitmdump (plain or with the addon) and the
bench upstream, and read a process's CPU time and memory from /proc (no psutil).

The stream carrier measured end to end inside a
real mitmdump.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MITMDUMP = Path(sys.executable).parent / "mitmdump"
ADDON = REPO / "addon" / "proxai.py"
_TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """Terminate ``proc`` if it still runs; kill it when it does not exit within ``timeout``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid`` (user + system, all its threads), from the scheduler's own count.

    ``/proc/PID/schedstat`` gives the nanoseconds each thread ran, measured by the scheduler's
    clock at every switch. The ``utime`` / ``stime`` of ``/proc/PID/stat`` are not that on a
    kernel with tick-based accounting (``CONFIG_TICK_CPU_ACCOUNTING``, as on the project VM, at
    250 Hz): each tick charges a whole tick to whatever runs at that instant, so a process that
    runs in bursts of tens of microseconds gets a sampled figure, about +-7% over a second of CPU.
    The ``stat`` figure is the fallback where ``schedstat`` is missing. Threads that end between
    two readings are not counted (mitmdump's threads live as long as it does)."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            total += int((task / "schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    return total / 1e9


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def reset_peak_rss(pid: int) -> bool:
    """Reset VmHWM of ``pid`` (Linux ``clear_refs`` 5); False when not permitted."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@dataclass
class Proc:
    proc: subprocess.Popen[bytes]
    port: int
    workdir: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        try:
            return (self.workdir / "log.txt").read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        stop_process(self.proc)


def _wait_listening(p: Proc, timeout: float = 30.0) -> Proc:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if p.proc.poll() is not None:
            raise RuntimeError(f"process exited with {p.proc.returncode}:\n{p.log()[-3000:]}")
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", p.port)) == 0:
                return p
        time.sleep(0.05)
    p.stop()
    raise RuntimeError(f"not listening on {p.port} after {timeout}s:\n{p.log()[-3000:]}")


def _spawn(args: list[str], port: int, cpus: set[int] | None = None, timeout: float = 30.0) -> Proc:
    """Start ``args``; ``cpus``: the CPUs it may run on (``sched_setaffinity``), None: any;
    ``timeout``: how long it may take to listen."""
    workdir = Path(tempfile.mkdtemp(prefix="proxai-bench-"))
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}

    with open(workdir / "log.txt", "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO), env=env)
    if cpus:  # at once, before the interpreter starts its threads (they inherit it)
        os.sched_setaffinity(proc.pid, cpus)
    return _wait_listening(Proc(proc, port, workdir), timeout)


def cpu_layout() -> tuple[set[int], set[int]] | None:
    """(the CPU for mitmdump, the CPUs for everything else), or None with fewer than two CPUs."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    return {cpus[-1]}, set(cpus[:-1])


def start_upstream(cpus: set[int] | None = None) -> Proc:
    port = free_port()
    return _spawn([sys.executable, "-m", "bench.upstream", str(port)], port, cpus)


def start_mitmdump(
    upstream_url: str,
    *,
    addon: bool,
    extra: list[str] | None = None,
    cpus: set[int] | None = None,
    wrapper: list[str] | None = None,
) -> Proc:
    """mitmdump in reverse mode. Plain mitmdump streams every body (``stream_large_bodies=1``)
    so both variants stream; the addon streams SSE through its own carrier. ``cpus``: pin it.
    ``wrapper``: a command that runs the interpreter (valgrind), given minutes to start it."""
    port = free_port()
    conf = Path(tempfile.mkdtemp(prefix="proxai-bench-conf-"))
    args = [
        *([*wrapper, sys.executable] if wrapper else []),
        str(MITMDUMP),
        "--listen-host", "127.0.0.1", "--listen-port", str(port),
        "--mode", f"reverse:{upstream_url}",
        "--set", f"confdir={conf}",
        "--set", "connection_strategy=lazy",
        "--set", "termlog_verbosity=warn",
        "--set", "flow_detail=0",
    ]  # fmt: skip
    if addon:
        args += ["-s", str(ADDON), "--set", f"proxai_diagnostics_dir={conf / 'diagnostics'}"]
    else:
        args += ["--set", "stream_large_bodies=1"]
    args += extra or []
    return _spawn(args, port, cpus, timeout=600.0 if wrapper else 120.0)
