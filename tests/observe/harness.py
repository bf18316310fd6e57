"""Runs fixture streams through the observers and normalizes summaries for comparison.

A fixture is ``tests/fixtures/<protocol>/<case>.sse`` (a streamed body) or ``<case>.json`` (a
non-streamed body); a name starting with ``http_NNN`` is served with HTTP status NNN. Its
expected result is ``<case>.expected.json``: the ``flow.metadata["proxai"]`` dict without
timing and chunk count (those depend on chunking and the clock), the class name of
``observer.failed``, and the captured content.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from proxai.core.model import Protocol, StreamSummary
from proxai.pipeline.observe import Limits, StreamObserver, observe_body

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DEFAULT_LIMITS = Limits()
_STATUS = re.compile(r"^http_(\d{3})")


def fixture_cases() -> list[Path]:
    """Every observer fixture: ``tests/fixtures/<protocol>/*.sse`` and ``*.json`` (other folders
    under tests/fixtures belong to other test suites)."""
    out: list[Path] = []
    for protocol in Protocol:
        folder = FIXTURES / str(protocol)
        out += folder.glob("*.sse")
        out += [p for p in folder.glob("*.json") if not p.name.endswith(".expected.json")]
    return sorted(out)


def case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def protocol_of(path: Path) -> Protocol:
    return Protocol(path.parent.name)


def status_of(path: Path) -> int:
    m = _STATUS.match(path.name)
    return int(m.group(1)) if m else 200


def expected_path(path: Path) -> Path:
    return path.with_name(path.name.rsplit(".", 1)[0] + ".expected.json")


def whole(data: bytes) -> list[bytes]:
    return [data]


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def random_splits(data: bytes, seed: int, max_piece: int = 64) -> list[bytes]:
    rng = random.Random(seed)
    out: list[bytes] = []
    i = 0
    while i < len(data):
        n = rng.randint(1, max_piece)
        out.append(data[i : i + n])
        i += n
    return out


def splittings(data: bytes, name: str) -> Iterator[tuple[str, list[bytes]]]:
    yield "whole", whole(data)
    yield "bytewise", bytewise(data)
    for k in range(4):
        yield f"random{k}", random_splits(data, hash((name, k)) & 0xFFFF, max_piece=(7, 31, 97, 512)[k])


def run_stream(
    protocol: Protocol,
    pieces: Iterable[bytes],
    *,
    status: int = 200,
    capture: bool = True,
    limits: Limits = DEFAULT_LIMITS,
    events: bool = True,
) -> tuple[StreamSummary, StreamObserver]:
    """``events``: feed with ``StreamObserver.feed`` (event objects, the translating carrier's
    path), else with ``StreamObserver.observe`` (the scanner's payload path, observe-only flows)."""
    obs = StreamObserver(protocol, start=100.0, limits=limits, capture=capture)
    obs.headers(status, 100.25)
    t = 100.5
    feed = obs.feed if events else obs.observe
    for piece in pieces:
        feed(piece, t)
        t += 0.01
    return obs.finish(t), obs


def normalize(s: StreamSummary, failed: BaseException | None) -> dict[str, Any]:
    md = s.to_metadata()
    md.pop("timing")
    md["counts"].pop("chunks")
    return {
        "metadata": md,
        "failed": None if failed is None else type(failed).__name__,
        "captured": {
            "text": s.text,
            "reasoning": s.reasoning,
            "tool_arguments": [t.arguments for t in s.tool_calls],
        },
    }


def run_case(path: Path, pieces: list[bytes] | None = None, *, events: bool = True) -> dict[str, Any]:
    data = path.read_bytes()
    protocol = protocol_of(path)
    status = status_of(path)
    if path.suffix == ".sse":
        s, obs = run_stream(protocol, pieces if pieces is not None else [data], status=status, events=events)
        return normalize(s, obs.failed)
    s = observe_body(protocol, data, status_code=status, start=10.0, headers_at=10.5, end=11.0, capture=True)
    return normalize(s, None)
