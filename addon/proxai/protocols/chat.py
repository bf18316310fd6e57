"""OpenAI Chat Completions observer: the protocol state machine, streamed and non-streamed.

The rules (docs/design/protocol-grammars.md, "OpenAI Chat Completions"):
``chat.completion.chunk`` deltas carry role, content,
tool calls and ``finish_reason``; ``data: [DONE]`` is the terminal sentinel, and EOF without
it is ``closed``. Stream identity: every chunk repeats ``id`` and ``model``; the first
chunk sets the identity and every later one must agree (a mismatch is an
``UpstreamProtocolError``). Empty strings do not count: Azure OpenAI's first chunk
(``prompt_filter_results``) has ``"id": ""`` and ``"model": ""``. Parallel tool calls
are keyed by ``tool_calls[].index`` (per choice) and their argument deltas may interleave; a
call is finished by its choice's ``finish_reason`` (whose chunk may still carry the last
argument fragment, processed first) or by ``[DONE]``. The final usage
arrives on a ``choices: []`` chunk after ``finish_reason`` (``stream_options.include_usage``);
``prompt_tokens_details.cached_tokens`` is the cache read, Chat has no cache write. A chunk
whose payload has a top-level ``"error"`` is the upstream's error (the SDKs raise on it).

Lifecycle (Enum + one transition table, ``machine.Machine``): WAITING -> STREAMING ->
FINISHED (a finish_reason arrived) -> DONE (``[DONE]``); events after ``[DONE]`` are ignored.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import orjson

from proxai.error_kind import classify
from proxai.errors import SemanticStreamError, TranslationError, UpstreamProtocolError
from proxai.model import Protocol, StopClass
from proxai.sse import RawName, event_name
from proxai.stream import stops
from proxai.stream.lifecycle import Lifecycle, Phase, StreamIdentity
from proxai.stream.sink import BlockKey, BlockKind, Citation, DeltaKind, Sink, Stop, TokenUsage
from proxai.stream.textparts import keep

from .common import Accum, ObserverBase, ToolBuffer, error_fields, nbytes, openai_usage
from .machine import Machine, as_dict, as_int, as_list, as_str


class State(Enum):
    WAITING = "waiting"  # no chunk yet
    STREAMING = "streaming"
    FINISHED = "finished"  # a finish_reason arrived; usage-only chunks may follow
    DONE = "done"  # [DONE] (terminal)
    ERRORED = "errored"


_MACHINE = Machine[State](
    {
        State.WAITING: {"chunk": State.STREAMING, "finish": State.FINISHED, "done": State.DONE},
        State.STREAMING: {"chunk": State.STREAMING, "finish": State.FINISHED, "done": State.DONE},
        State.FINISHED: {"chunk": State.FINISHED, "finish": State.FINISHED, "done": State.DONE},
    },
    "openai_chat: {event} in state {state}",
)

STOP_CLASSES: dict[str, StopClass] = {
    "stop": StopClass.END_TURN,
    "length": StopClass.MAX_TOKENS,
    "tool_calls": StopClass.TOOL_USE,
    "function_call": StopClass.TOOL_USE,
    "content_filter": StopClass.CONTENT_FILTER,
}


class ToolArgs:
    """Tool-call argument fragments, kept (bounded) until the call ends, when the whole must be
    valid JSON: invalid argument JSON is rejected instead of being passed on (or replaced by
    ``{}``), so an upstream that lost a fragment never reaches the client as a success."""

    __slots__ = ("_parts", "_sizes", "max_bytes")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._parts: dict[object, list[str]] = {}
        self._sizes: dict[object, int] = {}

    def add(self, key: object, text: str) -> None:
        parts = self._parts.get(key)
        if parts is None:
            parts = self._parts[key] = []
            self._sizes[key] = 0
        size = self._sizes[key] + len(text)
        if size > self.max_bytes:
            raise UpstreamProtocolError(f"tool call arguments exceed the limit of {self.max_bytes} bytes")
        self._sizes[key] = size
        keep(parts, text)  # memory near the count (proxai.stream.textparts)

    def close(self, key: object, what: str) -> None:
        parts = self._parts.pop(key, None)
        self._sizes.pop(key, None)
        if not parts:
            return  # no arguments at all: an empty object
        raw = "".join(parts)
        try:
            orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise UpstreamProtocolError(f"{what}: the streamed arguments are not valid JSON") from None


TEXT_KEY = "text"
REFUSAL_KEY = "refusal"
REASONING_KEY = "reasoning"
#: The stream id given to a Chat stream whose chunks carry none (``"id": ""``).
UNNAMED = "chatcmpl-unnamed"


def usage_in(u: dict[str, Any]) -> TokenUsage:
    prompt = as_dict(u.get("prompt_tokens_details"))
    completion = as_dict(u.get("completion_tokens_details"))
    return TokenUsage(
        input=as_int(u.get("prompt_tokens")),
        output=as_int(u.get("completion_tokens")),
        cache_read=as_int(prompt.get("cached_tokens")),
        cache_write=as_int(prompt.get("cache_write_tokens")),
        reasoning=as_int(completion.get("reasoning_tokens")),
    )


class _Translation:
    """The writer-facing half of the Chat grammar: what each chunk means to a ``Sink``. The
    grammar hands it every chunk it has parsed (and ``[DONE]``), before the summary takes it in.

    Chat has no start event: the first chunk with a choice sets the stream identity; a later
    chunk with another id or model is read on, the first identity stays. Content and refusal open
    one text / refusal block each on first appearance (so does ``reasoning_content`` /
    ``reasoning``: a thinking block); ``content`` given as a list of typed parts is its ``text``
    parts as text and its ``thinking`` parts as reasoning. A tool call opens a tool block at the
    first appearance of its ``tool_calls[].index`` (or, without one, its id), which must carry
    ``id`` and ``function.name``; later fragments are its arguments, checked as JSON when the
    call ends.

    The end, read as the official SDK reads real providers: ``finish_reason`` closes every open
    block (a fragment in the same chunk first); usage is the last one reported (the ``choices:
    []`` chunk after ``finish_reason``, the ``finish_reason`` chunk itself, or a trailing chunk
    that still carries a choice with an empty delta); a ``choices: []`` chunk before any content
    without usage is skipped; ``[DONE]`` after ``finish_reason`` ends the stream, and so does
    ``[DONE]`` right after a usage with no ``finish_reason`` at all; ``[DONE]`` anywhere else, or
    EOF without it, is never a success (normalize mode: EOF right after ``finish_reason`` ends
    the stream). ``logprobs`` with entries reach a Chat client and are left out and counted for
    the others; more than one choice, a non-assistant role, legacy ``function_call`` and custom
    tool calls are a ``TranslationError``."""

    __slots__ = (
        "_args",
        "_finish",
        "_normalize",
        "_open",
        "_redacted",
        "_refusal",
        "_tools",
        "_usage",
        "life",
        "sink",
    )

    def __init__(self, sink: Sink, *, normalize: bool, max_tool_args: int) -> None:
        self.sink = sink
        self.life = Lifecycle()
        self._normalize = normalize
        self._open: list[BlockKey] = []  # open blocks in start order
        self._tools: dict[int, str] = {}  # chat tool index -> tool call id
        self._finish: str | None = None
        self._usage: TokenUsage | None = None  # the last usage the upstream reported
        self._refusal = False
        self._redacted = 0  # redacted thinking blocks opened (their keys)
        self._args = ToolArgs(max_tool_args)

    def error(self, obj: dict[str, Any]) -> None:
        """The upstream's own error (a chunk with a top-level ``error``)."""
        err = obj.get("error")
        e = as_dict(err)
        message = as_str(e.get("message")) or (str(err)[:200] if err is not None else "upstream error event")
        self.life.fail()
        self.sink.upstream_error(classify(e.get("type"), e.get("code"), message), message)

    def chunk(self, obj: dict[str, Any]) -> None:
        """One chunk (a JSON object that is not an error)."""
        phase = self.life.phase
        choices = obj.get("choices")
        # ``type(x) is T or isinstance(x, T)``: the parse's exact type first (the same test)
        if not (type(choices) is list or isinstance(choices, list)):
            raise UpstreamProtocolError("Chat Completions chunk without a choices array")
        if not choices:
            self._usage_only(obj)
            return
        if len(choices) > 1:
            raise TranslationError("multi-choice chunks (n > 1) cannot be translated", "choices")
        # Per chunk: ``as_dict`` / ``as_int`` / ``as_str`` inlined where the value already is
        # what they return (the same checks, no calls).
        choice = choices[0]
        if not (type(choice) is dict or isinstance(choice, dict)):
            choice = {}
        ci = choice.get("index")
        if ci is not None and ci != 0 and as_int(ci) not in (0, None):
            raise TranslationError("only choice index 0 can be translated", "choices[].index")
        if phase is Phase.WAITING:
            cid = obj.get("id")
            if not cid or not isinstance(cid, str):
                cid = UNNAMED  # Snowflake sends "" (the SDK reads on): the writers need one
            model = as_str(obj.get("model")) or ""
            self.life.start(StreamIdentity(cid, model))
            self.sink.start(cid, model, None)
        elif phase is Phase.TERMINAL:
            self._after_finish(obj, choice)
            return
        usage = obj.get("usage")
        if usage is not None and isinstance(usage, dict):
            self._usage = usage_in(usage)
        logprobs = choice.get("logprobs")
        if (
            logprobs is not None
            and isinstance(logprobs, dict)
            and (logprobs.get("content") or logprobs.get("refusal"))
        ):
            self._logprobs(logprobs)
        delta = choice.get("delta")
        if type(delta) is dict and len(delta) == 1 and type(content := delta.get("content")) is str:
            # ``_delta``'s hot path inline (a delta of only content), what ``_text`` does
            if content:
                if TEXT_KEY not in self._open:
                    self._open.append(TEXT_KEY)
                    self.sink.block_start(TEXT_KEY, "text")
                self.sink.delta(TEXT_KEY, "text", content)
        elif isinstance(delta, dict) and delta:
            self._delta(delta)
        finish = choice.get("finish_reason")
        if finish is not None:
            if not isinstance(finish, str):
                raise UpstreamProtocolError("finish_reason is not a string")
            self._finish = finish
            self._close_all()

    def _close_all(self) -> None:
        """The end of the answer: every open block closed (tool arguments checked), then the
        terminal phase."""
        sink = self.sink
        for key in self._open:
            if isinstance(key, int):
                self._args.close(key, f"tool call {self._tools[key]!r}")
            sink.block_stop(key)
        self._open.clear()
        self.life.terminal()

    def _delta(self, delta: dict[str, Any]) -> None:
        if len(delta) == 1:
            # The hot path: a delta of only tool calls (what the general path below does with
            # such a delta: every other field it reads is absent). A delta of only content never
            # comes here: ``event`` takes it.
            calls = delta.get("tool_calls")
            if type(calls) is list:
                for call in calls:
                    self._tool(call if isinstance(call, dict) else {})
                return
        role = delta.get("role")
        if role is not None and role != "assistant":
            raise TranslationError(f"delta role {role!r} cannot be translated", "choices[0].delta.role")
        if delta.get("function_call") is not None:
            raise TranslationError(
                "legacy function_call deltas cannot be translated", "choices[0].delta.function_call"
            )
        field = "reasoning_content" if delta.get("reasoning_content") else "reasoning"
        reasoning = delta.get(field)
        if reasoning:
            # OpenAI-compatible providers (vLLM, DeepSeek, ...) stream reasoning here; a target
            # that has a slot gets it as thinking instead of losing it silently
            if not isinstance(reasoning, str):
                raise TranslationError(
                    "non-string delta reasoning cannot be translated", f"choices[0].delta.{field}"
                )
            self._think(reasoning, field)
        notes = delta.get("annotations")
        if notes and isinstance(notes, list):
            self._annotations(notes)
        details = delta.get("reasoning_details")
        if details and isinstance(details, list):
            self._reasoning_details(details, bool(reasoning))
        content = delta.get("content")
        if content:
            if isinstance(content, str):
                self._text(TEXT_KEY, "text", content)
            elif isinstance(content, list):
                self._content_parts(content)
            else:
                raise TranslationError(
                    "delta content that is neither text nor a list of parts cannot be translated",
                    "choices[0].delta.content",
                )
        refusal = delta.get("refusal")
        if refusal:
            if not isinstance(refusal, str):
                raise UpstreamProtocolError("delta.refusal is not a string")
            self._refusal = True
            self._text(REFUSAL_KEY, "refusal", refusal)
        calls = delta.get("tool_calls")
        if calls:
            if not isinstance(calls, list):
                raise UpstreamProtocolError("delta.tool_calls is not an array")
            for call in calls:
                self._tool(as_dict(call))

    def _annotations(self, notes: list[Any]) -> None:
        """``annotations`` of the message (OpenAI's search models, OpenRouter's web plugin): each
        ``url_citation`` cites the text; another kind has no counterpart (left out, counted)."""
        if TEXT_KEY not in self._open:  # they may come before the text (OpenRouter)
            self._open.append(TEXT_KEY)
            self.sink.block_start(TEXT_KEY, "text")
        for entry in notes:
            note = as_dict(entry)
            cite = as_dict(note.get("url_citation"))
            url = as_str(cite.get("url"))
            if note.get("type") == "url_citation" and url:
                start, end = as_int(cite.get("start_index")), as_int(cite.get("end_index"))
                cited = as_str(cite.get("content")) or ""
                self.sink.citation(
                    TEXT_KEY,
                    Citation(url, as_str(cite.get("title")), cited, start, end, Protocol.OPENAI_CHAT, note),
                )
            else:
                self.sink.opaque_event(TEXT_KEY, Protocol.OPENAI_CHAT, {**note, "type": "annotation"})

    def _think(self, text: str, field: str) -> None:
        """Reasoning text; ``field`` (the delta field it came in) names the thinking block, so
        a Chat client in normalize mode gets it in the same field."""
        if REASONING_KEY not in self._open:
            self._open.append(REASONING_KEY)
            self.sink.block_start(REASONING_KEY, "thinking", name=field)
        self.sink.delta(REASONING_KEY, "thinking", text)

    def _reasoning_details(self, details: list[Any], had_text: bool) -> None:
        """OpenRouter's ``reasoning_details``: a Chat client (normalize) gets them as they came.
        For the others: ``reasoning.text`` / ``reasoning.summary`` text is the reasoning when the
        delta's ``reasoning`` did not already carry it, a ``signature`` is the thinking block's,
        and ``reasoning.encrypted`` data is a redacted thinking block."""
        if self._normalize:
            self.sink.opaque_event(
                REASONING_KEY,
                Protocol.OPENAI_CHAT,
                {"type": "reasoning_details", "reasoning_details": details},
            )
            return
        for entry in details:
            d = as_dict(entry)
            kind = d.get("type")
            if kind in ("reasoning.text", "reasoning.summary"):
                text = as_str(d.get("text") if kind == "reasoning.text" else d.get("summary"))
                if text and not had_text:
                    self._think(text, "reasoning")
                signature = as_str(d.get("signature"))
                if signature:
                    if REASONING_KEY not in self._open:
                        self._open.append(REASONING_KEY)
                        self.sink.block_start(REASONING_KEY, "thinking", name="reasoning")
                    self.sink.delta(REASONING_KEY, "signature", signature)
            elif kind == "reasoning.encrypted":
                data = as_str(d.get("data"))
                if data:
                    self._redacted += 1
                    key = f"redacted_{self._redacted}"
                    self.sink.block_start(key, "redacted_thinking", data=data)
                    self.sink.block_stop(key)

    def _content_parts(self, parts: list[Any]) -> None:
        """``content`` as a list of typed parts (Mistral's reasoning models): ``text`` parts are
        text, ``thinking`` parts (a string, or a list of text parts) are reasoning."""
        for part in parts:
            p = as_dict(part)
            ptype = p.get("type")
            if ptype == "text":
                text = p.get("text")
                if isinstance(text, str) and text:
                    self._text(TEXT_KEY, "text", text)
            elif ptype == "thinking":
                inner = p.get("thinking")
                pieces = (
                    [inner] if isinstance(inner, str) else [as_dict(x).get("text") for x in as_list(inner)]
                )
                for piece in pieces:
                    if isinstance(piece, str) and piece:
                        self._think(piece, "reasoning_content")
            else:
                raise TranslationError(
                    f"content part type {ptype!r} cannot be translated", "choices[0].delta.content[].type"
                )

    def _logprobs(self, logprobs: dict[str, Any]) -> None:
        """Token log probabilities of the text (or refusal) so far: a Chat client gets them as
        they came; for the others they have no counterpart (left out, counted)."""
        key = REFUSAL_KEY if logprobs.get("refusal") and not logprobs.get("content") else TEXT_KEY
        self.sink.opaque_event(key, Protocol.OPENAI_CHAT, {"type": "logprobs", "logprobs": logprobs})

    def _after_finish(self, obj: dict[str, Any], choice: dict[str, Any]) -> None:
        """A chunk that still carries a choice after ``finish_reason`` (OpenRouter sends its usage
        on one, with an empty delta, repeating the finish_reason or not): its usage is read; a
        delta with content there is beyond what can be given after the end."""
        delta = as_dict(choice.get("delta"))
        if (
            any(v for k, v in delta.items() if k not in ("role", "content", "refusal"))
            or delta.get("content")
            or delta.get("refusal")
        ):
            raise SemanticStreamError("Chat Completions chunk with content after finish_reason")
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self._usage = usage_in(usage)

    def _text(self, key: str, kind: BlockKind, text: str, delta: DeltaKind = "text") -> None:
        if key not in self._open:
            self._open.append(key)
            self.sink.block_start(key, kind)
        self.sink.delta(key, delta, text)

    def _tool(self, call: dict[str, Any]) -> None:
        idx = as_int(call.get("index"))
        if idx is None:
            idx = self._index_of(call)
        ctype = call.get("type")
        if ctype is not None and ctype != "function":
            raise TranslationError(f"tool call type {ctype!r} cannot be translated", "tool_calls[].type")
        fn = as_dict(call.get("function"))
        tid = as_str(call.get("id"))
        name = as_str(fn.get("name"))
        key = idx
        if idx not in self._tools:
            if not tid or not name:
                raise SemanticStreamError(f"first delta of tool call {idx} lacks its id or function.name")
            self._tools[idx] = tid
            self._open.append(key)
            self.sink.block_start(key, "tool", id=tid, name=name)
        else:
            if key not in self._open:
                raise SemanticStreamError(f"tool call {idx} continued after it was closed")
            if tid and tid != self._tools[idx]:
                raise SemanticStreamError(
                    f"tool call index {idx} changed id from {self._tools[idx]!r} to {tid!r}"
                )
        args = fn.get("arguments")
        if args:
            if not isinstance(args, str):
                raise UpstreamProtocolError(f"tool call {idx} arguments are not a string")
            self._args.add(key, args)
            self.sink.delta(key, "args", args)

    def _index_of(self, call: dict[str, Any]) -> int:
        """A tool call delta without ``index`` (Mistral sends each call whole, with its id): the
        call of that id, or a new one after the calls so far."""
        tid = as_str(call.get("id"))
        if not tid:
            raise UpstreamProtocolError("tool call delta without an integer index or an id")
        for idx, known in self._tools.items():
            if known == tid:
                return idx
        return max(self._tools, default=-1) + 1

    def _usage_only(self, obj: dict[str, Any]) -> None:
        """A ``choices: []`` chunk: usage (the last one reported is the stream's), or, before
        anything else, metadata for no client (Azure's ``prompt_filter_results``)."""
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self._usage = usage_in(usage)
            if self.life.phase is Phase.TERMINAL:
                self.life.tail()

    def done(self) -> None:
        phase = self.life.phase
        if phase is Phase.TERMINAL:
            self._end()
            return
        if phase is Phase.STOPPED:
            raise SemanticStreamError("duplicate [DONE]")
        if phase is Phase.STREAMING and self._usage is not None:
            # Snowflake ends with its usage and [DONE], never a finish_reason (the SDK reads the
            # answer, its finish_reason none): the answer ended as it stands
            self._close_all()
            self._end()
            return
        raise SemanticStreamError(
            "[DONE] before any finish_reason: the upstream stream ended without finishing"
        )

    def _end(self) -> None:
        usage = self._usage or TokenUsage()
        self.life.stop()
        finish = self._finish
        if finish is None:  # no finish_reason came: what the answer holds says how it ended
            cls = stops.from_chat("tool_calls" if self._tools else "stop", refusal_streamed=self._refusal)
        else:
            cls = stops.from_chat(finish, refusal_streamed=self._refusal)
        self.sink.end(Stop(cls, finish), usage)

    def eof(self) -> None:
        phase = self.life.phase
        if phase is Phase.STOPPED:
            return
        if phase is Phase.TERMINAL and self._normalize:
            self._end()
            return
        raise UpstreamProtocolError("upstream closed the Chat Completions stream before [DONE]")


