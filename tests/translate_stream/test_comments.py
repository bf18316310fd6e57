"""SSE comment lines (a gateway's keep-alive: ``: OPENROUTER PROCESSING``, ``: keep-alive``) through
the addon's real ``Carrier`` in every mode (docs/design/protocol-grammars.md, "SSE comment lines"):
observe-only passes them byte for byte; normalize mode and every translation write each line as
it came, with its LF, at its place among the events the writer writes, a line the source's stop
waits behind right after the end, none after the terminal event; any chunking gives the same
bytes; one note per flow counts them. The client's bytes are read by the official Python and Node
SDKs, which skip every comment line: they read the same final object as from the same stream
without them.

The expected bytes are built from the stream without its comment lines, fed to a carrier block by
block: each comment line goes in front of the client bytes of the block it came before.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from proxai.core.model import Protocol
from proxai.mitm.carrier import Carrier
from proxai.pipeline.flow import ClientSide, build_flow
from proxai.translate.stream import PAIRS
from proxai.translate.stream.comments import MAX_HELD
from tests.conformance import sdks
from tests.splits import random_pieces

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
ROOT = Path(__file__).resolve().parents[1] / "fixtures"
KIND = {A: "anthropic", C: "chat", R: "responses"}
CLIENTS = {up: [up] + [c for u, c in PAIRS if u is up] for up in Protocol}
WORKING = b": OPENROUTER PROCESSING"
ALIVE = b": keep-alive"


@dataclass(frozen=True)
class Placed:
    """A comment line before upstream block ``at`` (``len(blocks)``: after the last), in a block of
    its own (``: X`` and a blank line, as OpenRouter sends it) or among the lines of block ``at``,
    after its first line (``inside``)."""

    at: int
    line: bytes
    inside: bool = False


@dataclass(frozen=True)
class Case:
    protocol: Protocol
    blocks: list[bytes]  # the stream without comment lines, block by block
    placed: list[Placed]
    held: tuple[int, int]  # (first, last): a line before a block in first..last waits for the end
    end: int  # the terminal block: nothing after it is written

    @property
    def body(self) -> bytes:
        out: list[bytes] = []
        for k in range(len(self.blocks) + 1):
            for p in self.placed:
                if p.at == k and not p.inside:
                    out.append(p.line + b"\n\n")
            if k < len(self.blocks):
                block = self.blocks[k]
                inside = [p.line + b"\n" for p in self.placed if p.at == k and p.inside]
                if inside:
                    first, rest = block.split(b"\n", 1)
                    block = first + b"\n" + b"".join(inside) + rest
                out.append(block)
        return b"".join(out)

    @property
    def plain(self) -> bytes:
        return b"".join(self.blocks)


def _blocks(name: str) -> list[bytes]:
    body = (ROOT / name).read_bytes()
    assert b"\r" not in body and not any(line.startswith(b":") for line in body.split(b"\n"))
    parts = body.split(b"\n\n")
    assert parts[-1].strip() == b""
    return [p + b"\n\n" for p in parts[:-1]]


CHAT = _blocks("openai_chat/text.sse")  # role, Hello, there, finish, usage, [DONE]
ANTHROPIC = _blocks("anthropic_messages/text.sse")  # start, block, ping, 2 deltas, stop, delta, stop
RESPONSES = _blocks("openai_responses/text.sse")  # created ... completed (10)
assert (len(CHAT), len(ANTHROPIC), len(RESPONSES)) == (6, 8, 10)

CASES = {
    # OpenRouter's keep-alives before the first chunk, between chunks, and between the finish and
    # the usage chunk, where it counts the usage (the finish waits there for [DONE])
    C: Case(
        C,
        CHAT,
        [
            Placed(0, WORKING),
            Placed(0, WORKING),
            Placed(2, ALIVE),
            Placed(4, WORKING),
            Placed(4, WORKING),
            Placed(6, ALIVE),
        ],
        held=(4, 5),
        end=5,
    ),
    # before message_start, among a delta's lines, between message_delta and message_stop
    A: Case(
        A,
        ANTHROPIC,
        [Placed(0, WORKING), Placed(3, ALIVE, inside=True), Placed(7, b":"), Placed(8, ALIVE)],
        held=(7, 7),
        end=7,
    ),
    # Responses has no stop that waits: every line before response.completed goes out at its place
    R: Case(
        R,
        RESPONSES,
        [Placed(0, WORKING), Placed(4, ALIVE, inside=True), Placed(9, b": ping \xff"), Placed(10, ALIVE)],
        held=(1, 0),
        end=9,
    ),
}


def _carry(up: Protocol, client: Protocol | None, pieces: list[bytes]) -> tuple[list[bytes], Any]:
    """The client's bytes per read (the last: the end of message) and the summary."""
    side = None if client is None else ClientSide(client, created=1_767_225_600)
    pipe = build_flow(up, side, capture=True)
    pipe.observer.headers(200, 0.0)
    carrier = Carrier(pipe, decoder=None, clock=lambda: 1.0)
    reads = []
    for piece in [*pieces, b""]:
        r = carrier(piece)
        reads.append(r if isinstance(r, bytes) else b"".join(r))
    assert carrier.bugs == {} and carrier.summary is not None
    return reads, carrier.summary


