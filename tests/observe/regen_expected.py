"""Write ``<case>.expected.json`` for fixtures that have none (``--force``: all of them).

Run it, then READ every new expected file against the fixture before committing it: the
expected files are the assertions of ``test_fixtures.py``.
"""

from __future__ import annotations

import json
import sys

from tests.observe.harness import expected_path, fixture_cases, run_case

if __name__ == "__main__":
    force = "--force" in sys.argv
    for path in fixture_cases():
        exp = expected_path(path)
        if exp.exists() and not force:
            continue
        exp.write_text(json.dumps(run_case(path), indent=2, ensure_ascii=False, sort_keys=True) + "\n")
        print("wrote", exp)