class ChatObserver(ObserverBase):
    protocol = Protocol.OPENAI_CHAT

    __slots__ = ("_tx", "choices", "finished_choices", "state")

    def __init__(self, acc: Accum) -> None:
        super().__init__(acc)
        self.state = State.WAITING
        self.finished_choices: set[int] = set()
        self.choices: set[int] = set()  # the choice indexes seen
        self._tx: _Translation | None = None  # the writer-facing half, while translating

    def _translation(self, out: Sink) -> _Translation:
        tx = self._tx
        if tx is None:
            tx = self._tx = _Translation(
                out, normalize=self.normalize, max_tool_args=self.acc.limits_tool_args
            )
        return tx

    @property
    def phase(self) -> Phase:
        """The translated stream's phase (``Phase.WAITING`` before the first chunk)."""
        tx = self._tx
        return Phase.WAITING if tx is None else tx.life.phase

    def translate_eof(self) -> None:
        """The upstream ended: a translated stream that did not reach ``[DONE]`` fails, except in
        normalize mode right after a ``finish_reason`` (a repair: the stream ends there)."""
        tx = self._tx
        if tx is None:
            raise UpstreamProtocolError("upstream closed the Chat Completions stream before [DONE]")
        repaired = tx.life.phase is Phase.TERMINAL and self.normalize
        tx.eof()
        if repaired and not self.errored:
            self.acc.finding(
                "openai_chat.no_done", "repair", "the stream ended after finish_reason without [DONE]"
            )
            self._done()

    def _transition(self, kind: str) -> None:
        self.state = _MACHINE.step(self.state, kind)

    def _fail_state(self) -> None:
        self.state = State.ERRORED

    # -- streamed -------------------------------------------------------------------------------

    def _not_object(self, name: str, data: str, obj: object) -> None:
        if data == "[DONE]" or data.strip() == "[DONE]":
            out = self.out
            if out is not None:
                self._translation(out).done()
            self._transition("done")
            self._done()
            return
        super()._not_object(name, data, obj)

    def _fast(self, name: RawName, obj: dict[str, Any], now: float) -> bool:
        """A mid-stream chunk of one choice (index 0) whose delta is only ``content`` (or only
        one tool call's argument fragment), with the stream's id and model, no finish_reason,
        no usage, no error: the same effect as ``_event`` without the general checks (the writer's
        half, when translating, gets the chunk as ``_event`` would give it, before the summary)."""
        if self.state is not State.STREAMING or (name is not None and event_name(name) == "error"):
            return False  # (a finished choice 0 moved the state to FINISHED)
        acc = self.acc
        choices = obj.get("choices")
        if (
            type(choices) is not list
            or len(choices) != 1
            or obj.get("id") != acc.id
            or obj.get("model") != acc.model
            or obj.get("usage") is not None
            or obj.get("error") is not None
        ):
            return False
        c = choices[0]
        if type(c) is not dict or c.get("finish_reason") is not None or c.get("index") != 0:
            return False
        delta = c.get("delta")
        if type(delta) is not dict or len(delta) != 1:
            return False
        s = delta.get("content")
        if type(s) is str:
            out = self.out
            if out is not None:
                self._translation(out).chunk(obj)
            if s:
                acc.content_seen = True
                acc.text_bytes += len(s) if s.isascii() else nbytes(s)
                if acc.cap_text is not None:
                    acc.capture_text(s)
            return True
        calls = delta.get("tool_calls")
        if type(calls) is not list or len(calls) != 1:
            return False
        tc = calls[0]
        if type(tc) is not dict or len(tc) != 2:  # exactly {"index": i, "function": {"arguments": ...}}
            return False
        index = tc.get("index")
        if type(index) is not int:
            return False
        tb = acc.tools.get((0, index))
        fn = tc.get("function")
        if tb is None or tb.finished or type(fn) is not dict or len(fn) != 1:
            return False
        args = fn.get("arguments")
        if type(args) is not str:
            return False
        out = self.out
        if out is not None:
            self._translation(out).chunk(obj)
        if args:
            acc.tool_args(tb, args, now)
        else:
            tb.last_progress_at = now
        return True

    def _event(self, name: str, obj: dict[str, Any], now: float) -> None:
        acc = self.acc
        err = obj.get("error")
        if err is not None or name == "error":
            msg, etype = error_fields(err if err is not None else obj)
            acc.upstream_error(msg, type=etype)
            out = self.out
            if out is not None:
                self._translation(out).error(obj)
            self.upstream_failed()
            return
        out = self.out
        if out is not None:
            # The writer's half first: a problem it finds ends the reading at this chunk, before
            # the summary takes it in.
            self._translation(out).chunk(obj)
        self._identity(obj)
        finished = False
        for choice in as_list(obj.get("choices")):
            if self._choice(as_dict(choice), now):
                finished = True
        self._transition("finish" if finished else "chunk")
        u = obj.get("usage")
        if type(u) is dict:
            acc.usage = openai_usage(u, "prompt", "completion")

    def _identity(self, obj: dict[str, Any]) -> None:
        """The first non-empty id and model are the stream's. A later chunk with another one is a
        quirk, not a violation (the SDKs read content whatever the id: Groq's web search streams
        switch ids mid-answer, a model router may name each model): one note each, the first
        values stay."""
        acc = self.acc
        cid = as_str(obj.get("id"))
        if cid:
            if acc.id is None:
                acc.id = cid
            elif cid != acc.id:
                acc.finding_once(
                    "openai_chat.id_changed",
                    "quirk",
                    f"chunk id {cid!r} differs from the stream's {acc.id!r}",
                )
        model = as_str(obj.get("model"))
        if model:
            if acc.model is None:
                acc.model = model
            elif model != acc.model:
                acc.finding_once(
                    "openai_chat.model_changed",
                    "quirk",
                    f"chunk model {model!r} differs from the stream's {acc.model!r}",
                )

    def _choice(self, choice: dict[str, Any], now: float) -> bool:
        """One choice of a chunk; True when it carries a finish_reason."""
        acc = self.acc
        cidx = as_int(choice.get("index")) or 0
        if cidx not in self.choices:
            if cidx != len(self.choices):
                expected = len(self.choices)
                self.conform("openai_chat.choice_index", f"choice {cidx} came before choice {expected}")
            self.choices.add(cidx)
        delta = as_dict(choice.get("delta"))
        if delta:
            if cidx in self.finished_choices and (delta.get("content") or delta.get("tool_calls")):
                acc.finding(
                    "openai_chat.content_after_finish",
                    "quirk",
                    f"choice {cidx} got content after its finish_reason",
                )
            content = delta.get("content")
            if content:
                if type(content) is str:
                    acc.text(content)
                else:
                    self._content_parts(content)
            refusal = delta.get("refusal")
            if refusal:
                acc.refusal(refusal)
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning and type(reasoning) is str:
                acc.reasoning(reasoning)
            tool_calls = delta.get("tool_calls")
            if tool_calls:
                for pos, tc in enumerate(as_list(tool_calls)):
                    self._tool_delta(cidx, pos, as_dict(tc), now)
        reason = choice.get("finish_reason")
        if reason is None or reason == "":  # some compatible servers send "" for "not yet"
            return False
        if type(reason) is not str:
            raise UpstreamProtocolError(f"openai_chat: finish_reason {reason!r} is not a string")
        self.finished_choices.add(cidx)
        if cidx == 0 or acc.stop_reason is None:
            acc.stop(reason, STOP_CLASSES)
        for tb in acc.tool_order:
            if not tb.finished and tb.key[0] == cidx:
                acc.tool_finish(tb)
        return True

    def _content_parts(self, content: object) -> None:
        """``content`` as a list of typed parts (Mistral's reasoning models): ``text`` parts are
        text, ``thinking`` parts (themselves a list of text parts) are reasoning; anything else
        is counted in a note. The official SDK cannot merge such deltas (it keeps only strings)."""
        acc = self.acc
        acc.finding_once("openai_chat.content_parts", "quirk", "content arrives as a list of parts")
        for part in as_list(content):
            p = as_dict(part)
            ptype = p.get("type")
            if ptype == "text" and type(p.get("text")) is str:
                acc.text(p["text"])
            elif ptype == "thinking":
                inner = p.get("thinking")
                if type(inner) is str:
                    acc.reasoning(inner)
                for sub in as_list(inner):
                    t = as_dict(sub).get("text")
                    if type(t) is str:
                        acc.reasoning(t)
            else:
                acc.finding_once(
                    f"openai_chat.unknown_part.{ptype}", "quirk", f"content part of type {ptype!r} not read"
                )

    def _tool_delta(self, cidx: int, pos: int, tc: dict[str, Any], now: float) -> None:
        acc = self.acc
        idx = as_int(tc.get("index"))
        key = (cidx, pos if idx is None else idx)
        tb: ToolBuffer | None = acc.tools.get(key)
        ttype = as_str(tc.get("type"))
        if ttype == "custom":
            fn = as_dict(tc.get("custom"))
            args = fn.get("input")
        else:
            fn = as_dict(tc.get("function"))
            args = fn.get("arguments")
        if tb is None:
            if idx is not None:
                n = sum(1 for k in acc.tools if k[0] == cidx)
                if idx != n:
                    self.conform("openai_chat.tool_call_index", f"tool call {idx} came before tool call {n}")
            kind = "custom" if ttype == "custom" else "function"
            tb = acc.tool_start(key, as_str(tc.get("id")), as_str(fn.get("name")), kind, now)
        else:
            if tb.finished:
                acc.finding(
                    "openai_chat.args_after_finish",
                    "quirk",
                    f"tool call {tb.id or key!s} got arguments after it finished",
                )
                return
            if tb.id is None:
                tb.id = as_str(tc.get("id"))
            if tb.name is None:
                tb.name = as_str(fn.get("name"))
        if args:
            acc.tool_args(tb, args, now)
        else:
            tb.last_progress_at = now

    def _unfinished_choices(self) -> None:
        missing = sorted(self.choices - self.finished_choices)
        if missing:
            self.conform("openai_chat.no_finish_reason", f"choice {missing[0]} got no finish_reason")

    def _ended_early(self) -> None:
        self.acc.event_index = self.events
        self._unfinished_choices()

    def _done(self) -> None:
        acc = self.acc
        self._unfinished_choices()
        acc.terminal = True
        for tb in acc.tool_order:
            if not tb.finished:
                acc.tool_finish(tb)

    # -- non-streamed ---------------------------------------------------------------------------

    def _body(self, obj: dict[str, Any]) -> None:
        acc = self.acc
        acc.id = as_str(obj.get("id"))
        acc.model = as_str(obj.get("model"))
        for choice in as_list(obj.get("choices")):
            c = as_dict(choice)
            cidx = as_int(c.get("index")) or 0
            msg = as_dict(c.get("message"))
            content = msg.get("content")
            if type(content) is str:
                acc.text(content)
            refusal = msg.get("refusal")
            if type(refusal) is str:
                acc.refusal(refusal)
            reasoning = msg.get("reasoning_content") or msg.get("reasoning")
            if type(reasoning) is str:
                acc.reasoning(reasoning)
            for pos, tc in enumerate(as_list(msg.get("tool_calls"))):
                t = as_dict(tc)
                custom = as_str(t.get("type")) == "custom"
                fn = as_dict(t.get("custom" if custom else "function"))
                args = fn.get("input" if custom else "arguments")
                acc.tool_complete(
                    (cidx, pos),
                    as_str(t.get("id")),
                    as_str(fn.get("name")),
                    "custom" if custom else "function",
                    args if type(args) is str else "",
                )
            reason = as_str(c.get("finish_reason")) or None
            if reason is not None and (cidx == 0 or acc.stop_reason is None):
                acc.stop(reason, STOP_CLASSES)
        u = obj.get("usage")
        if type(u) is dict:
            acc.usage = openai_usage(u, "prompt", "completion")
