"""The fake upstream's scripted scenarios, as protocol-neutral data.

What a realistic LLM upstream does (docs/design/upstream.md, "Realistic scenarios"):
plain text, parallel tool calls with interleaved argument deltas, thinking, ``max_tokens``, a
mid-stream error, truncation, HTTP errors, slow tokens, stalls inside tool arguments with and
without keepalives, compressed bodies, and transport faults (resets, drops). Each scenario here
is a generator of ``ops`` (see ``ops.py``) plus a few transport knobs; one renderer per
protocol turns it into that protocol's real wire shape, so every scenario exists for Anthropic
Messages, OpenAI Chat Completions and OpenAI Responses, streamed and non-streamed.

Delays are in seconds of a real model; the server multiplies them by its ``time_scale``.

Rules: docs/design/upstream.md, "Realistic scenarios": the list above, and every
provider-test path (success, error, cancel, parallel tool calls, truncated tail) is a scenario.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from .agent import s_agent
from .ops import (
    BlockDelta,
    BlockStart,
    BlockStop,
    Fail,
    Finish,
    HugeLine,
    Malformed,
    Op,
    Params,
    Reset,
    Start,
    Wait,
)

HttpErrorName = Literal["rate_limit", "prompt_too_long", "html_500", "authentication"]

TOKEN_GAP = 0.03  # a fast model: ~30 tokens/s
FIRST_TOKEN = 0.4  # time to first token
SLOW_GAP = 0.3  # slow_tokens
PING_EVERY = 2.0  # keepalive interval during pauses
STALL = 60.0  # default stall length (x-proxai-stall overrides)
LONG_REASONING = 20.0  # a long, healthy thinking pause

TEXT = (
    "Paris is sunny today with a high of 24 degrees and a light breeze from the west. "
    "Tomorrow brings clouds in the morning, clearing by the afternoon."
)
TEXT_BEFORE_TOOLS = "I'll look up the weather in both cities at once."
THINKING = (
    "The user wants the weather. I should check both cities, compare them, "
    "and answer briefly in one paragraph."
)
SIGNATURE = "EqQBCkgIAhABGAIiQL8fakeSignatureForProxaiUpstreamTestsOnly0123456789abcdef=="
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPfakeRedactedPayload=="
SHORT_TEXT = "Hello! How can I help?"
REFUSAL = "I can't help with that request."
ARGS_PARIS = '{"city": "Paris", "unit": "celsius", "days": 2}'
ARGS_TOKYO = '{"city": "Tokyo", "unit": "celsius", "days": 2}'
TOOL_NAME = "get_weather"

_TOKEN = re.compile(r"\s*\S+")


def tokens(text: str) -> list[str]:
    """Split text into token-sized pieces (a leading space belongs to the next word)."""
    return _TOKEN.findall(text)


def fragments(text: str, size: int = 6) -> list[str]:
    """Split argument JSON into fragments of ``size`` characters, like real argument deltas."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def call_id(params: Params, n: int) -> str:
    return f"{params.request_number:04d}{n:02d}fakecall"


# ---- building blocks ----


def stream_pieces(index: int, pieces: list[str], gap: float) -> Iterator[Op]:
    for piece in pieces:
        yield BlockDelta(index, piece)
        if gap:
            yield Wait(gap)


def text_block(
    index: int, text: str, gap: float = TOKEN_GAP, kind: Literal["text", "refusal"] = "text"
) -> Iterator[Op]:
    yield BlockStart(index, kind)
    yield from stream_pieces(index, tokens(text), gap)
    yield BlockStop(index)


def thinking_block(index: int, text: str = THINKING, pause: Wait | None = None) -> Iterator[Op]:
    yield BlockStart(index, "thinking")
    pieces = tokens(text)
    half = len(pieces) // 2
    yield from stream_pieces(index, pieces[:half], TOKEN_GAP)
    if pause is not None:
        yield pause
    yield from stream_pieces(index, pieces[half:], TOKEN_GAP)
    yield BlockStop(index, signature=SIGNATURE)


