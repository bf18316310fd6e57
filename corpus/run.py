"""Runs one corpus stream the way the addon carries it (``proxai.mitm.carrier.Carrier`` over a
``StreamObserver``, with or without a stream translator) and checks each result against the
official SDK's reading of the original stream.

Modes: ``observe`` (observe-only: the client must get the upstream bytes, and the summary must
agree with the SDK's final object), ``normalize`` (same protocol: the SDK must accept the output
with the same content) and one mode per other client protocol (the client SDK must accept the
output with the same content, or the stream must end in a typed refusal).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from proxai.core.errors import ProxaiError
from proxai.core.model import ErrorKind, Protocol, StopClass, StreamSummary
from proxai.mitm.carrier import Carrier
from proxai.pipeline.flow import ClientSide, build_flow
from proxai.pipeline.observe import Limits
from proxai.protocols.responses_items import CLIENT_KINDS
from proxai.stream import stop_reasons

from . import sdk
from .streams import Stream

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
SHORT = {A: "anthropic", C: "chat", R: "responses"}
PROTOCOLS = (A, C, R)

Status = Literal["equal", "differs", "refused", "sdk_rejected", "crash", "skipped"]


@dataclass
class Carried:
    """What the carrier produced for one stream in one mode."""

    out: bytes
    summary: StreamSummary
    bugs: list[str]
    translation: dict[str, Any] = field(default_factory=dict)


def carry(stream: Stream, client: Protocol | None, pieces: list[bytes] | None = None) -> Carried:
    """The stream through a real ``Carrier``: observe-only (``client`` None), normalize (the same
    protocol) or translated, fed as ``pieces`` (default: the whole body in one read)."""
    body = stream.body()
    side = None if client is None else ClientSide(client, created=1_767_225_600)
    pipe = build_flow(stream.protocol, side, limits=Limits(), capture=True)
    pipe.observer.headers(200, 0.0)
    carrier = Carrier(pipe, decoder=None, clock=lambda: 1.0)
    out: list[bytes] = []
    for piece in [body] if pieces is None else pieces:
        r = carrier(piece)
        out.extend([r] if isinstance(r, bytes) else r)
    r = carrier(b"")
    out.extend([r] if isinstance(r, bytes) else r)
    summary = carrier.summary if carrier.summary is not None else pipe.observer.summary()
    bugs = sorted(carrier.bugs)
    if carrier.observe_error and "internal error" in carrier.observe_error:
        bugs.append(carrier.observe_error)
    meta: dict[str, Any] = pipe.translator.metadata() if pipe.translator is not None else {}
    return Carried(b"".join(out), summary, bugs, meta)


# -- the summary against the SDK's final object -------------------------------------------------


def _calls_equal(
    a: list[tuple[str | None, str | None, str]], b: list[tuple[str | None, str | None, str]]
) -> bool:
    if len(a) != len(b):
        return False
    for (ia, na, xa), (ib, nb, xb) in zip(a, b, strict=True):
        if ia != ib or na != nb or _args(xa) != _args(xb):
            return False
    return True


def _args(raw: str | None) -> Any:
    """Arguments for comparison: parsed JSON without null members (an SDK model dumps the optional
    fields a built-in item did not send as null), or the raw string when it is not JSON."""
    if raw is None or raw == "":
        return {}
    try:
        return _no_nulls(json.loads(raw))
    except ValueError:
        return raw


def _no_nulls(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _no_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_no_nulls(x) for x in v]
    return v


def summary_disagreements(stream: Stream, ref: sdk.Reading, s: StreamSummary) -> list[str]:
    """How the observer's summary differs from the SDK's final object (empty: it agrees). Only
    meaningful for a stream the SDK accepted."""
    out: list[str] = []
    if ref.verdict == "error_event":
        if s.outcome.value != "error":
            out.append(f"outcome {s.outcome} (the SDK raised the stream's error event)")
        return out
    if ref.verdict == "accepted" and s.outcome.value != "completed":
        out.append(f"outcome {s.outcome}, SDK accepted the stream")
    if ref.verdict not in ("accepted", "incomplete"):
        return out
    # Where the SDK lost what the stream carried (a chunk it drops for its ``object``, usage a
    # later ``null`` overwrote, content parts it cannot merge), the summary may know more: a value
    # is compared only where the SDK kept one.
    want_stop = ref.stop
    if stream.protocol is R and want_stop is not None and want_stop.startswith("incomplete"):
        # the reading is ``status:reason``; the summary's stop reason for an incomplete response
        # is its reason alone (``max_output_tokens``), the status where none is given
        want_stop = want_stop.partition(":")[2] or "incomplete"
    if want_stop is not None and s.stop_reason != want_stop:
        out.append(f"stop {s.stop_reason!r}, SDK {ref.stop!r}")
    u = s.usage
    mine = (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens)
    if ref.usage not in ((None, None, None, None), mine):
        out.append(f"usage {mine}, SDK {ref.usage}")
    calls = [(t.id, t.name, t.arguments or "") for t in s.tool_calls if t.kind in CLIENT_KINDS]
    if not _calls_equal(calls, ref.calls):
        out.append(f"client calls {[(i, n) for i, n, _ in calls]}, SDK {[(i, n) for i, n, _ in ref.calls]}")
    if s.text_bytes != len(ref.text.encode()):
        out.append(f"text {s.text_bytes} B, SDK {len(ref.text.encode())} B")
    if ref.reasoning and s.reasoning_bytes != len(ref.reasoning.encode()):
        out.append(f"reasoning {s.reasoning_bytes} B, SDK {len(ref.reasoning.encode())} B")
    return out


def violation(ref: sdk.Reading, s: StreamSummary) -> str | None:
    """The summary calls an SDK-accepted stream a protocol violation."""
    if ref.ok and s.error is not None and s.error.kind is ErrorKind.UPSTREAM_PROTOCOL:
        return s.error.message
    return None


# -- content across protocols -------------------------------------------------------------------


@dataclass(frozen=True)
class Content:
    """What a client gets out of a stream, in protocol-neutral terms."""

    text: str
    calls: tuple[tuple[str | None, str | None, Any], ...]
    stop: str | None  # StopClass value, content_filter counted as refusal
    usage: tuple[int | None, int | None]  # input incl. cache, output
    reasoning: str
    citations: tuple[str, ...]  # the URLs the text cites


def content(protocol: Protocol, r: sdk.Reading) -> Content:
    if protocol is A:
        stop = stop_reasons.from_anthropic(r.stop)
        i, o, cr, cw = r.usage
        usage = (None if i is None else i + (cr or 0) + (cw or 0), o)
    else:
        if protocol is C:
            stop = stop_reasons.from_chat(r.stop)
        else:
            status, _, reason = (r.stop or "").partition(":")
            stop = stop_reasons.from_responses(status, reason or None, has_tool_calls=bool(r.calls))
        usage = (r.usage[0], r.usage[1])
    if stop is StopClass.CONTENT_FILTER:
        stop = StopClass.REFUSAL
    calls = tuple((i, n, _args(a)) for i, n, a in r.calls)
    read = r.verdict in ("accepted", "incomplete")
    return Content(r.text, calls, stop.value if read else None, usage, r.reasoning, tuple(r.citations))


@dataclass
class ModeResult:
    mode: str  # "observe", "normalize", or the client protocol's short name
    status: Status
    detail: str = ""


def check_mode(stream: Stream, ref: sdk.Reading, client: Protocol) -> ModeResult:
    """Normalize (``client`` is the stream's protocol) or one translation, read back by the
    client's SDK and compared with the SDK's reading of the original."""
    mode = "normalize" if client is stream.protocol else SHORT[client]
    try:
        got = carry(stream, client)
    except ProxaiError as exc:  # refused before anything was carried
        return ModeResult(mode, "refused", f"{type(exc).__name__}: {exc}")
    except Exception as exc:
        return ModeResult(mode, "crash", f"{type(exc).__name__}: {exc}")
    if got.bugs:
        return ModeResult(mode, "crash", "; ".join(got.bugs))
    back = sdk.read(client, got.out)
    if not back.ok:
        return ModeResult(mode, "sdk_rejected", back.detail)
    if "error" in got.translation:
        return ModeResult(mode, "refused", str(got.translation["error"])[:200])
    if back.verdict == "error_event" and ref.verdict != "error_event":
        return ModeResult(mode, "refused", back.detail)
    want, have = content(stream.protocol, ref), content(client, back)
    # as for the summary: a value the reference SDK lost is not compared
    lost = {
        "stop": ref.stop is None,
        "usage": want.usage == (None, None),
        "reasoning": not want.reasoning,
    }
    diffs = [
        f"{name}: {getattr(have, name)!r:.80} != {getattr(want, name)!r:.80}"
        for name in ("text", "calls", "stop", "usage", "reasoning", "citations")
        if not lost.get(name) and getattr(have, name) != getattr(want, name)
    ]
    return ModeResult(mode, "differs" if diffs else "equal", "; ".join(diffs))


@dataclass
class StreamResult:
    stream: Stream
    ref: sdk.Reading
    observe_bytes_equal: bool
    disagreements: list[str]
    violation: str | None
    bugs: list[str]
    modes: list[ModeResult]


def run(stream: Stream) -> StreamResult:
    ref = sdk.read(stream.protocol, stream.body())
    got = carry(stream, None)
    modes = [
        check_mode(stream, ref, client)
        for client in (stream.protocol, *(p for p in PROTOCOLS if p is not stream.protocol))
    ]
    return StreamResult(
        stream,
        ref,
        got.out == stream.body(),
        summary_disagreements(stream, ref, got.summary) if ref.ok else [],
        violation(ref, got.summary),
        got.bugs,
        modes,
    )


def failing_checks(r: StreamResult) -> dict[str, str]:
    """check name -> why, for every check this stream fails."""
    out: dict[str, str] = {}
    if r.bugs or any(m.status == "crash" for m in r.modes):
        out["crash"] = "; ".join(r.bugs + [m.detail for m in r.modes if m.status == "crash"])
    if not r.observe_bytes_equal:
        out["observe_bytes"] = "observe-only output differs from the upstream bytes"
    if not r.ref.ok:
        return out  # the SDK itself refuses the original: nothing to compare with
    if r.violation:
        out["violation"] = r.violation
    if r.disagreements:
        out["summary"] = "; ".join(r.disagreements)
    for m in r.modes:
        if m.status not in {"equal", "crash"}:
            out[m.mode] = f"{m.status}: {m.detail}"
    return out
