"""No escape sequence from the network or from a flow file reaches a terminal raw.

Escape sequences (clipboard write, window title, screen clear, 8-bit CSI, text-direction overrides)
are planted in every string a flow can carry into an output: model, error message, tool names, stop
reason, URL, comment, diagnostics tail, streamed text. Every terminal path prints them escaped: the
``report`` CLI (table and JSON), the ``diff`` CLI (text and JSON), the ``proxai.report`` command, the
contentview, the ``export`` CLI, log lines (``log_safe``) and the routes-file errors. Hypothesis
varies the planted text; a fixed set of real attack sequences is always included."""

from __future__ import annotations

import io
import json
import logging
import unicodedata
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mitmproxy import http
from mitmproxy.addons.dumper import Dumper
from mitmproxy.contentviews import Metadata
from mitmproxy.test import taddons, tflow, tutils

from proxai.cli import diff, export, report
from proxai.mitm.addon import ProxAI
from proxai.mitm.contentview import view
from proxai.mitm.dumpline import DumpLine
from proxai.mitm.flowrows import write_flows
from proxai.outputs import verdict
from proxai.safety.termsafe import escape, log_safe

ATTACKS = [
    "\x1b]52;c;UExBTlRFRGNsaXBib2FyZA==\x07",  # OSC 52: write the clipboard
    "\x1b]0;owned\x07",  # window title
    "\x1b[2J\x1b[H",  # clear the screen, cursor home
    "\x9b2J",  # 8-bit CSI
    "\x1bP+q544e\x1b\\",  # DCS request
    "evil\u202etxt.exe",  # right-to-left override
    "a\rb",  # carriage return overwrites the line
    "\x08\x08\x7f",  # backspaces, DEL
    "line\u2028sep",
]
ONE_LINE = {
    "log line",
    "mitmdump line",
    "flow comment",
    "flow comment (set by the addon)",
    "carrier log line",
    "mitmdump line (printed by DumpLine)",
}
_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def unsafe(text: str, newlines: bool = True) -> list[str]:
    """The characters a terminal would act on (the oracle, written independently of termsafe)."""
    out = []
    for c in text:
        if newlines and c in "\n\t":  # multi-line output keeps line breaks and tabs
            continue
        if unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in _BIDI:
            out.append(c)
    return out


def _flow(evil: str, tmp: Path) -> http.HTTPFlow:
    deltas = b"".join(
        b"data: " + orjson.dumps({"choices": [{"index": 0, "delta": {"content": part}}]}) + b"\n\n"
        for part in ("Hi ", evil, "!")
    )
    req = tutils.treq(
        method=b"POST",
        path=b"/v1/chat/completions?q=" + evil.encode("utf-8", "surrogatepass").hex().encode(),
        content=orjson.dumps({"model": evil, "messages": [{"role": "user", "content": evil}]}),
    )
    req.headers["content-type"] = "application/json"
    resp = tutils.tresp(content=deltas)
    resp.headers["content-type"] = "text/event-stream"
    resp.reason = "OK"
    f = tflow.tflow(req=req, resp=resp)
    diag = tmp / "diagnostics" / "d.json"
    diag.parent.mkdir(exist_ok=True)
    diag.write_bytes(
        orjson.dumps({"open_tool_calls": [{"id": evil, "name": evil}], "tail": f"data: {evil}\n"})
    )
    f.metadata["proxai"] = {
        "schema": 1,
        "protocol": "openai_chat",
        "outcome": "unfinished_tool",
        "model": evil,
        "stop_reason": evil,
        "error": {"kind": "connection", "message": evil},
        "tool_calls": [{"id": evil, "name": evil, "arguments_complete": False}],
        "diagnostics": str(diag),
    }
    f.comment = evil
    return f


