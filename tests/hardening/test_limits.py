"""Every limit on untrusted input is a ``proxai_*`` option with a safe default.

Checked under ``mitmproxy.test.taddons``: each ``observe.Limits`` field has an option with the
same default, a non-positive value is refused, a value set on the command line reaches the
observers, and the defaults are finite and consistent (line <= event, small tail). The
scanner and the decoder enforce what the options say.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons

from proxai.core.decode import DEFAULT_MAX_DECODED, make_decoder
from proxai.core.errors import DecodeError, SseLimitError
from proxai.core.model import ErrorKind, Outcome, Protocol
from proxai.core.sse import DEFAULT_MAX_EVENT, DEFAULT_MAX_LINE, SseScanner
from proxai.mitm.addon import ProxAI
from proxai.pipeline import observe

LIMIT_FIELDS = [f.name for f in dataclasses.fields(observe.Limits)]


def context(addon: ProxAI) -> Any:
    return taddons.context(addon)  # type: ignore[no-untyped-call]


MiB = 1024 * 1024


def test_limit_fields_are_the_known_ones() -> None:
    """A new limit must come with a decision here (option, default, test)."""
    assert set(LIMIT_FIELDS) == {"max_line", "max_event", "tail_bytes", "max_tool_args", "max_capture"}


@pytest.mark.parametrize("name", LIMIT_FIELDS)
def test_each_limit_is_an_option_with_the_same_default(name: str) -> None:
    addon = ProxAI()
    with context(addon) as tctx:
        opt = tctx.options._options[f"proxai_{name}"]
        assert opt.typespec is int
        assert opt.default == getattr(observe.Limits(), name)
        assert opt.help.strip()


def test_safe_defaults() -> None:
    d = observe.Limits()
    assert d.max_line == DEFAULT_MAX_LINE <= d.max_event == DEFAULT_MAX_EVENT <= 64 * MiB
    assert d.tail_bytes == 16 * 1024
    assert 0 < d.max_tool_args <= 16 * MiB
    assert 0 < d.max_capture <= 16 * MiB
    assert 0 < DEFAULT_MAX_DECODED <= 64 * MiB


@pytest.mark.parametrize("name", [*LIMIT_FIELDS, "max_decoded"])
@pytest.mark.parametrize("value", [0, -1])
def test_non_positive_limits_are_refused(name: str, value: int) -> None:
    addon = ProxAI()
    with context(addon) as tctx, pytest.raises(exceptions.OptionsError):
        tctx.configure(addon, **{f"proxai_{name}": value})


def test_line_above_event_is_refused() -> None:
    addon = ProxAI()
    with context(addon) as tctx, pytest.raises(exceptions.OptionsError):
        tctx.configure(addon, proxai_max_line=2048, proxai_max_event=1024)


def test_configured_limits_reach_the_observers() -> None:
    addon = ProxAI()
    with context(addon) as tctx:
        tctx.configure(
            addon, proxai_max_line=100, proxai_max_event=200, proxai_tail_bytes=32, proxai_max_decoded=4096
        )
        assert addon.limits == observe.Limits(
            max_line=100, max_event=200, tail_bytes=32, max_tool_args=8 * MiB, max_capture=4 * MiB
        )
        assert addon.max_decoded == 4096
    obs = observe.StreamObserver(Protocol.OPENAI_CHAT, start=0.0, limits=addon.limits)
    obs.headers(200, 0.0)
    obs.feed(b"data: " + b"x" * 150, 0.1)
    s = obs.finish(0.2)
    assert s.outcome is Outcome.ERROR
    assert s.error is not None and s.error.kind is ErrorKind.STREAM_LIMIT
    assert len(obs.tail) == 32


def test_scanner_enforces_both_limits() -> None:
    with pytest.raises(SseLimitError) as line:
        SseScanner(max_line=10, max_event=100).feed(b"data: 0123456789")
    assert line.value.what == "line"
    with pytest.raises(SseLimitError) as event:
        SseScanner(max_line=10, max_event=20).feed(b"data: 0123\n" * 5)
    assert event.value.what == "event"


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd", "deflate"])
def test_decoder_bounds_a_decompression_bomb(encoding: str) -> None:
    import gzip
    import zlib

    import brotli  # type: ignore[import-untyped]
    import zstandard

    bomb = b"\0" * (8 * MiB)
    if encoding == "gzip":
        packed = gzip.compress(bomb)
    elif encoding == "deflate":
        packed = zlib.compress(bomb)
    elif encoding == "br":
        packed = bytes(brotli.compress(bomb))
    else:
        packed = zstandard.ZstdCompressor().compress(bomb)
    dec = make_decoder(encoding, 1 * MiB)
    with pytest.raises(DecodeError):
        dec.feed(packed)
        dec.flush()
