"""No test skips: ``bash .ci/run`` installs every program the suite needs, so a test whose program is
missing fails and names the script that installs it (README, "Quick start"). This reads every test
module for pytest's ways to skip."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SKIPS = re.compile(r"\bpytest\.skip\(|\bimportorskip\(|\bmark\.skip(if)?\b")


def test_no_test_module_skips() -> None:
    found = [
        f"{path.relative_to(TESTS.parent)}:{n}: {line.strip()}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__).resolve()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SKIPS.search(line)
    ]
    assert found == [], "fail with the install hint instead of skipping:\n" + "\n".join(found)