def tool_block(index: int, tool_id: str, args: str, name: str = TOOL_NAME) -> Iterator[Op]:
    yield BlockStart(index, "tool", tool_id=tool_id, name=name)
    yield from stream_pieces(index, fragments(args), TOKEN_GAP)
    yield BlockStop(index)


def parallel_tools(params: Params, first: int, stall: Wait | None = None) -> Iterator[Op]:
    """Two tool calls whose argument deltas interleave, then each finishes in turn.

    ``stall`` hits in the middle of the SECOND call's arguments, after the first call closed.
    """
    a, b = first, first + 1
    yield BlockStart(a, "tool", tool_id=call_id(params, 1), name=TOOL_NAME)
    yield BlockStart(b, "tool", tool_id=call_id(params, 2), name=TOOL_NAME)
    fa, fb = fragments(ARGS_PARIS), fragments(ARGS_TOKYO)
    both = 3
    for i in range(both):
        yield BlockDelta(a, fa[i])
        yield Wait(TOKEN_GAP)
        yield BlockDelta(b, fb[i])
        yield Wait(TOKEN_GAP)
    yield from stream_pieces(a, fa[both:], TOKEN_GAP)
    yield BlockStop(a)
    mid = (both + len(fb)) // 2
    yield from stream_pieces(b, fb[both:mid], TOKEN_GAP)
    if stall is not None:
        yield stall
    yield from stream_pieces(b, fb[mid:], TOKEN_GAP)
    yield BlockStop(b)


def opening(start: Start | None = None) -> Iterator[Op]:
    """The message starts, then the time to first token passes."""
    yield start if start is not None else Start()
    yield Wait(FIRST_TOKEN)


def text_answer(text: str, gap: float = TOKEN_GAP, start: Start | None = None) -> Iterator[Op]:
    """A whole one-block text answer that ends with ``end_turn``."""
    yield from opening(start)
    yield from text_block(0, text, gap)
    yield Finish("end_turn")


def partial_text(count: int) -> Iterator[Op]:
    """The opening, then the first ``count`` tokens of ``TEXT`` in a text block left open."""
    yield from opening()
    yield BlockStart(0, "text")
    yield from stream_pieces(0, tokens(TEXT)[:count], TOKEN_GAP)


# ---- scenarios ----


def s_text(params: Params) -> Iterator[Op]:
    yield from text_answer(TEXT)


def s_short(params: Params) -> Iterator[Op]:
    yield from text_answer(SHORT_TEXT)


def s_parallel_tools(params: Params) -> Iterator[Op]:
    yield from opening()
    yield from text_block(0, TEXT_BEFORE_TOOLS)
    yield from parallel_tools(params, 1)
    yield Finish("tool_use")


def s_thinking(params: Params) -> Iterator[Op]:
    yield from opening()
    yield from thinking_block(0)
    yield from text_block(1, TEXT)
    yield Finish("end_turn")


def s_redacted_thinking(params: Params) -> Iterator[Op]:
    yield from opening()
    yield BlockStart(0, "redacted_thinking", data=REDACTED)
    yield BlockStop(0)
    yield from text_block(1, TEXT)
    yield Finish("end_turn")


def s_max_tokens(params: Params) -> Iterator[Op]:
    yield from partial_text(8)
    yield BlockStop(0)
    yield Finish("max_tokens")


def s_refusal(params: Params) -> Iterator[Op]:
    yield from opening()
    yield from text_block(0, REFUSAL, kind="refusal")
    yield Finish("refusal")


def s_error_midstream(params: Params) -> Iterator[Op]:
    yield from partial_text(6)
    yield Fail("overloaded")


def s_key_echo(params: Params) -> Iterator[Op]:
    # a model repeating the key from its context, in small deltas, then an error that quotes it
    yield from opening()
    yield BlockStart(0, "text")
    yield from stream_pieces(
        0, ["Your key is ", *fragments(params.credential or "(none)", 5), "."], TOKEN_GAP
    )
    yield BlockStop(0)
    yield Fail("authentication")


