"""Starting mitmdump, mitmweb or mitmproxy with the addon loaded from the installed package.

``proxai mitmdump [ARGS]`` is ``mitmdump -s <script> [ARGS]`` with the script of this package
(``script_path()``, also printed by ``python -m proxai addon-path``), so an installed wheel needs no
checkout (docs/usage.md, "Installed as a package"). The tool is the one installed beside this
interpreter (the venv's ``bin/``), else the one on ``PATH``; it replaces this process (``exec``), so
signals, the terminal and the exit status are the tool's own. Nothing here imports mitmproxy.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

TOOLS = ("mitmdump", "mitmweb", "mitmproxy")


class ToolNotFound(Exception):
    """The mitmproxy tool is neither beside this interpreter nor on PATH."""

    def __init__(self, tool: str) -> None:
        super().__init__(
            f"{tool} not found beside {sys.executable} or on PATH: install mitmproxy in this environment "
            "(pip install proxai brings it)"
        )


def script_path() -> Path:
    """The package's mitmdump script (``proxai/mitm/script/proxai_addon.py``)."""
    return Path(__file__).resolve().parent / "script" / "proxai_addon.py"


def tool_binary(tool: str) -> str:
    """The ``mitmdump`` / ``mitmweb`` / ``mitmproxy`` executable to start; ``ToolNotFound`` if none."""
    beside = Path(sys.executable).parent / tool
    if beside.is_file():
        return str(beside)
    found = shutil.which(tool)
    if found is None:
        raise ToolNotFound(tool)
    return found


def tool_argv(tool: str, args: Sequence[str]) -> list[str]:
    """The command line of ``tool`` with the addon loaded: the script first, the caller's arguments after."""
    return [tool_binary(tool), "-s", str(script_path()), *args]


def exec_tool(tool: str, args: Sequence[str]) -> NoReturn:
    """Replace this process with ``tool`` and the addon (never returns: raises ``ToolNotFound`` or
    ``OSError`` when the tool cannot start)."""
    argv = tool_argv(tool, args)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)
