"""The grammar files stay no longer than they were once the pipeline was built once
(docs/performance.md, "The pipeline built once"): a fast path or a rule grows a helper module
(``anthropic_quirks``, ``chat_fields``, ``chat_delta``, ``responses_items`` ...), not the grammar.
"""

from __future__ import annotations

from pathlib import Path

import pytest

PROTOCOLS = Path(__file__).resolve().parents[2] / "addon" / "proxai" / "protocols"
# lines of each grammar file at the end of the pipeline work
LIMITS = {"anthropic.py": 877, "chat.py": 850, "responses.py": 1022}


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_the_grammar_file_is_no_longer_than_after_the_pipeline_work(name: str) -> None:
    lines = len((PROTOCOLS / name).read_text(encoding="utf-8").splitlines())
    assert lines <= LIMITS[name], f"{name}: {lines} lines, the limit is {LIMITS[name]}"
