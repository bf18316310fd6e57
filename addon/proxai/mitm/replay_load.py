"""Reading recorded runs into a replay's cassette (docs/replay.md; docs/design/replay.md, 5 and 9).

``load`` reads one or more ``.flow`` files into a ``Cassette`` (``proxai.replay.cassette``): every
LLM flow with a stored response body is an entry, its request the CLIENT's request (on a
translated route, the copy of the client's body the router kept) and its answer what the client
received (``proxai.replay.plan.Answer``). A file that cannot be read, holds no LLM flow, or none
with a body, is a ``ReplayFileError``; a flow without a body is skipped with a note.

The request of each entry is read by its protocol's request reader (``proxai.replay.match``,
``proxai.translate``): ``proxai.mitm.replay`` imports this module with the first ``proxai_replay``
file, so a proxy that replays nothing imports neither (docs/design/footprint.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from mitmproxy import http

from proxai.core.detect import detect_protocol
from proxai.core.errors import ProxaiError
from proxai.core.model import Protocol
from proxai.mitm.flowrows import FlowFileError, missing_body, read_flows
from proxai.replay.cassette import Cassette, Entry, Source
from proxai.replay.match import conversation
from proxai.replay.plan import Answer, kept_header
from proxai.safety.redact import redact_url


class ReplayFileError(ProxaiError):
    """A recorded run cannot be replayed (not a flow file, truncated, no LLM flow with a body)."""


def load(paths: Sequence[str]) -> tuple[Cassette, list[str]]:
    """The cassette of the recorded runs in ``paths`` and the notes on the flows skipped."""
    entries: list[Entry] = []
    notes: list[str] = []
    for path in paths:
        try:
            flows = read_flows(path)
        except FlowFileError as exc:
            raise ReplayFileError(str(exc)) from exc
        llm = 0
        before = len(entries)
        for index, f in enumerate(flows, 1):
            if not isinstance(f, http.HTTPFlow):
                continue
            source = Source(path, index, f.id, _client_url(f))
            found = _entry(f, source)
            if found is None:
                continue
            llm += 1
            if isinstance(found, str):
                notes.append(f"{source.describe()} ({f.request.method} {f.request.path}) skipped: {found}")
            else:
                entries.append(found)
        if llm == 0:
            raise ReplayFileError(f"{path}: holds no LLM flow (a run saved with mitmdump -w)")
        if len(entries) == before:
            raise ReplayFileError(f"{path}: none of its {llm} LLM flows can be replayed ({notes[-1]})")
    return Cassette(entries), notes


def _entry(f: http.HTTPFlow, source: Source) -> Entry | str | None:
    """The entry of one recorded flow, why it is skipped, or None for a flow that is not an LLM flow."""
    raw_meta = f.metadata.get("proxai")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    protocol = _protocol(f, meta)
    if protocol is None:
        return None
    replay = meta.get("replay")
    if isinstance(replay, Mapping) and replay.get("miss") == "error":
        return "it is a replay miss (its answer is the divergence error, not a recorded one)"
    body = _client_body(f, meta)
    if isinstance(body, str):
        return body
    missing = missing_body(f, meta)
    if missing is not None:
        return missing
    resp = f.response
    if resp is None:
        return "no response was recorded (the request failed)"
    return Entry(source, conversation(protocol, body), _answer(f, resp, resp.raw_content or b"", meta))


def _client_url(f: http.HTTPFlow) -> str:
    meta = f.metadata.get("proxai")
    url = meta.get("original_url") if isinstance(meta, Mapping) else None
    return url if isinstance(url, str) else redact_url(f.request.pretty_url)


def _protocol(f: http.HTTPFlow, meta: Mapping[str, Any]) -> Protocol | None:
    for name in (meta.get("client_protocol"), meta.get("protocol")):
        if isinstance(name, str):
            try:
                return Protocol(name)
            except ValueError:
                continue
    return detect_protocol(f.request.method, f.request.path)


def _client_body(f: http.HTTPFlow, meta: Mapping[str, Any]) -> dict[str, Any] | str:
    """The client's own request body (a translated flow's request is the one sent upstream)."""
    client = meta.get("client_request")
    raw: bytes | str | None = None
    if isinstance(client, Mapping) and isinstance(client.get("body"), str):
        raw = client["body"]
    else:
        raw = f.request.get_content(strict=False)
    try:
        body = orjson.loads(raw or b"")
    except orjson.JSONDecodeError:
        return "its request body is not JSON"
    return body if isinstance(body, dict) else "its request body is not a JSON object"


def _seconds(timing: Mapping[str, Any], *names: str) -> float | None:
    for name in names:
        v = timing.get(name)
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
            return float(v)
    return None


def _answer(f: http.HTTPFlow, resp: http.Response, data: bytes, meta: Mapping[str, Any]) -> Answer:
    raw_timing = meta.get("timing")
    timing: Mapping[str, Any] = raw_timing if isinstance(raw_timing, Mapping) else {}
    start = f.request.timestamp_start
    stamped_headers = max(0.0, (resp.timestamp_start or start) - start)
    stamped_end = max(stamped_headers, (resp.timestamp_end or resp.timestamp_start or start) - start)
    headers_s = _seconds(timing, "headers_s")
    headers_s = stamped_headers if headers_s is None else headers_s
    first_s = _seconds(timing, "first_token_s", "first_event_s")
    first_s = headers_s if first_s is None else first_s
    total_s = _seconds(timing, "total_s")
    total_s = stamped_end if total_s is None else total_s
    counts = meta.get("counts")
    events = counts.get("events") if isinstance(counts, Mapping) else None
    return Answer(
        status=resp.status_code,
        headers=tuple((k, v) for k, v in resp.headers.items(multi=True) if kept_header(k)),  # type: ignore[no-untyped-call]
        body=data,
        streaming="text/event-stream" in resp.headers.get("content-type", "").lower(),
        headers_s=headers_s,
        first_s=max(first_s, headers_s),
        total_s=max(total_s, first_s, headers_s),
        reads=_reads(meta.get("reads")),
        events=events if isinstance(events, int) else 0,
        reset=f.error is not None and meta.get("outcome") != "completed",
    )


def _reads(raw: object) -> tuple[tuple[int, float], ...]:
    """The recorded reads' (offset, seconds): ``{"offsets": [...], "seconds": [...]}``, or the form
    before it, ``[[offset, seconds], ...]`` (docs/metadata.md); nothing from anything else."""
    if isinstance(raw, Mapping):
        offsets, seconds = raw.get("offsets"), raw.get("seconds")
        if not (isinstance(offsets, list) and isinstance(seconds, list) and len(offsets) == len(seconds)):
            return ()
        pairs: list[Any] = list(zip(offsets, seconds, strict=True))
    elif isinstance(raw, list) and all(isinstance(item, list) and len(item) == 2 for item in raw):
        pairs = raw
    else:
        return ()
    out: list[tuple[int, float]] = []
    for offset, at in pairs:
        if not isinstance(offset, int) or not isinstance(at, int | float) or not math.isfinite(at):
            return ()
        out.append((offset, float(at)))
    return tuple(out)


# ---- the addon --------------------------------------------------------------------------------------
