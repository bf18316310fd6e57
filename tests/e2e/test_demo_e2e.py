"""``python -m proxai demo`` (the README's first command) runs whole and prints the right table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from proxai.mitm.flowfile import read_saved_flows
from proxai.outputs.verdict import Verdict, verdict

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
        assert " truncated " in rows[(proto, "max_tokens")]  # never shown as a success
    saved = read_saved_flows(str(tmp_path / "demo.flow"))
    assert len(saved) == 33 and all(f.proxai is not None for f in saved)
    done = [f for f in saved if f.proxai and verdict(f.proxai) is Verdict.COMPLETED]
    assert len(done) == 3 * 6 and all(f.marked == "" for f in done)
    assert all(f.marked for f in saved if f not in done)
    cut = [f for f in saved if f.proxai and verdict(f.proxai) is Verdict.TRUNCATED]
    assert [(f.proxai and f.proxai["stop_reason"], f.marked) for f in cut] == [
        ("max_tokens", ":scissors:"),
        ("length", ":scissors:"),
        ("max_output_tokens", ":scissors:"),
    ]
    # Every streamed body is kept (proxai_keep_body), so `mitmproxy -r demo.flow` shows the answers.
    streamed = [f for f in saved if f.proxai and f.proxai["streaming"] and f.proxai.get("text_bytes")]
    assert streamed and all(f.response_bytes for f in streamed)
    # mitmdump's log: one line per flow, and a clean shutdown (no tracebacks).
    log = (tmp_path / "demo-mitmdump.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    # the line names the SDK reaction too: openai-python's final Chat completion refuses length
    sdk = "SDK: openai-python raises LengthFinishReasonError (openai_chat.finish_length)"
    assert log.count(f"proxai chat max_tokens · TRUNCATED (length) · {sdk} · 25 in/8 out · ttft ") == 1
    assert sum(1 for line in log.splitlines() if line.lstrip().startswith("proxai ")) == 33
