"""The run report of a real agent run: ``python -m proxai report FILE --html/--turns/--csv/--filter``
on a flow file a real mitmdump wrote while the real SDKs ran against the fake upstream
(``run_maker``), the HTML page opened in Debian's headless chromium (docs/run-report.md)."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from mitmproxy import io as mio

from proxai.outputs import cost
from proxai.upstream.agent import AGENT_THINKING
from tests.visibility.ui import Chromium, chromium, poll

from .run_maker import ANTHROPIC_KEY, HOSTILE, NOTES, MadeRun, make_run

pytestmark = pytest.mark.e2e

VERDICTS = ["completed"] * 6 + ["error", "truncated", "unfinished_tool"]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> MadeRun:
    return make_run(tmp_path_factory.mktemp("run"))


def report(made: MadeRun, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "proxai", "report", str(made.flow_file), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def recorded_costs(made: MadeRun) -> list[float | None]:
    with made.flow_file.open("rb") as fh:
        flows = list(mio.FlowReader(fh).stream())
    return [cost.amount(f.metadata["proxai"]) for f in flows]


@pytest.fixture(scope="module")
def page(made: MadeRun, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    out = tmp_path_factory.mktemp("html") / "run.html"
    proc = report(made, "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"proxai report: 9 LLM flows -> {out}\n"
    with chromium(width=1400, height=1000) as c:
        c.goto(out.as_uri())
        poll("the report page", lambda: c.js("document.readyState") == "complete" or None)
        c.html_path = out  # type: ignore[attr-defined]
        yield c


def test_the_page_shows_the_whole_run(page: Chromium, made: MadeRun, tmp_path: Path) -> None:
    shot = tmp_path / "run-report.png"
    page.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert page.attrs("section.turn", "data-verdict") == VERDICTS
    assert page.attrs(".tl-bar", "data-verdict") == VERDICTS  # the timeline, one bar per flow
    assert len(page.texts(".tl-ttft")) == 7  # a first-token tick where a first token came
    assert page.texts("section.turn.problem h3") == [
        "#7 gpt-4o error rate_limited",
        "#8 claude-sonnet-4-6 truncated (cut short) truncated",
        "#9 claude-sonnet-4-6 unfinished tool call tool_stall guard: tool_stall injected",
    ]
    amounts = recorded_costs(made)
    assert amounts.count(None) == 1  # only the 429 has no usage, so no price
    total = cost.format_amount(sum(a for a in amounts if a is not None))
    rows = dict(r.split("\t", 1) for r in page.texts("#totals tr"))
    assert rows["flows"] == "9 (6 completed, 1 error, 1 truncated (cut short), 1 unfinished tool call)"
    assert rows["tool calls"] == "5"
    assert rows["cost"] == f"{total} (1 flow without a price)"
    assert rows["tokens"] == "200 in · 62 out · 0 cache read · 0 cache write"


def test_each_turn_shows_what_is_new_the_answer_and_the_tools(page: Chromium, made: MadeRun) -> None:
    assert page.texts(".diff") == [
        "1 message: a new conversation",
        "2 new of 3 messages since turn #1",
        "1 message: a new conversation",
        "2 new of 3 messages since turn #3",
        "1 message: a new conversation",
        "2 new of 3 messages since turn #5",
        "1 message: a new conversation",
        "the same 1 message as turn #7 (sent again)",
        "1 message: a new conversation",
    ]
    first = page.text("#turn-1")
    assert first is not None
    assert "tool call bash" in first and '"command": "cat notes.txt"' in first
    page.click("#turn-1 details.reasoning summary")
    assert page.texts("#turn-1 details.reasoning pre") == [AGENT_THINKING]
    second = page.text("#turn-2")
    assert second is not None and f"tool result toolu_01000100agentcall\n{NOTES}" in second
    assert page.texts("#turn-2 .answer .msg > pre") == [made.final_answers["anthropic"]]
    assert (
        page.texts("#turn-4 .answer .msg > pre")
        == [made.final_answers["chat"]]
        == ["The tool returned: b.txt"]
    )
    facts = page.text("#turn-1 .facts")
    amounts = recorded_costs(made)
    assert facts is not None and f"25 in · 18 out · cost {cost.format_amount(amounts[0])}" in facts


def test_errors_guard_and_translations_stand_out(page: Chromium, made: MadeRun) -> None:
    assert page.texts("#turn-7 .errorbox")[0].startswith("rate_limited tokens: Rate limit reached for gpt-4o")
    assert page.texts("#turn-9 .errorbox.guard") == [
        "guard injected tool_stall: ProxAI guard: tool call 'get_weather' (id toolu_01000902fakecall) "
        + page.texts("#turn-9 .errorbox.guard")[0].split("(id toolu_01000902fakecall) ", 1)[1]
    ]
    assert "unfinished" in page.texts("#turn-9 .tool-call")[1]
    assert page.texts("#turn-5 .flag.info") == ["translated openai_chat → anthropic_messages"]
    sides = page.text("#turn-6 .both-sides")
    assert sides is not None
    assert "client request (openai_chat)" in sides and "upstream request (anthropic_messages)" in sides
    assert sides.count("Run `ls /srv` and tell me what is there") == 2  # the user's words on both sides
    assert page.texts("#turn-6 .answer .msg > pre") == [made.final_answers["translated"]]
    # the switch hides the flows that need no look
    page.click("#only-problems")
    shown = page.js("[...document.querySelectorAll('section.turn')].filter(e => e.offsetParent).length")
    assert shown == 3
    page.click("#only-problems")


def test_hostile_content_stays_text_and_secrets_are_gone(page: Chromium) -> None:
    html = page.html_path.read_text()  # type: ignore[attr-defined]
    assert ANTHROPIC_KEY not in html
    page.assert_inert()
    first = page.text("#turn-1 .msg pre")
    assert first == f"My key is [REDACTED]. {HOSTILE} Run `cat notes.txt` and tell me what it says"
    assert page.texts("#turn-2 .answer .msg > pre") == [f"The tool returned: {HOSTILE}"]


def test_turns_json_csv_and_filters(made: MadeRun) -> None:
    proc = report(made, "--turns")
    assert proc.returncode == 0, proc.stderr
    assert ANTHROPIC_KEY not in proc.stdout
    doc = orjson.loads(proc.stdout)
    turns = doc["turns"]
    assert [t["verdict"] for t in turns] == VERDICTS
    assert [t["continues"] for t in turns] == [None, 1, None, 3, None, 5, None, 7, None]
    assert [len(t["new_messages"]) for t in turns] == [1, 2, 1, 2, 1, 2, 1, 1, 1]
    second = turns[1]
    assert [m["role"] for m in second["new_messages"]] == ["assistant", "user"]
    assert second["new_messages"][1]["parts"][0] == {
        "type": "tool_result",
        "id": "toolu_01000100agentcall",
        "content": f"{NOTES}\n{HOSTILE}",
        "is_error": False,
    }
    assert turns[0]["answer"]["parts"][1] == {
        "type": "tool_call",
        "id": "toolu_01000100agentcall",
        "name": "bash",
        "arguments": '{"command":"cat notes.txt"}',
        "complete": True,
    }
    assert turns[5]["client_protocol"] == "openai_chat" and turns[5]["translated"] is True
    assert [m["role"] for m in turns[5]["client_messages"]] == ["user", "assistant", "tool"]
    amounts = recorded_costs(made)
    assert [None if t["cost"] is None else t["cost"]["amount"] for t in turns] == amounts
    assert doc["totals"]["cost"]["priced_flows"] == 8 and doc["totals"]["cost"]["unpriced_flows"] == 1

    proc = report(made, "--csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [r["verdict"] for r in rows] == VERDICTS
    assert [r["model"] for r in rows] == [
        "claude-sonnet-4-6",
        "claude-sonnet-4-6",
        "gpt-4o",
        "gpt-4o",
        "claude-haiku-4-5",
        "claude-haiku-4-5",
        "",
        "claude-sonnet-4-6",
        "claude-sonnet-4-6",
    ]
    tools = ["bash", "", "bash", "", "bash", "", "", "", "get_weather get_weather"]
    assert [r["tool_calls"] for r in rows] == tools
    assert [float(r["cost"]) if r["cost"] else None for r in rows] == amounts
    assert "e-" not in "".join(r["cost"] for r in rows)  # plain decimals for spreadsheets
    assert rows[6]["cost_note"] == "cost: the upstream reported no usage"

    marked = orjson.loads(report(made, "--turns", "--filter", "~marked").stdout)["turns"]
    assert [t["verdict"] for t in marked] == ["error", "truncated", "unfinished_tool"]
    anthropic_up = orjson.loads(report(made, "--turns", "--filter", "~u /v1/messages").stdout)["turns"]
    assert [t["index"] for t in anthropic_up] == [1, 2, 3, 4, 5, 6]
    assert [t["model"] for t in anthropic_up][2:4] == ["claude-haiku-4-5"] * 2
    bad = report(made, "--html", "x.html", "--filter", "~nonsense(")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("proxai report: --filter '~nonsense(': ")


def test_a_flow_file_that_is_not_one_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "not.flow"
    bad.write_bytes(b"\x00garbage")
    proc = subprocess.run(
        [sys.executable, "-m", "proxai", "report", str(bad), "--html", str(tmp_path / "o.html")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and proc.stderr.startswith(f"proxai report: cannot read {bad}")
    assert not (tmp_path / "o.html").exists()


def test_html_goes_with_one_stdout_format(made: MadeRun, tmp_path: Path) -> None:
    out = tmp_path / "run.html"
    proc = report(made, "--html", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")
    doc = orjson.loads(proc.stdout)  # the flow table as JSON, with each flow's cost
    assert [r["cost"] and r["cost"]["amount"] for r in doc["flows"]] == recorded_costs(made)
    assert doc["totals"]["cost"]["unpriced_flows"] == 1
    only = report(made, "--html", str(tmp_path / "only.html"))
    assert only.returncode == 0 and only.stdout == ""
    table = report(made).stdout.splitlines()
    assert table[0].split() == [
        "#",
        "protocol",
        "model",
        "status",
        "outcome",
        "stop",
        "in",
        "out",
        "cost",
        "tools",
        "ttft",
        "total",
    ]
    total = cost.format_amount(sum(a for a in recorded_costs(made) if a is not None))
    assert table[11].endswith(f"· 5 tool calls · cost {total} (1 flow without a price)")
    both = report(made, "--csv", "--json")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
