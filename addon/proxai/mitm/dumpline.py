"""mitmdump's line for each LLM flow: protocol, model, verdict, tokens, time to first token, duration,
printed when the flow ends, at mitmdump's default verbosity (docs/design/visibility.md, "mitmdump").

mitmdump's ``Dumper`` prints a flow in its own ``response`` / ``error`` hook, which runs after the
script's (default addons come first). ``DumpLine`` is therefore added at the END of the addon chain
when mitmproxy is running (``Visibility.running``), so its line comes right under the flow's
``<< 200 OK 1.3k`` line. It prints through the Dumper: same output, same filter (``dumper_filter``),
same verbosity (``flow_detail`` 0 / ``-q`` prints nothing), and colour only where the Dumper uses it
(a terminal that supports it). The text itself is ``proxai.outputs.verdict.dump_line`` (terminal-safe).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping
from typing import Any

from mitmproxy import ctx, http
from mitmproxy.utils import human

from proxai.outputs import verdict
from proxai.safety.termsafe import log_safe

logger = logging.getLogger(__name__)

NAME = "proxai_dumpline"


class DumpLine:
    """The tail addon. ``name`` keeps it unique in the addon manager (one per mitmdump)."""

    name = NAME

    def __init__(self) -> None:
        self.dumper: Any = None
        self.dumped: weakref.WeakSet[http.HTTPFlow] = weakref.WeakSet()

    def running(self) -> None:
        self.dumper = ctx.master.addons.get("dumper")  # type: ignore[no-untyped-call]

    def response(self, flow: http.HTTPFlow) -> None:
        self._echo(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        # A flow with a response was already echoed by ``response`` (mitmproxy calls both when the
        # client hangs up after the response hook); one line per flow.
        self._echo(flow)

    def _echo(self, flow: http.HTTPFlow) -> None:
        meta = flow.metadata.get("proxai")
        dumper = self.dumper
        if not isinstance(meta, Mapping) or not meta.get("outcome") or dumper is None:
            return
        if flow in self.dumped:
            return
        try:
            if not dumper.match(flow):
                return
            self.dumped.add(flow)
            v = verdict.verdict(meta)
            style = verdict.DUMP_STYLE.get(str(v), {})
            dumper.echo(" " * _indent(flow) + dumper.style(verdict.dump_line(meta), **style))
        except Exception as exc:  # never break mitmdump's output for a bug of ours
            logger.warning("proxai: cannot print the flow line: %s: %s", type(exc).__name__, log_safe(exc))


def _indent(flow: http.HTTPFlow) -> int:
    """The column of the Dumper's ``<<`` (at ``flow_detail`` 1 it aligns it under the request's
    method, after the client address), so the line reads as part of the flow."""
    if ctx.options.flow_detail != 1:
        return 4
    return max(4, len(human.format_address(flow.client_conn.peername)) - 1)


def install() -> None:
    """Add the tail addon once, in mitmdump only (a master with a Dumper)."""
    addons = ctx.master.addons
    if addons.get("dumper") is None or addons.get(NAME) is not None:  # type: ignore[no-untyped-call]
        return
    line = DumpLine()
    addons.add(line)  # type: ignore[no-untyped-call]
    line.running()


def uninstall() -> None:
    addons = ctx.master.addons
    line = addons.get(NAME)  # type: ignore[no-untyped-call]
    if line is not None:
        addons.remove(line)  # type: ignore[no-untyped-call]
