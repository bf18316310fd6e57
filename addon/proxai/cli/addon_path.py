"""``python -m proxai addon-path``: print the path of the package's mitmdump script, for
``mitmdump -s "$(python -m proxai addon-path)"`` (docs/usage.md, "Installed as a package")."""

from __future__ import annotations

import argparse

NAME = "addon-path"
HELP = 'print the path of the addon\'s mitmdump script: mitmdump -s "$(python -m proxai addon-path)"'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    from proxai.mitm.launch import script_path

    print(script_path())
    return 0
