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

from proxai.errors import UpstreamProtocolError
from proxai.model import Protocol, StopClass
from proxai.sse import RawName, event_name

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


class ChatObserver(ObserverBase):
    protocol = Protocol.OPENAI_CHAT

    __slots__ = ("finished_choices", "state")

    def __init__(self, acc: Accum) -> None:
        super().__init__(acc)
        self.state = State.WAITING
        self.finished_choices: set[int] = set()

    def _transition(self, kind: str) -> None:
        self.state = _MACHINE.step(self.state, kind)

    def _fail_state(self) -> None:
        self.state = State.ERRORED

    # -- streamed -------------------------------------------------------------------------------

    def _not_object(self, name: str, data: str, obj: object) -> None:
        if data == "[DONE]":
            self._transition("done")
            self._done()
            return
        super()._not_object(name, data, obj)

    def _fast(self, name: RawName, obj: dict[str, Any], now: float) -> bool:
        """A mid-stream chunk of one choice (index 0) whose delta is only ``content`` (or only
        one tool call's argument fragment), with the stream's id and model, no finish_reason,
        no usage, no error: the same effect as ``_event`` without the general checks."""
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
            self.upstream_failed()
            return
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

    def _done(self) -> None:
        acc = self.acc
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
