"""Run the real agent CLIs (Claude Code, Codex) non-interactively through a mitmdump.

The CLIs are the npm packages ``.ci/install-agents`` pins, installed into ``.ci/agents``; a
missing one fails the test that needs it with the command that installs it (never a skip).
Every run gets its own HOME (and CODEX_HOME) in a temporary directory, so nothing of the
user's configuration is read and nothing is left behind, and the environment keeps each CLI
off the network: no telemetry, no update checks, no plugin sync.

The settings are the CLIs' defaults; only what points them at ProxAI is set, the same
variables docs/recipes.md gives users:

- Claude Code: ``ANTHROPIC_BASE_URL`` (reverse mode: mitmdump; regular mode: the real base URL
  plus ``HTTPS_PROXY`` and ``NODE_EXTRA_CA_CERTS`` = mitmproxy's CA), ``ANTHROPIC_API_KEY``;
- Codex: a model provider in ``$CODEX_HOME/config.toml`` (``base_url``, ``env_key``,
  ``wire_api = "responses"``); regular mode adds ``HTTPS_PROXY`` and ``CODEX_CA_CERTIFICATE``.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .harness import REPO, Mitmdump

AGENTS = REPO / ".ci" / "agents" / "node_modules"
CLAUDE = AGENTS / ".bin" / "claude"
CODEX = AGENTS / ".bin" / "codex"
INSTALL = "bash .ci/install-agents"
MARKER = "proxai-e2e-marker-7f3a"
PROMPT = "Run `cat notes.txt` and tell me what it says."
ANSWER = f"The tool returned: {MARKER}"
RUN_TIMEOUT = 180.0

_QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "NO_COLOR": "1",
}


def require(binary: Path) -> Path:
    """The CLI's path; a clear failure when ``.ci/install-agents`` has not run."""
    if not binary.exists():
        raise AssertionError(f"{binary.name} is not installed at {binary}: run `{INSTALL}` first")
    return binary


@dataclass
class Run:
    stdout: str
    stderr: str
    returncode: int

    def events(self) -> list[dict[str, Any]]:
        """The JSON lines of the output (``--output-format stream-json`` / ``--json``)."""
        out = []
        for raw in self.stdout.splitlines():
            line = raw.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out

    def describe(self) -> str:
        return f"exit {self.returncode}\nstdout:\n{self.stdout[-3000:]}\nstderr:\n{self.stderr[-3000:]}"


def workspace(tmp: Path) -> Path:
    """A project directory with the file the prompt asks the agent to read."""
    work = tmp / "work"
    work.mkdir(parents=True, exist_ok=True)
    (work / "notes.txt").write_text(MARKER + "\n")
    return work


def _base_env(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR")}
    return {**keep, "HOME": str(home), **_QUIET}


def _run(args: list[str], env: dict[str, str], cwd: Path) -> Run:
    proc = subprocess.run(
        args,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    return Run(proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"), proc.returncode)


def run_claude(md: Mitmdump, tmp: Path, upstream_url: str) -> Run:
    """``claude -p PROMPT --output-format stream-json`` through ``md`` (reverse or regular)."""
    claude = require(CLAUDE)
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {**_base_env(home), "ANTHROPIC_API_KEY": "sk-ant-proxai-e2e-not-a-secret"}
    if md.mode == "reverse":
        env["ANTHROPIC_BASE_URL"] = md.url
    else:
        env |= {
            "ANTHROPIC_BASE_URL": upstream_url,
            "HTTPS_PROXY": md.proxy_url,
            "NODE_EXTRA_CA_CERTS": str(md.ca_path),
        }
    args = [str(claude), "-p", PROMPT, "--output-format", "stream-json", "--verbose"]
    return _run(args, env, workspace(tmp))


def run_codex(md: Mitmdump, tmp: Path, upstream_url: str, prompt: str = PROMPT, *extra: str) -> Run:
    """``codex exec --json PROMPT`` with a custom model provider through ``md`` (``extra``: more
    ``codex exec`` arguments)."""
    codex = require(CODEX)
    home = tmp / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    base = f"{md.url}/v1" if md.mode == "reverse" else f"{upstream_url}/v1"
    (codex_home / "config.toml").write_text(
        "\n".join(
            [
                'model = "gpt-5.5"',
                'model_provider = "proxai"',
                "[model_providers.proxai]",
                'name = "ProxAI"',
                f'base_url = "{base}"',
                'env_key = "PROXAI_E2E_KEY"',
                'wire_api = "responses"',
                "[features]",  # no plugin sync, no apps: there is no internet
                "plugins = false",
                "remote_plugin = false",
                "apps = false",
                "[analytics]",  # no usage metrics upload
                "enabled = false",
                "",
            ]
        )
    )
    env = {**_base_env(home), "CODEX_HOME": str(codex_home), "PROXAI_E2E_KEY": "sk-proxai-e2e-not-a-secret"}
    if md.mode == "regular":
        env |= {"HTTPS_PROXY": md.proxy_url, "CODEX_CA_CERTIFICATE": str(md.ca_path)}
    args = [str(codex), "exec", "--json", "--skip-git-repo-check", *extra, prompt]
    return _run(args, env, workspace(tmp))


def claude_tool_inputs(run: Run) -> list[tuple[str, Any]]:
    """(tool name, input) of every tool call Claude Code reported running."""
    out = []
    for ev in run.events():
        if ev.get("type") == "assistant":
            for block in ev["message"].get("content") or []:
                if block.get("type") == "tool_use":
                    out.append((block["name"], block["input"]))
    return out


def claude_result(run: Run) -> str | None:
    results = [ev for ev in run.events() if ev.get("type") == "result"]
    return results[-1].get("result") if results else None


def codex_commands(run: Run) -> list[tuple[str, str, int | None]]:
    """(command, output, exit code) of every command Codex completed."""
    return [
        (ev["item"]["command"], ev["item"]["aggregated_output"], ev["item"].get("exit_code"))
        for ev in run.events()
        if ev.get("type") == "item.completed" and ev.get("item", {}).get("type") == "command_execution"
    ]


def codex_messages(run: Run, kind: str = "agent_message") -> list[str]:
    return [
        ev["item"]["text"]
        for ev in run.events()
        if ev.get("type") == "item.completed" and ev.get("item", {}).get("type") == kind
    ]
