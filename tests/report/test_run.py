"""The run model (``proxai.outputs.run``): turns and the conversation's diff for each wire protocol, and a
hostile flow file through the report CLI (escaped in HTML, formula-safe and terminal-safe in CSV,
secrets redacted, garbage metadata tolerated)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import io as mio
from mitmproxy.test import tflow

from proxai.cli import report
from proxai.outputs.run import FlowInput, build_run, messages_of

R = "openai_responses"


def _inp(index: int, protocol: str, request: Any, **kw: Any) -> FlowInput:
    meta = {"schema": 1, "protocol": protocol, "outcome": "completed", "model": "gpt-5", **kw.pop("meta", {})}
    return FlowInput(
        index=index,
        flow_id=f"f{index}",
        method="POST",
        url="https://api.openai.com/v1/responses",
        status=200,
        start=1000.0 + index,
        meta=meta,
        request=request,
        **kw,
    )


USER = {"role": "user", "content": [{"type": "input_text", "text": "list /tmp"}]}
CALL = {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": '{"cmd":"ls /tmp"}'}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}
REASONING = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "run ls first"}]}


def test_responses_items_become_messages() -> None:
    system, msgs = messages_of(R, {"instructions": "be brief", "input": [USER, REASONING, CALL, OUTPUT]})
    assert system == [{"type": "text", "text": "be brief"}]
    assert msgs == [
        {"role": "user", "parts": [{"type": "text", "text": "list /tmp"}]},
        {"role": "assistant", "parts": [{"type": "reasoning", "text": "run ls first"}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "shell", "arguments": '{"cmd":"ls /tmp"}'}],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_result", "id": "c1", "content": "a.txt", "is_error": False}],
        },
    ]
    assert messages_of(R, {"input": "hi"})[1] == [{"role": "user", "parts": [{"type": "text", "text": "hi"}]}]


def test_the_diff_follows_the_conversation_each_request_extends() -> None:
    edited = {"role": "user", "content": [{"type": "input_text", "text": "list /srv"}]}
    run = build_run(
        [
            _inp(1, R, {"input": [USER]}),
            _inp(2, R, {"input": [USER, REASONING, CALL, OUTPUT]}),
            _inp(3, R, {"input": [edited]}),  # another conversation
            _inp(4, R, {"input": [USER, CALL]}),  # a branch of turn 2's: shares 1 message
            _inp(5, R, {"input": [edited]}),  # sent again
        ]
    )
    got = [(t.continues, t.repeat, t.new_from, len(t.new_messages)) for t in run.turns]
    assert got == [
        (None, False, 0, 1),
        (1, False, 1, 3),
        (None, False, 0, 1),
        (1, False, 1, 1),
        (3, True, 0, 1),
    ]


def test_totals_add_up_priced_and_unpriced_flows() -> None:
    priced = {"amount": 0.25, "currency": "USD"}
    run = build_run(
        [
            _inp(
                1, R, {"input": "a"}, meta={"usage": {"input_tokens": 10, "output_tokens": 2}, "cost": priced}
            ),
            _inp(2, R, {"input": "b"}, meta={"usage": {"input_tokens": "ten"}, "cost": {"amount": "NaN"}}),
        ]
    )
    tot = run.totals()
    assert tot["input_tokens"] == 10 and tot["output_tokens"] == 2
    assert tot["cost"] == {"amount": 0.25, "currency": "USD", "priced_flows": 1, "unpriced_flows": 1}
    assert tot["duration_s"] == 1.0


HOSTILE_MODEL = '<svg onload="alert(1)">=HYPERLINK("http://x")\x1b]0;pwned\x07'
FORMULA = "=cmd|' /C calc'!A0"  # a spreadsheet would run it
KEY = "sk-proj-" + "A1b2C3d4" * 6


def _hostile_flow_file(tmp_path: Path) -> Path:
    f = tflow.tflow(resp=True)
    f.request.host = "api.openai.com"
    f.request.path = "/v1/chat/completions"
    f.request.headers["authorization"] = f"Bearer {KEY}"
    f.request.content = orjson.dumps(
        {
            "model": HOSTILE_MODEL,
            "messages": [{"role": "user", "content": f"</pre><script>alert(1)</script> my key {KEY}"}],
        }
    )
    f.response.content = b'{"not": "a chat completion"}'
    f.metadata["proxai"] = {
        "schema": 1,
        "protocol": "openai_chat",
        "outcome": "error",
        "model": HOSTILE_MODEL,
        "usage": "lots",
        "tool_calls": [7, {"name": "<img src=x onerror=alert(2)>", "arguments_complete": False}],
        "error": {"kind": FORMULA, "message": f"echo {KEY} <b>boom</b>"},
        "extra": {"notes": 5, "guard": {"kind": "<i>stall</i>", "message": "x"}},
        "cost": {"amount": "free"},
        "timing": {"first_token_s": "soon", "total_s": 0.5},
    }
    path = tmp_path / "hostile.flow"
    with path.open("wb") as fh:
        mio.FlowWriter(fh).add(f)
    return path


def test_a_hostile_flow_file_is_escaped_and_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _hostile_flow_file(tmp_path)
    out = tmp_path / "r.html"
    assert report.main([str(path), "--html", str(out)]) == 0
    html = out.read_text()
    assert KEY not in html and "[REDACTED]" in html
    for raw in ("<svg", "<script>alert", "<img src=x", "<b>boom", "<i>stall", "</pre><script>"):
        assert raw not in html
    assert "&lt;svg onload=&quot;alert(1)&quot;&gt;" in html
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt; my key [REDACTED]" in html
    capsys.readouterr()

    assert report.main([str(path), "--csv"]) == 0
    text = capsys.readouterr().out
    assert "\x1b" not in text and "\x07" not in text and KEY not in text
    (row,) = list(csv.DictReader(io.StringIO(text)))
    assert row["model"].startswith("<svg") and "\\x1b]0;pwned\\x07" in row["model"]
    assert row["error_kind"] == "'" + FORMULA  # a text cell, not a formula
    assert row["cost"] == "" and row["input_tokens"] == ""

    assert report.main([str(path), "--turns"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    (turn,) = doc["turns"]
    assert turn["error"]["message"] == "echo [REDACTED] <b>boom</b>"
    assert turn["notes"] == [] and turn["cost"] is None and turn["timing"]["first_token_s"] is None
