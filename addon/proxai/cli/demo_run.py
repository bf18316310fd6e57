"""``python -m proxai demo``: the fake upstream, a real mitmdump with the addon, the real SDKs.

The demo (docs/usage.md, "The demo"): with no API key and no internet, start the embedded fake
upstream and a ``mitmdump`` with the package's script (``proxai.mitm.launch``; reverse mode to the
upstream, flows saved with ``-w``), drive the real ``openai`` and ``anthropic`` SDKs through it
across the scenarios for all three protocols, then read the saved flows back and print how each one
ended (the outcomes completed / closed / error / unfinished_tool of docs/design/outcomes.md).

This is a command-line program (like ``proxai.upstream``, a real component): it starts a
subprocess and talks over loopback sockets; it reads the flows through ``proxai.mitm``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proxai.core.model import Protocol
from proxai.mitm.launch import tool_argv
from proxai.outputs.verdict import verdict

DEMO_HEADER = "x-proxai-demo"
PROMPT = "What's the weather in Paris and Tokyo?"

# (scenario, streamed): the list, each for all three protocols.
SCENARIOS: tuple[tuple[str, bool], ...] = (
    ("text", True),
    ("text", False),
    ("parallel_tools", True),
    ("thinking", True),
    ("max_tokens", True),
    ("cache_usage", True),
    ("error_midstream", True),
    ("truncated", True),
    ("rate_limit", True),
    ("prompt_too_long", True),
    ("gzip", True),
)

PROTOCOLS = (Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES)


@dataclass(slots=True)
class Row:
    protocol: Protocol
    scenario: str
    streamed: bool
    client: str  # what the SDK gave back, in a few words
    meta: dict[str, Any] | None = None


def stop_mitmdump(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    """Stop ``proc`` (a mitmdump this program started): terminate it unless it is ending already
    (given half a second), then kill it after ``timeout`` seconds."""
    try:
        proc.wait(0.5 if proc.poll() is None else 0)
    except subprocess.TimeoutExpired:
        proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"mitmdump exited early:\n{log.read_text(errors='replace')[-3000:]}")
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"mitmdump did not start within {timeout}s")


# -- the SDK calls ----------------------------------------------------------------------------------


def _short(exc: BaseException) -> str:
    return f"raised {type(exc).__name__}"


def _call_anthropic(base_url: str, tag: str, scenario: str, streamed: bool) -> str:
    import anthropic

    # Each client is closed when its call is done: no connection is left open when mitmdump stops
    # (an open one ends mitmdump's log with the tracebacks of its cancelled handlers).
    with anthropic.Anthropic(
        base_url=base_url,
        api_key="demo-no-key",
        max_retries=0,
        default_headers={DEMO_HEADER: tag},
        http_client=anthropic.DefaultHttpxClient(trust_env=False),  # loopback: never via a proxy
    ) as client:
        messages: Any = [{"role": "user", "content": PROMPT}]
        if not streamed:
            msg = client.messages.create(model=scenario, max_tokens=1024, messages=messages)
            return _ok(msg.stop_reason, 0)
        with client.messages.stream(model=scenario, max_tokens=1024, messages=messages) as stream:
            final = stream.get_final_message()
        tools = sum(1 for b in final.content if b.type == "tool_use")
        return _ok(final.stop_reason, tools)


def _openai_client(base_url: str, tag: str) -> Any:
    import openai

    return openai.OpenAI(
        base_url=base_url + "/v1",
        api_key="demo-no-key",
        max_retries=0,
        default_headers={DEMO_HEADER: tag},
        http_client=openai.DefaultHttpxClient(trust_env=False),  # loopback: never via a proxy
    )


def _ok(stop: object, tools: int) -> str:
    """What the SDK's final object says: its stop reason / status, and its tool calls if any."""
    return f"ok, {stop}" + (f", {tools} tools" if tools else "")


def _call_chat(base_url: str, tag: str, scenario: str, streamed: bool) -> str:
    with _openai_client(base_url, tag) as client:
        return _chat(client, scenario, streamed)


def _chat(client: Any, scenario: str, streamed: bool) -> str:
    messages: Any = [{"role": "user", "content": PROMPT}]
    if not streamed:
        done = client.chat.completions.create(model=scenario, messages=messages)
        return _ok(done.choices[0].finish_reason, 0)
    with client.chat.completions.stream(
        model=scenario, messages=messages, stream_options={"include_usage": True}
    ) as stream:
        final = stream.get_final_completion()
    choice = final.choices[0]
    tools = len(choice.message.tool_calls or [])
    return _ok(choice.finish_reason, tools)


