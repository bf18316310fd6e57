"""The official Python SDKs' reading of a stream: each protocol's stream helper over an in-memory
HTTP transport, so the SDK's own SSE decoder and accumulator see exactly the bytes.

``read`` returns a ``Reading``: whether the SDK accepted the stream, and what its final object
says in plain terms (stop, usage, the calls the client must answer, text and reasoning). Anthropic
streams are read with the beta helper (``client.beta.messages.stream``), the accumulator that
knows the protocol's newer block types; Chat with ``client.chat.completions.stream``; Responses
with ``client.responses.stream``.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import anthropic
import httpx2
import openai

from proxai.core.model import Protocol

Verdict = Literal["accepted", "error_event", "incomplete", "rejected"]

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES

#: Responses output items the client executes, and the field that carries the id its answer
#: quotes (``function_call_output.call_id``, ``mcp_approval_response.approval_request_id``, ...).
#: Not ``custom_tool_call``: a recording comes without its request, so no custom tool is the
#: client's, and the only ones recorded (xAI's X Search) are calls the server ran, beside the answer
#: (docs/design/translation.md, "xAI's custom_tool_call").
CLIENT_ITEMS: dict[str, str] = {
    "function_call": "call_id",
    "local_shell_call": "call_id",
    "shell_call": "call_id",
    "apply_patch_call": "call_id",
    "computer_call": "call_id",
    "mcp_approval_request": "id",
}


@dataclass
class Reading:
    verdict: Verdict
    detail: str = ""
    stop: str | None = None  # Anthropic stop_reason, Chat finish_reason, Responses status[:reason]
    usage: tuple[int | None, int | None, int | None, int | None] = (None, None, None, None)
    # (input, output, cache read, cache write) in the protocol's own terms (Anthropic input
    # excludes the cached tokens; Chat and Responses include them)
    calls: list[tuple[str | None, str | None, str]] = field(default_factory=list)  # client calls
    text: str = ""
    reasoning: str = ""
    server_items: int = 0  # server-side tool blocks / items (web search, code execution, ...)
    citations: list[str] = field(default_factory=list)  # the URLs the text cites, in order

    @property
    def ok(self) -> bool:
        """The SDK took the stream as a well-formed answer (an error event it raises on is one)."""
        return self.verdict != "rejected"


def _http(body: bytes) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def read(protocol: Protocol, body: bytes) -> Reading:
    """The SDK's reading of ``body`` (a whole streamed response)."""
    try:
        with warnings.catch_warnings():
            # the SDKs' pydantic models warn about types newer than the installed SDK knows
            warnings.simplefilter("ignore")
            return _read(protocol, body)
    except (anthropic.APIStatusError, openai.APIError) as exc:
        return Reading("error_event", _reason(exc))
    except Exception as exc:  # the SDK refused the stream
        return Reading("rejected", _reason(exc))


def _read(protocol: Protocol, body: bytes) -> Reading:
    if protocol is A:
        return _anthropic(body)
    if protocol is C:
        return _chat(body)
    return _responses(body)


