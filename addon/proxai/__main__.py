"""``python -m proxai <command>``: the command-line entry point.

One module per subcommand (``proxai/cli_<name>.py``) with ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; add a module name to ``SUBCOMMANDS`` to add
a command.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

SUBCOMMANDS = ("proxai.cli_demo", "proxai.cli_report", "proxai.cli_export", "proxai.cli_diff")


def _load() -> list[ModuleType]:
    mods: list[ModuleType] = []
    for name in SUBCOMMANDS:
        try:
            mods.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
    return mods


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proxai", description="ProxAI command-line tools")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for mod in _load():
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    args = parser.parse_args(argv)
    code: int = args._run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