def s_auth_error_midstream(params: Params) -> Iterator[Op]:
    yield from partial_text(6)
    yield Fail("authentication")


def s_truncated(params: Params) -> Iterator[Op]:
    yield from partial_text(6)
    # the body ends here: no block stop, no terminal event


def s_reset(params: Params) -> Iterator[Op]:
    yield from partial_text(6)
    yield Reset()


def s_dropped(params: Params) -> Iterator[Op]:
    yield from partial_text(6)
    yield Reset(drop=True)


def s_slow_tokens(params: Params) -> Iterator[Op]:
    yield from text_answer(TEXT, gap=SLOW_GAP)


def s_long_reasoning(params: Params) -> Iterator[Op]:
    yield from opening()
    yield from thinking_block(0, pause=Wait(LONG_REASONING, keepalive=True, every=PING_EVERY))
    yield from text_block(1, TEXT)
    yield Finish("end_turn")


def s_tool_stall(params: Params) -> Iterator[Op]:
    yield from opening()
    yield from text_block(0, TEXT_BEFORE_TOOLS)
    yield from parallel_tools(params, 1, stall=Wait(STALL, keepalive=True, every=PING_EVERY, stall=True))
    yield Finish("tool_use")


def s_total_stall(params: Params) -> Iterator[Op]:
    yield from opening()
    yield from text_block(0, TEXT_BEFORE_TOOLS)
    yield BlockStart(1, "tool", tool_id=call_id(params, 1), name=TOOL_NAME)
    pieces = fragments(ARGS_PARIS)
    yield from stream_pieces(1, pieces[:3], TOKEN_GAP)
    yield Wait(STALL, stall=True)
    yield from stream_pieces(1, pieces[3:], TOKEN_GAP)
    yield BlockStop(1)
    yield Finish("tool_use")


def s_idle_stall(params: Params) -> Iterator[Op]:
    yield Start()
    yield Wait(STALL, stall=True)
    yield from text_block(0, TEXT_BEFORE_TOOLS)
    yield from tool_block(1, call_id(params, 1), ARGS_PARIS)
    yield Finish("tool_use")


def s_body_stall(params: Params) -> Iterator[Op]:
    """Silence in the middle of the reply: streamed, after the first text; not streamed, after
    the headers and half the body."""
    yield from opening()
    yield BlockStart(0, "text")
    yield from stream_pieces(0, fragments(TEXT_BEFORE_TOOLS)[:2], TOKEN_GAP)
    yield Wait(STALL, stall=True, in_body=True)
    yield from stream_pieces(0, fragments(TEXT_BEFORE_TOOLS)[2:], TOKEN_GAP)
    yield BlockStop(0)
    yield Finish("end_turn")


def s_empty_tool_delta(params: Params) -> Iterator[Op]:
    yield from opening()
    yield BlockStart(0, "tool", tool_id=call_id(params, 1), name=TOOL_NAME)
    yield BlockDelta(0, "")
    pieces = fragments(ARGS_PARIS)
    yield from stream_pieces(0, pieces[:2], TOKEN_GAP)
    yield BlockDelta(0, "")
    yield from stream_pieces(0, pieces[2:], TOKEN_GAP)
    yield BlockStop(0)
    yield Finish("tool_use")


def s_args_in_done(params: Params) -> Iterator[Op]:
    yield from opening()
    yield from text_block(0, TEXT_BEFORE_TOOLS)
    yield BlockStart(1, "tool", tool_id=call_id(params, 1), name=TOOL_NAME)
    yield Wait(TOKEN_GAP * 5)
    yield BlockStop(1, tail=ARGS_PARIS)
    yield Finish("tool_use")


