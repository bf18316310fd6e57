"""Suite-wide settings. Under CI (``CI`` set), hypothesis is derandomized: the examples are the same
on every run, so a red CI always reproduces; locally each run draws new examples."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
