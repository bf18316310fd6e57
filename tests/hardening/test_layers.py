"""The layers are enforced by a tool (docs/design/README.md, "The layers"): ``lint-imports`` with
the contracts of pyproject.toml passes on the package, and fails, naming the contract and the
import, when an import that points up, or an import of mitmproxy outside mitm/, is added to a copy
of it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(addon: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(addon)}
    return subprocess.run(
        [str(LINT), "--no-logo", "--no-cache", str(ROOT / "pyproject.toml")],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _copy(tmp: Path) -> Path:
    addon = tmp / "addon"
    shutil.copytree(ROOT / "addon" / "proxai", addon / "proxai", ignore=shutil.ignore_patterns("__pycache__"))
    return addon


def _append(module: Path, line: str) -> None:
    module.write_text(module.read_text("utf-8") + f"\n{line}\n", "utf-8")


def test_the_package_keeps_every_contract(tmp_path: Path) -> None:
    r = _lint(ROOT / "addon", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Contracts: 3 kept, 0 broken." in r.stdout


def test_an_import_that_points_up_fails(tmp_path: Path) -> None:
    """The neutral layer importing the translation layer, and the observer importing the carrier."""
    addon = _copy(tmp_path)
    _append(addon / "proxai" / "stream" / "limits.py", "import proxai.translate.headers  # noqa")
    _append(addon / "proxai" / "pipeline" / "observe.py", "import proxai.pipeline.carrier  # noqa")
    r = _lint(addon, tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Contracts: 1 kept, 2 broken." in r.stdout
    assert "The layers, from the shell down to the core: imports point down only BROKEN" in r.stdout
    assert "proxai.stream.limits -> proxai.translate.headers" in r.stdout
    assert "A flow's pipeline: the carrier drives the pipeline, which builds the observer BROKEN" in r.stdout
    assert "proxai.pipeline.observe -> proxai.pipeline.carrier" in r.stdout


def test_mitmproxy_outside_mitm_fails(tmp_path: Path) -> None:
    addon = _copy(tmp_path)
    _append(addon / "proxai" / "core" / "model.py", "import mitmproxy.http  # noqa")
    r = _lint(addon, tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Only mitm/ imports mitmproxy (the sans-IO core never does) BROKEN" in r.stdout
    assert "proxai.core is not allowed to import mitmproxy" in r.stdout
    assert "proxai.core.model -> mitmproxy (l." in r.stdout
