"""The guard's injected error after an upstream chunk that ends INSIDE a ``data:`` line.

``test_injection_boundary.py`` covers a chunk that ends inside the ``event:`` line. Here the chunk
before a data-driven injection ends inside the data line of ``message_delta``: before the fix the
client received ``data: {"type":"message_delta","del`` dispatched as a whole event and the Anthropic
SDK raised ``json.JSONDecodeError`` instead of the guard's message. The guarded pass-through carrier
now forwards whole events only and drops the held partial event when it injects, so the SDK raises
``APIStatusError`` with our message.
"""

from __future__ import annotations

import pytest

from tests.e2e.harness import Mitmdump

from .guarded_tool_body import BODY, guard_error_after_cut
from .replay import Replay

pytestmark = pytest.mark.e2e


def test_guard_injection_after_a_chunk_that_ends_mid_event(replay: Replay, mitm_replay: Mitmdump) -> None:
    md = mitm_replay
    cut = BODY.index(b"event: message_delta") + 40  # inside the data line
    guard_error_after_cut(replay, md, cut)
