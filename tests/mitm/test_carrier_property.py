"""The carrier with the real observers: chunking never changes what the client gets or the summary."""

from __future__ import annotations

import gzip
import zlib
from typing import Any

import brotli
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.core.decode import make_decoder
from proxai.core.model import Protocol
from proxai.mitm.carrier import Carrier
from proxai.pipeline.flow import build_flow

from .test_addon import ANTHROPIC_ERROR_MIDSTREAM, CHAT_TEXT, CHAT_UNFINISHED_TOOL

ENCODE = {
    "identity": lambda b: b,
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": lambda b: zstandard.ZstdCompressor().compress(b),
}
STREAMS = {
    "chat_text": (Protocol.OPENAI_CHAT, CHAT_TEXT),
    "chat_unfinished_tool": (Protocol.OPENAI_CHAT, CHAT_UNFINISHED_TOOL),
    "anthropic_error": (Protocol.ANTHROPIC_MESSAGES, ANTHROPIC_ERROR_MIDSTREAM),
}


def _run(protocol: Protocol, encoding: str, wire: bytes, cuts: list[int]) -> tuple[bytes, dict[str, Any]]:
    pipe = build_flow(protocol, None)
    obs = pipe.observer
    obs.headers(200, 0.0)
    c = Carrier(pipe, decoder=make_decoder(encoding), clock=lambda: 1.0)
    pieces, i = [], 0
    for n in cuts:
        if i >= len(wire):
            break
        pieces.append(wire[i : i + n])
        i += n
    pieces.append(wire[i:])
    got = b""
    for p in pieces:
        if not p:
            continue
        out = c(p)
        assert out != b""
        got += out if isinstance(out, bytes) else b"".join(out)
    end = c(b"")
    got += end if isinstance(end, bytes) else b"".join(end)
    assert c.summary is not None and c.observe_error is None
    meta = c.summary.to_metadata()
    meta.pop("timing")
    meta["counts"].pop("chunks")
    return got, meta


@pytest.mark.parametrize("stream", sorted(STREAMS))
@pytest.mark.parametrize("encoding", sorted(ENCODE))
def test_whole_bytewise_equal(stream: str, encoding: str) -> None:
    protocol, plain = STREAMS[stream]
    wire = ENCODE[encoding](plain)
    whole = _run(protocol, encoding, wire, [len(wire)])
    bytewise = _run(protocol, encoding, wire, [1] * len(wire))
    assert whole[0] == bytewise[0] == wire
    assert whole[1] == bytewise[1]


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(sorted(STREAMS)),
    st.sampled_from(sorted(ENCODE)),
    st.lists(st.integers(min_value=1, max_value=200), max_size=30),
)
def test_random_splits_never_change_the_result(stream: str, encoding: str, cuts: list[int]) -> None:
    protocol, plain = STREAMS[stream]
    wire = ENCODE[encoding](plain)
    reference = _run(protocol, encoding, wire, [len(wire)])
    assert _run(protocol, encoding, wire, cuts) == reference
