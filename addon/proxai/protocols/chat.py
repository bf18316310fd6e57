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

Lifecycle (Enum + one transition table, ``machine.Machine``): WAITING -> STREAMING (the first
chunk with a choice) -> FINISHED (a finish_reason arrived) -> DONE (``[DONE]``); events after
``[DONE]`` are ignored.

One reading, several consumers: every chunk updates the summary's accumulator and, when a
stream translator is attached (``out``), drives its writer through the neutral ``Sink`` calls, in
the same handlers (``ChatGrammar``). A problem found there ends the reading at that chunk for
the summary and the client alike (docs/design/translation.md).
"""

from __future__ import annotations

from typing import Any

from proxai.core.errors import (
    SemanticStreamError,
    TranslationError,
    TruncatedStreamError,
    UpstreamProtocolError,
)
from proxai.core.errors.kinds import classify
from proxai.core.model import Protocol, StopClass
from proxai.core.sse import RawName, event_name
from proxai.stream import stop_reasons
from proxai.stream.sink import BlockKey, BlockKind, Citation, Output, Phase, Sink, Stop, TokenUsage

from . import chat_delta as cd
from .chat_delta import calls_end, delta_conforms, end_conforms
from .chat_fields import AUDIO_KEY, REASONING_KEY, REFUSAL_KEY, TEXT_KEY, fast_fields
from .chat_usage import usage_in
from .common import Accum, GrammarBase, ToolBuffer, error_fields, json_valid, nbytes, openai_usage
from .machine import Machine, StateEnum, as_dict, as_int, as_list, as_str


class State(StateEnum):
    WAITING = "waiting"  # no chunk yet
    STREAMING = "streaming"
    FINISHED = "finished"  # a finish_reason arrived; usage-only chunks may follow
    DONE = "done"  # [DONE] (terminal)
    ERRORED = "errored"


_MACHINE = Machine[State](
    {
        # "meta": a ``choices: []`` chunk (usage, Azure's prompt_filter_results)
        State.WAITING: {
            "meta": State.WAITING,
            "chunk": State.STREAMING,
            "finish": State.FINISHED,
            "done": State.DONE,
        },
        State.STREAMING: {
            "meta": State.STREAMING,
            "chunk": State.STREAMING,
            "finish": State.FINISHED,
            "done": State.DONE,
        },
        State.FINISHED: {
            "meta": State.FINISHED,
            "chunk": State.FINISHED,
            "finish": State.FINISHED,
            "done": State.DONE,
        },
    },
    "openai_chat: {event} in state {state}",
)

# The grammar's state as a stream translator's phase.
_PHASES = {
    State.WAITING: Phase.WAITING,
    State.STREAMING: Phase.STREAMING,
    State.FINISHED: Phase.TERMINAL,
    State.DONE: Phase.STOPPED,
    State.ERRORED: Phase.ERRORED,
}
_C = Protocol.OPENAI_CHAT
_STREAMING = State.STREAMING  # the fast path's state (docs/performance.md, "Why the hot code looks so")
#: What reading a chunk's shape by subscripts raises when the shape is another (``_fast``).
_ZERO = 0  # CPython has one int 0: ``is`` tests the type and the value in one
_NOT_THIS_SHAPE = (KeyError, TypeError, ValueError, AttributeError)


#: The stream id given to a Chat stream whose chunks carry none (``"id": ""``).
UNNAMED = "chatcmpl-unnamed"


def _whole(tb: ToolBuffer) -> bool:
    """The call's streamed arguments are complete JSON (or there are none)."""
    return not tb.nbytes or (tb.buf is not None and json_valid(tb.buf.getvalue()))


