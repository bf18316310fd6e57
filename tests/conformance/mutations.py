"""Mutations of recorded streams that stay close to the protocol, for the SDK property test
(test_sdk_property.py): a stream is cut into its SSE events and changed one edit at a time (drop an
event, duplicate one, swap two adjacent ones, truncate, alter a JSON value that the SDKs read: an
index, a type, a finish / stop reason, an id; delete a key or an ``event:`` line, insert an event
the protocol does not define), then framed again and cut into the pieces the body delivers. Each
edit is described in words, so a failing example says what was done to which source."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from proxai.core.model import Protocol

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REAL = FIXTURES / "real"
FOLDER = {
    Protocol.ANTHROPIC_MESSAGES: "anthropic",
    Protocol.OPENAI_CHAT: "chat",
    Protocol.OPENAI_RESPONSES: "responses",
}
# Real recordings up to this size are mutated (most of the corpus; the large ones cost the Python
# SDK a second each and reach no state the small ones do not).
REAL_MAX_BYTES = 16 * 1024


@dataclass(frozen=True)
class Source:
    name: str  # the fixture's path under tests/fixtures
    events: tuple[bytes, ...]  # its SSE blocks, each without the blank line that ends it


def sources(protocol: Protocol) -> list[Source]:
    """The hand-written fixtures of ``protocol`` and its real recordings up to ``REAL_MAX_BYTES``."""
    paths = sorted((FIXTURES / str(protocol)).glob("*.sse"))
    paths += [
        p for p in sorted((REAL / FOLDER[protocol]).glob("*.sse")) if p.stat().st_size <= REAL_MAX_BYTES
    ]
    return [Source(str(p.relative_to(FIXTURES)), tuple(split_events(p.read_bytes()))) for p in paths]


def split_events(stream: bytes) -> list[bytes]:
    norm = stream.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return [b.strip(b"\n") for b in norm.split(b"\n\n") if b.strip()]


# Keys whose values the SDKs' accumulators read to place or end content, and the values an upstream
# might put there instead (beside those the stream itself uses for the same key).
KEYS: dict[str, list[Any]] = {
    "index": [0, 1, 2, -1, None, "0"],
    "output_index": [0, 1, 2, -1, None],
    "content_index": [0, 1, 2, -1, None],
    "summary_index": [0, 1, None],
    "sequence_number": [0, 1, None],
    "type": [None, "", "x_unknown", "text", "tool_use", "function", "message", "function_call"],
    "finish_reason": [None, "stop", "length", "tool_calls", "content_filter", "function_call", "eos"],
    "stop_reason": [None, "end_turn", "max_tokens", "tool_use", "stop_sequence", "pause_turn", "refusal"],
    "status": [None, "completed", "incomplete", "in_progress", "failed"],
    "id": [None, "", "x1"],
    "item_id": [None, "", "x1"],
    "call_id": [None, "", "x1"],
    "role": [None, "user", "assistant", ""],
    "object": [None, "chat.completion", "chat.completion.chunk", "response"],
    "name": [None, "", "f"],
}

UNKNOWN_EVENTS: dict[Protocol, list[bytes]] = {
    Protocol.ANTHROPIC_MESSAGES: [
        b'event: x_unknown\ndata: {"type":"x_unknown"}',
        b'event: ping\ndata: {"type": "ping"}',
        b": keepalive",
    ],
    Protocol.OPENAI_CHAT: [
        b'data: {"id":"x","object":"x.unknown","created":1,"model":"m","choices":[]}',
        b": keepalive",
    ],
    Protocol.OPENAI_RESPONSES: [
        b'event: response.x_unknown\ndata: {"type":"response.x_unknown","sequence_number":0}',
        b'event: keepalive\ndata: {"type":"keepalive","sequence_number":0}',
        b": keepalive",
    ],
}


def _data(event: bytes) -> tuple[list[bytes], Any] | None:
    """The event's other lines and its JSON data, when it has one data line holding JSON."""
    lines = event.split(b"\n")
    data = [i for i, line in enumerate(lines) if line.startswith(b"data:")]
    if len(data) != 1:
        return None
    try:
        obj = json.loads(lines[data[0]][5:])
    except ValueError:
        return None
    return lines, obj