def _int(d: Any, key: str) -> int | None:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _anthropic(body: bytes) -> Reading:
    client = anthropic.Anthropic(
        api_key="sk-corpus", base_url="http://127.0.0.1:9", http_client=_http(body), max_retries=0
    )
    with client.beta.messages.stream(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as s:
        final = s.get_final_message().model_dump(warnings=False)
    u = final.get("usage") or {}
    out = Reading(
        "accepted",
        stop=final.get("stop_reason"),
        usage=(
            _int(u, "input_tokens"),
            _int(u, "output_tokens"),
            _int(u, "cache_read_input_tokens"),
            _int(u, "cache_creation_input_tokens"),
        ),
    )
    for b in final.get("content") or []:
        t = b.get("type")
        if t == "text":
            out.text += b.get("text") or ""
            out.citations += [
                c["url"]
                for c in b.get("citations") or []
                if c.get("type") == "web_search_result_location" and c.get("url")
            ]
        elif t == "thinking":
            out.reasoning += b.get("thinking") or ""
        elif t == "tool_use":
            out.calls.append((b.get("id"), b.get("name"), json.dumps(b.get("input"), separators=(",", ":"))))
        elif t not in ("redacted_thinking",):
            out.server_items += 1
    return out


def _chat(body: bytes) -> Reading:
    client = openai.OpenAI(
        api_key="sk-corpus", base_url="http://127.0.0.1:9/v1", http_client=_http(body), max_retries=0
    )
    try:
        with client.chat.completions.stream(
            model="m", messages=[{"role": "user", "content": "hi"}], stream_options={"include_usage": True}
        ) as s:
            completion = s.get_final_completion()
    except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as exc:
        completion = exc.completion  # the helper's documented reaction to length / content_filter
    final = completion.model_dump(warnings=False)
    u = final.get("usage") or {}
    details = (u.get("prompt_tokens_details") or {}) if isinstance(u, dict) else {}
    out = Reading(
        "accepted",
        usage=(_int(u, "prompt_tokens"), _int(u, "completion_tokens"), _int(details, "cached_tokens"), None),
    )
    choices = final.get("choices") or []
    if choices:
        ch = choices[0]
        out.stop = ch.get("finish_reason")
        msg = ch.get("message") or {}
        out.text = (msg.get("content") or "") + (msg.get("refusal") or "")
        for key in ("reasoning_content", "reasoning"):
            if isinstance(msg.get(key), str):
                out.reasoning += msg[key]
        out.citations = [
            (a.get("url_citation") or {}).get("url")
            for a in msg.get("annotations") or []
            if a.get("type") == "url_citation" and (a.get("url_citation") or {}).get("url")
        ]
        for tc in msg.get("tool_calls") or []:
            fn = tc.get("function") or {}
            out.calls.append((tc.get("id"), fn.get("name"), fn.get("arguments") or ""))
    parts = _content_parts(body)
    if parts is not None:
        out.text, out.reasoning = parts
        out.detail = "the SDK drops content sent as a list of parts; text and reasoning read from the parts"
    return out


def _content_parts(body: bytes) -> tuple[str, str] | None:
    """Text and reasoning of the first choice when some ``delta.content`` is a list of typed parts
    (Mistral's reasoning models), else None. openai's ``accumulate_delta`` merges a list into a
    string snapshot by leaving the snapshot as it was, so the final message silently lacks every
    part (and a string after a list is appended to what came before the list): the SDK's message
    is no reference for such a stream. Read as the protocol means it: a string and the ``text``
    parts are text, the ``text`` inside a ``thinking`` part is reasoning."""
    text: list[str] = []
    reasoning: list[str] = []
    listed = False
    for block in body.decode("utf-8", "replace").replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:"))
        if not data or data == "[DONE]":
            continue
        try:
            chunk = json.loads(data)
        except ValueError:
            continue
        for choice in (chunk.get("choices") or []) if isinstance(chunk, dict) else []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            c = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(c, str):
                text.append(c)
            elif isinstance(c, list):
                listed = True
                for part in c:
                    if not isinstance(part, dict):
                        continue
                    if part.get("type") == "text":
                        text.append(part.get("text") or "")
                    elif part.get("type") == "thinking":
                        for inner in part.get("thinking") or []:
                            if isinstance(inner, dict) and inner.get("type") == "text":
                                reasoning.append(inner.get("text") or "")
            if isinstance(delta, dict):
                for key in ("reasoning_content", "reasoning"):
                    if isinstance(delta.get(key), str):
                        reasoning.append(delta[key])
    return ("".join(text), "".join(reasoning)) if listed else None


def _responses_client(body: bytes) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-corpus", base_url="http://127.0.0.1:9/v1", http_client=_http(body), max_retries=0
    )


def _responses(body: bytes) -> Reading:
    client = _responses_client(body)
    verdict: Verdict = "accepted"
    try:
        with client.responses.stream(model="m", input="hi") as s:
            final = s.get_final_response().model_dump(warnings=False)
    except RuntimeError as exc:
        if "response.completed" not in str(exc):
            raise
        # The Python helper returns completed responses only; an incomplete one is the
        # ``response.incomplete`` event's response, as the SDK parsed it.
        last = None
        with _responses_client(body).responses.stream(model="m", input="hi") as s:
            for event in s:
                if event.type == "response.incomplete":
                    last = event.response
        if last is None:
            return Reading("incomplete", _reason(exc))
        verdict, final = "incomplete", last.model_dump(warnings=False)
    u = final.get("usage") or {}
    details = (u.get("input_tokens_details") or {}) if isinstance(u, dict) else {}
    reason = (final.get("incomplete_details") or {}).get("reason")
    out = Reading(
        verdict,
        stop=final.get("status") + (f":{reason}" if reason else ""),
        usage=(_int(u, "input_tokens"), _int(u, "output_tokens"), _int(details, "cached_tokens"), None),
    )
    for it in final.get("output") or []:
        t = it.get("type")
        if t == "message":
            for p in it.get("content") or []:
                out.text += p.get("text") or p.get("refusal") or ""
                out.citations += [
                    a["url"]
                    for a in p.get("annotations") or []
                    if a.get("type") == "url_citation" and a.get("url")
                ]
        elif t == "reasoning":
            out.reasoning += "".join(
                p.get("text") or "" for p in (it.get("summary") or []) + (it.get("content") or [])
            )
        elif t in CLIENT_ITEMS:
            args = it.get("arguments")
            if args is None:
                args = json.dumps(it.get("action") or it.get("operation") or {}, separators=(",", ":"))
            name = it.get("name") or (None if t == "function_call" else t)
            out.calls.append((it.get(CLIENT_ITEMS[t]), name, args))
        else:
            out.server_items += 1
    return out
