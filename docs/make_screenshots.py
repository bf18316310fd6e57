"""Make the screenshots of docs/contentview.md with the real front ends and default options:
``.venv/bin/python docs/make_screenshots.py`` (needs Debian's chromium and tmux: ``.ci/install-ui``).

The embedded fake upstream answers the real ``openai`` and ``anthropic`` SDKs through the addon in
reverse mode (one route translates an Anthropic client to a Chat upstream). Then:

- mitmweb in headless chromium (DevTools protocol): the flow list with markers and the comment
  column, and the ProxAI view of a truncated flow and of a translated one -> ``docs/img/mitmweb-*.png``;
- mitmproxy's console in tmux: the flow list and the ProxAI view of a streamed flow, captured with its
  colours (``capture-pane -e``) and drawn as the terminal showed it (cell by cell, in a monospace page
  rendered by the same chromium) -> ``docs/img/console-*.png``.

Every step waits on a condition (the text it needs on screen), never on a sleep.
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "addon")]

import anthropic  # noqa: E402
import openai  # noqa: E402
from tests.e2e.harness import free_port  # noqa: E402
from tests.visibility.test_mitm_tools import TOKEN, addon_mitmweb, web_flows  # noqa: E402
from tests.visibility.ui import Chromium, Tmux, chromium, poll, tmux_session  # noqa: E402

from proxai.upstream import FakeUpstream  # noqa: E402

OUT = ROOT / "docs" / "img"
BIN = Path(sys.executable).parent
ADDON = ROOT / "addon" / "proxai.py"
PROMPT = "What's the weather in Paris and Tokyo?"
ROUTES = """
[[route]]
name = "claude-on-chat"
match = {{ path = "/v1/messages", model = "translated-*" }}
upstream = "{upstream}/v1"
protocol = "openai_chat"
model = "parallel_tools"
"""


# -- traffic ----------------------------------------------------------------------------------------


def _chat(port: int, model: str) -> None:
    with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-demo", max_retries=0) as c:
        try:
            with c.chat.completions.stream(
                model=model,
                messages=[{"role": "user", "content": PROMPT}],
                stream_options={"include_usage": True},
            ) as s:
                s.get_final_completion()
        except openai.OpenAIError:
            pass  # the SDK's verdict on an error or a truncation is part of what is shown


def _anthropic(port: int, model: str) -> None:
    with anthropic.Anthropic(
        base_url=f"http://127.0.0.1:{port}",
        api_key="sk-ant-demo",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(trust_env=False),
    ) as c:
        try:
            with c.messages.stream(
                model=model, max_tokens=1024, messages=[{"role": "user", "content": PROMPT}]
            ) as s:
                s.get_final_message()
        except anthropic.AnthropicError:
            pass


def _responses(port: int, model: str) -> None:
    with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-demo", max_retries=0) as c:
        try:
            with c.responses.stream(model=model, input=PROMPT) as s:
                s.get_final_response()
        except (openai.OpenAIError, RuntimeError):
            pass


TRAFFIC: list[tuple[Callable[[int, str], None], str]] = [
    (_chat, "parallel_tools"),
    (_anthropic, "max_tokens"),
    (_chat, "max_tokens"),
    (_responses, "error_midstream"),
    (_anthropic, "truncated"),
    (_chat, "rate_limit"),
    (_anthropic, "translated-agent"),
    (_responses, "thinking"),
]


# -- mitmweb ----------------------------------------------------------------------------------------


def mitmweb_shots(up: FakeUpstream, browser: Chromium, workdir: Path) -> list[Path]:
    with addon_mitmweb(workdir, up.url, ROUTES.format(upstream=up.url)) as (base, headers, port):
        for call, model in TRAFFIC:
            call(port, model)

        def finished() -> list[dict[str, Any]] | None:
            got = web_flows((base, headers))
            return got if len(got) == len(TRAFFIC) and all(x["comment"] for x in got) else None

        flows = poll("every flow's comment", finished)
        by_comment = {f["comment"].split(" · ")[0] + " " + f["comment"].split(" · ")[1]: f for f in flows}
        shots = []
        for name, key in (
            ("mitmweb-truncated.png", "truncated (max_tokens) anthropic max_tokens"),
            ("mitmweb-translated.png", "completed (tool_use) anthropic<-chat parallel_tools"),
        ):
            flow = by_comment[key]
            browser.goto(f"{base}/?token={TOKEN}#/flows/{flow['id']}/response")
            browser.wait_text(".contentview pre", "ProxAI ")
            browser.wait_text(".flow-table", "error: rate_limited")
            path = OUT / name
            browser.screenshot(path)
            shots.append(path)
        return shots


# -- the console ------------------------------------------------------------------------------------

PALETTE = ["#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5"]
BRIGHT = ["#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff"]
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def _color256(n: int) -> str:
    if n < 8:
        return PALETTE[n]
    if n < 16:
        return BRIGHT[n - 8]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return f"#{steps[n // 36]:02x}{steps[(n // 6) % 6]:02x}{steps[n % 6]:02x}"
    grey = 8 + (n - 232) * 10
    return f"#{grey:02x}{grey:02x}{grey:02x}"


def _extended(codes: list[int], i: int) -> tuple[str, int] | None:
    """The colour of an extended SGR colour at ``codes[i]`` (38 or 48): 256-colour ``5;n`` or true
    colour ``2;r;g;b``, and how many codes it used after ``codes[i]``; None when incomplete."""
    if i + 2 < len(codes) and codes[i + 1] == 5:
        return _color256(codes[i + 2]), 2
    if i + 4 < len(codes) and codes[i + 1] == 2:
        return f"#{codes[i + 2]:02x}{codes[i + 3]:02x}{codes[i + 4]:02x}", 4
    return None


def ansi_html(screen: str, title: str) -> str:
    """A page drawing a captured terminal (``tmux capture-pane -e``): SGR colours, bold, reverse."""
    fg: str | None = None
    bg: str | None = None
    bold = reverse = False
    out: list[str] = []
    for line in screen.rstrip("\n").split("\n"):
        pos = 0
        for m in [*SGR.finditer(line), None]:
            text = line[pos : m.start() if m else len(line)]
            if text:
                f, b = (bg or "#1e1e1e", fg or "#d0d0d0") if reverse else (fg or "#d0d0d0", bg)
                style = (
                    f"color:{f};" + (f"background:{b};" if b else "") + ("font-weight:bold;" if bold else "")
                )
                out.append(f'<span style="{style}">{html.escape(text)}</span>')
            if m is None:
                break
            pos = m.end()
            codes = [int(c) if c else 0 for c in m.group(1).split(";")] or [0]
            i = 0
            while i < len(codes):
                c = codes[i]
                if c == 0:
                    fg = bg = None
                    bold = reverse = False
                elif c == 1:
                    bold = True
                elif c == 22:
                    bold = False
                elif c == 7:
                    reverse = True
                elif c == 27:
                    reverse = False
                elif 30 <= c <= 37:
                    fg = PALETTE[c - 30]
                elif 90 <= c <= 97:
                    fg = BRIGHT[c - 90]
                elif c == 39:
                    fg = None
                elif 40 <= c <= 47:
                    bg = PALETTE[c - 40]
                elif 100 <= c <= 107:
                    bg = BRIGHT[c - 100]
                elif c == 49:
                    bg = None
                elif c in (38, 48) and (ext := _extended(codes, i)) is not None:
                    colour, used = ext
                    if c == 38:
                        fg = colour
                    else:
                        bg = colour
                    i += used
                i += 1
        out.append("\n")
    return (
        f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
        '<body style="margin:0;background:#1e1e1e">'
        "<pre id=term style=\"margin:0;padding:8px;font:14px/1.25 'DejaVu Sans Mono',monospace;"
        f'color:#d0d0d0;background:#1e1e1e">{"".join(out)}</pre>'
    )


def _draw(browser: Chromium, screen: str, path: Path, workdir: Path) -> Path:
    page = workdir / (path.stem + ".html")
    page.write_text(ansi_html(screen, path.stem))
    browser.goto(page.as_uri())
    first = next(line for line in SGR.sub("", screen).splitlines() if line.strip())
    browser.wait_text("#term", first.strip()[:20])
    browser.screenshot(path)
    return path


def console_shots(up: FakeUpstream, browser: Chromium, workdir: Path) -> list[Path]:
    port = free_port()
    command = [
        str(BIN / "mitmproxy"),
        "--mode",
        f"reverse:{up.url}",
        "--listen-host",
        "127.0.0.1",
        "--listen-port",
        str(port),
        "--set",
        f"confdir={workdir / 'conf'}",
        "--set",
        f"proxai_diagnostics_dir={workdir / 'diagnostics'}",
        "-s",
        str(ADDON),
    ]
    with tmux_session(command, cwd=workdir, width=150, height=40) as tmux:
        tmux.wait_for("Flows")
        poll("the console's listening line", lambda: f"127.0.0.1:{port}" in tmux.screen(), last=tmux.screen)
        for call, model in TRAFFIC[:6]:
            call(port, model)
        poll(
            "six flows in the list",
            lambda: sum(1 for x in tmux.screen().splitlines() if " POST " in x) == 6,
            last=tmux.screen,
        )
        shots = [_draw(browser, _settled(tmux), OUT / "console-flows.png", workdir)]
        tmux.keys("Down", "Enter")  # the second flow: Anthropic, cut by max_tokens
        tmux.wait_for("Flow Details")
        tmux.keys("Tab")
        tmux.wait_for("ProxAI · truncated (max_tokens)")
        shots.append(_draw(browser, _settled(tmux), OUT / "console-view.png", workdir))
        return shots


def _settled(tmux: Tmux) -> str:
    """The screen once two captures in a row agree (the console has drawn everything)."""
    last: list[str] = [""]

    def same() -> str | None:
        now = tmux.screen_ansi()
        if now == last[0]:
            return now
        last[0] = now
        return None

    return poll("a settled screen", same, last=lambda: last[0])


def main() -> int:
    import tempfile

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="proxai-shots-") as tmp:
        workdir = Path(tmp)
        (workdir / "web").mkdir()
        (workdir / "console").mkdir()
        with FakeUpstream(time_scale=0.02) as up, chromium(width=1700, height=900) as browser:
            shots = mitmweb_shots(up, browser, workdir / "web")
            shots += console_shots(up, browser, workdir / "console")
    for path in shots:
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
