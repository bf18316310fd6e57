"""The real ``mitmproxy`` console under tmux, with default options: a streamed LLM flow through the
addon shows its marker in the flow list and the ProxAI view of its response (streamed bodies are
kept by default; the console asks no view for an empty body)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from tests.e2e.harness import free_port

from .ui import Tmux, poll, tmux_session

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
ADDON = Path(__file__).resolve().parents[2] / "addon" / "proxai.py"


@pytest.fixture
def console(tmp_path: Path) -> Iterator[tuple[Tmux, int]]:
    from proxai.upstream import FakeUpstream

    port = free_port()
    with (
        FakeUpstream(time_scale=0.02) as up,
        tmux_session(
            [
                str(BIN / "mitmproxy"),
                "--mode",
                f"reverse:{up.url}",
                "--listen-host",
                "127.0.0.1",
                "--listen-port",
                str(port),
                "--set",
                f"confdir={tmp_path / 'conf'}",
                "--set",
                f"proxai_diagnostics_dir={tmp_path / 'diagnostics'}",
                "-s",
                str(ADDON),
            ],
            cwd=tmp_path,
        ) as tmux,
    ):
        tmux.wait_for("Flows")
        poll("the console's listening line", lambda: f"127.0.0.1:{port}" in tmux.screen(), last=tmux.screen)
        yield tmux, port


def _stream(port: int, model: str) -> None:
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test-console", max_retries=0)
    with client:
        chunks = list(
            client.chat.completions.create(
                model=model,
                messages=[{"role": "user", "content": "Weather in Paris and Tokyo?"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    assert chunks[-1].usage is not None


def test_console_shows_the_proxai_view_of_a_streamed_flow(console: tuple[Tmux, int]) -> None:
    tmux, port = console
    _stream(port, "max_tokens")
    # The flow list: the flow, marked as truncated.
    screen = tmux.wait_for("✂")
    rows = [x for x in screen.splitlines() if "/v1/chat/completions" in x]
    assert len(rows) == 1 and "✂" in rows[0] and "200" in rows[0], screen
    tmux.keys("Enter")
    tmux.wait_for("Flow Details")
    tmux.keys("Tab")  # Request -> Response
    screen = tmux.wait_for("ProxAI · truncated (length) · openai_chat max_tokens · streamed")
    lines = [line.rstrip() for line in screen.splitlines()]
    at = lines.index("ProxAI · truncated (length) · openai_chat max_tokens · streamed")
    assert lines[at - 1].startswith("ProxAI ") and "[m:auto]" in lines[at - 1], screen  # chosen automatically
    assert lines[at + 1 : at + 6] == [
        "The answer was cut by the token limit (length): the client got a partial answer.",
        "── answer ──",
        "Paris is sunny today with a high of",
        # openai-python's final Chat completion refuses a choice that ended with length
        "── official SDKs ──",
        "openai_chat.finish_length at event 12: choice 0 ended with finish_reason 'length'",
    ], screen
    usage = lines.index("── usage and timing ──")
    assert usage > at + 6, screen
    assert lines[usage + 1] == "tokens: input 25 · output 8 · total 33 · cache read 0", screen
    assert "No content" not in screen
