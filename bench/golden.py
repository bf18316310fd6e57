"""The golden differential: what the stream pipeline produces today, so that a refactor of how a
flow's pipeline is built can be shown to change nothing.

Every stream input (the hand-written fixtures ``tests/fixtures/<protocol>/*.sse``, the real
recordings of ``tests/fixtures/real/`` as ``corpus.streams`` loads them, and every streamed
scenario of the fake upstream rendered in each protocol without a socket), plus seeded mutations
of each (truncated, an event dropped, an event duplicated, a JSON value altered, split into random
pieces), is carried through a ``StreamCarrier`` observe-only, normalized (same protocol) and
translated to each other client protocol, read whole, in 7-byte pieces and in seeded random
pieces (7-byte pieces only for inputs up to 8 KB; inputs over 1 MB are left out). Each case
records the sha256 of the client's bytes and the summary's metadata form
(``StreamSummary.to_metadata``, timings made stable by a fixed clock: read i is at i * 0.001 s).
The client bytes and summaries must stay byte-identical across refactors of the pipeline's
construction (docs/design/carrier.md: the carrier is the one path every flow's bytes take).

    PYTHONPATH=addon .venv/bin/python -m bench.golden --write /tmp/base.json
    PYTHONPATH=addon .venv/bin/python -m bench.golden --compare /tmp/base.json [--only SUBSTRING]

``--compare`` exits 1 listing the first 20 differing cases (bytes hash, or which summary
fields), else prints "N cases identical". Only ``build`` constructs anything.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proxai.core.model import Protocol
from proxai.pipeline.carrier import StreamCarrier
from proxai.pipeline.flow import ClientSide, build_flow
from proxai.pipeline.observe import Limits

# -- the one place to adapt when the pipeline's constructor changes -----------------------------


def build(upstream: Protocol, client: Protocol | None, normalize: bool) -> StreamCarrier:
    """The carrier of one case: observe-only (``client`` None), normalize (``client`` is
    ``upstream``) or translated. THE ONE PLACE TO ADAPT when the way a flow's pipeline is built
    changes (StreamCarrier / StreamObserver / stream translator construction); the rest of this
    script only calls ``carrier.feed(chunk, now)`` and reads ``carrier.summary``."""
    assert (client is upstream) == normalize
    side = None if client is None else ClientSide(client, created=1_767_225_600)
    pipe = build_flow(upstream, side, limits=Limits(), capture=True)
    pipe.observer.headers(200, 0.0)
    return StreamCarrier(pipe, decoder=None)


# -- inputs ----------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
PROTOCOLS = (Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES)
SEED = 20261202
#: Inputs longer than this are left out (the fake upstream's huge_line and big_stream, tens of MB:
#: the memory bench covers size); longer than SEVEN_MAX, they are not also read in 7-byte pieces.
#: Both keep a run within about 2 minutes on 2 cores.
MAX_INPUT = 1 << 20
SEVEN_MAX = 8 << 10


@dataclass(frozen=True, slots=True)
class Input:
    name: str  # stable id: "fixture/<protocol>/<file>", "real/<folder>/<file>", "scenario/<protocol>/<name>"
    protocol: Protocol
    body: bytes


def fixture_inputs() -> Iterator[Input]:
    """The hand-written stream fixtures, one folder per protocol (tests/observe/harness.py's layout)."""
    for proto in PROTOCOLS:
        for path in sorted((FIXTURES / proto.value).glob("*.sse")):
            yield Input(f"fixture/{proto.value}/{path.name}", proto, path.read_bytes())


def real_inputs() -> Iterator[Input]:
    from corpus.streams import load

    for s in load():
        yield Input(f"real/{s.name}", s.protocol, s.body())


def scenario_inputs() -> Iterator[Input]:
    """Every streamed scenario of the fake upstream in each protocol, its bytes rendered as the
    upstream would send them (waits ignored; a reset ends the body where it happens)."""
    from proxai.upstream.ops import Abort, Params
    from proxai.upstream.render_anthropic import AnthropicRenderer
    from proxai.upstream.render_chat import ChatRenderer
    from proxai.upstream.render_responses import ResponsesRenderer
    from proxai.upstream.scenarios import SCENARIOS

    renderers: dict[Protocol, Any] = {
        Protocol.ANTHROPIC_MESSAGES: AnthropicRenderer,
        Protocol.OPENAI_CHAT: ChatRenderer,
        Protocol.OPENAI_RESPONSES: ResponsesRenderer,
    }
    params = Params(model="fake-model", stream=True, include_usage=True, request_number=1)
    for name in sorted(SCENARIOS):
        sc = SCENARIOS[name]
        if sc.http_error is not None or sc.content_type != "text/event-stream":
            continue
        for proto in PROTOCOLS:
            out: list[bytes] = []
            for action in renderers[proto](params).stream(sc.script(params)):
                if isinstance(action, bytes):
                    out.append(action)
                elif isinstance(action, Abort):
                    break
            yield Input(f"scenario/{proto.value}/{name}", proto, b"".join(out))


def all_inputs() -> list[Input]:
    return [i for i in (*fixture_inputs(), *real_inputs(), *scenario_inputs()) if len(i.body) <= MAX_INPUT]


# -- seeded mutations ------------------------------------------------------------------------------


def _events(body: bytes) -> list[bytes]:
    parts = body.split(b"\n\n")
    return [p + b"\n\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def mutations(inp: Input, rng: random.Random) -> list[tuple[str, bytes]]:
    """(name, body) of each mutation of ``inp``, drawn from ``rng`` (seeded per input)."""
    body = inp.body
    ev = _events(body)
    out: list[tuple[str, bytes]] = []
    if body:
        cut = rng.randrange(len(body))
        out.append((f"truncate@{cut}", body[:cut]))
    if len(ev) > 1:
        i = rng.randrange(len(ev))
        out.append((f"drop#{i}", b"".join(ev[:i] + ev[i + 1 :])))
        j = rng.randrange(len(ev))
        out.append((f"dup#{j}", b"".join(ev[: j + 1] + ev[j:])))
    altered = _alter(ev, rng)
    if altered is not None:
        out.append(altered)
    return out


def _alter(ev: list[bytes], rng: random.Random) -> tuple[str, bytes] | None:
    """One JSON value of one ``data:`` payload altered: a string reversed, a number changed, a
    boolean flipped, a null made a string."""
    cand = [i for i, e in enumerate(ev) if b"data: {" in e or b"data:{" in e]
    if not cand:
        return None
    i = rng.choice(cand)
    lines = ev[i].split(b"\n")
    for k, line in enumerate(lines):
        if not line.startswith(b"data:"):
            continue
        try:
            obj = json.loads(line[5:])
        except ValueError:
            return None
        if not isinstance(obj, dict) or not obj:
            return None
        key = rng.choice(sorted(obj))
        v = obj[key]
        if isinstance(v, bool):
            obj[key] = not v
        elif isinstance(v, int | float):
            obj[key] = v + 1
        elif isinstance(v, str):
            obj[key] = v[::-1] + "x"
        elif v is None:
            obj[key] = "null"
        else:
            obj[key] = None
        lines[k] = b"data: " + json.dumps(obj, separators=(",", ":")).encode()
        return f"alter#{i}.{key}", b"".join([*ev[:i], b"\n".join(lines), *ev[i + 1 :]])
    return None


# -- chunkings and modes ---------------------------------------------------------------------------


def chunkings(body: bytes, rng: random.Random) -> list[tuple[str, list[bytes]]]:
    pieces: list[bytes] = []
    i = 0
    while i < len(body):
        n = rng.randint(1, 300)
        pieces.append(body[i : i + n])
        i += n
    out = [("whole", [body] if body else [])]
    if len(body) <= SEVEN_MAX:
        out.append(("7", [body[i : i + 7] for i in range(0, len(body), 7)]))
    out.append(("random", pieces))
    return out


def modes(upstream: Protocol) -> list[tuple[str, Protocol | None, bool]]:
    out: list[tuple[str, Protocol | None, bool]] = [("observe", None, False), ("normalize", upstream, True)]
    out += [(f"to-{p.value}", p, False) for p in PROTOCOLS if p is not upstream]
    return out


def run_case(
    upstream: Protocol, client: Protocol | None, normalize: bool, pieces: list[bytes]
) -> dict[str, Any]:
    """Feed ``pieces`` then the end of message, read i at i * 0.001 s; the record."""
    carrier = build(upstream, client, normalize)
    h = hashlib.sha256()
    i = 0
    for i, piece in enumerate(pieces, 1):
        for b in carrier.feed(piece, i * 0.001):
            h.update(b)
    for b in carrier.feed(b"", (i + 1) * 0.001):
        h.update(b)
    s = carrier.summary
    return {"bytes": h.hexdigest(), "summary": None if s is None else s.to_metadata()}


def records(inputs: list[Input], only: str | None = None) -> dict[str, dict[str, Any]]:
    """Every case of ``inputs`` (ids containing ``only``), keyed by case id, in id order."""
    out: dict[str, dict[str, Any]] = {}
    for inp in inputs:
        rng = random.Random(f"{SEED}:{inp.name}")
        variants = [("orig", inp.body), *mutations(inp, rng)]
        for vname, body in variants:
            splits = chunkings(body, rng)
            for mname, client, normalize in modes(inp.protocol):
                for cname, pieces in splits:
                    cid = f"{inp.name}|{vname}|{mname}|{cname}"
                    if only is not None and only not in cid:
                        continue
                    out[cid] = run_case(inp.protocol, client, normalize, pieces)
    return dict(sorted(out.items()))


def differences(base: dict[str, dict[str, Any]], now: dict[str, dict[str, Any]]) -> list[str]:
    """One line per differing case id, in id order."""
    lines: list[str] = []
    for cid in sorted(base.keys() | now.keys()):
        a, b = base.get(cid), now.get(cid)
        if a == b:
            continue
        if a is None or b is None:
            lines.append(f"{cid}: {'new case' if a is None else 'case missing'}")
            continue
        what: list[str] = []
        if a["bytes"] != b["bytes"]:
            what.append("client bytes hash")
        sa, sb = a["summary"] or {}, b["summary"] or {}
        fields = sorted(k for k in sa.keys() | sb.keys() if sa.get(k) != sb.get(k))
        if fields:
            what.append("summary " + ", ".join(fields))
        lines.append(f"{cid}: {'; '.join(what)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.golden", description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", metavar="OUT.json", type=Path)
    g.add_argument("--compare", metavar="BASE.json", type=Path)
    ap.add_argument("--only", metavar="SUBSTRING")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    recs = records(all_inputs(), a.only)
    took = time.perf_counter() - t0
    if a.write is not None:
        a.write.write_text(json.dumps(recs, sort_keys=True, indent=0) + "\n", encoding="utf-8")
        print(f"{len(recs)} cases written to {a.write} in {took:.1f} s")
        return 0
    base: dict[str, dict[str, Any]] = json.loads(a.compare.read_text(encoding="utf-8"))
    if a.only is not None:
        base = {k: v for k, v in base.items() if a.only in k}
    diff = differences(base, recs)
    if diff:
        print(f"{len(diff)} of {len(base.keys() | recs.keys())} cases differ ({took:.1f} s); the first 20:")
        for line in diff[:20]:
            print("  " + line)
        return 1
    print(f"{len(recs)} cases identical ({took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
