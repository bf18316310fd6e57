"""The Anthropic grammar's lean reading of its commonest event (``AnthropicGrammar._lean``).

A named text or thinking delta of the open block, byte for byte the shape the API sends but for
its string (and the padding the API puts between the two closing braces), is read by parsing
that string alone. Differential: with the lean reading and without it (every payload parsed
whole), the summary and every pair's and normalize mode's client bytes, read by read, are the
same, on hand-made shapes next to the lean one and on hypothesis-drawn texts, encodings,
paddings and shapes. The lean reading does take the shape (it is counted), and real recordings
of the API take it too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxai.core.model import Protocol
from proxai.pipeline.observe import Limits
from proxai.protocols.anthropic import AnthropicGrammar
from proxai.protocols.common import GrammarBase
from tests.observe.test_payload_reuse import _translated
from tests.observe.test_properties import observe

A = Protocol.ANTHROPIC_MESSAGES
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "anthropic"


def _sse(event: str, payload: bytes) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + payload + b"\n\n"


def _stream(deltas: list[bytes], family: str = "text") -> bytes:
    """A message with one block of ``family`` whose delta payloads are ``deltas`` as given."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    }
    block = {"type": "text", "text": ""} if family == "text" else {"type": "thinking", "thinking": ""}
    out = _sse("message_start", orjson.dumps(start))
    out += _sse(
        "content_block_start",
        orjson.dumps({"type": "content_block_start", "index": 0, "content_block": block}),
    )
    for d in deltas:
        out += _sse("content_block_delta", d)
    out += _sse("content_block_stop", b'{"type":"content_block_stop","index":0}')
    out += _sse(
        "message_delta",
        b'{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}',
    )
    return out + _sse("message_stop", b'{"type":"message_stop"}')


def _delta(value: bytes, family: str = "text", *, index: int = 0, pad: bytes = b"") -> bytes:
    dtype, key = ("text_delta", "text") if family == "text" else ("thinking_delta", "thinking")
    head = b'{"type":"content_block_delta","index":%d,"delta":{"type":"%s","%s":' % (
        index,
        dtype.encode(),
        key.encode(),
    )
    return head + value + b"}" + pad + b"}"


def _pieces(raw: bytes) -> list[bytes]:
    """``raw`` in two reads, the second from the first delta on (a scanner reads a stream's first
    read by the general rules, which give event objects' strings, never the lean shape's bytes)."""
    cut = raw.find(b"event: content_block_delta")
    return [raw[:cut], raw[cut:]] if cut > 0 else [raw]


def _read(raw: bytes) -> tuple[dict[str, object], list[Any]]:
    """The summary (the payload path, as the carrier reads: the stream whole) and every client's
    bytes (the real carrier: whole and at splits)."""
    return observe(A, _pieces(raw), Limits(), events=False), _translated(A, raw)