def _all_outputs(evil: str, tmp: Path, capsys: Any, caplog: Any, *, command: bool = True) -> dict[str, str]:
    flows = [_flow(evil, tmp)]
    path = tmp / "evil.flow"
    write_flows(str(path), flows)
    out: dict[str, str] = {}
    capsys.readouterr()
    assert report.main([str(path)]) == 0
    out["report"] = capsys.readouterr().out
    assert report.main([str(path), "--json"]) == 0
    out["report --json"] = capsys.readouterr().out
    json.loads(out["report --json"])  # still valid JSON
    other = tmp / "other.flow"  # another run, so that every fact of the diff differs and is printed
    write_flows(str(other), [_flow(evil + "?", tmp)])
    assert diff.main([str(path), str(other)]) == 0
    captured = capsys.readouterr()
    out["diff"] = captured.out + captured.err
    assert "DIVERGED (tool calls differ)" in out["diff"]  # the tool names differ: printed, escaped
    assert diff.main([str(path), str(other), "--json"]) == 0
    out["diff --json"] = capsys.readouterr().out
    json.loads(out["diff --json"])
    assert export.main([str(path), str(tmp / "exported.flow")]) == 0
    captured = capsys.readouterr()
    out["export"] = captured.out + captured.err
    caplog.clear()
    if command:  # one mitmproxy master per call (not per hypothesis example: its log handler stays)
        a = ProxAI()  # the addon, with its child Visibility (the proxai.report command)
        out_file = io.StringIO()
        dumper = Dumper(outfile=out_file)
        dump_line = DumpLine()
        with taddons.context(a, dumper, dump_line) as tctx:
            tctx.configure(a, proxai_diagnostics_dir=str(tmp / "live-diag"))
            tctx.configure(dumper, flow_detail=1)
            a.visibility.after_response(flows[0])
            with caplog.at_level(logging.INFO):
                tctx.master.commands.call("proxai.report")
            out["proxai.report"] = "\n".join(r.getMessage() for r in caplog.records)
            assert "proxai.report:" in out["proxai.report"]
            live, logged = _live_flow(a, evil, caplog)
            out["flow comment (set by the addon)"] = live.comment
            out["carrier log line"] = logged
            dump_line.dumper = dumper
            dump_line.response(live)  # what mitmdump prints for it, through its own Dumper
        printed = out_file.getvalue()
        assert printed.strip().startswith("proxai chat")
        out["mitmdump line (printed by DumpLine)"] = printed.rstrip("\n")
    f = flows[0]
    assert f.response is not None
    out["contentview response"] = view.prettify(
        f.response.content or b"", Metadata(flow=f, http_message=f.response, content_type="text/event-stream")
    )
    out["contentview request"] = view.prettify(
        f.request.content or b"", Metadata(flow=f, http_message=f.request, content_type="application/json")
    )
    out["log line"] = log_safe(f"stall in tool {evil}")
    out["mitmdump line"] = verdict.dump_line(f.metadata["proxai"])
    out["flow comment"] = verdict.comment_line(f.metadata["proxai"])
    return out


def _live_flow(a: ProxAI, evil: str, caplog: Any) -> tuple[http.HTTPFlow, str]:
    """A live streamed flow through the addon whose upstream names the model ``evil`` and whose
    guard hook fails with ``evil`` in its exception: the comment the addon sets, and the log."""
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    req = tutils.treq(method=b"POST", path=b"/v1/chat/completions", content=orjson.dumps(body))
    f = tflow.tflow(req=req)
    f.response = None
    a.request(f)
    f.response = tutils.tresp(headers=http.Headers(content_type="text/event-stream"), content=None)
    a.responseheaders(f)
    assert f.response is not None and callable(f.response.stream)

    def failing_hook(*_: Any) -> None:
        raise RuntimeError(f"hook failed on {evil}")

    carrier = a.flows[f].carrier
    assert carrier is not None
    carrier.on_chunk.insert(0, failing_hook)
    chunk = {"model": evil, "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]}
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        f.response.stream(b"data: " + orjson.dumps(chunk) + b"\n\ndata: [DONE]\n\n")
        f.response.stream(b"")
        a.response(f)
    logged = " | ".join(r.getMessage() for r in caplog.records if r.name.startswith("proxai"))
    assert "hook failed on" in logged
    return f, logged


@pytest.mark.parametrize("evil", ATTACKS)
def test_attack_sequences_are_escaped_everywhere(
    evil: str, tmp_path: Path, capsys: Any, caplog: pytest.LogCaptureFixture
) -> None:
    outputs = _all_outputs(evil, tmp_path, capsys, caplog)
    for name, text in outputs.items():
        assert unsafe(text, newlines=name not in ONE_LINE) == [], f"{name}: {text!r}"
    # the planted text is still visible, escaped: a reader sees what was sent
    assert escape(evil, newlines=False) in outputs["report"] or evil.isprintable()
    assert unsafe(log_safe(evil), newlines=False) == []


_EVIL_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8", categories=("Cc", "Cf", "Zl", "Zp")),
        st.sampled_from(["\x1b", "[", "]", ";", "\x07", "2", "J", "a", "é", "\u202e"]),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(evil=_EVIL_TEXT)
def test_fuzzed_text_is_escaped_everywhere(
    evil: str, tmp_path: Path, capsys: Any, caplog: pytest.LogCaptureFixture
) -> None:
    for name, text in _all_outputs(evil, tmp_path, capsys, caplog, command=False).items():
        assert unsafe(text, newlines=name not in ONE_LINE) == [], f"{name}: {text!r}"


@given(evil=_EVIL_TEXT)
def test_escape_leaves_nothing_a_terminal_acts_on(evil: str) -> None:
    assert unsafe(escape(evil)) == []
    assert unsafe(escape(evil, newlines=False), newlines=False) == []