def s_last_fragment_in_finish(params: Params) -> Iterator[Op]:
    yield from opening()
    yield BlockStart(0, "tool", tool_id=call_id(params, 1), name=TOOL_NAME)
    pieces = fragments(ARGS_PARIS)
    yield from stream_pieces(0, pieces[:-1], TOKEN_GAP)
    yield BlockStop(0, tail=pieces[-1])
    yield Finish("tool_use")


def s_cache_usage(params: Params) -> Iterator[Op]:
    yield from text_answer(TEXT, start=Start(input_tokens=12, cache_read=2048, cache_write=512))


def s_malformed_json(params: Params) -> Iterator[Op]:
    yield from opening()
    pieces = tokens(TEXT)
    yield BlockStart(0, "text")
    yield from stream_pieces(0, pieces[:4], TOKEN_GAP)
    yield Malformed()
    yield from stream_pieces(0, pieces[4:], TOKEN_GAP)
    yield BlockStop(0)
    yield Finish("end_turn")


def s_huge_line(params: Params) -> Iterator[Op]:
    yield from partial_text(4)
    yield HugeLine(params.size)


def s_big_stream(params: Params) -> Iterator[Op]:
    """``params.events`` text deltas (lazily), then a tool call; no delays."""
    yield Start(input_tokens=1200, cache_read=800)
    words = tokens(" " + TEXT)  # every piece starts with a space: counting is easy
    yield BlockStart(0, "text")
    for i in range(max(params.events, 1)):
        yield BlockDelta(0, words[i % len(words)])
    yield BlockStop(0)
    yield BlockStart(1, "tool", tool_id=call_id(params, 1), name=TOOL_NAME)
    for piece in fragments(ARGS_PARIS):
        yield BlockDelta(1, piece)
    yield BlockStop(1)
    yield Finish("tool_use")


@dataclass(frozen=True, slots=True)
class Scenario:
    """A named script plus its transport knobs."""

    name: str
    summary: str
    script: Callable[[Params], Iterator[Op]]
    http_error: HttpErrorName | None = None
    content_type: str | None = "text/event-stream"  # streamed bodies; None = header omitted
    encoding: str | None = None  # content-encoding applied to the body
    byte_delay: float = 0.0  # > 0: write the body one byte at a time (slowloris)