def _without_lean(raw: bytes) -> tuple[dict[str, object], list[Any]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(AnthropicGrammar, "_lean", GrammarBase._lean)
        return _read(raw)


def _lean_reads(raw: bytes) -> list[bytes]:
    """The payloads the lean reading took, reading ``raw`` as a summary does."""
    taken: list[bytes] = []
    real = AnthropicGrammar._lean

    def lean(self: AnthropicGrammar, data: bytes, now: float) -> bool:
        read = real(self, data, now)
        if read:
            taken.append(data)
        return read

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(AnthropicGrammar, "_lean", lean)
        observe(A, _pieces(raw), Limits(), events=False)
    return taken


LEAN = [
    b'"Hello"',
    b'""',
    b'"a\\"b"',  # an escaped quote
    b'"\\\\"',  # one backslash
    b'"}}"',
    b'"\\"}}"',
    b'"Gr\xc3\xbc\xc3\x9fe \\u00e9 \\ud83d\\ude00"',  # UTF-8 and escapes, a surrogate pair
    b'"\xe2\x80\xa8"',  # U+2028 as it is
    b' "spaced" ',  # whitespace around the value
]


@pytest.mark.parametrize("family", ["text", "thinking"])
@pytest.mark.parametrize("pad", [b"", b" ", b"       ", b"\t "])
@pytest.mark.parametrize("value", LEAN)
def test_the_lean_shape_is_read_lean_and_as_the_whole_parse_reads_it(
    value: bytes, pad: bytes, family: str
) -> None:
    first = _delta(b'"first"', family)
    raw = _stream([first, _delta(value, family, pad=pad), first], family)
    assert _lean_reads(raw) == [_delta(value, family, pad=pad), first]  # the first delta arms it
    summary, clients = _read(raw)
    assert (summary, clients) == _without_lean(raw)
    meta: Any = summary["metadata"]
    assert meta["outcome"] == "completed"
    text = "first" + json.loads(value) + "first"
    field = "text" if family == "text" else "reasoning"
    assert summary["captured"][field] == text  # type: ignore[index]
    assert meta[f"{field}_bytes"] == len(text.encode())


ODD = [
    _delta(b'"a"', pad=b"\x0c"),  # a form feed is no JSON whitespace: not JSON
    _delta(b'"a"', pad=b" } "),  # a third brace
    _delta(b'"a"}'),  # a third brace, no padding
    _delta(b'"a"', pad=b"}"),
    _delta(b'"a"', pad=b" x "),  # padding that is not whitespace
    _delta(b'"a","x":1'),  # another key after the text
    _delta(b'"a"},"x":{"y":1'),  # another key after the delta
    b'{"type":"content_block_delta","index":0,"delta":{"text":"a","type":"text_delta"}}',  # key order
    b'{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a"}}',
    _delta(b'"a"', index=1),  # another block's index: an orphan delta
    b'{"type":"content_block_delta","index":00,"delta":{"type":"text_delta","text":"a"}}',
    _delta(b'"a"', "thinking"),  # a thinking delta in a text block
    _delta(b"1"),
    _delta(b"null"),
    _delta(b'["a"]'),
    _delta(b'{"a":"b"}'),
    _delta(b'"unterminated'),
    _delta(b'"a" "b"'),
    _delta(b'"\xff"'),  # not UTF-8: read as the SSE rules decode it
    _delta(b'"\\ud800"'),  # a lone surrogate escape
    _delta(b'"\\x"'),  # no such escape
    _delta(b'"tab\there"'),  # a raw control character
    _delta(b'"a"')[:-1],  # the payload ends before its last brace
    _delta(b'"a"') + b" ",
]


@pytest.mark.parametrize("odd", ODD, ids=range(len(ODD)))
def test_every_other_shape_is_read_as_the_whole_parse_reads_it(odd: bytes) -> None:
    raw = _stream([_delta(b'"first"'), odd, _delta(b'"last"')])
    assert odd not in _lean_reads(raw)
    assert _read(raw) == _without_lean(raw)


_VALUES = st.text(max_size=12).flatmap(
    lambda s: st.sampled_from(
        [
            orjson.dumps(s),
            json.dumps(s).encode(),
            json.dumps(s, ensure_ascii=False).encode(),
            b" " + orjson.dumps(s),
        ]
    )
)
_ODD_VALUES = st.sampled_from([b"1", b"null", b'"a","x":1', b'"\\', b'"\xc3"', b'"a"}', b"", b'"a\x01"'])
_PADS = st.sampled_from([b"", b" ", b"   ", b"\t", b"\x0c", b" }", b"x"])


@st.composite
def _payloads(draw: st.DrawFn) -> bytes:
    value = draw(st.one_of(_VALUES, _VALUES, _VALUES, _ODD_VALUES))
    family = draw(st.sampled_from(["text", "text", "thinking"]))
    return _delta(value, family, index=draw(st.sampled_from([0, 0, 0, 1])), pad=draw(_PADS))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deltas=st.lists(_payloads(), min_size=1, max_size=8), family=st.sampled_from(["text", "thinking"]))
def test_drawn_deltas_are_read_as_the_whole_parse_reads_them(deltas: list[bytes], family: str) -> None:
    raw = _stream([_delta(b'"first"', family), *deltas], family)
    assert _read(raw) == _without_lean(raw)


def test_real_recordings_of_the_api_take_the_lean_reading() -> None:
    """Of the real recordings' named text and thinking deltas, the ones in the API's own shape
    (compact, its key order, padded or not: those recorded from the API itself) are read lean
    after the first of their block; the summaries do not change."""
    taken = total = 0
    for path in sorted(REAL.glob("*.sse")):
        raw = path.read_bytes()
        reads = _lean_reads(raw)
        taken += len(reads)
        total += raw.count(b'"type":"text_delta"') + raw.count(b'"type":"thinking_delta"')
        if reads:
            assert observe(A, _pieces(raw), Limits(), events=False) == _without_lean(raw)[0], path.name
    assert total > 2000
    assert taken > total * 9 // 10  # (1,957 of 2,131 when this was written: all but each block's first)
