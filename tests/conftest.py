"""Suite-wide settings. Under CI (``CI`` set), hypothesis is derandomized: the seed is the same
on every run; locally each run draws new examples. Hypothesis also draws, now and then, constants it
reads from the source modules imported so far, so a derandomized test's examples can still change
with the tests that ran before it in the process; the SDK property pins that pool empty
(tests/conformance/test_sdk_property.py, ``fixed_draws``). Hypothesis has no
deadline: the tests judge results, never speed, and one example can take a second on a busy
machine (a deadline turned that into a flaky failure)."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("local", deadline=None)
settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "local")