def _written(line: bytes) -> bytes:
    """A comment line as a writer writes it: with its LF, bytes that are not UTF-8 as U+FFFD."""
    return line.decode("utf-8", "replace").encode() + b"\n"


def _expected(case: Case, client: Protocol) -> bytes:
    """The client's bytes of the stream without comments, block by block, with each comment line
    in front of the bytes of the block it came before, a held one after the end."""
    reads, _ = _carry(case.protocol, client, case.blocks)
    held = [_written(p.line) for p in case.placed if case.held[0] <= p.at <= case.held[1]]
    out: list[bytes] = []
    for k, data in enumerate(reads):
        if k <= case.end:
            out += [
                _written(p.line) for p in case.placed if p.at == k and not case.held[0] <= k <= case.held[1]
            ]
        out.append(data)
        if k == case.end:
            out += held
    return b"".join(out)


def _note(n: int, how: str) -> str:
    return f"sse.comments: {n} SSE comment lines (not events, the SDKs skip them): {how}"


@pytest.mark.parametrize("up", list(Protocol))
def test_observe_only_passes_the_comment_lines_with_the_upstream_bytes(up: Protocol) -> None:
    case = CASES[up]
    reads, summary = _carry(up, None, [case.body])
    assert b"".join(reads) == case.body
    assert _note(len(case.placed), "passed on in the upstream's bytes") in summary.extra["notes"]
    assert summary.outcome.value == "completed"
    assert not summary.extra.get("conformance")


@pytest.mark.parametrize("up", list(Protocol))
def test_normalize_writes_each_comment_line_at_its_place(up: Protocol) -> None:
    case = CASES[up]
    out = b"".join(_carry(up, up, [case.body])[0])
    assert out == _expected(case, up)
    assert out.startswith(WORKING + b"\n")  # the first bytes the client gets, before any event
    lines = [line for line in out.split(b"\n") if line.startswith(b":")]
    written = [_written(p.line)[:-1] for p in case.placed if p.at <= case.end]
    assert sorted(lines) == sorted(written)  # every line up to the terminal event, as it came
    if up is C:  # the keep-alives behind the finish go out right after the end
        assert out.endswith(b"data: [DONE]\n\n" + WORKING + b"\n" + WORKING + b"\n")
    if up is A:
        assert out.endswith(b'data: {"type":"message_stop"}\n\n:\n')
        assert (
            b"event: content_block_delta\n" + ALIVE + b"\ndata: " not in out
        )  # a writer writes whole events
    if up is R:  # bytes that are not UTF-8 as U+FFFD (openai-python's line decoder raises on them)
        assert b": ping \xef\xbf\xbd\nevent: response.completed\n" in out
        assert sdks.python("responses", case.body).error == "UnicodeDecodeError"


@pytest.mark.parametrize(("up", "client"), [(u, c) for u, c in PAIRS])
def test_a_translation_writes_them_too(up: Protocol, client: Protocol) -> None:
    case = CASES[up]
    out = b"".join(_carry(up, client, [case.body])[0])
    assert out == _expected(case, client)
    assert out.startswith(WORKING + b"\n")


