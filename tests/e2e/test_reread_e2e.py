"""Saved flows opened again with the addon loaded (``mitmdump -r FILE -s addon/proxai.py``).

mitmproxy runs the hooks again for flows read from a file. A flow recorded live keeps its
metadata: re-observing its stored body (empty for a streamed flow) must not overwrite how the
stream really ended.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import io

from .harness import ADDON_SCRIPT, MITMDUMP, REPO, Mitmdump, anthropic_client, proxai_meta, tag

pytestmark = pytest.mark.e2e


def test_reading_saved_flows_keeps_their_metadata(mitm_reverse: Mitmdump, tmp_path: Path) -> None:
    t = tag()
    messages: Any = [{"role": "user", "content": "weather?"}]
    client = anthropic_client(mitm_reverse, t)
    with client.messages.stream(model="parallel_tools", max_tokens=256, messages=messages) as s:
        final = s.get_final_message()
    live = mitm_reverse.wait_flow(t)
    before = proxai_meta(live)
    assert before["outcome"] == "completed" and before["stop_reason"] == final.stop_reason == "tool_use"
    assert [c["name"] for c in before["tool_calls"]] == [
        b.name for b in final.content if b.type == "tool_use"
    ]

    saved = tmp_path / "in.flow"
    with saved.open("wb") as fh:
        io.FlowWriter(fh).add(live)
    out = tmp_path / "out.flow"
    proc = subprocess.run(
        [
            str(MITMDUMP),
            "-n",
            "-r",
            str(saved),
            "-s",
            str(ADDON_SCRIPT),
            "-w",
            str(out),
            "--set",
            "flow_detail=0",
            "--set",
            f"proxai_diagnostics_dir={tmp_path / 'diag'}",
        ],
        cwd=str(REPO),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert b"Traceback" not in proc.stdout + proc.stderr
    with out.open("rb") as fh:
        flows = list(io.FlowReader(fh).stream())
    assert len(flows) == 1
    after = flows[0].metadata["proxai"]
    assert after == before
    assert flows[0].comment == live.comment
