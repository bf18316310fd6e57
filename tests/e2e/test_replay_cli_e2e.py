"""``python -m proxai replay RUN.flow``: a real mitmdump in reverse mode answers from the recording,
the CLI prints what each client needs, and Ctrl-C stops it cleanly; bad files are one line and
exit 2, never a traceback (docs/replay.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import pytest
from bench.procs import free_port, stop_process
from mitmproxy.test import tflow

from proxai.mitm.flowrows import read_flows, write_flows
from proxai.upstream import FakeUpstream

from .harness import REPO, anthropic_client, proxai_meta, running_mitmdump, tag

pytestmark = pytest.mark.e2e

ASK: Any = [{"role": "user", "content": "What's the weather in Paris and Tokyo?"}]
ENV = {**os.environ, "PYTHONPATH": str(REPO / "addon")}


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "proxai", "replay", *args],
        capture_output=True,
        timeout=60,
        cwd=cwd,
        env=ENV,
        check=False,
    )


@pytest.mark.parametrize("kind", ["text", "truncated", "har", "empty", "missing"])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "run.flow"
    if kind == "text":
        path.write_text("GET / HTTP/1.1\r\n\r\n")
    elif kind == "har":
        path.write_text('{"log": {"version": "1.2", "entries": 3}}')
    elif kind == "truncated":
        f = tflow.tflow(resp=True)
        f.request.path = "/v1/messages"
        write_flows(str(path), [f, f.copy()])
        path.write_bytes(path.read_bytes()[:-25])
    elif kind == "empty":
        path.write_bytes(b"")
    expected = {
        "text": f"cannot read {path}: not a mitmproxy flow file (Invalid data format.)",
        "truncated": f"cannot read {path}: cut short or damaged after 1 flow (Invalid data format.)",
        "har": f"cannot read {path}: not a mitmproxy flow file (Unable to read HAR file. Please provide a "
        "valid HAR file)",
        "empty": f"{path}: holds no LLM flow (a run saved with mitmdump -w)",
        "missing": f"cannot read {path}: [Errno 2] No such file or directory: '{path}'",
    }[kind]
    done = cli(str(path), cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr.decode()) == (2, b"", f"proxai replay: {expected}\n")


def test_replay_cli_answers_prints_the_environment_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    with FakeUpstream(time_scale=0.02) as up:
        t = tag()
        with running_mitmdump(up.url, workdir=tmp_path / "record") as md:
            recorded = anthropic_client(md, t).messages.create(model="text", max_tokens=64, messages=ASK)
            md.wait_flows(t, 1)
        flows = md.flow_path
    port = free_port()
    out = tmp_path / "replayed.flow"
    proc = subprocess.Popen(
        [sys.executable, "-m", "proxai", "replay", str(flows), "--port", str(port), "--save", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=ENV,
    )
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        while not lines or not lines[-1].endswith('wire_api = "responses"\n'):
            line = proc.stdout.readline().decode()
            assert line, (lines, proc.poll())
            if not line.startswith("["):  # mitmdump's own log lines
                lines.append(line)
        url = f"http://127.0.0.1:{port}"
        assert lines[0] == (
            f"proxai replay: 1 recorded answers from {flows}, at {url} (speed 1, a miss: error); "
            "Ctrl-C stops\n"
        )
        assert f"  export ANTHROPIC_BASE_URL={url}\n" in lines
        assert f"  export OPENAI_BASE_URL={url}/v1\n" in lines
        assert f'  base_url = "{url}/v1"\n' in lines
        client = anthropic.Anthropic(base_url=url, api_key="replay", max_retries=0)
        again = client.messages.create(model="text", max_tokens=64, messages=ASK)
        assert again.model_dump() == recorded.model_dump()
        # the run is over (a connection still open at mitmdump's exit gets an asyncio traceback
        # from mitmproxy's own connection handler on this CPython)
        client.close()
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert b"Traceback" not in err, err.decode()
    finally:
        stop_process(proc)
    [f] = read_flows(str(out))
    assert proxai_meta(f)["replay"]["replayed"] is True  # type: ignore[arg-type]