_ALL = [
    Scenario("text", "Plain text answer, end_turn / stop / completed.", s_text),
    Scenario(
        "parallel_tools", "Text, then two tool calls whose argument deltas interleave.", s_parallel_tools
    ),
    Scenario("thinking", "Thinking (signature) / reasoning summary, then text. Chat: text only.", s_thinking),
    Scenario(
        "redacted_thinking",
        "Redacted thinking / encrypted reasoning item, then text. Chat: text only.",
        s_redacted_thinking,
    ),
    Scenario("max_tokens", "Text cut by the token limit: max_tokens / length / incomplete.", s_max_tokens),
    Scenario("refusal", "A refusal: stop_reason refusal / delta.refusal / refusal content part.", s_refusal),
    Scenario(
        "error_midstream",
        "Some text, then an overloaded error event (Responses: error + response.failed).",
        s_error_midstream,
    ),
    Scenario("truncated", "Some text, then the body ends cleanly without a terminal event.", s_truncated),
    Scenario("reset", "Some text, then the connection (HTTP/2: the stream) is reset.", s_reset),
    Scenario(
        "dropped",
        "Some text, then the connection closes mid-body (HTTP/1.1: FIN, no last chunk; HTTP/2: CANCEL).",
        s_dropped,
    ),
    Scenario("rate_limit", "HTTP 429 with the protocol's error body and retry-after.", s_text, "rate_limit"),
    Scenario(
        "prompt_too_long",
        "HTTP 400 with the protocol's real prompt-too-long wording.",
        s_text,
        "prompt_too_long",
    ),
    Scenario("slow_tokens", "Text with a steady 0.3 s gap between tokens (healthy).", s_slow_tokens),
    Scenario(
        "long_reasoning",
        "Thinking with a 20 s pause inside it while keepalives continue (healthy).",
        s_long_reasoning,
    ),
    Scenario(
        "tool_stall",
        "Two parallel tool calls; the SECOND stalls mid-arguments for 60 s while keepalives continue.",
        s_tool_stall,
    ),
    Scenario(
        "total_stall",
        "Total silence (no bytes) for 60 s in the middle of a tool call's arguments.",
        s_total_stall,
    ),
    Scenario("idle_stall", "Total silence for 60 s after the start, before any content.", s_idle_stall),
    Scenario(
        "body_stall",
        "60 s of silence in the middle of the reply (not streamed: after the headers and half the body).",
        s_body_stall,
    ),
    Scenario("empty_tool_delta", "A tool call with empty argument deltas.", s_empty_tool_delta),
    Scenario(
        "args_in_done",
        "Tool arguments only at the close (Responses: only in .done; others: one delta).",
        s_args_in_done,
    ),
    Scenario(
        "last_fragment_in_finish",
        "The last argument fragment arrives with the close (Chat: in the finish_reason chunk).",
        s_last_fragment_in_finish,
    ),
    Scenario("cache_usage", "Text with cache read and cache write tokens in usage.", s_cache_usage),
    Scenario(
        "auth_echo",
        "HTTP 401 whose error message and x-proxai-received-key header quote the key the request "
        "carried (as compatible servers do).",
        s_text,
        "authentication",
    ),
    Scenario(
        "key_echo",
        "Text that spells out the request's key in 5-character deltas, then an authentication error "
        "event quoting it.",
        s_key_echo,
    ),
    Scenario(
        "auth_error_midstream",
        "Some text, then an authentication error event whose message quotes the request's key.",
        s_auth_error_midstream,
    ),
    Scenario("html_500", "HTTP 502 with an HTML body (a gateway error page).", s_text, "html_500"),
    Scenario(
        "malformed_json", "One event with broken JSON in the middle of a text stream.", s_malformed_json
    ),
    Scenario(
        "wrong_content_type",
        "A valid SSE body labelled application/json (x-proxai-content-type: none omits it).",
        s_text,
        content_type="application/json",
    ),
    Scenario(
        "huge_line",
        "One enormous line without a newline (x-proxai-size bytes, default 32 MiB), then EOF.",
        s_huge_line,
    ),
    Scenario(
        "slowloris",
        "A short text answer written one byte at a time, 20 ms apart.",
        s_short,
        byte_delay=0.02,
    ),
    Scenario(
        "big_stream",
        "A large stream of x-proxai-events text deltas (default 10000) plus a tool call, no delays.",
        s_big_stream,
    ),
    Scenario("gzip", "The text scenario with content-encoding gzip.", s_text, encoding="gzip"),
    Scenario(
        "agent",
        "Agent mode: a call of a declared tool, then after its result a final answer (per conversation).",
        s_agent,
    ),
]

SCENARIOS: dict[str, Scenario] = {s.name: s for s in _ALL}
DEFAULT_SCENARIO = "text"


def get_scenario(name: str | None) -> Scenario:
    """The scenario called ``name``; unknown names play ``text``.

    A provider-style prefix is ignored (``fake/parallel_tools``, ``proxai:thinking``), so a
    route that namespaces model names still selects the scenario.
    """
    if not name:
        return SCENARIOS[DEFAULT_SCENARIO]
    found = SCENARIOS.get(name) or SCENARIOS.get(re.split(r"[/:]", name)[-1])
    return found or SCENARIOS[DEFAULT_SCENARIO]


def names_scenario(name: str | None) -> bool:
    """Whether ``name`` (a model name or a header) selects a scenario (prefixes ignored)."""
    return bool(name) and (name in SCENARIOS or re.split(r"[/:]", name or "")[-1] in SCENARIOS)


def list_scenarios() -> list[tuple[str, str]]:
    """(name, one-line summary) of every scenario, in documentation order."""
    return [(s.name, s.summary) for s in _ALL]
