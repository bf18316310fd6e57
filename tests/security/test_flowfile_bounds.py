"""``python -m proxai report`` on a flow file someone sent: the diagnostics paths its metadata names
are opened only inside the flow file's own folder, only as regular files, and bounded in size.
``/dev/zero`` does not exhaust memory, a FIFO does not hang the report, a file outside the folder
(or a symbolic link out of it) is not read; the report rebuilds the diagnostics from the body."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from mitmproxy import io
from mitmproxy.test import tflow, tutils

from proxai.mitm.flowrows import MAX_DIAGNOSTICS_FILE, read_contained

SECRET_TAIL = "OUTSIDE-FILE-CONTENT-PLANTED"


def _diag(tail: str) -> bytes:
    return orjson.dumps({"open_tool_calls": [{"id": "call_1", "name": "t"}], "tail": tail})


def _flow_file(folder: Path, diagnostics: str) -> Path:
    req = tutils.treq(method=b"POST", path=b"/v1/chat/completions", content=b"{}")
    resp = tutils.tresp(content=b'data: {"choices":[]}\n\n')
    resp.headers["content-type"] = "text/event-stream"
    f = tflow.tflow(req=req, resp=resp)
    f.metadata["proxai"] = {
        "schema": 1,
        "protocol": "openai_chat",
        "outcome": "unfinished_tool",
        "tool_calls": [{"id": "call_1", "name": "t", "arguments_complete": False}],
        "diagnostics": diagnostics,
    }
    path = folder / "sent.flow"
    with open(path, "wb") as fh:
        io.FlowWriter(fh).add(f)  # type: ignore[no-untyped-call]
    return path


def _report(path: Path) -> str:
    # the timeout only stops a hung report (the bug this test is about); it asserts nothing itself
    proc = subprocess.run(
        [sys.executable, "-m", "proxai", "report", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    p = tmp_path / "outside" / "secret.json"
    p.parent.mkdir()
    p.write_bytes(_diag(SECRET_TAIL))
    return p


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    d = tmp_path / "bundle"
    d.mkdir()
    return d


def test_diagnostics_inside_the_bundle_are_read(bundle: Path) -> None:
    (bundle / "diagnostics").mkdir()
    (bundle / "diagnostics" / "d.json").write_bytes(_diag("INSIDE-TAIL"))
    out = _report(_flow_file(bundle, str(bundle / "diagnostics" / "d.json")))
    assert "diagnostics from file" in out and "INSIDE-TAIL" in out


@pytest.mark.parametrize("kind", ["absolute", "relative", "symlink"])
def test_a_file_outside_the_bundle_is_not_read(bundle: Path, outside: Path, kind: str) -> None:
    if kind == "absolute":
        target = str(outside)
    elif kind == "relative":
        target = os.path.relpath(outside)
    else:
        (bundle / "link.json").symlink_to(outside)
        target = str(bundle / "link.json")
    out = _report(_flow_file(bundle, target))
    assert SECRET_TAIL not in out and "diagnostics from body" in out


def test_dev_zero_is_not_read(bundle: Path) -> None:
    (bundle / "zero.json").symlink_to("/dev/zero")
    for target in ("/dev/zero", str(bundle / "zero.json")):
        assert "diagnostics from body" in _report(_flow_file(bundle, target))


def test_a_fifo_does_not_hang(bundle: Path) -> None:
    fifo = bundle / "fifo.json"
    os.mkfifo(fifo)
    assert "diagnostics from body" in _report(_flow_file(bundle, str(fifo)))


def test_read_is_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_DIAGNOSTICS_FILE + 1)
    assert read_contained(str(big), str(tmp_path), MAX_DIAGNOSTICS_FILE) is None
    small = tmp_path / "small.json"
    small.write_bytes(b"{}")
    assert read_contained(str(small), str(tmp_path), MAX_DIAGNOSTICS_FILE) == b"{}"
    assert read_contained(str(small), str(tmp_path / "elsewhere"), MAX_DIAGNOSTICS_FILE) is None
    assert read_contained(str(tmp_path), str(tmp_path), MAX_DIAGNOSTICS_FILE) is None  # a folder
