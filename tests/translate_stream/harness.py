"""Test harness: upstream fixture streams from ``proxai.upstream``'s renderers, running a
translator over them at any chunking, the source-side truth, and the REAL SDK clients reading
the emitted bytes through an ``httpx.MockTransport``."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2
import openai
import orjson

from proxai.core.errors import ProxaiError
from proxai.core.model import ErrorKind, Protocol, StopClass
from proxai.core.sse import SseScanner
from proxai.pipeline.flow import Translation, make_stream_translator
from proxai.stream import stop_reasons
from proxai.translate.stream.driver import error_kind_of
from proxai.upstream.ops import Abort, Params
from proxai.upstream.render_anthropic import AnthropicRenderer
from proxai.upstream.render_chat import ChatRenderer
from proxai.upstream.render_responses import ResponsesRenderer
from proxai.upstream.scenarios import get_scenario
from tests.splits import random_pieces

from .validators import Final, scan

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
_RENDERERS: dict[Protocol, Any] = {A: AnthropicRenderer, C: ChatRenderer, R: ResponsesRenderer}


def render(proto: Protocol, scenario: str) -> tuple[bytes, bool]:
    """The upstream body of ``scenario`` in ``proto`` (Chat with include_usage) and whether the
    connection is reset at its end."""
    params = Params(model="fake-model", stream=True, include_usage=True, request_number=1)
    out: list[bytes] = []
    for action in _RENDERERS[proto](params).stream(get_scenario(scenario).script(params)):
        if isinstance(action, bytes):
            out.append(action)
        elif isinstance(action, Abort):
            return b"".join(out), True
    return b"".join(out), False


def chunks(body: bytes, mode: str, seed: int = 0) -> list[bytes]:
    if mode == "whole":
        return [body]
    if mode == "bytes":
        return [body[i : i + 1] for i in range(len(body))]
    return random_pieces(body, random.Random(seed))


def carry(t: Translation, pieces: list[bytes], *, reset: bool = False) -> bytes:
    """What the carrier does: scan each piece once, feed the events, fail on a typed error,
    finish at EOF (a reset is an abort: the carrier reports it with ``fail``)."""
    sc = SseScanner()
    out: list[bytes] = []
    try:
        for piece in pieces:
            out.append(t.feed(sc.feed(piece)))
        out.append(t.feed(sc.close()))
    except ProxaiError as exc:
        out.append(t.fail(error_kind_of(exc), str(exc)))
        return b"".join(out)
    if reset:
        out.append(t.fail(ErrorKind.CONNECTION, "upstream connection reset"))
    out.append(t.finish())
    return b"".join(out)


def translate(
    up: Protocol, client: Protocol, body: bytes, mode: str = "whole", *, reset: bool = False, seed: int = 0
) -> tuple[bytes, Translation]:
    t = make_stream_translator(up, client, normalize=up is client, created=1_767_225_600)
    return carry(t, chunks(body, mode, seed), reset=reset), t


# -- neutral comparison form ---------------------------------------------------------------------


@dataclass
class Neutral:
    text: str = ""  # visible text, refusal text included
    tools: list[tuple[str, str, Any]] = field(default_factory=list)
    stop: StopClass | None = None
    usage: tuple[int | None, ...] = (None, None, None, None)  # input total, output, cache read, cache write
    thinking: str = ""
    signature: str = ""
    redacted: list[str] = field(default_factory=list)


def stop_bucket(cls: StopClass | None) -> StopClass | None:
    return StopClass.REFUSAL if cls is StopClass.CONTENT_FILTER else cls


def neutral_usage(proto: Protocol, u: dict[str, Any] | None) -> tuple[int | None, ...]:
    """(input total, output, cache read, cache write)."""
    if not u:
        return (None, None, None, None)
    if proto is A:
        cr = u.get("cache_read_input_tokens") or 0
        cw = u.get("cache_creation_input_tokens") or 0
        return (u["input_tokens"] + cr + cw, u["output_tokens"], cr, cw)
    details = u.get("prompt_tokens_details" if proto is C else "input_tokens_details") or {}
    cache = (details.get("cached_tokens") or 0, details.get("cache_write_tokens") or 0)
    if proto is C:
        return (u["prompt_tokens"], u["completion_tokens"], *cache)
    return (u["input_tokens"], u["output_tokens"], *cache)


def neutral_of(proto: Protocol, fin: Final) -> Neutral:
    """A validated ``Final`` in neutral terms."""
    has_refusal = bool(fin.refusal)
    if proto is A:
        stop = stop_reasons.from_anthropic(fin.stop)
    elif proto is C:
        stop = stop_reasons.from_chat(fin.stop, has_refusal=has_refusal)
    else:
        status, _, reason = (fin.stop or "").partition(":")
        stop = stop_reasons.from_responses(
            status, reason or None, has_tool_calls=bool(fin.tools), has_refusal=has_refusal
        )
    return Neutral(
        fin.text + fin.refusal,
        list(fin.tools),
        stop,
        neutral_usage(proto, fin.usage),
        fin.thinking,
        fin.signature,
        list(fin.redacted),
    )


def truth(proto: Protocol, body: bytes) -> Neutral:
    """The source stream's content, read leniently (as the minimal clients of docs/design/clients.md),
    for fixtures that are realistic rather than strict (e.g. arguments only in ``.done``)."""
    events = scan(body)
    if proto is A:
        blocks: dict[int, dict[str, Any]] = {}
        fin = Final()
        for ev in events:
            o = orjson.loads(ev.data)
            if ev.event == "message_start":
                fin.usage = dict(o["message"]["usage"])
            elif ev.event == "content_block_start":
                blocks[o["index"]] = {"cb": o["content_block"], "text": "", "sig": "", "args": ""}
            elif ev.event == "content_block_delta":
                b, d = blocks[o["index"]], o["delta"]
                b["text"] += d.get("text", "") + d.get("thinking", "")
                b["sig"] += d.get("signature", "")
                b["args"] += d.get("partial_json", "")
            elif ev.event == "message_delta":
                assert fin.usage is not None
                fin.usage.update({k: v for k, v in o["usage"].items() if v is not None})
                fin.stop = o["delta"]["stop_reason"]
        for i in sorted(blocks):
            b = blocks[i]
            t = b["cb"]["type"]
            if t == "text":
                fin.text += b["text"]
            elif t == "thinking":
                fin.thinking += b["text"]
                fin.signature += b["sig"]
            elif t == "redacted_thinking":
                fin.redacted.append(b["cb"]["data"])
            elif t == "tool_use":
                fin.tools.append((b["cb"]["id"], b["cb"]["name"], orjson.loads(b["args"] or "{}")))
        return neutral_of(A, fin)
    if proto is C:
        fin = Final()
        tools: dict[int, list[str]] = {}
        for ev in events:
            if ev.data == "[DONE]":
                continue
            o = orjson.loads(ev.data)
            if not o["choices"]:
                fin.usage = o["usage"]
                continue
            ch = o["choices"][0]
            d = ch["delta"]
            fin.text += d.get("content") or ""
            fin.refusal += d.get("refusal") or ""
            for tc in d.get("tool_calls") or []:
                slot = tools.setdefault(tc["index"], [tc.get("id"), tc["function"].get("name"), ""])
                slot[2] += tc["function"].get("arguments") or ""
            if ch.get("finish_reason"):
                fin.stop = ch["finish_reason"]
        fin.tools = [(i, n, orjson.loads(a or "{}")) for i, n, a in tools.values()]
        return neutral_of(C, fin)
    fin = Final()
    for ev in events:
        o = orjson.loads(ev.data)
        if o["type"] in ("response.completed", "response.incomplete"):
            resp = o["response"]
            fin.usage = resp["usage"]
            reason = (resp.get("incomplete_details") or {}).get("reason")
            fin.stop = resp["status"] + (f":{reason}" if reason else "")
            for it in resp["output"]:
                if it["type"] == "message":
                    for p in it["content"]:
                        if p["type"] == "output_text":
                            fin.text += p["text"]
                        else:
                            fin.refusal += p["refusal"]
                elif it["type"] == "function_call":
                    fin.tools.append((it["call_id"], it["name"], orjson.loads(it["arguments"] or "{}")))
                elif it["type"] == "reasoning":
                    texts = [p["text"] for p in (it.get("content") or []) + (it.get("summary") or [])]
                    if texts:
                        fin.thinking += "".join(texts)
                        fin.signature += it.get("encrypted_content") or ""
                    elif it.get("encrypted_content"):
                        fin.redacted.append(it["encrypted_content"])
    return neutral_of(R, fin)


# -- the real SDKs over a mock transport --------------------------------------------------------


def _http2(body: bytes) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def sdk_anthropic(body: bytes) -> Any:
    # both SDKs are built on httpx2 in these versions
    client = anthropic.Anthropic(
        api_key="sk-test", base_url="http://127.0.0.1:9", http_client=_http2(body), max_retries=0
    )
    with client.messages.stream(model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]) as s:
        return s.get_final_message()


def sdk_chat(body: bytes) -> Any:
    client = openai.OpenAI(
        api_key="sk-test", base_url="http://127.0.0.1:9/v1", http_client=_http2(body), max_retries=0
    )
    try:
        with client.chat.completions.stream(
            model="m", messages=[{"role": "user", "content": "hi"}], stream_options={"include_usage": True}
        ) as s:
            return s.get_final_completion()
    except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as exc:
        return exc  # the stream helper's documented reaction to length / content_filter


def sdk_responses(body: bytes) -> Any:
    client = openai.OpenAI(
        api_key="sk-test", base_url="http://127.0.0.1:9/v1", http_client=_http2(body), max_retries=0
    )
    try:
        with client.responses.stream(model="m", input="hi") as s:
            return s.get_final_response()
    except RuntimeError as exc:
        if "response.completed" in str(exc):
            return exc  # incomplete: the Python helper only returns completed responses
        raise


SDKS = {A: sdk_anthropic, C: sdk_chat, R: sdk_responses}


def sdk_neutral(proto: Protocol, final: Any) -> Neutral | None:
    """The SDK's final object in neutral terms (``None`` when the helper raised by design)."""
    if isinstance(final, (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError)):
        final = final.completion  # the accumulated completion the helper raised with
        if final is None:
            return None
    elif isinstance(final, Exception):
        return None
    if proto is A:
        fin = Final(stop=final.stop_reason, usage=final.usage.model_dump())
        for b in final.content:
            if b.type == "text":
                fin.text += b.text
            elif b.type == "thinking":
                fin.thinking += b.thinking
                fin.signature += b.signature
            elif b.type == "redacted_thinking":
                fin.redacted.append(b.data)
            elif b.type == "tool_use":
                fin.tools.append((b.id, b.name, b.input))
        return neutral_of(A, fin)
    if proto is C:
        msg = final.choices[0].message
        fin = Final(text=msg.content or "", refusal=msg.refusal or "", stop=final.choices[0].finish_reason)
        extra = msg.model_extra or {}
        fin.thinking = (extra.get("reasoning_content") or "") + (extra.get("reasoning") or "")
        fin.usage = final.usage.model_dump() if final.usage else None
        fin.tools = [
            (tc.id, tc.function.name, orjson.loads(tc.function.arguments or "{}"))
            for tc in msg.tool_calls or []
        ]
        return neutral_of(C, fin)
    fin = Final(stop=final.status, usage=final.usage.model_dump() if final.usage else None)
    for it in final.output:
        if it.type == "message":
            for p in it.content:
                if p.type == "output_text":
                    fin.text += p.text
                else:
                    fin.refusal += p.refusal
        elif it.type == "function_call":
            fin.tools.append((it.call_id, it.name, orjson.loads(it.arguments or "{}")))
        elif it.type == "reasoning":
            texts = [p.text for p in it.content or []] + [p.text for p in it.summary]
            if texts:
                fin.thinking += "".join(texts)
                fin.signature += it.encrypted_content or ""
            elif it.encrypted_content:
                fin.redacted.append(it.encrypted_content)
    return neutral_of(R, fin)
