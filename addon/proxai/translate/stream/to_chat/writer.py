"""The Chat Completions target writer: a ``Sink`` that emits Chat chunks as the source streams.

Terminal semantics (docs/design/translation.md, "Ending a translated stream"): nothing terminal
is emitted before the source's own stop; then the finish chunk (``finish_reason``), the
usage-only chunk (``choices: []``, when the client asked for usage) and ``data: [DONE]``. A
failure emits a top-level ``"error"`` payload (the SDKs raise ``APIError``) and no ``[DONE]``.
"""

from __future__ import annotations

from typing import Any

import orjson

from proxai.core.errors.shapes import error_event
from proxai.core.model import ErrorKind, Protocol
from proxai.stream import stop_reasons
from proxai.stream.sink import BlockKey, BlockKind, Citation, DeltaKind, Stop, TokenUsage, WebSearchCall
from proxai.translate.stream.comments import Comments
from proxai.translate.stream.foreign import Foreign

from . import output
from .state import ChatState

_dumps = orjson.dumps
#: The delta fields compatible providers stream reasoning in; the first is what a client gets
#: from another protocol.
REASONING_FIELDS = ("reasoning_content", "reasoning")


class ChatWriter:
    protocol = Protocol.OPENAI_CHAT

    __slots__ = (
        "chars",
        "citations",
        "comments",
        "created",
        "foreign",
        "frames",
        "held",
        "include_usage",
        "out",
        "st",
        "starts",
    )

    def __init__(self, *, created: int = 0, include_usage: bool = True, strict: bool = False) -> None:
        self.foreign = Foreign(strict=strict)
        self.out: list[bytes] = []
        self.comments = Comments()  # comment lines that wait for the end (``.comments``)
        self.st = ChatState()
        self.created = created
        self.include_usage = include_usage
        # Pre-serialized delta chunk heads (``output.content_frame`` / ``args_frame``), by block,
        # each with whether its text counts in ``chars`` (a text block's does): one lookup per delta.
        self.frames: dict[BlockKey, tuple[bytes, bool]] = {}
        # Web citations: the characters of ``content`` so far, where each text block started and
        # ended, and the annotations written with the finish chunk (one list: the SDK merges a
        # later ``annotations`` delta only by an ``index`` the entries do not have).
        self.chars = 0
        self.starts: dict[BlockKey, tuple[int, int | None]] = {}
        self.citations: list[tuple[BlockKey, Citation]] = []
        # Normalize mode: the upstream's chunks without ``choices`` that carry a usage, held for
        # the end (``opaque_event``)
        self.held: list[dict[str, Any]] = []

    def take(self) -> bytes:
        out = b"".join(self.out)
        self.out.clear()
        return out

    def start(self, id: str, model: str, usage: TokenUsage | None) -> None:
        self.st.prefix = output.identity_prefix(id, model, self.created)
        self.out.append(output.chunk(self.st.prefix, output.role_delta()))

    def block_start(
        self,
        key: BlockKey,
        kind: BlockKind,
        *,
        id: str | None = None,
        name: str | None = None,
        data: str | None = None,
    ) -> None:
        st = self.st
        idx = st.register(key, kind)
        if idx is not None:
            assert id is not None and name is not None
            self.frames[key] = (output.args_frame(st.prefix, idx), False)
            self.out.append(output.chunk(st.prefix, output.tool_start_delta(idx, id, name)))
        elif kind == "thinking":
            # Reasoning as the compatible providers stream it: ``reasoning_content`` (DeepSeek,
            # vLLM, xAI, ...) unless a Chat source named its own field (``reasoning``: Groq,
            # OpenRouter), which normalize keeps
            field = (name if name in REASONING_FIELDS else REASONING_FIELDS[0]).encode()
            self.frames[key] = (output.content_frame(st.prefix, field), False)
        elif kind != "redacted_thinking":
            field = b"refusal" if kind == "refusal" else b"content"
            self.frames[key] = (output.content_frame(st.prefix, field), kind == "text")
            if kind == "text":
                self.starts[key] = (self.chars, None)

    def delta(self, key: BlockKey, kind: DeltaKind, text: str) -> None:
        if kind == "signature":  # a thinking block's signature: Chat has no slot for it
            self.st.dropped.signature_chars += len(text)
            return
        frame, counted = self.frames[key]
        self.out.append(frame % _dumps(text))
        if counted:  # a text block's: the characters of ``content`` so far (citation spans)
            self.chars += len(text)

    def opaque_start(
        self, key: BlockKey, protocol: Protocol, what: str, payload: dict[str, Any], *, neutral: bool = False
    ) -> None:
        self.foreign.start(key, what, counted=not neutral)  # no Chat stream carries another protocol's blocks

    def opaque_event(self, key: BlockKey, protocol: Protocol, payload: dict[str, Any]) -> None:
        if protocol is Protocol.OPENAI_CHAT:
            kind = payload.get("type")
            logprobs = payload.get("logprobs")
            if kind == "logprobs" and isinstance(logprobs, dict):
                self.out.append(output.logprobs_chunk(self.st.prefix, logprobs))
                return
            details = payload.get("reasoning_details")
            if kind == "reasoning_details" and isinstance(details, list):
                self.out.append(output.chunk(self.st.prefix, {"reasoning_details": details}))
                return
            # Normalize mode's pass-through: audio output, the choices past the first (n > 1),
            # a chunk without ``choices`` (given ``choices: []``, which every SDK reads)
            if kind == "audio" and "audio" in payload:
                self.out.append(output.chunk(self.st.prefix, {"audio": payload["audio"]}))
                return
            choice = payload.get("choice")
            if kind == "choice" and isinstance(choice, dict):
                self.out.append(output.raw_choice_chunk(self.st.prefix, choice))
                return
            whole = payload.get("chunk")
            if kind == "chunk" and isinstance(whole, dict) and self.st.prefix:
                # (before the stream's first chunk it has no identity: counted as left out below)
                if whole.get("usage") is not None:
                    # A usage on it (the upstream's last chunk, its choices null): it goes after
                    # the finish chunk, which the writer holds back to the end, where every SDK
                    # and the protocol have the usage-only chunk (``end``)
                    self.held.append(whole)
                    return
                self.out.append(output.choiceless_chunk(self.st.prefix, whole))
                return
        self.foreign.event(key, payload)

    def citation(self, key: BlockKey, citation: Citation) -> None:
        self.citations.append((key, citation))

    def web_search(self, key: BlockKey, call: WebSearchCall) -> None:
        self.foreign.leave_out("web_search")  # Chat streams no search call (its citations do come)

    def _annotations(self) -> list[dict[str, Any]]:
        """The citations as Chat ``url_citation`` annotations, their spans in ``content``."""
        out: list[dict[str, Any]] = []
        for key, c in self.citations:
            if c.protocol is Protocol.OPENAI_CHAT:
                out.append(c.raw)
                continue
            begin, end = self.starts.get(key, (0, None))
            block_end = self.chars if end is None else end
            span = {
                "url": c.url,
                "title": c.title or "",
                "start_index": begin + (c.start or 0),
                "end_index": block_end if c.end is None else begin + c.end,
            }
            out.append({"type": "url_citation", "url_citation": span})
        return out

    def block_stop(self, key: BlockKey) -> None:
        if self.foreign.stop(key):
            return
        begin = self.starts.get(key)
        if begin is not None:
            self.starts[key] = (begin[0], self.chars)
        self.frames.pop(key, None)  # Chat has no block end; no delta follows (the Sink contract)

    def comment(self, lines: bytes, *, hold: bool = False) -> None:
        self.comments.add(self.out, lines, hold=hold)

    def end(self, stop: Stop, usage: TokenUsage) -> None:
        st = self.st
        finish = stop_reasons.to_chat(stop.cls, has_refusal=st.refusal_streamed)
        if self.citations:
            self.out.append(output.chunk(st.prefix, {"annotations": self._annotations()}))
        self.out.append(output.chunk(st.prefix, {}, finish))
        held = self.held
        if self.include_usage:
            # the held chunks' other fields ride on the usage-only chunk, their usage the last one
            # the upstream sent (``usage``): one usage-only chunk, as the protocol has it
            fields = {k: v for w in held for k, v in w.items() if k != "usage"}
            self.out.append(output.usage_chunk(st.prefix, usage, fields))
        else:
            self.out.extend(output.choiceless_chunk(st.prefix, w) for w in held)
        self.out.append(output.DONE)
        self.comments.flush(self.out)

    def upstream_error(self, kind: ErrorKind, message: str) -> None:
        self.fail(kind, message)

    def fail(self, kind: ErrorKind, message: str) -> None:
        self.out.append(error_event(Protocol.OPENAI_CHAT, kind, message))

    def metadata(self) -> dict[str, object]:
        meta = self.foreign.metadata()
        if self.st.dropped:
            meta["dropped"] = self.st.dropped.to_metadata()
        return meta
