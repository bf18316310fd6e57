"""The real-streams corpus (``tests/fixtures/real/``) through the addon's carrier, read back by the
official SDKs (``corpus/``). One test per stream checks every mode of it at once:

- no crash in any mode, and observe-only hands the client exactly the upstream bytes;
- the observer never calls a stream the SDK accepts a protocol violation;
- the summary agrees with the SDK's final object (outcome, stop, usage with cache tokens, client
  tool calls with ids, names and arguments, text and reasoning sizes);
- normalize and each translation deliver content the client's SDK reads as the reference.

The checks that do not hold yet for a stream are listed in ``known.py``; a failure not listed
there is a regression. docs/real-streams.md shows the whole table (``python -m corpus``).
"""

from __future__ import annotations

import logging
from collections import Counter

import pytest
from corpus import run as corpus_run
from corpus import streams

from .known import KNOWN

STREAMS = streams.load()


def test_corpus_size_and_provenance() -> None:
    """At least 300 streams, half of them verbatim, from at least 30 providers and 7 repositories,
    every protocol present, every file with a provenance row (``load`` raises otherwise)."""
    assert len(STREAMS) >= 300
    assert 2 * sum(1 for s in STREAMS if not s.rebuilt) >= len(STREAMS)
    assert len({s.provider for s in STREAMS}) >= 30
    assert len({s.repository for s in STREAMS}) >= 7
    assert {s.protocol for s in STREAMS} == set(corpus_run.PROTOCOLS)
    assert len({s.name for s in STREAMS}) == len(STREAMS)
    assert set(KNOWN) <= {s.name for s in STREAMS}


@pytest.mark.parametrize("stream", STREAMS, ids=[s.name for s in STREAMS])
def test_stream(stream: streams.Stream, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    failing = corpus_run.failing_checks(corpus_run.run(stream))
    assert "crash" not in failing, failing["crash"]
    assert "observe_bytes" not in failing
    new = {k: v for k, v in failing.items() if k not in KNOWN.get(stream.name, "").split()}
    assert not new, f"{stream.name}: checks that regressed: {new}"


def test_known_counts_are_honest() -> None:
    """The known list only names checks that exist (a typo would hide a failure)."""
    names = {"violation", "summary", "normalize", "anthropic", "chat", "responses"}
    assert set(Counter(c for v in KNOWN.values() for c in v.split())) <= names
