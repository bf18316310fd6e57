"""A minimal LLM-shaped SSE server for the end-to-end and memory benchmarks.

Why not ``proxai.upstream.FakeUpstream``: the latency figure needs the send time of every
event, and the memory figure needs 200 MB at full speed. This server writes the generated
streams of ``bench.streams`` (HTTP/1.1, chunked) and can:

- ``x-bench-events: N``   stream size in events (the whole generated stream);
- ``x-bench-interval-ms`` pace events (0 = as fast as the socket takes them, 16 KiB writes);
- ``x-bench-stamp: 1``    put the send time (monotonic ns) into each event's JSON object as its first
  member, ``"bench_ts": N`` (every observer ignores members it does not know, so observation is
  unchanged; an ``id:`` line would make every event a block of an unusual shape, which the
  scanner's fast path leaves to its general rules, and real LLM APIs send no ``id:``), for the
  per-event latency;
- ``x-bench-bytes: M``    repeat a run of delta events until about M bytes, then end validly;
- ``x-bench-write: W``    the size of each write of an unpaced or ``x-bench-bytes`` stream (default
  16 KiB);
- ``x-bench-piece: P``    write the stream in ``P``-byte pieces regardless of event boundaries, one
  every ``x-bench-interval-ms`` (the end-to-end ``paced`` section: 256-byte pieces 1 ms apart);
- ``x-bench-file: F``     the stream is the recorded one at ``tests/fixtures/real/F`` (the real
  corpus, its key orders, ``obfuscation`` fields and padding as recorded), not a generated one.

The protocol comes from the path (``/v1/messages``, ``/v1/chat/completions``, ``/v1/responses``).
Run: ``python -m bench.upstream PORT`` (prints ``ready`` when listening).

The rules (docs/design/upstream.md): a realistic upstream for the carrier and observer
layers; each protocol's own terminal event.
"""

from __future__ import annotations

import asyncio
import sys
import time
from functools import lru_cache
from pathlib import Path

from . import streams

_PATHS = {
    "/v1/messages": "anthropic_messages",
    "/v1/chat/completions": "openai_chat",
    "/v1/responses": "openai_responses",
}
# Where the first long run of delta events starts in each generated stream.
_DELTA_START = {"anthropic_messages": 2, "openai_chat": 1, "openai_responses": 4}


REAL = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "real"


@lru_cache(maxsize=512)
def recorded(name: str) -> bytes:
    """The bytes of one real recording (``name`` relative to tests/fixtures/real, inside it)."""
    path = (REAL / name).resolve()
    if REAL not in path.parents:
        raise ValueError(name)
    return path.read_bytes()


@lru_cache(maxsize=16)
def blocks(protocol: str, events: int) -> tuple[bytes, ...]:
    body = streams.generate(protocol, events)
    return tuple(b + b"\n\n" for b in body.split(b"\n\n") if b)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str]] | None:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) < 2:
        return None
    headers = {}
    for ln in lines[1:]:
        if ":" in ln:
            k, v = ln.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    if n:
        await reader.readexactly(n)
    return parts[1].split("?")[0], headers


async def _serve_one(path: str, headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
    protocol = next((p for suffix, p in _PATHS.items() if path.endswith(suffix)), None)
    if protocol is None:
        writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
        return
    events = int(headers.get("x-bench-events", "3000"))
    interval = float(headers.get("x-bench-interval-ms", "0")) / 1000
    stamp = headers.get("x-bench-stamp") == "1"
    total = int(headers.get("x-bench-bytes", "0"))
    write = int(headers.get("x-bench-write", "16384"))
    piece = int(headers.get("x-bench-piece", "0"))
    recording = headers.get("x-bench-file")
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
        b"transfer-encoding: chunked\r\n\r\n"
    )
    if recording is not None or piece:
        body = recorded(recording) if recording is not None else b"".join(blocks(protocol, events))
        step = piece or len(body)
        for i in range(0, len(body), step):
            writer.write(_chunk(body[i : i + step]))
            await writer.drain()
            if interval:
                await asyncio.sleep(interval)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return
    bl = blocks(protocol, 30000 if total else events)
    if total:
        start = _DELTA_START[protocol]
        head, middle, tail = b"".join(bl[:start]), b"".join(bl[start : start + 1000]), b"".join(bl[start:])
        writer.write(_chunk(head))
        sent = len(head) + len(tail)
        while sent < total:
            for i in range(0, len(middle), write):
                writer.write(_chunk(middle[i : i + write]))
            sent += len(middle)
            await writer.drain()
        for i in range(0, len(tail), write):
            writer.write(_chunk(tail[i : i + write]))
    elif interval or stamp:
        for b in bl:
            writer.write(
                _chunk(
                    b.replace(b"data: {", b'data: {"bench_ts":%d,' % time.monotonic_ns(), 1) if stamp else b
                )
            )
            await writer.drain()
            if interval:
                await asyncio.sleep(interval)
    else:
        body = b"".join(bl)
        for i in range(0, len(body), write):
            writer.write(_chunk(body[i : i + write]))
            await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            req = await _read_request(reader)
            if req is None:
                break
            await _serve_one(req[0], req[1], writer)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _main(port: int) -> None:
    server = await asyncio.start_server(_handle, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_main(int(sys.argv[1])))
