"""``python -m proxai report FILE.flow [--json]`` on demo-like flows: exact (golden) output, totals,
and the diagnostics (open tool calls + recent tail) of unfinished-tool flows; ``proxai.report``
logs the same table inside mitmproxy."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from mitmproxy import http
from mitmproxy.test import taddons, tflow

from proxai.core.model import Protocol
from proxai.mitm.commands import Visibility
from proxai.mitm.flowrows import write_flows

from .flows import observed_meta, scenario_flow
from .scenario_bodies import scenario_body

GOLDEN = Path(__file__).parent / "golden" / "report"
REGEN = os.environ.get("PROXAI_REGEN_GOLDEN") == "1"

DEMO = [
    (Protocol.ANTHROPIC_MESSAGES, "text", True),
    (Protocol.ANTHROPIC_MESSAGES, "parallel_tools", True),
    (Protocol.ANTHROPIC_MESSAGES, "thinking", False),
    (Protocol.OPENAI_CHAT, "text", True),
    (Protocol.OPENAI_CHAT, "max_tokens", True),
    (Protocol.OPENAI_CHAT, "rate_limit", True),
    (Protocol.OPENAI_CHAT, "tool_stall", True),
    (Protocol.OPENAI_RESPONSES, "parallel_tools", True),
    (Protocol.OPENAI_RESPONSES, "error_midstream", True),
    (Protocol.OPENAI_RESPONSES, "prompt_too_long", False),
    (Protocol.OPENAI_RESPONSES, "tool_stall", True),
    (Protocol.OPENAI_CHAT, "cache_usage", False),
]


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if REGEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()


def demo_flows(tmp: Path) -> list[http.HTTPFlow]:
    flows = [scenario_flow(p, s, st) for p, s, st in DEMO]
    # The Chat tool stall has the diagnostics file the addon writes; the Responses one lost it
    # (the report then rebuilds the diagnostics from the stored body).
    diag = tmp / "diagnostics" / "unfinished-tool-chat.json"
    diag.parent.mkdir()
    diag.write_bytes(
        orjson.dumps(
            {
                "schema": 1,
                "kind": "proxai.unfinished_tool",
                "open_tool_calls": [
                    {
                        "id": "call_000102fakecall",
                        "name": "get_weather",
                        "kind": "function",
                        "started_at": 100.5,
                        "last_progress_at": 101.0,
                        "arguments_bytes": 30,
                    }
                ],
                "tail": 'data: {"choices":[{"delta":{"tool_calls":[{"index":1,"function":'
                '{"arguments":"cel"}}]}}]}\n\n: keepalive\n\n',
            }
        )
    )
    flows[6].metadata["proxai"]["diagnostics"] = str(diag)
    flows[10].metadata["proxai"]["diagnostics"] = str(tmp / "diagnostics" / "gone.json")
    # A translated flow: an Anthropic client served by a Chat upstream.
    t = scenario_flow(Protocol.OPENAI_CHAT, "text", True)
    t.metadata["proxai"] = observed_meta(
        Protocol.OPENAI_CHAT, scenario_body(Protocol.OPENAI_CHAT, "text", True)
    )
    t.metadata["proxai"]["client_protocol"] = "anthropic_messages"
    flows.append(t)
    # A flow saved without ProxAI: observed by the report from its body.
    flows.append(scenario_flow(Protocol.ANTHROPIC_MESSAGES, "truncated", True, with_meta=False))
    # Not an LLM flow: skipped.
    flows.append(tflow.tflow(resp=True))
    return flows


def run_report(path: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "proxai", "report", str(path), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def demo_file(tmp_path: Path) -> Path:
    path = tmp_path / "demo.flow"
    write_flows(str(path), demo_flows(tmp_path))
    return path


def test_report_table(demo_file: Path) -> None:
    out = run_report(demo_file).replace(str(demo_file.parent), "<tmp>")
    golden("demo.txt", out)


def test_report_json(demo_file: Path) -> None:
    doc = orjson.loads(run_report(demo_file, "--json"))
    for row in doc["flows"]:
        assert len(row.pop("flow_id")) == 36  # uuid
        if row["diagnostics"] is not None:
            row["diagnostics"]["source"] = row["diagnostics"]["source"].replace(
                str(demo_file.parent), "<tmp>"
            )
    golden("demo.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    assert doc["totals"]["flows"] == 14
    assert doc["totals"]["outcomes"] == {"completed": 8, "closed": 1, "error": 3, "unfinished_tool": 2}


def test_report_unreadable_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.flow"
    bad.write_bytes(b"this is not a flow file")
    proc = subprocess.run(
        [sys.executable, "-m", "proxai", "report", str(bad)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"proxai report: cannot read {bad}: ")


def test_report_command_logs_the_table(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    vis = Visibility()
    flows = demo_flows(tmp_path)
    with taddons.context(vis) as tctx:
        for f in flows:
            vis.after_response(f)  # mitmdump has no view: the addon remembers the LLM flows it saw
        with caplog.at_level(logging.INFO):
            returned = tctx.master.commands.call("proxai.report")
    (record,) = [r for r in caplog.records if r.getMessage().startswith("proxai.report:")]
    assert record.levelno == logging.INFO  # the level every UI's event log shows (mitmweb: not ALERT)
    text = record.getMessage()
    assert text == "proxai.report:\n" + returned  # returned too: mitmweb's command bar shows it
    lines = text.splitlines()
    assert lines[0] == "proxai.report:"
    expected = (GOLDEN / "demo.txt").read_text().replace("<tmp>", str(tmp_path)).splitlines()
    # 13 LLM flows were seen live (the one without metadata was not recorded by the addon).
    assert lines[1:3] == expected[:2]
    assert lines[-1] != ""
    assert any(line.startswith("total: 13 flows") for line in lines)


def test_report_command_uses_the_view(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """In mitmproxy / mitmweb the table covers the flows in view (here: filtered to errors)."""
    from mitmproxy.addons.view import View

    view, vis = View(), Visibility()
    flows = demo_flows(tmp_path)
    with taddons.context(view, vis) as tctx:
        view.add(flows)
        tctx.configure(view, view_filter="~s & ~c 429")
        assert len(view) == 1
        with caplog.at_level(logging.INFO):
            returned = tctx.master.commands.call("proxai.report")
    (msg,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("proxai.report:")]
    lines = msg.splitlines()
    assert lines[1:] == returned.splitlines()
    assert lines[3].split() == [
        "1",
        "chat",
        "-",
        "429",
        "error",
        "(rate_limited)",
        "-",
        "-",
        "-",
        "-",  # no usage, so no cost
        "-",
        "-",
        "1.50s",
    ]
    assert lines[4] == (
        "total: 1 flow (1 error) · tokens 0 in / 0 out · 0 tool calls · cost - (1 flow without a price)"
    )