def _call_responses(base_url: str, tag: str, scenario: str, streamed: bool) -> str:
    with _openai_client(base_url, tag) as client:
        return _responses(client, scenario, streamed)


def _responses(client: Any, scenario: str, streamed: bool) -> str:
    if not streamed:
        resp = client.responses.create(model=scenario, input=PROMPT)
        return _ok(resp.status, 0)
    with client.responses.stream(model=scenario, input=PROMPT) as stream:
        final = stream.get_final_response()
    tools = sum(1 for item in final.output if item.type == "function_call")
    return _ok(final.status, tools)


CALLERS: dict[Protocol, Callable[[str, str, str, bool], str]] = {
    Protocol.ANTHROPIC_MESSAGES: _call_anthropic,
    Protocol.OPENAI_CHAT: _call_chat,
    Protocol.OPENAI_RESPONSES: _call_responses,
}


# -- the table --------------------------------------------------------------------------------------


def _tokens(meta: dict[str, Any]) -> str:
    u = meta.get("usage") or {}
    i, o = u.get("input_tokens"), u.get("output_tokens")
    if i is None and o is None:
        return "-"
    return f"{i if i is not None else '?'}/{o if o is not None else '?'}"


def _outcome(meta: dict[str, Any]) -> str:
    out = str(verdict(meta) or meta.get("outcome"))  # a completed answer cut by max_tokens: truncated
    err = meta.get("error")
    if isinstance(err, dict) and err.get("kind"):
        out += f" ({err['kind']})"
    return out


def table(rows: Sequence[Row]) -> list[str]:
    header = ("protocol", "scenario", "outcome", "stop reason", "tokens in/out", "tool calls", "client")
    lines: list[tuple[str, ...]] = [header]
    for r in rows:
        m = r.meta
        name = r.scenario + ("" if r.streamed else " (json)")
        if m is None:
            lines.append((str(r.protocol), name, "(no flow)", "-", "-", "-", r.client))
            continue
        calls = m.get("tool_calls") or []
        valid = sum(1 for c in calls if c.get("arguments_valid_json"))
        lines.append(
            (
                str(r.protocol),
                name,
                _outcome(m),
                str(m.get("stop_reason") or "-"),
                _tokens(m),
                f"{len(calls)} ({valid} valid)" if calls else "0",
                r.client,
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return out


# -- the run ----------------------------------------------------------------------------------------


def run_demo(
    *,
    flows_dir: Path,
    time_scale: float = 0.05,
    scenarios: Sequence[tuple[str, bool]] = SCENARIOS,
    protocols: Sequence[Protocol] = PROTOCOLS,
    echo: Callable[[str], None] = print,
) -> list[Row]:
    from proxai.mitm.flowfile import read_saved_flows
    from proxai.upstream import FakeUpstream

    flows_dir.mkdir(parents=True, exist_ok=True)
    flow_file = flows_dir / "demo.flow"
    log_file = flows_dir / "demo-mitmdump.log"
    if flow_file.exists():
        flow_file.unlink()
    rows: list[Row] = []
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    with FakeUpstream(time_scale=time_scale) as up:
        port = _free_port()
        args = tool_argv(
            "mitmdump",
            [
                "--listen-host",
                "127.0.0.1",
                "--listen-port",
                str(port),
                "--mode",
                f"reverse:{up.url}",
                "-w",
                str(flow_file),
                "--set",
                "connection_strategy=lazy",
                "--set",
                f"proxai_diagnostics_dir={flows_dir / 'diagnostics'}",
            ],
        )
        echo(f"fake upstream at {up.url}; mitmdump (reverse mode) on 127.0.0.1:{port}")
        with open(log_file, "wb") as log:
            proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            _wait_listening(port, proc, 30.0, log_file)
            base = f"http://127.0.0.1:{port}"
            for protocol in protocols:
                for scenario, streamed in scenarios:
                    tag = f"{protocol}/{scenario}/{'sse' if streamed else 'json'}"
                    try:
                        client = CALLERS[protocol](base, tag, scenario, streamed)
                    except Exception as exc:  # the SDK's own verdict is part of the demo
                        client = _short(exc)
                    rows.append(Row(protocol, scenario, streamed, client))
        finally:
            stop_mitmdump(proc)
    by_tag = {f.headers.get(DEMO_HEADER): f for f in read_saved_flows(str(flow_file))}
    for r in rows:
        saved = by_tag.get(f"{r.protocol}/{r.scenario}/{'sse' if r.streamed else 'json'}")
        r.meta = saved.proxai if saved is not None else None
    return rows
