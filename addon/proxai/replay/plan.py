"""What a replayed client receives, and when (docs/replay.md, "Timing").

An ``Answer`` is what the recorded client received: status, the headers that matter, the body
bytes, and the recorded timing: when the headers came and, for a stream, the moments its reads
arrived (``reads``: the body offset each read ended at and its time, recorded by the live path,
``proxai.pipeline.keep``). A recording without reads (a JSON answer, or one made before reads were
recorded) has the summary's timing only: its body is cut at the SSE event boundaries, the first
piece arriving at the time to the first token and the rest spread evenly up to the total
duration.

``plan(answer, speed)`` turns it into a ``Plan``: the headers' time and every piece's time, as
offsets from the moment the replayed request arrived, divided by ``speed`` (1 as recorded, 2
twice as fast, 0 no waiting at all). Rule: docs/design/replay.md, 7. Pure: no clock; the player
(``proxai.mitm.replay_server``) sleeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: response headers a replay sends as recorded (the rest describe the recorded connection)
KEPT_HEADERS = frozenset(
    {"content-type", "content-encoding", "cache-control", "retry-after", "request-id", "x-request-id"}
)
KEPT_PREFIXES = ("anthropic-", "openai-", "x-ratelimit-", "ratelimit-")
#: most pieces an answer without recorded reads is cut into
MAX_PIECES = 1024


def kept_header(name: str) -> bool:
    n = name.lower()
    return n in KEPT_HEADERS or n.startswith(KEPT_PREFIXES)


@dataclass(frozen=True, slots=True)
class Answer:
    """What the recorded client received."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    streaming: bool
    headers_s: float  # seconds from the request to the response headers
    first_s: float  # ... to the first token (a stream) or the body (JSON)
    total_s: float  # ... to the end of the body
    reads: tuple[tuple[int, float], ...] = ()  # (body offset the read ended at, seconds), in order
    events: int = 0
    reset: bool = False  # the recorded connection died after the body: the replay resets it too


@dataclass(frozen=True, slots=True)
class Plan:
    status: int
    headers: tuple[tuple[str, str], ...]
    headers_at: float  # seconds after the request arrived
    pieces: tuple[tuple[float, bytes], ...]  # (seconds after the request arrived, bytes), in order
    streaming: bool
    reset: bool
    timed_by: str  # "reads" | "summary"

    @property
    def waits(self) -> float:
        """The seconds the player waits in all (0 at speed 0)."""
        return max([self.headers_at, *(at for at, _ in self.pieces)])


def plan(answer: Answer, speed: float) -> Plan:
    scale = 0.0 if speed <= 0 else 1.0 / speed
    if answer.streaming and answer.reads:
        pieces = _from_reads(answer.body, answer.reads)
        timed_by = "reads"
    else:
        pieces = _from_summary(answer)
        timed_by = "summary"
    headers_at = max(0.0, answer.headers_s)
    out: list[tuple[float, bytes]] = []
    last = headers_at
    for at, data in pieces:
        last = max(last, at)  # never before the headers, never out of order
        out.append((last * scale, data))
    return Plan(
        answer.status,
        answer.headers,
        headers_at * scale,
        tuple(out),
        answer.streaming,
        answer.reset,
        timed_by,
    )


def _from_reads(body: bytes, reads: Sequence[tuple[int, float]]) -> list[tuple[float, bytes]]:
    out: list[tuple[float, bytes]] = []
    start = 0
    for offset, at in reads:
        end = min(max(offset, start), len(body))
        if end > start:
            out.append((at, body[start:end]))
            start = end
    if start < len(body):  # bytes past the last recorded read (a cap, or a later write)
        out.append((reads[-1][1] if reads else 0.0, body[start:]))
    return out


def _from_summary(answer: Answer) -> list[tuple[float, bytes]]:
    body = answer.body
    if not body:
        return []
    if not answer.streaming:
        return [(answer.total_s, body)]
    cuts = _event_ends(body, answer.headers) or [len(body)]
    cuts = _thin(cuts, MAX_PIECES)
    first, total = answer.first_s, max(answer.first_s, answer.total_s)
    out: list[tuple[float, bytes]] = []
    start = 0
    n = len(cuts)
    for i, end in enumerate(cuts):
        at = first if n == 1 else first + (total - first) * i / (n - 1)
        out.append((at, body[start:end]))
        start = end
    return out


def _event_ends(body: bytes, headers: Sequence[tuple[str, str]]) -> list[int]:
    """Where each SSE event ends in an uncompressed body (a compressed one is one piece)."""
    for name, value in headers:
        if name.lower() == "content-encoding" and value.strip().lower() not in ("", "identity"):
            return []
    sep = b"\r\n\r\n" if b"\r\n\r\n" in body else b"\n\n"
    ends: list[int] = []
    i = body.find(sep)
    while i >= 0:
        ends.append(i + len(sep))
        i = body.find(sep, i + len(sep))
    if ends and ends[-1] < len(body):
        ends.append(len(body))
    return ends


def _thin(cuts: list[int], most: int) -> list[int]:
    """At most ``most`` cut points, evenly chosen; the last one is always kept."""
    if len(cuts) <= most:
        return cuts
    step = len(cuts) / most
    picked = [cuts[min(len(cuts) - 1, int((k + 1) * step) - 1)] for k in range(most)]
    picked[-1] = cuts[-1]
    return sorted(set(picked))
