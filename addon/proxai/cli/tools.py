"""``proxai mitmdump|mitmweb|mitmproxy [ARGS]``: start that mitmproxy tool with the addon loaded from
the installed package (docs/usage.md, "Installed as a package"); see ``proxai.mitm.launch``.

Every argument after the tool's name is the tool's own (``proxai mitmdump --version`` is mitmdump's
``--version``): ``proxai.__main__`` hands them over unparsed (``PASSTHROUGH``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

PASSTHROUGH = {
    "mitmdump": "start mitmdump with the addon loaded (every further argument is mitmdump's)",
    "mitmweb": "start mitmweb with the addon loaded (every further argument is mitmweb's)",
    "mitmproxy": "start mitmproxy's console with the addon loaded (every further argument is mitmproxy's)",
}


def run_raw(tool: str, args: Sequence[str]) -> int:
    """Replace this process with ``tool -s <the package's script> ARGS``; 2 when it cannot start."""
    from proxai.mitm.launch import ToolNotFound, exec_tool

    try:
        exec_tool(tool, args)
    except ToolNotFound as exc:
        print(f"proxai {tool}: {exc}", file=sys.stderr)
    except OSError as exc:
        print(f"proxai {tool}: cannot start it: {exc}", file=sys.stderr)
    return 2