def _with_data(event: bytes, obj: Any) -> bytes:
    lines = event.split(b"\n")
    return b"\n".join(
        b"data: " + json.dumps(obj, separators=(",", ":")).encode() if line.startswith(b"data:") else line
        for line in lines
    )


def _slots(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths of every value under a dict key in ``obj`` (list items are walked, not offered)."""
    out: list[tuple[Any, ...]] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((*path, k))
            out.extend(_slots(v, (*path, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_slots(v, (*path, i)))
    return out


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _values(events: list[bytes], key: str) -> list[Any]:
    """The values ``key`` takes anywhere in the stream, in order of appearance."""
    seen: list[Any] = []
    for ev in events:
        parsed = _data(ev)
        if parsed is None:
            continue
        for path in _slots(parsed[1]):
            if path[-1] == key:
                v = _get(parsed[1], path)
                if not isinstance(v, (dict, list)) and v not in seen:
                    seen.append(v)
    return seen


OPS = ("drop", "duplicate", "swap", "alter", "delete", "insert", "unname")


@st.composite
def mutated(draw: st.DrawFn, protocol: Protocol, pool: list[Source]) -> tuple[list[bytes], list[str]]:
    """A mutated stream of ``protocol`` from ``pool``: the pieces its body delivers and what was done."""
    src = draw(st.sampled_from(pool))
    events = list(src.events)
    done = [src.name]
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(OPS))
        if not events and op != "insert":
            continue
        i = draw(st.integers(0, max(0, len(events) - 1)))
        if op == "drop":
            done.append(f"drop event {i}")
            del events[i]
        elif op == "duplicate":
            done.append(f"duplicate event {i}")
            events.insert(i, events[i])
        elif op == "swap":
            if i + 1 < len(events):
                done.append(f"swap events {i} and {i + 1}")
                events[i], events[i + 1] = events[i + 1], events[i]
        elif op == "unname":
            if events[i].startswith(b"event:"):
                done.append(f"delete the event: line of event {i}")
                events[i] = b"\n".join(
                    line for line in events[i].split(b"\n") if not line.startswith(b"event:")
                )
        elif op == "insert":
            ev = draw(st.sampled_from(UNKNOWN_EVENTS[protocol]))
            at = draw(st.integers(0, len(events)))
            done.append(f"insert {ev!r} at {at}")
            events.insert(at, ev)
        else:
            parsed = _data(events[i])
            if parsed is None:
                continue
            obj = copy.deepcopy(parsed[1])
            slots = _slots(obj)
            known = [p for p in slots if p[-1] in KEYS]
            if not slots:
                continue
            path = draw(st.sampled_from(known or slots)) if op == "alter" else draw(st.sampled_from(slots))
            parent = _get(obj, path[:-1])
            if op == "delete":
                done.append(f"delete {'.'.join(map(str, path))} in event {i}")
                del parent[path[-1]]
            else:
                old = parent[path[-1]]
                choices = [
                    v for v in [*_values(events, str(path[-1])), *KEYS.get(str(path[-1]), [None])] if v != old
                ]
                if isinstance(old, int) and not isinstance(old, bool):
                    choices += [old + 1, old - 1]
                new = draw(st.sampled_from(choices or [None]))
                done.append(f"set {'.'.join(map(str, path))} = {new!r} in event {i} (was {old!r})")
                parent[path[-1]] = new
            events[i] = _with_data(events[i], obj)
    data = b"".join(ev + b"\n\n" for ev in events if ev)
    cut = draw(st.integers(0, 5))
    if cut and events:  # truncate: after an event (1) or anywhere (2)
        if cut == 1:
            k = draw(st.integers(0, len(events) - 1))
            done.append(f"truncate after event {k - 1}")
            data = b"".join(ev + b"\n\n" for ev in events[:k] if ev)
        elif cut == 2:
            at = draw(st.integers(0, max(0, len(data) - 1)))
            done.append(f"truncate at byte {at}")
            data = data[:at]
    if data and draw(st.integers(0, 7)) == 0:
        done.append("CRLF line ends")
        data = data.replace(b"\n", b"\r\n")
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(data) - 1)), max_size=6))) if len(data) > 1 else []
    pieces, prev = [], 0
    for c in [*cuts, len(data)]:
        if c > prev:
            pieces.append(data[prev:c])
            prev = c
    if cuts:
        done.append(f"delivered in {len(pieces)} pieces cut at {cuts}")
    return pieces, done
