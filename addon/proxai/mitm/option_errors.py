"""An invalid ProxAI option at start-up: one clear line naming the option, and mitmproxy exits 1.

Every ProxAI addon validates its options in ``configure`` and raises ``OptionsError``. While mitmproxy
runs, that is its contract: a change (``:set``, mitmweb's options editor, ``ctx.options.update``) is
rolled back and the message shown to the user. At start-up it works badly: mitmproxy loads the script,
then calls ``configure`` with every option; an ``OptionsError`` raised there is logged as "error in
script" with the whole chain of tracebacks, and the addons that come after the failing one in the
script's tree are never configured at all.

mitmproxy's own start-up rule (its ``errorcheck`` addon) is that any error logged before the proxy is
up makes it print "Error logged during startup, exiting..." and exit with status 1. So while that
check watches the start-up, ``checked_options`` logs the error as one line (``proxai: invalid option:
<option>: <problem>``) instead of raising, the other addons still get configured (each reports its own
bad option), and mitmproxy exits. Without the check (a change while running, an embedding master, the
test context) the ``OptionsError`` is raised as before. docs/usage.md, "Options", says what a user sees.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from mitmproxy import ctx, exceptions

logger = logging.getLogger(__name__)


def starting() -> bool:
    """Whether mitmproxy's start-up error check is watching: an error logged now stops mitmproxy."""
    try:
        master: Any = ctx.master
    except AttributeError:
        return False
    check = master.addons.get("errorcheck")
    handler = getattr(check, "logger", None)
    return handler is not None and handler in logging.getLogger().handlers


def checked_options[A](configure: Callable[[A, set[str]], None]) -> Callable[[A, set[str]], None]:
    """Wrap an addon's ``configure``: at start-up an ``OptionsError`` becomes one logged error line."""

    @functools.wraps(configure)
    def wrapper(self: A, updated: set[str]) -> None:
        try:
            configure(self, updated)
        except exceptions.OptionsError as exc:
            if not starting():
                raise
            logger.error("proxai: invalid option: %s", exc)

    return wrapper