def test_the_sdks_read_the_same_answer_as_without_the_comment_lines() -> None:
    cases: list[tuple[str, bytes]] = []
    for up, case in CASES.items():
        for client in CLIENTS[up]:
            reads, _ = _carry(up, client, [case.body])
            plain = b"".join(_carry(up, client, [case.plain])[0])
            assert b"".join(reads) != plain
            got, ref = sdks.python(KIND[client], [r for r in reads if r]), sdks.python(KIND[client], plain)
            assert got.ok and got == ref, f"{up} -> {client}"
            cases += [(KIND[client], b"".join(reads)), (KIND[client], plain)]
    node = sdks.node(cases)
    for i in range(0, len(node), 2):
        assert node[i].ok and node[i] == node[i + 1], cases[i][1][:200]


@pytest.mark.parametrize("up", list(Protocol))
def test_any_chunking_gives_the_same_bytes_and_note(up: Protocol) -> None:
    case = CASES[up]
    body = case.body
    for client in [None, *CLIENTS[up]]:
        whole, summary = _carry(up, client, [body])
        how = "passed on in the upstream's bytes" if client is None else "written to the client"
        assert summary.extra["notes"].count(_note(len(case.placed), how)) == 1
        splits = [
            [body[i : i + 1] for i in range(len(body))],
            [body[i : i + 7] for i in range(0, len(body), 7)],
            random_pieces(body, random.Random(len(body))),
        ]
        for pieces in splits:
            reads, again = _carry(up, client, pieces)
            assert b"".join(reads) == b"".join(whole), client
            assert again.extra["notes"] == summary.extra["notes"]


def test_a_read_of_comment_lines_only_goes_out_at_once() -> None:
    """The upstream is silent but for its keep-alives: each read of them reaches the client as it
    is read, in every mode (the SDK's read does not time out)."""
    for client in CLIENTS[C]:
        pieces = [CHAT[0], WORKING + b"\n\n", ALIVE + b"\n\n" + WORKING + b"\n\n", *CHAT[1:]]
        reads, _ = _carry(C, client, pieces)
        assert reads[1:3] == [WORKING + b"\n", ALIVE + b"\n" + WORKING + b"\n"], client
    reads, _ = _carry(C, None, pieces)
    assert reads[1:3] == pieces[1:3]


def test_what_waits_behind_the_stop_is_bounded() -> None:
    line = b": " + b"x" * 1000
    n = MAX_HELD // (len(line) + 1) + 5
    body = b"".join([*CHAT[:4], (line + b"\n\n") * n, *CHAT[4:]])
    out = b"".join(_carry(C, C, [body])[0])
    kept = MAX_HELD // (len(line) + 1)
    assert out.endswith(b"data: [DONE]\n\n" + (line + b"\n") * kept)
    assert out.count(line) == kept < n


def test_a_real_openrouter_stream_gets_its_keep_alives_in_normalize_mode() -> None:
    path = ROOT / "real/chat/openrouter--req-llm--qwen-qwen-2-5-coder-32b-instruct-streaming.sse"
    body = path.read_bytes()
    assert body.count(WORKING + b"\n\n") == 14
    reads, summary = _carry(C, C, random_pieces(body, random.Random(5)))
    out = b"".join(reads)
    # seven before the first chunk, seven while OpenRouter counted the usage (behind the finish)
    assert out.startswith((WORKING + b"\n") * 7 + b"data: {")
    assert out.endswith(b"data: [DONE]\n\n" + (WORKING + b"\n") * 7)
    assert out.count(WORKING) == 14
    assert _note(14, "written to the client") in summary.extra["notes"]
    got, ref = sdks.python("chat", out), sdks.python("chat", body)
    assert got.ok and ref.ok
    (choice,), (ref_choice,) = got.final["choices"], ref.final["choices"]
    assert (choice["message"]["content"], choice["finish_reason"]) == ("Hello, universe!", "stop")
    assert (ref_choice["message"]["content"], ref_choice["finish_reason"]) == ("Hello, universe!", "stop")
    assert got.final["usage"]["total_tokens"] == ref.final["usage"]["total_tokens"] == 35