class ChatGrammar(GrammarBase):
    """The Chat grammar. Each chunk is read once, in one set of handlers that update the summary
    (``Accum``) and, while a stream translator is attached (``out``), drive its writer.

    What only a translation needs is checked only then, and ends the reading at that chunk:
    more than one choice, a choice index other than 0, a non-assistant role, legacy
    ``function_call`` and custom tool calls (``TranslationError``); a chunk without a
    ``choices`` array, a tool call without ``id`` and ``function.name`` at its first
    appearance, or whose id changes, content after ``finish_reason``, tool arguments that are
    not complete JSON when the call ends (violations).

    The writer's view: the first chunk with a choice starts the stream (its id, or
    ``UNNAMED``); content and refusal open one text / refusal block each on first appearance
    (so does ``reasoning_content`` / ``reasoning``: a thinking block); a tool call is a tool
    block keyed by its ``tool_calls[].index`` (without one, the index of the call with its id,
    else a new one after the calls so far); ``finish_reason`` closes every open block; usage is
    the last one reported; ``[DONE]`` after ``finish_reason`` ends the stream, and so does
    ``[DONE]`` right after a usage with no ``finish_reason`` at all (Snowflake); ``[DONE]``
    anywhere else, or EOF without it, is never a success (normalize mode: EOF right after
    ``finish_reason`` ends the stream, a repair). ``logprobs`` with entries reach a Chat client
    and are left out and counted for the others."""

    protocol = Protocol.OPENAI_CHAT
    state: State
    parsed_finish = property(cd.parsed_finish)  # the finish_reason openai-python's parse refuses

    __slots__ = (
        "_calls",
        "_cur",
        "_cut",
        "_listed",
        "_open",
        "_reasoned",
        "_redacted",
        "_roles",
        "_typed",
        "_usage",
        "_valid",
        "choices",
        "finished_choices",
        "state",
    )

    def __init__(self, acc: Accum, output: Output | None = None) -> None:
        super().__init__(acc, output)
        self.state = State.WAITING
        self.finished_choices: set[int] = set()
        self.choices: set[int] = set()  # the choice indexes seen
        self._roles: set[int] = set()  # the choices that got a role (conformance)
        self._valid = False  # a chunk the Python SDK reads came (conformance)
        self._typed: dict[Any, Any] = {}  # each tool call's type so far, delta lists (conformance)
        self._open: list[BlockKey] = []  # the writer's open blocks in start order
        self._usage: dict[str, Any] | None = None  # the last usage the upstream reported
        self._redacted = 0  # redacted thinking blocks opened (their keys)
        self._reasoned: str | None = None  # choice 0's reasoning field (chat_delta.node_replaced)
        self._listed: dict[int, set[str]] | None = None  # each choice's fields holding a list (chat_delta)
        # Choice 0's tool calls by ``tool_calls[].index`` (``acc.tools`` keys them by (choice,
        # index): a fragment finds its call without building and hashing that tuple)
        self._calls: dict[int, ToolBuffer] = {}
        self._cur: dict[int, int | str] = {}  # each choice's tool call as openai-node has it (chat_delta)
        self._cut: set[Any] = set()  # calls cut by max_tokens (their arguments are not JSON)

    @property
    def phase(self) -> Phase:
        """The grammar's state as a stream translator's phase."""
        return _PHASES[self.state]

    def translate_eof(self) -> None:
        """The upstream ended: a translated stream that did not reach ``[DONE]`` fails, unless its
        ``finish_reason`` had come (some providers never send ``[DONE]``; the SDK reads the answer
        as it stands): the stream ends there, a quirk with a note."""
        state = self.state
        if state is State.DONE:
            return
        if state is State.FINISHED:
            self.eof()  # the summary's EOF, its notes in the same order (``_ended_early``)
            return
        raise TruncatedStreamError("upstream closed the Chat Completions stream before [DONE]")

    def _eof_after_finish(self) -> None:
        out = self.out
        if out is not None:
            self._close_blocks(out)
        self.state = State.DONE
        note = "the stream ended after finish_reason without [DONE]"
        self.acc.finding("openai_chat.no_done", "quirk", note)
        self._done()
        if out is not None:
            self._end(out)

    def _transition(self, kind: str) -> None:
        self.state = _MACHINE.step(self.state, kind)

    def _fail_state(self) -> None:
        self.state = State.ERRORED

    # -- streamed -------------------------------------------------------------------------------

    def _not_object(self, name: str, data: str, obj: object) -> None:
        if data == "[DONE]" or data.strip() == "[DONE]":
            self._sentinel()
            return
        super()._not_object(name, data, obj)

    def _sentinel(self) -> None:
        """``[DONE]`` (or the ``chat.completion.done`` object that stands for it): the end."""
        out = self.out
        if (
            out is not None
            and self.state is not State.FINISHED
            and (self.state is not State.STREAMING or self._usage is None)
        ):
            # (Snowflake ends with its usage and [DONE], never a finish_reason; the SDK reads
            # the answer, its finish_reason none: the answer ended as it stands)
            raise SemanticStreamError(
                "[DONE] before any finish_reason: the upstream stream ended without finishing"
            )
        if out is not None:
            self._close_blocks(out)
        self._transition("done")
        self._done()
        if out is not None:
            self._end(out)

    def _fast(self, name: RawName, obj: dict[str, Any], now: float) -> bool:
        """A mid-stream chunk of one choice (index 0) whose delta is only ``content`` (or only
        one tool call's argument fragment), with the stream's id and model, no finish_reason,
        no usage, no error (and, while translating, no logprobs): the same effect as ``_event``
        without the general checks.

        The shape is read with subscripts and unpacking, a failure (a key missing, a value of
        another type or length) meaning "not this shape, take the general path". A string
        subscript succeeds only on an object. Equivalence: tests/observe/test_payload_reuse.py."""
        if self.state is not _STREAMING or (name is not None and event_name(name) == "error"):
            return False  # (a finished choice 0 moved the state to FINISHED)
        acc = self.acc
        out = self.out
        try:
            (c,) = obj["choices"]  # a list of exactly one choice
            delta = c["delta"]
            if (
                c["index"] is not _ZERO  # the int 0 (not 0.0, on which openai-python raises)
                or obj["id"] != acc.id
                or obj["model"] != acc.model
                or obj["object"] != "chat.completion.chunk"
                or c.get("finish_reason") is not None
                or ("usage" in obj and obj["usage"] is not None)
                or ("error" in obj and obj["error"] is not None)
                or (out is not None and c.get("logprobs"))
            ):
                return False
            if len(delta) != 1:  # (a delta that is no object fails below: ``.get`` or ``len``)
                return fast_fields(self, delta)
            s = delta.get("content")
        except _NOT_THIS_SHAPE:
            return False
        self._valid = True  # its object is chat.completion.chunk
        if type(s) is str:
            if s:
                acc.content_seen = True
                acc.text_bytes += len(s) if s.isascii() else nbytes(s)
                if acc.cap_text is not None:
                    acc.capture_text(s)
                if out is not None:
                    if TEXT_KEY not in self._open:
                        self._open.append(TEXT_KEY)
                        out.block_start(TEXT_KEY, "text")
                    out.delta(TEXT_KEY, "text", s)
            return True
        calls = delta.get("tool_calls")
        if calls is None:
            return fast_fields(self, delta)  # another one-field delta (reasoning)
        try:
            (tc,) = calls  # exactly {"index": i, "function": {"arguments": ...}}
            index = tc["index"]
            fn = tc["function"]
            args = fn["arguments"]
            if len(tc) != 2 or len(fn) != 1:
                return False
        except _NOT_THIS_SHAPE:
            return False
        if type(index) is not int or type(args) is not str:
            return False
        tb = self._calls.get(index)
        if tb is None or tb.finished or tb.lead is not None:  # (a start ``fragments`` judges)
            return False
        cur = self._cur
        was = cur.get(0)
        if was != index:  # openai-node ends the call it had (``calls_end``): judged when untyped
            if (0, was) not in self._typed:
                return False
            cur[0] = index
        if args:
            acc.tool_args(tb, args, now)
            if out is not None:
                if tb.overflow:
                    self._too_long()
                out.delta(index, "args", args)
        else:
            tb.last_progress_at = now
        return True

    def _event(self, name: str, obj: dict[str, Any], now: float) -> None:
        acc = self.acc
        err = obj.get("error")
        out = self.out
        if err is not None or name == "error":
            msg, etype = error_fields(err if err is not None else obj)
            acc.upstream_error(msg, type=etype)
            self.upstream_failed()
            if out is not None:
                e = as_dict(err)
                message = as_str(e.get("message")) or (
                    str(err)[:200] if err is not None else "upstream error event"
                )
                out.upstream_error(classify(e.get("type"), e.get("code"), message), message)
            return
        choices = obj.get("choices")
        self._valid = self._valid or obj.get("object") == "chat.completion.chunk"
        if type(choices) is not list:
            # usage or metadata on a chunk of its own: read as ``choices: []``, carried in normalize
            self.conform("openai_chat.no_choices", "a chunk without a choices array")
            if out is not None and self.normalize:
                out.opaque_event(TEXT_KEY, _C, {"type": "chunk", "chunk": obj})
            choices = []
        elif choices and obj.get("object") != "chat.completion.chunk":
            self.conform("openai_chat.chunk_object", f"a chunk with choices and object {obj.get('object')!r}")
            self._typed[cd.SKIPPED] = True  # openai-python skips the chunk (chat_delta.call_order)
        if out is not None and choices:
            out = self._writer_chunk(out, obj, choices)
        self._identity(obj)
        finished = False
        for c in choices:
            if type(c) is not dict:
                cd.not_an_object(self, c, "choice")
                continue
            if out is not None and self.normalize and c.get("index", 0) != 0:
                # n > 1 in normalize mode: the other choices pass through as they came
                out.opaque_event(TEXT_KEY, _C, {"type": "choice", "choice": c})
                if self._choice(c, now, None):
                    finished = True
            elif self._choice(c, now, out):
                finished = True
        self._typed.pop(cd.SKIPPED, None)
        self.state = _MACHINE.step(self.state, "finish" if finished else "chunk" if choices else "meta")
        self._take_usage(obj)
        if obj.get("object") == "chat.completion.done":
            # A provider's last chunk in place of ``[DONE]`` (Perplexity's carries the finish;
            # the SDK skips it for its ``object``, then reads to EOF): the stream ends there
            acc.finding_once(
                "openai_chat.done_object", "quirk", "the stream ended with a chat.completion.done object"
            )
            self._sentinel()

    def _take_usage(self, obj: dict[str, Any]) -> None:
        u = obj.get("usage")
        if type(u) is dict:
            self._usage = u
            self.acc.usage = openai_usage(u, "prompt", "completion")

    def _writer_chunk(self, out: Sink, obj: dict[str, Any], choices: list[Any]) -> Sink | None:
        """What a chunk with a choice is to the writer, before anything else reads it: the
        translation's own limits, the stream's start at the first one. None: the writer takes
        nothing of this chunk (it comes after ``finish_reason``; only its usage counts)."""
        if not self.normalize:
            # Choices nobody asked for (the request translation refuses ``n > 1`` up front)
            if len(choices) > 1:
                raise TranslationError("multi-choice chunks (n > 1) cannot be translated", "choices")
            ci = as_dict(choices[0]).get("index")
            if ci is not None and ci != 0 and (as_int(ci) or cd.node_index(ci) or ci is True):
                raise TranslationError("only choice index 0 can be translated", "choices[].index")
        if self.state is State.WAITING:
            cid = obj.get("id")
            if not cid or type(cid) is not str:
                cid = UNNAMED  # Snowflake sends "" (the SDK reads on): the writers need one
            out.start(cid, as_str(obj.get("model")) or "", None)
        # After ``finish_reason`` the writer still takes a chunk's content (the SDK appends it to
        # the message): the blocks close at the stream's end, not at the finish chunk
        return out

    def _identity(self, obj: dict[str, Any]) -> None:
        """The first non-empty id and model are the stream's. A later chunk with another one is a
        quirk, not a violation (the SDKs read content whatever the id: Groq's web search streams
        switch ids mid-answer, a model router may name each model): one note each, the first
        values stay."""
        acc = self.acc
        cid = obj.get("id")
        if type(cid) is str and cid:
            if acc.id is None:
                acc.id = cid
            elif cid != acc.id:
                acc.finding_once(
                    "openai_chat.id_changed",
                    "quirk",
                    f"chunk id {cid!r} differs from the stream's {acc.id!r}",
                )
        model = obj.get("model")
        if type(model) is str and model:
            if acc.model is None:
                acc.model = model
            elif model != acc.model:
                acc.finding_once(
                    "openai_chat.model_changed",
                    "quirk",
                    f"chunk model {model!r} differs from the stream's {acc.model!r}",
                )

    def _choice(self, choice: dict[str, Any], now: float, out: Sink | None) -> bool:
        """One choice of a chunk (``out``: the writer, when it takes it); True if it has a finish_reason."""
        acc = self.acc
        cidx = choice.get("index")
        cidx, indexed = (cidx, True) if type(cidx) is int else cd.choice_index(self, cidx)
        if cidx not in self.choices:
            if cidx != len(self.choices):
                expected = len(self.choices)
                self.conform("openai_chat.choice_index", f"choice {cidx} came before choice {expected}")
            self.choices.add(cidx)
        if out is not None:
            logprobs = choice.get("logprobs")
            if type(logprobs) is dict and (logprobs.get("content") or logprobs.get("refusal")):
                # Token log probabilities of the text (or refusal) so far: a Chat client gets
                # them as they came; for the others they have no counterpart (left out, counted).
                key = REFUSAL_KEY if logprobs.get("refusal") and not logprobs.get("content") else TEXT_KEY
                out.opaque_event(key, _C, {"type": "logprobs", "logprobs": logprobs})
        delta = choice.get("delta")
        if type(delta) is not dict:
            self.conform("openai_chat.choice_delta", f"choice {cidx} without a delta object")
        elif delta:
            delta_conforms(self, cidx, indexed, delta)  # its role, its lists (conformance)
            self._delta(cidx, delta, now, out)
            self._typed.pop(cd.NODE_LOST, None)
        reason = choice.get("finish_reason")
        if reason is None or reason == "":  # some compatible servers send "" for "not yet"
            return False
        if type(reason) is not str:
            raise UpstreamProtocolError(f"openai_chat: finish_reason {reason!r} is not a string")
        if indexed:
            self.finished_choices.add(cidx)
            calls_end(self, cidx, None, reason)
        if cidx == 0 or acc.stop_reason is None:
            acc.stop(reason, stop_reasons.CHAT)
            if reason not in stop_reasons.CHAT:
                # ``eos`` and the like: the model ended its answer on its own (the SDK keeps it)
                acc.stop_class = StopClass.END_TURN
                bad = f"finish_reason {reason!r} is not one of the protocol's: read as end_turn"
                acc.finding_once("openai_chat.unknown_finish_reason", "quirk", bad)
        cut = acc.stop_class is StopClass.MAX_TOKENS
        for tb in acc.tool_order:
            if not tb.finished and tb.key[0] == cidx:
                if (cut or out is not None) and not _whole(tb):
                    if cut:  # max_tokens reached inside the call: its arguments stay unfinished
                        self._cut.add(tb.key)
                        continue
                    raise UpstreamProtocolError(
                        f"tool call {tb.id!r}: the streamed arguments are not valid JSON"
                    )
                acc.tool_finish(tb)
        return True

    def _delta(self, cidx: int, delta: dict[str, Any], now: float, out: Sink | None) -> None:
        acc = self.acc
        if out is not None:
            role = delta.get("role")
            if role is not None and role != "assistant":
                raise TranslationError(f"delta role {role!r} cannot be translated", "choices[0].delta.role")
            if delta.get("function_call") is not None:
                raise TranslationError(
                    "legacy function_call deltas cannot be translated", "choices[0].delta.function_call"
                )
        if cidx in self.finished_choices and any(
            delta.get(k) for k in ("content", "refusal", "tool_calls", "reasoning_content", "reasoning")
        ):
            acc.finding_once(
                "openai_chat.content_after_finish",
                "quirk",
                f"choice {cidx} got content after its finish_reason",
            )
        field = "reasoning_content"
        reasoning = delta.get(field)
        if not reasoning:
            field = "reasoning"
            reasoning = delta.get(field)
        if cidx == 0 and (reasoning or self._reasoned is not None):  # (openai-node keeps a last value)
            cd.node_replaced(self, field if reasoning else None, delta)
        if reasoning:
            # OpenAI-compatible providers (vLLM, DeepSeek, ...) stream reasoning here; a target
            # that has a slot gets it as thinking instead of losing it silently
            if type(reasoning) is str:
                acc.reasoning(reasoning)
                if out is not None:
                    self._think(out, reasoning, field)
            elif out is not None:
                raise TranslationError(
                    "non-string delta reasoning cannot be translated", f"choices[0].delta.{field}"
                )
        if out is not None:
            notes = delta.get("annotations")
            if notes and type(notes) is list:
                self._annotations(out, notes)
            details = delta.get("reasoning_details")
            if details and type(details) is list:
                self._reasoning_details(out, details, bool(reasoning))
        content = delta.get("content")
        if content:
            if type(content) is str:
                acc.text(content)
                if out is not None:
                    self._text(out, TEXT_KEY, "text", content)
            elif out is None or type(content) is list:
                self._content_parts(content, out)
            else:
                raise TranslationError(
                    "delta content that is neither text nor a list of parts cannot be translated",
                    "choices[0].delta.content",
                )
        refusal = delta.get("refusal")
        if refusal:
            if type(refusal) is not str:  # (rule openai_chat.refusal_type: not read)
                if out is not None:
                    raise UpstreamProtocolError("delta.refusal is not a string")
            else:
                if out is not None:
                    self._text(out, REFUSAL_KEY, "refusal", refusal)
                acc.refusal(refusal)
        audio = delta.get("audio")
        if audio:
            self._audio(audio, out)
        calls = delta.get("tool_calls")
        if calls:
            if type(calls) is not list:
                if out is not None:
                    raise UpstreamProtocolError("delta.tool_calls is not an array")
                return
            for pos, tc in enumerate(calls):
                if type(tc) is not dict:
                    cd.not_an_object(self, tc, "tool-call delta")
                    continue
                self._tool_delta(cidx, pos, tc, now, out)
            calls_end(self, cidx, calls)  # the calls openai-node ends at this chunk (conformance)

    def _audio(self, audio: object, out: Sink | None) -> None:
        """``delta.audio`` (audio output: data, transcript): a Chat client gets it as it came;
        no other protocol has a counterpart (the route refuses a request that asks for audio
        output, so this is audio nobody asked for): left out, counted, with a note."""
        if out is None:
            return
        if self.normalize:
            out.opaque_event(AUDIO_KEY, _C, {"type": "audio", "audio": audio})
            return
        self.acc.finding_once(
            "openai_chat.audio_left_out",
            "quirk",
            "audio output has no counterpart in the client's protocol: left out",
        )
        out.opaque_event(AUDIO_KEY, _C, {"type": "audio"})

    def _text(self, out: Sink, key: str, kind: BlockKind, text: str) -> None:
        if key not in self._open:
            self._open.append(key)
            out.block_start(key, kind)
        out.delta(key, "text", text)

    def _think(self, out: Sink, text: str, field: str) -> None:
        """Reasoning text for the writer; ``field`` (the delta field it came in) names the
        thinking block, so a Chat client in normalize mode gets it in the same field."""
        if REASONING_KEY not in self._open:
            self._open.append(REASONING_KEY)
            out.block_start(REASONING_KEY, "thinking", name=field)
        out.delta(REASONING_KEY, "thinking", text)

    def _annotations(self, out: Sink, notes: list[Any]) -> None:
        """``annotations`` of the message (OpenAI's search models, OpenRouter's web plugin): each
        ``url_citation`` cites the text; another kind has no counterpart (left out, counted)."""
        if TEXT_KEY not in self._open:  # they may come before the text (OpenRouter)
            self._open.append(TEXT_KEY)
            out.block_start(TEXT_KEY, "text")
        for entry in notes:
            note = as_dict(entry)
            cite = as_dict(note.get("url_citation"))
            url = as_str(cite.get("url"))
            if note.get("type") == "url_citation" and url:
                start, end = as_int(cite.get("start_index")), as_int(cite.get("end_index"))
                cited = as_str(cite.get("content")) or ""
                out.citation(TEXT_KEY, Citation(url, as_str(cite.get("title")), cited, start, end, _C, note))
            else:
                out.opaque_event(TEXT_KEY, _C, {**note, "type": "annotation"})

    def _reasoning_details(self, out: Sink, details: list[Any], had_text: bool) -> None:
        """OpenRouter's ``reasoning_details``: a Chat client (normalize) gets them as they came.
        For the others: ``reasoning.text`` / ``reasoning.summary`` text is the reasoning when the
        delta's ``reasoning`` did not already carry it, a ``signature`` is the thinking block's,
        and ``reasoning.encrypted`` data is a redacted thinking block."""
        if self.normalize:
            out.opaque_event(REASONING_KEY, _C, {"type": "reasoning_details", "reasoning_details": details})
            return
        for entry in details:
            d = as_dict(entry)
            kind = d.get("type")
            if kind in ("reasoning.text", "reasoning.summary"):
                text = as_str(d.get("text") if kind == "reasoning.text" else d.get("summary"))
                if text and not had_text:
                    self._think(out, text, "reasoning")
                signature = as_str(d.get("signature"))
                if signature:
                    if REASONING_KEY not in self._open:
                        self._open.append(REASONING_KEY)
                        out.block_start(REASONING_KEY, "thinking", name="reasoning")
                    out.delta(REASONING_KEY, "signature", signature)
            elif kind == "reasoning.encrypted":
                data = as_str(d.get("data"))
                if data:
                    self._redacted += 1
                    key = f"redacted_{self._redacted}"
                    out.block_start(key, "redacted_thinking", data=data)
                    out.block_stop(key)

    def _content_parts(self, content: object, out: Sink | None) -> None:
        """``content`` as a list of typed parts (Mistral's reasoning models): ``text`` parts are
        text, ``thinking`` parts (a string, or a list of text parts) are reasoning; another part
        is counted in a note (a translation cannot carry it: ``TranslationError``). The official
        SDK cannot merge such deltas (it keeps only strings)."""
        acc = self.acc
        acc.finding_once("openai_chat.content_parts", "quirk", "content arrives as a list of parts")
        for part in as_list(content):
            p = as_dict(part)
            ptype = p.get("type")
            if ptype == "text":
                text = p.get("text")
                if type(text) is str:
                    acc.text(text)
                    if out is not None and text:
                        self._text(out, TEXT_KEY, "text", text)
            elif ptype == "thinking":
                inner = p.get("thinking")
                pieces = [inner] if type(inner) is str else [as_dict(x).get("text") for x in as_list(inner)]
                for piece in pieces:
                    if type(piece) is str:
                        acc.reasoning(piece)
                        if out is not None and piece:
                            self._think(out, piece, "reasoning_content")
            elif out is not None:
                raise TranslationError(
                    f"content part type {ptype!r} cannot be translated", "choices[0].delta.content[].type"
                )
            else:
                acc.finding_once(
                    f"openai_chat.unknown_part.{ptype}", "quirk", f"content part of type {ptype!r} not read"
                )

    def _tool_delta(self, cidx: int, pos: int, tc: dict[str, Any], now: float, out: Sink | None) -> None:
        """One tool call delta. A call is keyed by its choice and ``index``; a delta without an
        index (Mistral sends each call whole, with its id) is the call of that id, or a new one
        after the calls so far (without an id either: its position in the chunk; a translation
        cannot key it)."""
        acc = self.acc
        given = cd.tool_index(self, tc.get("index"))
        if given is None:
            self.conform("openai_chat.tool_call_no_index", "a tool-call delta without an integer index")
        idx = given
        if idx is None:
            tid = as_str(tc.get("id"))
            if tid:
                idx = self._index_of(cidx, tid)
            elif out is not None:
                raise UpstreamProtocolError("tool call delta without an integer index or an id")
            else:
                idx = pos
        key = (cidx, idx)
        ttype = tc.get("type")
        if ttype == "custom":
            if out is not None:
                raise TranslationError(f"tool call type {ttype!r} cannot be translated", "tool_calls[].type")
            fn = as_dict(tc.get("custom"))
            args = fn.get("input")
        else:
            if out is not None and ttype is not None and ttype != "function":
                raise TranslationError(f"tool call type {ttype!r} cannot be translated", "tool_calls[].type")
            fn = as_dict(tc.get("function"))
            args = fn.get("arguments")
        tb: ToolBuffer | None = acc.tools.get(key)
        if given is not None:
            cd.call_order(self, cidx, given, tb is None)
            cd.tool_conforms(self, key, tb is None, tc)
        elif tb is None:  # openai-node keeps it under no index: no call of its own there yet
            self._typed[key] = cd.UNINDEXED
        if tb is None:
            tid = as_str(tc.get("id"))
            name = as_str(fn.get("name"))
            if out is not None and (not tid or not name):
                raise SemanticStreamError(f"first delta of tool call {idx} lacks its id or function.name")
            tb = acc.tool_start(key, tid, name, "custom" if ttype == "custom" else "function", now)
            if cidx == 0 and (out is not None or cd.python_holds(self, given)):  # (the fast path's)
                self._calls[idx] = tb
            if out is not None:
                self._open.append(idx)
                out.block_start(idx, "tool", id=tid, name=name)
        else:
            if tb.finished:
                if out is not None:
                    raise SemanticStreamError(f"tool call {idx} continued after it was closed")
                acc.finding(
                    "openai_chat.args_after_finish",
                    "quirk",
                    f"tool call {tb.id or key!s} got arguments after it finished",
                )
                return
            tid = as_str(tc.get("id"))
            if tb.id is None:
                tb.id = tid
            elif out is not None and tid and tid != tb.id:
                raise SemanticStreamError(f"tool call index {idx} changed id from {tb.id!r} to {tid!r}")
            if tb.name is None:
                tb.name = as_str(fn.get("name"))
        if args:
            if out is not None and type(args) is not str:
                raise UpstreamProtocolError(f"tool call {idx} arguments are not a string")
            acc.tool_args(tb, args, now)
            if out is not None:
                if tb.overflow:
                    self._too_long()
                out.delta(idx, "args", args)
        else:
            tb.last_progress_at = now

    def _index_of(self, cidx: int, tid: str) -> int:
        """The index of choice ``cidx``'s tool call with id ``tid``, or the next one."""
        last = -1
        for k, tb in self.acc.tools.items():
            if k[0] == cidx:
                if tb.id == tid:
                    return int(k[1])
                last = max(last, k[1])
        return last + 1

    def _too_long(self) -> None:
        """Arguments past ``max_tool_args``: a translation cannot check the whole, and ends."""
        raise UpstreamProtocolError(
            f"tool call arguments exceed the limit of {self.acc.limits_tool_args} bytes"
        )

    def _close_blocks(self, out: Sink) -> None:
        """The end of the answer for the writer: every open block closed in start order, the
        arguments of a tool call still open checked as complete JSON first (a call its
        ``finish_reason`` closed was checked then; one cut by max_tokens goes out partial, with
        the truncation stop)."""
        calls = self._calls
        for key in self._open:
            if type(key) is int:
                tb = calls[key]
                if not tb.finished and tb.key not in self._cut and not _whole(tb):
                    raise UpstreamProtocolError(
                        f"tool call {tb.id!r}: the streamed arguments are not valid JSON"
                    )
            out.block_stop(key)
        self._open.clear()

    def _end(self, out: Sink) -> None:
        acc = self.acc
        finish = acc.stop_reason
        refusal = acc.refusal_bytes > 0
        if finish is None:  # no finish_reason came: what the answer holds says how it ended
            cls = stop_reasons.from_chat("tool_calls" if acc.tools else "stop", has_refusal=refusal)
        else:
            cls = stop_reasons.from_chat(finish, has_refusal=refusal)
        u = self._usage
        out.end(Stop(cls, finish), TokenUsage() if u is None else usage_in(u, self.normalize))

    def _unfinished_choices(self) -> None:
        end_conforms(self)  # what the SDKs make of the completion at the end (conformance)

    def _ended_early(self) -> None:
        """EOF before ``[DONE]``: right after a ``finish_reason`` it is the stream's end
        (``completed``, with the ``openai_chat.no_done`` note), as the SDK reads it."""
        self.acc.event_index = self.events
        if self.state is State.FINISHED:
            self._eof_after_finish()
            return
        self._unfinished_choices()

    def _done(self) -> None:
        acc = self.acc
        self._unfinished_choices()
        acc.reach_terminal()
        cut = self._cut
        for tb in acc.tool_order:
            if not tb.finished and tb.key not in cut:
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
                acc.stop(reason, stop_reasons.CHAT)
        u = obj.get("usage")
        if type(u) is dict:
            acc.usage = openai_usage(u, "prompt", "completion")
