"""A lean asyncio HTTP/1.1 client for the end-to-end benchmarks (chunked responses).

Kept minimal so the client's own cost stays small and equal for every variant. With stamped
streams (``x-bench-stamp: 1``) it records, per event, receive time minus the upstream's send
time (same machine, same monotonic clock).

It measures what the stream carrier adds per event.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import orjson

_PATHS = {
    "anthropic_messages": "/v1/messages",
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
}
_STAMP = re.compile(rb'"bench_ts":(\d+)')  # bench.upstream's send time in each event's JSON


@dataclass
class Result:
    status: int = 0
    body_bytes: int = 0
    latencies_ns: list[int] = field(default_factory=list)
    body: bytes | None = None


async def stream(
    base_url: str,
    protocol: str,
    headers: dict[str, str],
    *,
    keep_body: bool = False,
    model: str = "bench-model",
) -> Result:
    u = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(u.hostname, u.port, limit=1 << 20)
    request: dict[str, object] = {
        "model": model,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    if protocol == "anthropic_messages":
        request["max_tokens"] = 64  # required by the Messages API (and by a route's translation)
    body = orjson.dumps(request)
    head = [
        f"POST {_PATHS[protocol]} HTTP/1.1",
        f"host: {u.hostname}:{u.port}",
        "content-type: application/json",
    ]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head += [f"content-length: {len(body)}", "connection: close", "", ""]
    writer.write("\r\n".join(head).encode() + body)
    await writer.drain()
    res = Result()
    status_line = await reader.readuntil(b"\r\n")
    res.status = int(status_line.split()[1])
    resp_headers = (await reader.readuntil(b"\r\n\r\n")).lower()
    stamped = "x-bench-stamp" in headers
    kept: list[bytes] = []
    pending = b""
    if b"transfer-encoding: chunked" in resp_headers:
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            data = (await reader.readexactly(size + 2))[:-2]
            now = time.monotonic_ns()
            res.body_bytes += len(data)
            if keep_body:
                kept.append(data)
            if stamped:
                buf = pending + data
                cut = buf.rfind(b"\n")
                for m in _STAMP.finditer(buf, 0, cut + 1):
                    res.latencies_ns.append(now - int(m.group(1)))
                pending = buf[cut + 1 :] if cut >= 0 else buf
    else:
        data = await reader.read()
        res.body_bytes = len(data)
        kept.append(data)
    writer.close()
    if keep_body:
        res.body = b"".join(kept)
    return res
