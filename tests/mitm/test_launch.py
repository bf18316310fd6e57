"""The installed package's mitmdump script, ``proxai.mitm.launch`` and the ``proxai`` command's table
(docs/usage.md, "Installed as a package"); the wheel itself: tests/e2e/test_wheel_e2e.py."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from proxai import __main__ as entry
from proxai.mitm import launch
from proxai.mitm.addon import ProxAI

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "addon" / "proxai" / "mitm" / "script" / "proxai_addon.py"


def test_the_script_is_the_package_file_alone_in_its_directory() -> None:
    assert launch.script_path() == SCRIPT
    # mitmproxy leaves the script's directory on sys.path: nothing there may shadow another module
    assert sorted(p.name for p in SCRIPT.parent.iterdir() if p.name != "__pycache__") == [
        "__init__.py",
        "proxai_addon.py",
    ]


def test_the_checkout_script_runs_the_package_script_afresh_each_load() -> None:
    first = runpy.run_path(str(REPO / "addon" / "proxai.py"))["addons"]
    second = runpy.run_path(str(REPO / "addon" / "proxai.py"))["addons"]
    assert [type(a) for a in first] == [ProxAI] and [type(a) for a in second] == [ProxAI]
    assert first[0] is not second[0]  # a reload gets a new addon, as before


def test_a_tool_gets_the_script_first_and_every_argument_unchanged() -> None:
    argv = launch.tool_argv("mitmdump", ["--version", "-s", "other.py", "--set", "proxai_guard=false"])
    assert argv == [
        str(Path(sys.executable).parent / "mitmdump"),
        "-s",
        str(SCRIPT),
        "--version",
        "-s",
        "other.py",
        "--set",
        "proxai_guard=false",
    ]


def test_a_missing_tool_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(launch.sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert entry.main(["mitmweb", "--version"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"proxai mitmweb: mitmweb not found beside {tmp_path / 'bin' / 'python'} or on PATH: "
        "install mitmproxy in this environment (pip install proxai brings it)\n"
    )


def test_addon_path_prints_the_script() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "proxai", "addon-path"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PYTHONPATH": str(REPO / "addon"), "PATH": ""},
    )
    assert out.stdout == f"{SCRIPT}\n" and out.stderr == ""


def test_every_subcommand_is_listed_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        entry.main(["--help"])
    assert done.value.code == 0
    names = [
        n for mod in entry._load() for n in [*getattr(mod, "PASSTHROUGH", {}), getattr(mod, "NAME", "")] if n
    ]
    assert len(names) == len(set(names))
    assert {"demo", "report", "export", "addon-path", "mitmdump", "mitmweb", "mitmproxy"} <= set(names)
    listed = capsys.readouterr().out
    assert [n for n in names if f"\n    {n} " not in listed and f"\n    {n}\n" not in listed] == []


def test_the_demo_says_which_extra_it_needs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from proxai.cli import demo

    real = demo.importlib.util.find_spec
    monkeypatch.setattr(
        demo.importlib.util, "find_spec", lambda name: None if name == "anthropic" else real(name)
    )
    assert entry.main(["demo"]) == 2
    assert (
        capsys.readouterr().err
        == "proxai demo: the demo drives the anthropic SDK: pip install 'proxai[demo]'\n"
    )
