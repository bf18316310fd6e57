"""The ProxAI view inside the real tools: a running ``mitmweb`` (its HTTP API, as the web UI uses it)
and ``mitmdump --flow-detail 3``. Flows are loaded with ``-r``; the text must equal the golden text
the contentview API test checks, so the three front ends show the same thing."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from proxai.core.model import Protocol
from proxai.mitm.flowrows import write_flows
from proxai.outputs import cost
from tests.e2e.harness import free_port, stop_process

from .flows import scenario_flow
from .test_contentview import GOLDEN, SHORT, case_id

ADDON = Path(__file__).resolve().parents[2] / "addon" / "proxai.py"

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
SCRIPT = Path(__file__).parent / "view_only_addon.py"
TOKEN = "proxai-visibility-test"
WEB_CASES = [
    (Protocol.ANTHROPIC_MESSAGES, "thinking", True),
    (Protocol.OPENAI_CHAT, "parallel_tools", True),
    (Protocol.OPENAI_CHAT, "tool_stall", True),
    (Protocol.OPENAI_RESPONSES, "error_midstream", True),
    (Protocol.OPENAI_RESPONSES, "parallel_tools", False),
    (Protocol.ANTHROPIC_MESSAGES, "rate_limit", False),
]


@pytest.fixture(scope="module")
def flow_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("web") / "cases.flow"
    write_flows(str(path), [scenario_flow(p, s, st) for p, s, st in WEB_CASES])
    return path


@contextlib.contextmanager
def mitmweb_process(
    workdir: Path, *args: str, ready: Callable[[list[Any]], bool] = lambda flows: True
) -> Iterator[tuple[str, dict[str, str], int]]:
    """A ``mitmweb`` on loopback ports with the API token, once ``/flows.json`` answers 200 and its
    flow list is ``ready``: ``(web base URL, auth headers, proxy port)``; terminated on exit."""
    web_port, proxy_port = free_port(), free_port()
    log = workdir / "mitmweb.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                str(BIN / "mitmweb"),
                "--no-web-open-browser",
                "--web-host",
                "127.0.0.1",
                "--web-port",
                str(web_port),
                "--listen-host",
                "127.0.0.1",
                "--listen-port",
                str(proxy_port),
                "--set",
                f"web_password={TOKEN}",
                *args,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )
    base = f"http://127.0.0.1:{web_port}"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                r = httpx.get(f"{base}/flows.json", headers=headers, timeout=5)
                if r.status_code == 200 and ready(r.json()):
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield base, headers, proxy_port
    finally:
        stop_process(proc, timeout=20)


@contextlib.contextmanager
def addon_mitmweb(workdir: Path, upstream_url: str, routes: str) -> Iterator[tuple[str, dict[str, str], int]]:
    """``mitmweb_process`` with the addon in reverse mode toward ``upstream_url``, the routes file
    ``routes`` (TOML text), and its own confdir and diagnostics folder inside ``workdir``."""
    routes_file = workdir / "routes.toml"
    routes_file.write_text(routes)
    with mitmweb_process(
        workdir,
        "--mode",
        f"reverse:{upstream_url}",
        "--set",
        f"proxai_routes={routes_file}",
        "--set",
        f"confdir={workdir / 'conf'}",
        "--set",
        f"proxai_diagnostics_dir={workdir / 'diagnostics'}",
        "-s",
        str(ADDON),
    ) as server:
        yield server


@pytest.fixture(scope="module")
def mitmweb(flow_file: Path) -> Iterator[tuple[str, dict[str, str]]]:
    with mitmweb_process(
        flow_file.parent,
        "-s",
        str(SCRIPT),
        "-r",
        str(flow_file),
        ready=lambda flows: len(flows) == len(WEB_CASES),
    ) as (base, headers, _):
        yield base, headers


def web_flows(mitmweb: tuple[str, dict[str, str]]) -> list[dict[str, Any]]:
    base, headers = mitmweb
    flows: list[dict[str, Any]] = httpx.get(f"{base}/flows.json", headers=headers, timeout=10).json()
    return flows


def test_mitmweb_requires_the_token(mitmweb: tuple[str, dict[str, str]]) -> None:
    base, _ = mitmweb
    assert httpx.get(f"{base}/flows.json", timeout=10).status_code == 403


def test_mitmweb_lists_the_view(mitmweb: tuple[str, dict[str, str]]) -> None:
    base, headers = mitmweb
    state = httpx.get(f"{base}/state.json", headers=headers, timeout=10).json()
    assert "proxai" in state["contentViews"]


@pytest.mark.parametrize("view", ["auto", "proxai"])
def test_mitmweb_renders_responses(mitmweb: tuple[str, dict[str, str]], view: str) -> None:
    base, headers = mitmweb
    flows = web_flows(mitmweb)
    assert len(flows) == len(WEB_CASES)
    for flow, (protocol, scenario, stream) in zip(flows, WEB_CASES, strict=True):
        r = httpx.get(f"{base}/flows/{flow['id']}/response/content/{view}.json", headers=headers, timeout=30)
        assert r.status_code == 200, r.text
        doc = r.json()
        assert doc["view_name"] == "ProxAI"
        assert doc["text"] == (GOLDEN / f"{case_id(protocol, scenario, stream)}.txt").read_text()


def test_mitmweb_renders_a_request(mitmweb: tuple[str, dict[str, str]]) -> None:
    base, headers = mitmweb
    flow = web_flows(mitmweb)[1]  # chat, streamed: the same request the API test renders
    r = httpx.get(f"{base}/flows/{flow['id']}/request/content/auto.json", headers=headers, timeout=30)
    doc = r.json()
    assert doc["view_name"] == "ProxAI"
    assert doc["text"] == (GOLDEN / f"request__{SHORT[Protocol.OPENAI_CHAT]}.txt").read_text()


def test_mitmdump_flow_detail_3(flow_file: Path) -> None:
    proc = subprocess.run(
        [
            str(BIN / "mitmdump"),
            "-n",
            "-s",
            str(SCRIPT),
            "-r",
            str(flow_file),
            "--flow-detail",
            "3",
            "--set",
            "content_view_lines_cutoff=1000",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TERM": "dumb", "NO_COLOR": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for protocol, scenario, stream in WEB_CASES:
        expected = (GOLDEN / f"{case_id(protocol, scenario, stream)}.txt").read_text()
        # mitmdump indents the view by four spaces.
        indented = "\n".join(("    " + line) if line else "" for line in expected.rstrip("\n").splitlines())
        assert indented in out, f"{case_id(protocol, scenario, stream)} not shown as in the golden text"


@pytest.fixture(scope="module")
def live_mitmweb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], int]]:
    """mitmweb with the product addon (``-s addon/proxai.py``) in reverse mode before the fake upstream."""
    from proxai.upstream import FakeUpstream

    workdir = tmp_path_factory.mktemp("live-web")
    with (
        FakeUpstream(time_scale=0.02) as up,
        mitmweb_process(
            workdir,
            "--mode",
            f"reverse:{up.url}",
            "--set",
            f"proxai_diagnostics_dir={workdir / 'diagnostics'}",
            "--set",
            f"confdir={workdir / 'conf'}",
            "-s",
            str(Path(__file__).resolve().parents[2] / "addon" / "proxai.py"),
        ) as web,
    ):
        yield web


def test_live_flow_in_mitmweb_with_the_addon(live_mitmweb: tuple[str, dict[str, str], int]) -> None:
    """A real streamed Chat request through mitmweb + ProxAI: the flow list carries the comment, and the
    web API renders the response and the request in the ProxAI view."""
    import openai

    base, headers, proxy_port = live_mitmweb
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{proxy_port}/v1", api_key="sk-test-visibility")
    stream = client.chat.completions.create(
        model="parallel_tools",
        messages=[{"role": "user", "content": "Weather in Paris and Tokyo?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[-1].usage is not None
    deadline = time.monotonic() + 30
    while True:
        flows = [
            f
            for f in web_flows((base, headers))
            if f["request"]["path"] == "/v1/chat/completions" and f["comment"]
        ]
        if flows:
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
    (flow,) = flows
    assert flow["comment"] == ("completed (tool_calls) · chat parallel_tools · 25 in/26 out · 2 tool calls")
    assert flow["marked"] == ""
    resp = httpx.get(
        f"{base}/flows/{flow['id']}/response/content/auto.json", headers=headers, timeout=30
    ).json()
    assert resp["view_name"] == "ProxAI"
    text = resp["text"]
    assert text.startswith("ProxAI · completed (tool_calls) · openai_chat parallel_tools · streamed\n")
    for line in [
        "tokens: input 25 · output 26 · total 51 · cache read 0",
        "── answer ──",
        "I'll look up the weather in both cities at once.",
        "── tool call 2: get_weather · id call_000102fakecall · complete · 47 bytes ──",
        '  "city": "Tokyo",',
    ]:
        assert line in text.splitlines(), line
    req = httpx.get(
        f"{base}/flows/{flow['id']}/request/content/auto.json", headers=headers, timeout=30
    ).json()
    assert req["view_name"] == "ProxAI"
    assert req["text"].splitlines()[:4] == [
        "ProxAI request · openai_chat",
        "model: parallel_tools · stream: true",
        "── messages (1) ──",
        "[1] user:",
    ]


DUMP_CASES = [
    (Protocol.OPENAI_CHAT, "parallel_tools", True),
    (Protocol.ANTHROPIC_MESSAGES, "max_tokens", True),
    (Protocol.OPENAI_RESPONSES, "max_tokens", False),
    (Protocol.OPENAI_CHAT, "truncated", True),
    (Protocol.OPENAI_RESPONSES, "error_midstream", True),
    (Protocol.ANTHROPIC_MESSAGES, "rate_limit", False),
    (Protocol.OPENAI_CHAT, "tool_stall", True),
]
DUMP_LINES = [
    "proxai chat gpt-4.1 · completed (tool_calls) · 25 in/26 out · 2 tool calls · ttft 1.50s · 1.50s",
    # recorded with its cost (claude-sonnet-4-5 at $3 / $15 per million tokens: 25 * 3e-6 + 8 * 1.5e-5)
    "proxai anthropic claude-sonnet-4-5 · TRUNCATED (max_tokens) · 25 in/8 out · $0.000195"
    " · ttft 1.50s · 1.50s",
    "proxai responses gpt-5 · TRUNCATED (max_output_tokens) · 25 in/8 out · ttft - · 1.50s",
    "proxai chat gpt-4.1 · CLOSED: no [DONE] · SDK: openai-node raises OpenAIError"
    " (openai_chat.no_finish_reason) · - tokens · ttft 1.50s · 1.50s",
    "proxai responses gpt-5 · ERROR: overloaded · - tokens · ttft 1.50s · 1.50s",
    "proxai anthropic · ERROR: rate_limited (HTTP 429) · - tokens · ttft - · 1.50s",
    "proxai chat gpt-4.1 · UNFINISHED_TOOL in get_weather · SDK: openai-node raises OpenAIError"
    " (openai_chat.no_finish_reason) · - tokens · 2 tool calls · ttft 1.50s · 1.50s",
]


@pytest.fixture(scope="module")
def dump_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dump") / "outcomes.flow"
    flows = [scenario_flow(p, s, st) for p, s, st in DUMP_CASES]
    cost.add_cost(flows[1].metadata["proxai"], api_url=flows[1].request.pretty_url, at=None)
    write_flows(str(path), flows)
    return path


def test_mitmdump_default_output_has_one_line_per_llm_flow(dump_file: Path) -> None:
    """Plain ``mitmdump -s addon/proxai.py`` (default verbosity): under each flow's ``<< 200`` line,
    ProxAI's line with protocol, model, verdict, tokens, time to first token and duration."""
    proc = subprocess.run(
        [str(BIN / "mitmdump"), "-n", "-s", str(ADDON), "-r", str(dump_file)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=dump_file.parent,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    ours = [line.strip() for line in lines if line.lstrip().startswith("proxai ")]
    assert ours == DUMP_LINES
    # Each comes right under its flow's response line, aligned with its ``<<``.
    for line in lines:
        if line.lstrip().startswith("proxai "):
            above = lines[lines.index(line) - 1]
            assert above.lstrip().startswith("<< ") and above.index("<<") == line.index("proxai")
    assert "\x1b[" not in proc.stdout  # not a terminal: no colour


def test_mitmdump_colours_errors_and_truncations_on_a_terminal(dump_file: Path) -> None:
    """On a terminal the Dumper colours: errors red, truncated and closed yellow, as mitmproxy's own
    error lines are."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(BIN / "mitmdump"), "-n", "-s", str(ADDON), "-r", str(dump_file)],
        stdout=slave,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        cwd=dump_file.parent,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    os.close(slave)
    out = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        out += data
    os.close(master)
    assert proc.wait(timeout=60) == 0
    text = out.decode()
    red, yellow, magenta = "\x1b[31m\x1b[1m", "\x1b[33m\x1b[1m", "\x1b[35m\x1b[1m"
    assert f"{red}proxai responses gpt-5 · ERROR: overloaded" in text
    assert f"{yellow}proxai anthropic claude-sonnet-4-5 · TRUNCATED (max_tokens)" in text
    assert f"{yellow}proxai chat gpt-4.1 · CLOSED: no [DONE]" in text
    assert f"{magenta}proxai chat gpt-4.1 · UNFINISHED_TOOL in get_weather" in text
    completed = next(line for line in text.splitlines() if "completed (tool_calls)" in line)
    assert completed.strip() == DUMP_LINES[0]  # a success is not coloured
