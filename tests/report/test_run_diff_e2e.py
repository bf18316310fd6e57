"""``python -m proxai diff BASE.flow NEW.flow`` on runs a real mitmdump recorded while the real
``anthropic`` SDK ran a tool round trip against the fake upstream (``diff_maker``): two runs whose
tool call has other arguments (and so another cost), the same run recorded twice, a run whose second
answer body was not kept, and files that are no flow files. The page is read in Debian's headless
chromium (docs/run-report.md, "Compare two runs")."""

from __future__ import annotations

import functools
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from mitmproxy import io as mio
from mitmproxy.io import tnetstring

from proxai.cli import diff as cli_diff
from proxai.outputs import cost
from tests.visibility.ui import Chromium, chromium, poll

from .diff_maker import BASE_COMMAND, NEW_COMMAND, Recorded, record, replay
from .run_maker import HOSTILE

pytestmark = pytest.mark.e2e

KEEP_CAP = "4000"  # bytes: the first answer (about 3,600) is kept, the second (about 4,200) is not


@dataclass(frozen=True)
class Runs:
    base: Recorded
    again: Recorded  # the base scenario recorded a second time
    new: Recorded  # another command: other tool arguments, one more output token
    cut: Recorded  # the base scenario with proxai_keep_body_max below the second answer's size


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    d = tmp_path_factory.mktemp("runs")
    return Runs(
        base=record(d / "base", BASE_COMMAND),
        again=record(d / "again", BASE_COMMAND),
        new=record(d / "new", NEW_COMMAND),
        cut=record(d / "cut", BASE_COMMAND, {"proxai_keep_body_max": KEEP_CAP}),
    )


