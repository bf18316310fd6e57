"""OpenAI Chat Completions source wrapper (seed 000 "Chat: per-chunk integer index", seed 003).

Chat has no start event: the first chunk with a choice sets the stream identity; a later chunk
with another id or model is read on (the SDK reads content whatever the id: Groq's web search
switches ids mid-answer), the first identity stays. Content and refusal open one text/refusal
block each on first appearance (so does ``reasoning_content`` / ``reasoning`` of compatible
providers: a thinking block, which only a Chat target drops and counts); ``content`` given as a
list of typed parts (Mistral) is its ``text`` parts as text and its ``thinking`` parts as
reasoning. A tool call opens a tool block at the first appearance of its
``tool_calls[].index``, which must carry ``id`` and ``function.name``; later fragments of that
index are its arguments.

Terminal rules (seed 003, read as the official SDK reads real providers; docs/design/real-streams.md):
- ``finish_reason`` closes every open block (a fragment in the same chunk is applied first);
- usage is the last one the upstream reported: the ``choices: []`` chunk after ``finish_reason``
  (OpenAI), the ``finish_reason`` chunk itself (DeepSeek, Groq, ...) or a trailing chunk that
  still carries a choice with an empty delta (OpenRouter); it is never 0 when a number came;
- a ``choices: []`` chunk before any assistant chunk without usage (Azure's
  ``prompt_filter_results``) carries nothing for the client and is skipped;
- ``[DONE]`` after ``finish_reason`` ends the stream; ``[DONE]`` right after the usage with no
  ``finish_reason`` at all (Snowflake) ends the answer as it stands; ``[DONE]`` anywhere else
  before a ``finish_reason``, or EOF without ``[DONE]``, is never a success.
- ``logprobs`` with entries travel to a Chat client (normalize) and are left out and counted for
  the others; more than one choice, a non-assistant role, legacy ``function_call`` and custom
  tool calls are rejected with ``TranslationError`` rather than dropped.

Normalize repairs (OpenAI-compatible providers): ``role``/``id``/``name`` repeated in every delta
are accepted when equal; EOF right after ``finish_reason`` (no ``[DONE]``) ends the stream.
"""

from __future__ import annotations

from typing import Any

from proxai.error_kind import classify
from proxai.errors import SemanticStreamError, TranslationError, UpstreamProtocolError
from proxai.model import Protocol
from proxai.protocols.machine import as_dict, as_int, as_list, as_str
from proxai.stream import stops
from proxai.stream.lifecycle import Lifecycle, Phase, StreamIdentity
from proxai.stream.limits import DEFAULT_MAX_TOOL_ARGS
from proxai.stream.sink import BlockKey, BlockKind, Citation, DeltaKind, Sink, Stop, TokenUsage

from .common import PayloadValue, ToolArgs, load_object, text_of

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


class ChatSource:
    protocol_name = "Chat Completions"

    __slots__ = (
        "_args",
        "_finish",
        "_normalize",
        "_open",
        "_redacted",
        "_refusal",
        "_saw_data",
        "_tools",
        "_usage",
        "life",
        "sink",
    )

    def __init__(
        self, sink: Sink, *, normalize: bool = False, max_tool_args: int = DEFAULT_MAX_TOOL_ARGS
    ) -> None:
        self.sink = sink
        self.life = Lifecycle()
        self._normalize = normalize
        self._open: list[BlockKey] = []  # open blocks in start order
        self._tools: dict[int, str] = {}  # chat tool index -> tool call id
        self._finish: str | None = None
        self._usage: TokenUsage | None = None  # the last usage the upstream reported
        self._refusal = False
        self._redacted = 0  # redacted thinking blocks opened (their keys)
        self._saw_data = False
        self._args = ToolArgs(max_tool_args)

    def event(self, etype: str, value: PayloadValue) -> None:
        """One upstream event: its type (unused: Chat types nothing) and its payload (parsed,
        or its data)."""
        obj: dict[str, Any] | None
        if type(value) is dict or isinstance(value, dict):  # (the first: the observer's parse)
            obj = value
        else:
            data = text_of(value)
            if data == "[DONE]" or data.strip() == "[DONE]":
                self._done()
                return
            obj = load_object(value, "Chat Completions")
        if obj is None:
            if self._saw_data:
                return  # seed 002: an empty JSON tail after data is tolerated
            raise UpstreamProtocolError("Chat Completions event with an empty payload before any data")
        self._saw_data = True
        err = obj.get("error")
        if err:
            e = as_dict(err)
            message = as_str(e.get("message")) or str(err)[:200]
            self.life.fail()
            self.sink.upstream_error(classify(e.get("type"), e.get("code"), message), message)
            return
        phase = self.life.phase
        if phase is Phase.STOPPED:
            raise SemanticStreamError("Chat Completions chunk after [DONE]")
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
            # that has a slot gets it as thinking instead of losing it silently (seed 003)
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

    def _done(self) -> None:
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
