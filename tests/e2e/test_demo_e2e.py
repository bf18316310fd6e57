"""``python -m proxai demo`` (the README's first command) runs whole and prints the right table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from proxai.mitm.flowfile import read_saved_flows

pytestmark = pytest.mark.e2e


def test_demo_runs_and_reports_every_flow(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "proxai", "demo", "--flows-dir", str(tmp_path), "--time-scale", "0.02"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    rows = {}
    for line in out.stdout.splitlines():
        cells = line.split()
        if cells and cells[0] in ("anthropic_messages", "openai_chat", "openai_responses"):
            name = cells[1] + (" (json)" if cells[2] == "(json)" else "")
            rows[(cells[0], name)] = line
    assert len(rows) == 33
    for proto in ("anthropic_messages", "openai_chat", "openai_responses"):
        assert " completed " in rows[(proto, "text")]
        assert " completed " in rows[(proto, "text (json)")]
        assert "2 (2 valid)" in rows[(proto, "parallel_tools")]
        assert (
            "error (rate_limited)" in rows[(proto, "rate_limit")]
            and "RateLimitError" in rows[(proto, "rate_limit")]
        )
        assert "error (prompt_too_long)" in rows[(proto, "prompt_too_long")]
        assert " closed " in rows[(proto, "truncated")]
        assert " completed " in rows[(proto, "gzip")]
    saved = read_saved_flows(str(tmp_path / "demo.flow"))
    assert len(saved) == 33 and all(f.proxai is not None for f in saved)
    assert all(f.marked == "" for f in saved if f.proxai and f.proxai["outcome"] == "completed")
    assert all(f.marked for f in saved if f.proxai and f.proxai["outcome"] != "completed")
