"""A streamed request whose upstream labels a valid SSE body ``application/json``.

The body is a complete, healthy stream: it is observed as a stream and recorded ``completed`` (it
was ``error`` / ``upstream_protocol``, "response body is not JSON", until the body was sniffed).
"""

from __future__ import annotations

import pytest

from proxai.core.model import Protocol
from tests.e2e.harness import Mitmdump

from .mutate import PROTOCOLS
from .test_faults import call

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_sse_body_labelled_json(mitm_fake: Mitmdump, protocol: Protocol) -> None:
    resp, meta, _ = call(mitm_fake, protocol, "wrong_content_type")
    assert resp is not None and resp.status_code == 200
    assert resp.headers["content-type"] == "application/json"
    assert meta["outcome"] == "completed", meta["error"]
    assert meta["counts"]["events"] > 0