def diff(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "proxai", "diff", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def metas(r: Recorded) -> list[dict[str, object]]:
    with r.flow_file.open("rb") as fh:
        return [f.metadata["proxai"] for f in mio.FlowReader(fh).stream()]


def flow_ids(r: Recorded) -> list[str]:
    with r.flow_file.open("rb") as fh:
        return [f.id for f in mio.FlowReader(fh).stream()]


@pytest.fixture(scope="module")
def page(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    out = tmp_path_factory.mktemp("html") / "diff.html"
    proc = diff(runs.base.flow_file, runs.new.flow_file, "--html", out)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert proc.stderr == f"proxai diff: 2 pairs, 1 diverged -> {out}\n"
    with chromium(width=1300, height=1400) as c:
        c.goto(out.as_uri())
        poll("the diff page", lambda: c.js("document.readyState") == "complete" or None)
        c.html_path = out  # type: ignore[attr-defined]
        yield c


def test_the_page_shows_the_other_arguments_and_the_other_cost(
    page: Chromium, runs: Runs, tmp_path: Path
) -> None:
    shot = tmp_path / "run-diff.png"
    page.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert page.text("#verdict") == (
        "diverged: 1 of 2 pairs; the first: pair 1 (base #1, new #1): tool calls differ"
    )
    assert page.attrs("section.pair", "class") == ["pair diverged", "pair same"]
    assert page.attrs("section.pair", "data-divergences") == ["tool_calls", ""]
    assert page.texts("#pair-1 h3 .flag") == ["tool calls differ"]
    # the arguments as a line diff: the base's line removed, the new one added
    assert page.texts("#pair-1 .call.differs .flag") == ["arguments differ"]
    assert page.texts("#pair-1 .call.differs .del") == ['-   "command": "cat notes.txt"']
    assert page.texts("#pair-1 .call.differs .ins") == ['+   "command": "cat notes.txt | head -n 20 | sort"']
    assert page.texts("#pair-2 .call") == []  # the final answers call no tool
    # the usage and the cost, side by side, with the change
    base_cost = [cost.amount(m) for m in metas(runs.base)]
    new_cost = [cost.amount(m) for m in metas(runs.new)]
    assert base_cost[0] != new_cost[0] and base_cost[1] == new_cost[1]
    row = dict(zip(["key", "base", "new", "change"], page.texts("#pair-1 tr[data-key=cost] td"), strict=True))
    assert row == {
        "key": "cost",
        "base": cost.format_amount(base_cost[0]),
        "new": cost.format_amount(new_cost[0]),
        "change": f"+{cost.format_amount(new_cost[0] - base_cost[0])} "  # type: ignore[operator]
        f"({100 * (new_cost[0] - base_cost[0]) / base_cost[0]:+.1f}%)",  # type: ignore[operator]
    }
    assert page.texts("#pair-1 tr[data-key=output_tokens] td") == ["output tokens", "18", "19", "+1 (+5.6%)"]
    changed = page.attrs("#pair-1 tr.changed", "data-key")
    assert (
        {"output_tokens", "cost"} <= set(changed) <= {"output_tokens", "cost", "first_token_s", "duration_s"}
    )
    assert page.attrs("#pair-1 tr.diverged", "data-key") == []  # the outcome is the same
    assert page.texts("#pair-1 tr[data-key=outcome] td") == ["outcome", "completed", "completed", ""]
    total = page.texts("#totals tr[data-key=cost] td")
    assert total[:3] == ["cost", cost.format_amount(sum(base_cost)), cost.format_amount(sum(new_cost))]  # type: ignore[arg-type]
    # the same final answer on both sides: shown once, as text (the tool result's HTML stays text)
    assert (
        page.texts("#pair-2 .answer-text.same pre") == [runs.base.answer] == [f"The tool returned: {HOSTILE}"]
    )
    page.click("#only-diffs")
    shown = page.js("[...document.querySelectorAll('section.pair')].filter(e => e.offsetParent).length")
    assert shown == 1
    page.click("#only-diffs")


def test_the_page_runs_nothing_and_loads_nothing(page: Chromium) -> None:
    html = page.html_path.read_text()  # type: ignore[attr-defined]
    assert "<script" not in html and "&lt;script&gt;window.__pwned" in html
    page.assert_inert()


def test_json_gives_the_difference(runs: Runs) -> None:
    proc = diff(runs.base.flow_file, runs.new.flow_file, "--json")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    doc = orjson.loads(proc.stdout)
    assert doc["base"] == {"file": str(runs.base.flow_file)} and doc["new"] == {
        "file": str(runs.new.flow_file)
    }
    assert doc["divergent"] is True and doc["divergent_pairs"] == 1
    assert doc["first_divergence"] == {
        "pair": 1,
        "base_turn": 1,
        "new_turn": 1,
        "divergences": ["tool_calls"],
    }
    first, second = doc["pairs"]
    assert (first["base_flow_id"], first["new_flow_id"]) == (flow_ids(runs.base)[0], flow_ids(runs.new)[0])
    assert first["tool_calls"] == [
        {
            "index": 0,
            "base": {
                "name": "bash",
                "arguments": json.dumps({"command": BASE_COMMAND}, separators=(",", ":")),
            },
            "new": {"name": "bash", "arguments": json.dumps({"command": NEW_COMMAND}, separators=(",", ":"))},
            "same": False,
            "differs": ["arguments"],
        }
    ]
    base_cost, new_cost = cost.amount(metas(runs.base)[0]), cost.amount(metas(runs.new)[0])
    assert first["values"]["cost"] == {
        "base": base_cost,
        "new": new_cost,
        "same": False,
        "delta": round(new_cost - base_cost, 12),  # type: ignore[operator]
    }
    assert first["values"]["output_tokens"] == {"base": 18, "new": 19, "same": False, "delta": 1}
    assert first["values"]["outcome"] == {"base": "completed", "new": "completed", "same": True}
    assert first["values"]["stop_reason"] == {"base": "tool_use", "new": "tool_use", "same": True}
    assert {"tool_calls", "output_tokens", "cost"} <= set(first["changed"])
    assert second["divergent"] is False and second["tool_calls"] == []
    assert second["values"]["text"]["same"] is True and second["values"]["text"]["base"] == runs.base.answer
    assert doc["totals"]["turns"] == {"base": 2, "new": 2, "same": True, "delta": 0}
    assert doc["totals"]["outcomes"] == {"base": {"completed": 2}, "new": {"completed": 2}, "same": True}
    assert doc["notes"] == []


def test_fail_on_divergence(runs: Runs) -> None:
    diverged = diff(runs.base.flow_file, runs.new.flow_file, "--fail-on", "divergence")
    assert diverged.returncode == 1, diverged.stderr
    lines = diverged.stdout.splitlines()
    assert lines[1:3] == ["pair 1: base #1 · new #1: DIVERGED (tool calls differ)", "  completed (tool_use)"]
    assert (
        lines[3] == f'  tool call 1: bash {{"command":"{BASE_COMMAND}"}} → bash {{"command":"{NEW_COMMAND}"}}'
    )
    assert lines[-1] == "diverged: 1 of 2 pairs; the first: pair 1 (base #1, new #1): tool calls differ"
    assert diff(runs.base.flow_file, runs.new.flow_file).returncode == 0  # without --fail-on: a report
    # the same scenario recorded twice: other ids and timings, the same outcomes and tool calls
    same = diff(runs.base.flow_file, runs.again.flow_file, "--fail-on", "divergence")
    assert same.returncode == 0, same.stdout + same.stderr
    assert flow_ids(runs.base) != flow_ids(runs.again)
    assert same.stdout.splitlines()[-1] == "no divergence in 2 pairs: the same outcomes and tool calls"
    assert [line for line in same.stdout.splitlines() if line.startswith("pair ")] == [
        "pair 1: base #1 · new #1: same",
        "pair 2: base #2 · new #2: same",
    ]


def test_a_flow_without_a_body_is_skipped_with_a_note(runs: Runs) -> None:
    cut_id = flow_ids(runs.cut)[1]
    assert metas(runs.cut)[1]["body_not_kept"] and "body_not_kept" not in metas(runs.cut)[0]
    proc = diff(runs.base.flow_file, runs.cut.flow_file, "--json", "--fail-on", "divergence")
    note = (
        f"new turn #2 (flow {cut_id}) skipped: the response body was not kept: "
        f"it passed proxai_keep_body_max ({KEEP_CAP} bytes)"
    )
    assert proc.stderr == f"proxai diff: {note}\n"
    assert proc.returncode == 1  # the base's second turn has no counterpart left
    doc = orjson.loads(proc.stdout)
    assert doc["notes"] == [note]
    assert [(p["base_turn"], p["new_turn"], p["divergences"]) for p in doc["pairs"]] == [
        (1, 1, []),
        (2, None, ["only_in_base"]),
    ]


def diff_here(capsys: pytest.CaptureFixture[str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The same command in this process (``cli_diff.main``, what ``python -m proxai diff`` runs): an
    exception would fail the test as a traceback would show to the user."""
    code = cli_diff.main([str(a) for a in args])
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["diff", *map(str, args)], code, out.out, out.err)


def _one_line_error(proc: subprocess.CompletedProcess[str], start: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(start), proc.stderr


def test_bad_input_is_one_line_and_exit_2(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = runs.base.flow_file
    data = good.read_bytes()
    first_flow = _first_flow_size(data)
    assert first_flow < len(data) and len(list(mio.FlowReader(io.BytesIO(data[:first_flow])).stream())) == 1
    cases: dict[str, tuple[bytes, str]] = {
        "garbage.flow": (b"\x00garbage", "not a mitmproxy flow file (Invalid data format.)"),
        "second-cut.flow": (
            data[: first_flow + 200],
            "cut short or damaged after 1 flow (Invalid data format.)",
        ),
        "first-cut.flow": (data[:300], "cut short or damaged in its first flow (Invalid data format.)"),
        "cassette.json": (b'{"interactions": []}', "not a mitmproxy flow file (Unable to read HAR file."),
        "capture.pcap": (
            b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00" + bytes(16),
            "not a mitmproxy flow file (Invalid",
        ),
        "state.flow": (
            _without_request(runs.base),
            "cut short or damaged in its first flow (KeyError 'request')",
        ),
    }
    for n, (name, (content, why)) in enumerate(cases.items()):
        path = tmp_path / name
        path.write_bytes(content)
        args = (good, path) if n % 2 else (path, good, "--json")  # as the base and as the new run
        run = diff if n == 0 else functools.partial(diff_here, capsys)  # the first one as a process
        _one_line_error(run(*args), f"proxai diff: cannot read {path}: {why}")
    empty = tmp_path / "empty.flow"
    empty.write_bytes(b"")
    _one_line_error(diff_here(capsys, good, empty), f"proxai diff: {empty}: no LLM flow to compare")
    har = tmp_path / "browser.har"  # a HAR of a web page: mitmproxy reads it, no flow is an LLM call
    har.write_text(json.dumps({"log": {"version": "1.2", "entries": [_har_entry()]}}))
    _one_line_error(diff_here(capsys, har, good), f"proxai diff: {har}: no LLM flow to compare")
    missing = tmp_path / "nope.flow"
    _one_line_error(diff_here(capsys, good, missing), f"proxai diff: cannot read {missing}: [Errno 2]")
    out = tmp_path / "no-such-dir" / "d.html"
    _one_line_error(diff_here(capsys, good, good, "--html", out), "proxai diff: cannot write [Errno 2]")


def _first_flow_size(data: bytes) -> int:
    """A flow file is its flows' tnetstrings one after the other: ``LENGTH:PAYLOAD}``."""
    length, _ = data.split(b":", 1)
    return len(length) + 1 + int(length) + 1


def _without_request(r: Recorded) -> bytes:
    """The first flow's stored state, its request left out."""
    with r.flow_file.open("rb") as fh:
        flow, *_ = mio.FlowReader(fh).stream()
    state = flow.get_state()
    del state["request"]
    return tnetstring.dumps(state)


def _har_entry() -> dict[str, object]:
    return {
        "startedDateTime": "2026-01-01T00:00:00.000Z",
        "time": 5,
        "request": {
            "method": "GET",
            "url": "https://example.com/",
            "httpVersion": "HTTP/1.1",
            "headers": [{"name": "host", "value": "example.com"}],
            "queryString": [],
            "cookies": [],
            "headersSize": -1,
            "bodySize": 0,
        },
        "response": {
            "status": 200,
            "statusText": "OK",
            "httpVersion": "HTTP/1.1",
            "headers": [{"name": "content-type", "value": "text/html"}],
            "cookies": [],
            "content": {"size": 5, "mimeType": "text/html", "text": "hello"},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": 5,
        },
        "cache": {},
        "timings": {"send": 0, "wait": 5, "receive": 0},
    }


def test_a_replay_of_the_base_does_not_diverge_and_a_changed_prompt_does(runs: Runs, tmp_path: Path) -> None:
    """docs/replay.md, "Compare two runs": the agent run again against the recording."""
    same = replay(tmp_path / "same", runs.base.flow_file, BASE_COMMAND)
    proc = diff(runs.base.flow_file, same, "--fail-on", "divergence")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "no divergence in 2 pairs: the same outcomes and tool calls"
    missed = replay(tmp_path / "missed", runs.base.flow_file, NEW_COMMAND)
    proc = diff(runs.base.flow_file, missed, "--fail-on", "divergence")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == "pair 1: base #1 · new #1: DIVERGED (outcome differs, tool calls differ)"
    assert "  error - → invalid_request" in lines
    error = next(line for line in lines if line.startswith("  new error: "))
    assert error.startswith(
        "  new error: proxai replay: no recorded request matches: messages[0].content (user text) differs"
    )
    assert lines[-1] == (
        "diverged: 2 of 2 pairs; the first: pair 1 (base #1, new #1): outcome differs, tool calls differ"
    )
