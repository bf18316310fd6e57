"""The visibility addon: the "ProxAI" contentview and the ``proxai.export`` / ``proxai.report``
commands, with their options.

Visibility in mitmproxy itself (docs/design/visibility.md): contentview, commands, options with help
text. The main addon
includes this one (``ProxAI.addons``), so ``mitmdump -s addon/proxai.py`` gets it too. Conventions
after ``mitmproxy/addons/savehar.py``: options in ``load``, validated in ``configure``,
``@command.command("proxai.<verb>")``, ``logging.getLogger(__name__)``.

Rule: the report shows each flow's outcome and the unfinished-tool diagnostics (open tool calls,
recent tail; docs/design/outcomes.md).
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Sequence

from mitmproxy import command, ctx, exceptions, http, types
from mitmproxy import flow as mflow
from mitmproxy.addonmanager import Loader
from mitmproxy.log import ALERT

from proxai.mitm import contentview, dumpline
from proxai.mitm.export import export_bundle
from proxai.mitm.flowrows import SeenFlow, report_rows, seen, seen_rows
from proxai.mitm.option_errors import checked_options
from proxai.outputs.report import table_lines
from proxai.safety.termsafe import escape

logger = logging.getLogger(__name__)

RECENT_FLOWS = 500  # mitmdump has no view: proxai.report falls back to the last LLM flows seen


class Visibility:
    """Contentview registration, ``proxai.export`` and ``proxai.report``."""

    def __init__(self) -> None:
        # What the report reads of each of them (``SeenFlow``), never the flow: holding the flow
        # would hold its kept body (and count it against proxai_keep_body_total) and its request
        # until RECENT_FLOWS more flows have passed.
        self.recent: collections.deque[SeenFlow] = collections.deque(maxlen=RECENT_FLOWS)
        # the ids (``flow.id``) of the flows in ``recent``: whether a flow is in it without a scan
        # of up to RECENT_FLOWS entries per flow
        self._recent_ids: set[str] = set()

    def load(self, loader: Loader) -> None:
        loader.add_option(
            "proxai_export_har",
            bool,
            False,
            "proxai.export also writes a HAR file (<path>.har) of the redacted flows beside the .flow "
            "file and the summary JSON.",
        )
        loader.add_option(
            "proxai_export_max_body",
            int,
            0,
            "proxai.export cuts request and response bodies longer than this many bytes (after "
            "redaction) and notes the cut in the flow; 0 keeps whole bodies.",
        )
        contentview.register()

    @checked_options
    def configure(self, updated: set[str]) -> None:
        if "proxai_export_max_body" in updated and ctx.options.proxai_export_max_body < 0:
            raise exceptions.OptionsError(  # type: ignore[no-untyped-call]
                "proxai_export_max_body must be >= 0 (0 = no limit)"
            )

    def running(self) -> None:
        dumpline.install()
        self._comment_column()

    def done(self) -> None:
        contentview.unregister()
        dumpline.uninstall()

    @staticmethod
    def _comment_column() -> None:
        """mitmweb: the flow comment (ProxAI's verdict) is not a default column; add it when the
        user left ``web_columns`` at mitmweb's default."""
        opts = ctx.options
        if "web_columns" not in opts:
            return
        default = opts.default("web_columns")
        if list(opts.web_columns) == list(default) and "comment" not in default:
            opts.update(web_columns=[*default, "comment"])  # type: ignore[no-untyped-call]

    # ``ProxAI.response`` / ``ProxAI.error`` call these after their own part (mitmproxy's dispatch
    # of the hook to a child costs more than the part); ``ViewOnly`` is the addon on its own.

    def after_response(self, flow: http.HTTPFlow) -> None:
        self._body_placeholder(flow)
        self._remember(flow)

    def after_error(self, flow: http.HTTPFlow) -> None:
        self._body_placeholder(flow)
        self._remember(flow)

    @staticmethod
    def _body_placeholder(flow: http.HTTPFlow) -> None:
        """A streamed body mitmproxy did not store is ``None``, and for ``None`` every mitmproxy front
        end prints "Content is missing." without asking any contentview. An empty body lets the ProxAI
        view show the live summary (and say the body was not stored). Headers are left untouched; the
        stream has already been sent, so nothing goes on the wire."""
        if (
            flow.live
            and flow.response is not None
            and flow.response.raw_content is None
            and "proxai" in flow.metadata
        ):
            flow.response.raw_content = b""

    def _remember(self, flow: http.HTTPFlow) -> None:
        if "proxai" not in flow.metadata or flow.id in self._recent_ids:
            return
        try:
            got = seen(flow)  # a recorded summary as it is (without one: observed from the body)
        except Exception:
            logger.warning("proxai: the report cannot read this flow", exc_info=True)
            return
        if got is None:
            return
        recent = self.recent
        if len(recent) == recent.maxlen:
            self._recent_ids.discard(recent[0].id)  # the oldest, which the append drops
        recent.append(got)
        self._recent_ids.add(flow.id)

    @command.command("proxai.export")  # type: ignore[untyped-decorator]
    def export(self, flows: Sequence[mflow.Flow], path: types.Path) -> str:
        """Write a redacted bug-report bundle for FLOWS: <path>.flow, <path>.summary.json and, with
        proxai_export_har, <path>.har. Secrets (auth headers, API keys, cookies, tokens) are removed.
        Returns what was written (mitmweb's command bar shows it) and logs it at ALERT."""
        try:
            res = export_bundle(
                flows,
                str(path),
                har=bool(ctx.options.proxai_export_har),
                max_body=int(ctx.options.proxai_export_max_body),
            )
        except OSError as exc:
            raise exceptions.CommandError(f"proxai.export: cannot write {path}: {exc}") from exc
        written = [res.flow_path, res.summary_path] + ([res.har_path] if res.har_path else [])
        said = f"proxai.export: {res.flows} flow(s) redacted and written to {', '.join(written)}" + (
            f" ({res.truncated_bodies} bodies truncated)" if res.truncated_bodies else ""
        )
        logger.log(ALERT, said)
        return said

    @command.command("proxai.report")  # type: ignore[untyped-decorator]
    def report(self) -> str:
        """A table of the LLM flows in view (mitmdump: the recent ones): protocol, model, outcome,
        stop reason, tokens, tool calls, timings, with totals. Returned (mitmweb's command bar and the
        console show it) and logged at info level (every UI's event log shows it)."""
        view = ctx.master.addons.get("view")  # type: ignore[no-untyped-call]
        # diagnostics files only from the folder this addon writes them to (a flow loaded from a file
        # someone sent names paths of its own choosing); every line terminal-safe
        diag = str(ctx.options.proxai_diagnostics_dir) if "proxai_diagnostics_dir" in ctx.options else None
        if view is not None:
            rows = report_rows(list(view), base_dir=diag)
        else:
            rows = seen_rows(list(self.recent), base_dir=diag)
        table = "\n".join(escape(line, newlines=False) for line in table_lines(rows))
        logger.info("proxai.report:\n%s", table)
        return table


class ViewOnly(Visibility):
    """The visibility addon loaded without ``ProxAI`` (its view and commands over saved flows):
    mitmproxy calls its flow hooks itself."""

    def response(self, flow: http.HTTPFlow) -> None:
        self.after_response(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self.after_error(flow)
