"""What in mitmdump's log means one of our bugs was caught (mitm/addon.py, mitm/carrier.py log
these as one warning line; the traceback itself only at debug level)."""

from __future__ import annotations

from tests.e2e.harness import Mitmdump

BUG_MARKERS = ("Traceback", "internal error", " bug", "hook failed", "cannot write diagnostics")


def assert_clean_log(md: Mitmdump) -> None:
    log = md.log_tail(100_000_000)
    for marker in BUG_MARKERS:
        assert marker not in log, f"{marker!r} in mitmdump's log:\n{log[-3000:]}"
