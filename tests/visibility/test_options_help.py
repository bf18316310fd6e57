"""Every ``proxai_*`` option has help text, and ``mitmdump --options`` shows them all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mitmproxy.addonmanager import traverse
from mitmproxy.test import taddons

from proxai.mitm.addon import ProxAI
from proxai.mitm.commands import Visibility

ROOT = Path(__file__).resolve().parents[2]


def proxai_options() -> dict[str, str]:
    main = ProxAI()
    assert any(isinstance(a, Visibility) for a in traverse([main]))  # the main addon includes it
    with taddons.context(main) as tctx:
        return {name: o.help for name, o in tctx.options.items() if name.startswith("proxai_")}


def test_every_option_has_help() -> None:
    opts = proxai_options()
    assert {"proxai_export_har", "proxai_export_max_body", "proxai_filter"} <= set(opts)
    missing = sorted(name for name, text in opts.items() if len((text or "").strip()) < 20)
    assert missing == []


def test_mitmdump_lists_the_options() -> None:
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "mitmdump"),
            "-n",
            "-s",
            str(ROOT / "addon" / "proxai.py"),
            "--options",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    listed = {line.split(":", 1)[0] for line in proc.stdout.splitlines() if line.startswith("proxai_")}
    assert set(proxai_options()) <= listed
    # Each one is preceded by its help comment.
    lines = proc.stdout.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("proxai_"):
            assert lines[i - 1].startswith("# "), line
