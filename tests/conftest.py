"""Suite-wide settings. Under CI (``CI`` set), hypothesis is derandomized: the examples are the same
on every run, so a red CI always reproduces; locally each run draws new examples. Hypothesis has no
deadline: the tests judge results, never speed, and one example can take a second on a busy
machine (a deadline turned that into a flaky failure)."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("local", deadline=None)
settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "local")
