"""``python -m proxai replay RUN.flow [RUN.flow ...]``: answer LLM clients from recorded runs
(docs/replay.md, "Replay offline").

Reads the files first (the same reader the addon uses, ``proxai.mitm.replay_load.load``: a bad file is
one line and exit 2, never a traceback), then starts mitmdump with the package's script
(``proxai.mitm.launch``) in reverse mode with ``proxai_replay`` set, prints the environment each
client needs (docs/recipes.md's variables), and runs until Ctrl-C, which stops mitmdump and exits 0.
The reverse target is the recording's own upstream (where a miss goes with ``--miss upstream``), or
``--upstream``.
"""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from urllib.parse import urlsplit

NAME = "replay"
HELP = "answer LLM clients from recorded .flow files (mitmdump in reverse mode with proxai_replay)"
NO_UPSTREAM = "http://127.0.0.1:9"  # nothing listens there: a miss forwarded upstream fails at once


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", metavar="RUN.flow", nargs="+", help="recorded runs (mitmdump -w)")
    parser.add_argument("--port", type=int, default=8080, help="the port clients connect to (default 8080)")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--speed", default="1", help="1 as recorded (default), 2 twice as fast, 0 without any delay"
    )
    parser.add_argument(
        "--miss",
        choices=("error", "upstream"),
        default="error",
        help="a request no recording matches: answer with where it diverged (default), or send it upstream",
    )
    parser.add_argument(
        "--upstream",
        metavar="URL",
        help="where --miss upstream sends a request (default: the upstream the run was recorded from)",
    )
    parser.add_argument("--save", metavar="OUT.flow", help="save the replayed flows (mitmdump -w OUT.flow)")
    parser.add_argument(
        "--set",
        metavar="OPTION=VALUE",
        action="append",
        default=[],
        dest="options",
        help="another mitmdump option, e.g. --set proxai_faults='stall at=tool_args seconds=5'",
    )


def _fail(message: str) -> int:
    from proxai.safety.termsafe import escape

    print(f"proxai replay: {escape(message, newlines=False)}", file=sys.stderr)
    return 2


def recorded_upstream(urls: Sequence[str]) -> str | None:
    """The scheme, host and port of the first recorded client URL."""
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and parts.netloc:
            return f"{parts.scheme}://{parts.netloc}"
    return None


def client_environment(url: str) -> list[str]:
    """What each client needs to talk to the replay at ``url`` (docs/recipes.md's variables)."""
    return [
        "Claude Code, the Anthropic SDK:",
        f"  export ANTHROPIC_BASE_URL={url}",
        "  export ANTHROPIC_API_KEY=replay         # any value: nothing reaches a provider",
        "The OpenAI SDK, the Agents SDK:",
        f"  export OPENAI_BASE_URL={url}/v1",
        "  export OPENAI_API_KEY=replay",
        "Codex ($CODEX_HOME/config.toml):",
        '  model_provider = "replay"',
        "  [model_providers.replay]",
        '  name = "ProxAI replay"',
        f'  base_url = "{url}/v1"',
        '  env_key = "OPENAI_API_KEY"',
        '  wire_api = "responses"',
    ]


def _listening(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def run(args: argparse.Namespace) -> int:
    from proxai.cli.demo_run import stop_mitmdump
    from proxai.mitm.launch import ToolNotFound, tool_argv
    from proxai.mitm.replay import parse_speed
    from proxai.mitm.replay_load import ReplayFileError, load
    from proxai.safety.termsafe import escape

    try:
        parse_speed(args.speed)
    except ValueError:
        return _fail(f"--speed {args.speed!r} is not a number >= 0")
    if not 0 < args.port < 65536:
        return _fail(f"--port {args.port} is not a port number")
    try:
        cassette, notes = load(args.files)
    except ReplayFileError as exc:
        return _fail(str(exc))
    for note in notes:
        print(f"proxai replay: {escape(note, newlines=False)}", file=sys.stderr)
    upstream = args.upstream or recorded_upstream([e.source.url for e in cassette.entries]) or NO_UPSTREAM
    mitmdump_args = [
        "--mode",
        f"reverse:{upstream}",
        "--listen-host",
        args.host,
        "--listen-port",
        str(args.port),
        "--set",
        "connection_strategy=lazy",
        "--set",
        f"proxai_replay_speed={args.speed}",
        "--set",
        f"proxai_replay_miss={args.miss}",
    ]
    for path in args.files:
        mitmdump_args += ["--set", f"proxai_replay={path}"]
    for option in args.options:
        mitmdump_args += ["--set", option]
    if args.save:
        mitmdump_args += ["-w", args.save]
    try:
        proc = subprocess.Popen(tool_argv("mitmdump", mitmdump_args))
    except (ToolNotFound, OSError) as exc:
        return _fail(str(exc))
    try:
        host = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host
        while not _listening(host, args.port):
            if proc.poll() is not None:
                return _fail(f"mitmdump exited with {proc.returncode} before it listened on port {args.port}")
            time.sleep(0.05)
        url = f"http://{host}:{args.port}"
        lines = [
            f"proxai replay: {len(cassette)} recorded answers from {', '.join(args.files)}, at {url} "
            f"(speed {args.speed}, a miss: {args.miss}); Ctrl-C stops",
            "",
            *client_environment(url),
            "",
        ]
        print(escape("\n".join(lines)), flush=True)
        return _exit_code(proc.wait())
    except KeyboardInterrupt:
        # A terminal's Ctrl-C reached mitmdump too; a SIGINT sent to this process alone is passed on.
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        stop_mitmdump(proc)
        return 0


def _exit_code(code: int) -> int:
    return 0 if code in (0, -2, 130) else code  # mitmdump stopped by Ctrl-C itself


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proxai replay", description=HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))
