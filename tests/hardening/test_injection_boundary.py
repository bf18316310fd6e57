"""The guard's injected error after an upstream chunk that ends inside an event.

When the guard injects on the data-driven path right after a chunk that stopped mid-event, the
injected ``event: error`` must not be glued onto the partial upstream line (it was:
``event: messaevent: error``, so the Anthropic SDK saw an unknown event and returned a final message
with ``stop_reason=None``, the guard's error lost). The client must fail with the guard's message.
"""

from __future__ import annotations

import pytest

from tests.e2e.harness import Mitmdump

from .guarded_tool_body import BODY, guard_error_after_cut
from .replay import Replay

pytestmark = pytest.mark.e2e


def test_guard_injection_after_a_chunk_that_ends_mid_event(replay: Replay, mitm_replay: Mitmdump) -> None:
    md = mitm_replay
    cut = BODY.index(b"event: message_delta") + 12  # the chunk with content_block_stop ends mid-event
    guard_error_after_cut(replay, md, cut)
