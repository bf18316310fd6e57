"""``python -m proxai <command>`` and the installed ``proxai`` command: the command-line entry point.

One module per subcommand (``proxai/cli/<name>.py``) with ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; add a module name to ``SUBCOMMANDS`` to add
a command (to both: the ``proxai`` console script is ``main`` here). A module may instead name
commands whose arguments belong to another program: ``PASSTHROUGH`` (command -> help) and
``run_raw(command, args) -> int``, which gets every argument after the command unparsed
(``proxai mitmdump --version``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

SUBCOMMANDS = (
    "proxai.cli.demo",
    "proxai.cli.report",
    "proxai.cli.export",
    "proxai.cli.diff",
    "proxai.cli.addon_path",
    "proxai.cli.tools",
    "proxai.cli.replay",
)


def _load() -> list[ModuleType]:
    mods: list[ModuleType] = []
    for name in SUBCOMMANDS:
        try:
            mods.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
    return mods


def _prog() -> str:
    """``proxai`` when started as the console script, ``python -m proxai`` otherwise."""
    return "python -m proxai" if os.path.basename(sys.argv[0]) == "__main__.py" else "proxai"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    mods = _load()
    for mod in mods:
        if argv and argv[0] in getattr(mod, "PASSTHROUGH", {}):
            code: int = mod.run_raw(argv[0], argv[1:])
            return code
    parser = argparse.ArgumentParser(prog=_prog(), description="ProxAI command-line tools")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for mod in mods:
        for name, help_text in getattr(mod, "PASSTHROUGH", {}).items():
            sub.add_parser(name, help=help_text)  # listed only: main hands these over before parsing
        if hasattr(mod, "NAME"):
            p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
            mod.add_arguments(p)
            p.set_defaults(_run=mod.run)
    args = parser.parse_args(argv)
    code = args._run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
