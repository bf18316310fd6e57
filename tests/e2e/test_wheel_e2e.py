"""The package as a user installs it: the wheel built from the checkout, installed with its ``demo``
extra into a fresh virtual environment outside the checkout (dependencies from the package index at
the versions ``constraints.txt`` pins), used from there with no checkout on ``sys.path``: the
``proxai`` command, ``python -m proxai addon-path``, the demo, and one flow through
``proxai mitmdump`` (docs/usage.md, "Installed as a package").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from proxai.core.model import Protocol
from proxai.upstream.scenarios import TEXT

from .harness import PATHS, REPO, TEST_HEADER, proxai_meta, running_mitmdump, tag

# building and installing take a minute or more on a loaded machine (the first test pays for it)
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]

INSTALL_TIMEOUT = 900


def _pinned(name: str) -> str:
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line.lower().startswith(f"{name}=="):
            return line.split("==", 1)[1]
    raise AssertionError(f"{name} is not pinned in constraints.txt")


def _package_files(root: Path) -> set[str]:
    """Every file of the package in ``root`` (``proxai/...``), bytecode left out."""
    return {
        p.relative_to(root).as_posix()
        for p in (root / "proxai").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def _run(
    cwd: Path, env: dict[str, str], *args: str, timeout: float = 180.0
) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert out.returncode == 0, f"{args}: exit {out.returncode}\n{out.stdout[-3000:]}{out.stderr[-3000:]}"
    return out


@dataclass(frozen=True)
class Installed:
    root: Path  # a temporary directory outside the checkout: the working directory of every command
    wheel: Path
    venv: Path
    site: Path  # the venv's site-packages
    env: dict[str, str]  # no PYTHONPATH: nothing of the checkout is importable

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``args`` from ``root``; fails the test on a non-zero exit."""
        return _run(self.root, self.env, *args)

    @property
    def script(self) -> Path:
        return self.site / "proxai" / "mitm" / "script" / "proxai_addon.py"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """Built and installed once for the module. The directory is left to pytest's own clean-up of
    old temporary directories (removing a venv here took tens of seconds on a busy disk)."""
    root = tmp_path_factory.mktemp("wheel").resolve()
    assert REPO not in root.parents
    # the build reads a copy (setuptools writes build/ and *.egg-info beside its input)
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(
        REPO / "addon" / "proxai",
        src / "addon" / "proxai",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    dist, venv = root / "dist", root / "venv"
    _run(root, env, sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(src),
         timeout=INSTALL_TIMEOUT)  # fmt: skip
    (wheel,) = dist.glob("proxai-*.whl")
    _run(root, env, sys.executable, "-m", "venv", str(venv), timeout=INSTALL_TIMEOUT)
    _run(root, env, str(venv / "bin" / "pip"), "install", "-q", "--no-compile",
         "-c", str(REPO / "constraints.txt"), f"{wheel}[demo]", timeout=INSTALL_TIMEOUT)  # fmt: skip
    purelib = _run(root, env, str(venv / "bin" / "python"), "-c",
                   "import sysconfig; print(sysconfig.get_paths()['purelib'])")  # fmt: skip
    return Installed(root=root, wheel=wheel, venv=venv, site=Path(purelib.stdout.strip()), env=env)


def test_the_wheel_holds_every_file_of_the_package_and_the_command(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as whl:
        names = whl.namelist()
        info = {
            n.split("/", 1)[1]: whl.read(n).decode() for n in names if n.split("/")[0].endswith(".dist-info")
        }
    shipped = {n for n in names if n.startswith("proxai/")}
    assert shipped == _package_files(REPO / "addon")  # data files too, not only modules
    assert "proxai/mitm/script/proxai_addon.py" in shipped
    assert {n.split("/")[0] for n in names} == {"proxai", "proxai-0.1.0.dist-info"}  # no top-level proxai.py
    assert "[console_scripts]\nproxai = proxai.__main__:main\n" in info["entry_points.txt"]
    requires = [line for line in info["METADATA"].splitlines() if line.endswith('extra == "demo"')]
    assert requires == [
        'Requires-Dist: openai>=1.99; extra == "demo"',
        'Requires-Dist: anthropic>=0.60; extra == "demo"',
    ]


def test_the_installed_command_and_addon_path(installed: Installed) -> None:
    where = installed.run(installed.bin("python"), "-c", "import proxai; print(proxai.__file__)")
    assert where.stdout.strip() == str(installed.site / "proxai" / "__init__.py")  # not the checkout
    version = installed.run(installed.bin("proxai"), "mitmdump", "--version")
    assert version.stdout.splitlines()[0] == f"Mitmproxy: {_pinned('mitmproxy')}"
    path = installed.run(installed.bin("python"), "-m", "proxai", "addon-path")
    assert path.stdout == f"{installed.script}\n" and installed.script.is_file()
    # `proxai` is `python -m proxai`'s table, whatever subcommands it holds
    listed = installed.run(installed.bin("proxai"), "--help").stdout
    env = {**installed.env, "PYTHONPATH": str(REPO / "addon")}
    checkout = _run(installed.root, env, sys.executable, "-m", "proxai", "--help").stdout
    assert listed.startswith("usage: proxai [-h] COMMAND ...\n")
    assert listed == checkout.replace("usage: python -m proxai ", "usage: proxai ", 1)


def test_the_demo_runs_from_the_installed_package(installed: Installed) -> None:
    flows = installed.root / "flows"
    out = installed.run(installed.bin("proxai"), "demo", "--flows-dir", str(flows), "--time-scale", "0.02")
    rows = [line for line in out.stdout.splitlines() if line.split()[:1] == ["openai_chat"]]
    assert len(rows) == 11 and " completed " in rows[0], out.stdout
    assert f"\n33 flows saved to {flows / 'demo.flow'} in " in out.stdout
    log = (flows / "demo-mitmdump.log").read_text()
    assert f"Loading script {installed.script}\n" in log and "Traceback" not in log, log[-3000:]


def test_one_flow_through_proxai_mitmdump(installed: Installed, upstream: Any) -> None:
    with running_mitmdump(
        upstream.url,
        mode="reverse",
        workdir=installed.root / "mitmdump",
        command=[installed.bin("proxai"), "mitmdump"],
        cwd=installed.root,
        env={"PYTHONPATH": ""},  # empty: ignored by Python, so nothing of the checkout is importable
    ) as md:
        t = tag()
        body = {"model": "text", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with md.http_client() as client:
            r = client.post(
                md.base_url(PATHS[Protocol.OPENAI_CHAT]), content=orjson.dumps(body), headers={TEST_HEADER: t}
            )
        assert r.status_code == 200
        meta = proxai_meta(md.wait_flow(t))
        log = md.log_tail(100_000)
    assert (meta["protocol"], meta["outcome"], meta["stop_class"]) == ("openai_chat", "completed", "end_turn")
    assert meta["text_bytes"] == len(TEXT.encode())
    assert f"Loading script {installed.script}\n" in log and "Traceback" not in log, log[-3000:]
