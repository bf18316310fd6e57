"""A mitmdump script whose stream callback only returns the chunk: the cost of mitmproxy calling a
Python stream function per read, with no work in it (the ``paced`` section's ``identity`` variant).

``mitmdump -s bench/identity_addon.py --set stream_large_bodies=1``

The floor of any streaming addon (docs/performance.md, "Paced end to end"): what ProxAI's carrier
costs above it is its own work.
"""

from __future__ import annotations

from typing import Any


def _identity(chunk: bytes) -> bytes:
    return chunk


def responseheaders(flow: Any) -> None:  # a mitmproxy HTTPFlow
    if flow.response is not None:
        flow.response.stream = _identity
