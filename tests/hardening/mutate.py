"""Stream mutation strategies shared by the hardening tests.

A mutated stream starts from a real fixture (``tests/fixtures/<protocol>/*.sse``) and applies
event-level mutations (drop, duplicate, swap, truncate, replace a JSON value, corrupt the
JSON, change the event name) and byte-level ones (flip, insert, delete), so the inputs stay
close enough to the protocol to reach deep states of the observers and translators.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st

from proxai.core.model import Protocol

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROTOCOLS = tuple(Protocol)


def fixture_streams(protocol: Protocol) -> list[bytes]:
    return [p.read_bytes() for p in sorted((FIXTURES / str(protocol)).glob("*.sse"))]


def split_events(stream: bytes) -> list[bytes]:
    norm = stream.replace(b"\r\n", b"\n")
    return [b + b"\n\n" for b in norm.split(b"\n\n") if b.strip()]


_ODD_VALUES: list[Any] = [
    None, 0, -1, 2**63, 1.5, "", "x", "é", [], {}, [1, "a"], {"type": "text"}, True, "\u0000",
    {"type": "tool_use", "id": None, "name": 7}, {"error": {"message": "boom", "type": "overloaded_error"}},
]  # fmt: skip


def _replace_value(obj: Any, path_choice: int, value: Any) -> Any:
    """Replace the ``path_choice``-th (mod count) nested value of ``obj`` with ``value``."""
    slots: list[tuple[Any, Any]] = []

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            for k in o:
                slots.append((o, k))
                walk(o[k])
        elif isinstance(o, list):
            for i in range(len(o)):
                slots.append((o, i))
                walk(o[i])

    value = copy.deepcopy(value)  # never share (and later mutate) the pool's objects
    walk(obj)
    if not slots:
        return value
    parent, key = slots[path_choice % len(slots)]
    parent[key] = value
    return obj


def _mutate_event(ev: bytes, kind: int, choice: int, value: Any) -> bytes:
    lines = ev.rstrip(b"\n").split(b"\n")
    out: list[bytes] = []
    for line in lines:
        if line.startswith(b"data:") and kind in (0, 1):
            payload = line[5:].strip()
            try:
                obj = orjson.loads(payload)
            except orjson.JSONDecodeError:
                out.append(line)
                continue
            if kind == 0:
                obj = _replace_value(obj, choice, value)
                out.append(b"data: " + orjson.dumps(obj))
            else:  # corrupt the JSON text
                cut = choice % max(1, len(payload))
                out.append(b"data: " + payload[:cut])
        elif line.startswith(b"event:") and kind == 2:
            names = [b"error", b"message_stop", b"ping", b"response.completed", b"x-unknown", b""]
            out.append(b"event: " + names[choice % len(names)])
        else:
            out.append(line)
    return b"\n".join(out) + b"\n\n"


@st.composite
def mutated_stream(draw: st.DrawFn, protocol: Protocol) -> bytes:
    streams = fixture_streams(protocol)
    events = split_events(draw(st.sampled_from(streams)))
    for _ in range(draw(st.integers(0, 4))):
        if not events:
            break
        op = draw(st.integers(0, 7))
        i = draw(st.integers(0, len(events) - 1))
        if op == 0:
            del events[i]
        elif op == 1:
            events.insert(i, events[i])
        elif op == 2:
            j = draw(st.integers(0, len(events) - 1))
            events[i], events[j] = events[j], events[i]
        elif op == 3:
            events = events[: i + 1]
        elif op in (4, 5, 6):
            value = draw(st.sampled_from(_ODD_VALUES))
            events[i] = _mutate_event(events[i], op - 4, draw(st.integers(0, 1000)), value)
        else:
            events[i] = events[i] + draw(st.binary(max_size=12))
    data = b"".join(events)
    if data and draw(st.booleans()):
        # a byte-level mutation too
        pos = draw(st.integers(0, len(data) - 1))
        how = draw(st.integers(0, 2))
        if how == 0:
            data = data[:pos] + bytes([data[pos] ^ draw(st.integers(1, 255))]) + data[pos + 1 :]
        elif how == 1:
            data = data[:pos] + draw(st.binary(min_size=1, max_size=8)) + data[pos:]
        else:
            data = data[:pos] + data[pos + draw(st.integers(1, 16)) :]
    return data


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    if not data:
        return []
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=10))))
    out, prev = [], 0
    for c in [*cuts, len(data)]:
        if c > prev:
            out.append(data[prev:c])
            prev = c
    return out


def metadata_safe(value: Any, path: str = "meta") -> None:
    """``flow.metadata`` must hold only what survives ``-w`` (docs/design/core.md)."""
    if value is None or type(value) in (str, int, float, bool, bytes):
        return
    if type(value) is dict:
        for k, v in value.items():
            assert type(k) is str, f"{path}: key {k!r} is not a str"
            metadata_safe(v, f"{path}.{k}")
        return
    if type(value) is list:
        for i, v in enumerate(value):
            metadata_safe(v, f"{path}[{i}]")
        return
    raise AssertionError(f"{path}: {type(value).__name__} does not survive -w")
