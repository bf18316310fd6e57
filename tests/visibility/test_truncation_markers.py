"""Truncation is never success: every stop reason of every protocol that means the upstream cut the
answer short gets the truncation marker, and the comment, mitmdump's line and the view give the
reason. Each case is a real flow through the addon: the upstream's bytes (a stream through the carrier
and a JSON body), untranslated and translated to each other client protocol.

The reasons (docs/contentview.md, "Markers"): Anthropic ``max_tokens``,
``model_context_window_exceeded`` and ``refusal`` (its streaming classifiers stopped the answer);
Chat ``length`` and ``content_filter``; a Responses ``incomplete`` for every reason the OpenAI SDK
lists (``max_output_tokens``, ``max_messages``, ``content_filter``, ``steered``) and without one.
Not truncated: a natural end, Anthropic's ``pause_turn`` and a model's own refusal (a Chat refusal
message ending with ``stop``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import http
from mitmproxy.test import taddons, tflow, tutils

from proxai.mitm.addon import ProxAI
from proxai.outputs import view_text
from proxai.outputs.verdict import dump_line

A, C, R = "anthropic_messages", "openai_chat", "openai_responses"
MODEL = {A: "claude-test-1", C: "gpt-test-1", R: "gpt-test-2"}  # not priced: no amount in the lines
PATH = {A: "/v1/messages", C: "/v1/chat/completions", R: "/v1/responses"}
SHORT = {A: "anthropic", C: "chat", R: "responses"}
NO_REASON = None  # a Responses incomplete without incomplete_details


# -- the upstream's bytes ------------------------------------------------------------------------


def _sse(name: str | None, payload: dict[str, Any]) -> bytes:
    head = b"event: " + name.encode() + b"\n" if name else b""
    return head + b"data: " + orjson.dumps(payload) + b"\n\n"


def _anthropic(stop: str, streamed: bool) -> bytes:
    usage = {"input_tokens": 10, "output_tokens": 5}
    msg: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL[A]}
    if not streamed:
        content = [{"type": "text", "text": "Part"}]
        return orjson.dumps(
            {**msg, "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage}
        )
    start = {
        **msg,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    return b"".join(
        [
            _sse("message_start", {"type": "message_start", "message": start}),
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Part"}},
            ),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": usage,
                },
            ),
            _sse("message_stop", {"type": "message_stop"}),
        ]
    )


def _chat(stop: str, streamed: bool, refusal: bool = False) -> bytes:
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    head = {"id": "chatcmpl-1", "created": 1, "model": MODEL[C]}
    text = {"content": None, "refusal": "I can't help with that."} if refusal else {"content": "Part"}
    if not streamed:
        message = {"role": "assistant", **text}
        choice = {"index": 0, "message": message, "finish_reason": stop, "logprobs": None}
        return orjson.dumps({**head, "object": "chat.completion", "choices": [choice], "usage": usage})

    def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return _sse(None, {**head, "object": "chat.completion.chunk", "choices": [choice]})

    return (
        chunk({"role": "assistant", "content": ""}, None)
        + chunk({k: v for k, v in text.items() if v is not None}, None)
        + chunk({}, stop)
        + _sse(None, {**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        + b"data: [DONE]\n\n"
    )


def _responses(stop: str | None, streamed: bool) -> bytes:
    """``stop``: an incomplete response's reason (``NO_REASON``: none), or ``completed``."""
    status = "completed" if stop == "completed" else "incomplete"
    details = None if status == "completed" or stop is NO_REASON else {"reason": stop}
    part = {"type": "output_text", "text": "Part", "annotations": []}
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": status, "content": [part]}
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    resp = {"id": "resp_1", "object": "response", "model": MODEL[R], "created_at": 1}
    final = {**resp, "status": status, "incomplete_details": details, "output": [item], "usage": usage}
    if not streamed:
        return orjson.dumps(final)
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": {**resp, "status": "in_progress", "output": []}}),
        (
            "response.output_item.added",
            {"output_index": 0, "item": {**item, "status": "in_progress", "content": []}},
        ),
        (
            "response.content_part.added",
            {"output_index": 0, "item_id": "msg_1", "content_index": 0, "part": {**part, "text": ""}},
        ),
        (
            "response.output_text.delta",
            {"output_index": 0, "item_id": "msg_1", "content_index": 0, "delta": "Part"},
        ),
        (
            "response.output_text.done",
            {"output_index": 0, "item_id": "msg_1", "content_index": 0, "text": "Part"},
        ),
        (
            "response.content_part.done",
            {"output_index": 0, "item_id": "msg_1", "content_index": 0, "part": part},
        ),
        ("response.output_item.done", {"output_index": 0, "item": item}),
        (f"response.{status}", {"response": final}),
    ]
    return b"".join(
        _sse(name, {"type": name, "sequence_number": i, **e}) for i, (name, e) in enumerate(events)
    )


def _upstream_body(upstream: str, stop: str | None, streamed: bool) -> bytes:
    if upstream == A:
        assert stop is not None
        return _anthropic(stop, streamed)
    if upstream == C:
        assert stop is not None
        return _chat(stop.removesuffix("+refusal"), streamed, refusal=stop.endswith("+refusal"))
    return _responses(stop, streamed)


# -- the flow through the addon ------------------------------------------------------------------

ROUTES = "".join(
    f"""
[[route]]
name = "{client}-on-{upstream}"
match = {{ path = "{PATH[client]}", model = "on-{upstream}*" }}
upstream = "http://127.0.0.1:9{i}00{"" if upstream == A else "/v1"}"
protocol = "{upstream}"
"""
    for i, (client, upstream) in enumerate((c, u) for c in (A, C, R) for u in (A, C, R) if c != u)
)


@pytest.fixture
def addon(tmp_path: Path) -> Any:
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    a = ProxAI()
    with taddons.context(a) as ctx:  # type: ignore[no-untyped-call]
        ctx.configure(a, proxai_diagnostics_dir=str(tmp_path / "diag"), proxai_routes=str(routes))
        a.clock = lambda: 100.0  # every duration 0: the lines are the same on any machine
        yield a


def _request(client: str, upstream: str, streamed: bool) -> bytes:
    model = MODEL[client] if client == upstream else f"on-{upstream}-x"
    if client == A:
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
        }
    elif client == C:
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    else:
        body = {"model": model, "input": "hi"}
    return orjson.dumps({**body, "stream": streamed})


def _run(addon: ProxAI, client: str, upstream: str, stop: str | None, streamed: bool) -> http.HTTPFlow:
    req = tutils.treq(
        method=b"POST", path=PATH[client].encode(), content=_request(client, upstream, streamed)
    )
    req.headers["content-type"] = "application/json"
    f = tflow.tflow(req=req)
    addon.request(f)
    body = _upstream_body(upstream, stop, streamed)
    kind = "text/event-stream" if streamed else "application/json"
    f.response = tutils.tresp(
        status_code=200, headers=http.Headers(content_type=kind), content=None if streamed else body
    )
    addon.responseheaders(f)
    if streamed:
        stream = f.response.stream
        assert callable(stream)
        for i in range(0, len(body), 9):
            stream(body[i : i + 9])
        stream(b"")
    addon.response(f)
    return f


def _label(client: str, upstream: str) -> str:
    return SHORT[client] if client == upstream else f"{SHORT[client]}<-{SHORT[upstream]}"


def _sdk(upstream: str, stop: str | None, streamed: bool) -> str:
    """The official SDK's reaction the lines name (a conformance finding on the upstream's stream):
    openai-python's stream helper raises on a Responses stream that does not end with
    response.completed, and its final Chat completion is parsed, which refuses a choice that ended
    with length (LengthFinishReasonError) or content_filter (ContentFilterFinishReasonError)."""
    if upstream == R and streamed and stop != "completed":
        return " · SDK: openai-python raises RuntimeError (openai_responses.not_completed)"
    if upstream == C and streamed and stop == "length":
        return " · SDK: openai-python raises LengthFinishReasonError (openai_chat.finish_length)"
    if upstream == C and streamed and stop in ("content_filter", "content_filter+refusal"):
        return (
            " · SDK: openai-python raises ContentFilterFinishReasonError (openai_chat.finish_content_filter)"
        )
    return ""


# (client, upstream, the upstream's stop, the reason the comment and the dump line give, the view's
# words for what cut the answer)
TOKENS, WINDOW, FILTER, CLASSIFIERS = (
    "the token limit",
    "the model's context window",
    "a content filter",
    "the upstream's safety classifiers",
)
TRUNCATED = [
    # untranslated: every truncation reason of every protocol
    (A, A, "max_tokens", "max_tokens", f"{TOKENS} (max_tokens)"),
    (
        A,
        A,
        "model_context_window_exceeded",
        "model_context_window_exceeded",
        f"{WINDOW} (model_context_window_exceeded)",
    ),
    (A, A, "refusal", "refusal", f"{CLASSIFIERS} (refusal)"),
    (C, C, "length", "length", f"{TOKENS} (length)"),
    (C, C, "content_filter", "content_filter", f"{FILTER} (content_filter)"),
    (C, C, "content_filter+refusal", "content_filter, refusal", f"{FILTER} (content_filter)"),
    (R, R, "max_output_tokens", "max_output_tokens", f"{TOKENS} (max_output_tokens)"),
    (R, R, "content_filter", "content_filter", f"{FILTER} (content_filter)"),
    (R, R, "max_messages", "max_messages", "the upstream's message limit (max_messages)"),
    (R, R, "steered", "steered", "a steer of the response (steered)"),
    (R, R, NO_REASON, "incomplete", "the upstream (incomplete)"),
    # translated: the client's own word for the cut, and the upstream's in the view
    (C, A, "max_tokens", "length", f"{TOKENS} (upstream max_tokens, the client got length)"),
    (
        R,
        A,
        "max_tokens",
        "max_output_tokens",
        f"{TOKENS} (upstream max_tokens, the client got max_output_tokens)",
    ),
    (
        C,
        A,
        "model_context_window_exceeded",
        "length",
        f"{WINDOW} (upstream model_context_window_exceeded, the client got length)",
    ),
    (C, A, "refusal", "content_filter", f"{CLASSIFIERS} (upstream refusal, the client got content_filter)"),
    (R, A, "refusal", "content_filter", f"{CLASSIFIERS} (upstream refusal, the client got content_filter)"),
    (A, C, "length", "max_tokens", f"{TOKENS} (upstream length, the client got max_tokens)"),
    (R, C, "length", "max_output_tokens", f"{TOKENS} (upstream length, the client got max_output_tokens)"),
    (A, C, "content_filter", "refusal", f"{FILTER} (upstream content_filter, the client got refusal)"),
    (R, C, "content_filter", "content_filter", f"{FILTER} (content_filter)"),
    (
        A,
        R,
        "max_output_tokens",
        "max_tokens",
        f"{TOKENS} (upstream max_output_tokens, the client got max_tokens)",
    ),
    (C, R, "max_output_tokens", "length", f"{TOKENS} (upstream max_output_tokens, the client got length)"),
    (A, R, "content_filter", "refusal", f"{FILTER} (upstream content_filter, the client got refusal)"),
    (C, R, "content_filter", "content_filter", f"{FILTER} (content_filter)"),
    # an incomplete response for a reason the client's protocol has no word for: told as a token limit
    (A, R, "steered", "max_tokens", "a steer of the response (upstream steered, the client got max_tokens)"),
    (
        C,
        R,
        "max_messages",
        "length",
        "the upstream's message limit (upstream max_messages, the client got length)",
    ),
    (C, R, NO_REASON, "length", "the upstream (upstream incomplete, the client got length)"),
    # the cut the client was not told of: its refusal text carried as a completed response's refusal
    (
        R,
        C,
        "content_filter+refusal",
        "upstream content_filter, refusal",
        f"{FILTER} (upstream content_filter, the client got completed)",
    ),
]


@pytest.mark.parametrize("streamed", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize(
    "case", TRUNCATED, ids=[f"{SHORT[c]}<-{SHORT[u]}-{s or 'no_reason'}" for c, u, s, _, _ in TRUNCATED]
)
def test_every_truncation_reason_is_marked_with_its_reason(
    addon: ProxAI, case: tuple[str, str, str | None, str, str], streamed: bool
) -> None:
    client, upstream, stop, reason, view = case
    f = _run(addon, client, upstream, stop, streamed)
    meta = f.metadata["proxai"]
    assert (meta["protocol"], meta["outcome"]) == (upstream, "completed")
    head = f"{_label(client, upstream)} {MODEL[upstream]}"
    assert f.marked == ":scissors:"
    sdk, ttft = _sdk(upstream, stop, streamed), "0.00s" if streamed else "-"
    assert f.comment == f"truncated ({reason}){sdk} · {head} · 10 in/5 out"
    assert dump_line(meta) == f"proxai {head} · TRUNCATED ({reason}){sdk} · 10 in/5 out · ttft {ttft} · 0.00s"
    cut = f"The answer was cut by {view}: the client got a partial answer."
    assert view_text.verdict_lines(meta)[1] == cut


# (client, upstream, upstream's stop, the verdict's text)
NOT_TRUNCATED = [
    (A, A, "end_turn", "completed (end_turn)"),
    (A, A, "stop_sequence", "completed (stop_sequence)"),
    (A, A, "pause_turn", "completed (pause_turn)"),
    (C, C, "stop", "completed (stop)"),
    (C, C, "stop+refusal", "completed (stop, refusal)"),
    (R, R, "completed", "completed (end_turn)"),
    (C, A, "end_turn", "completed (stop)"),
    (R, C, "stop+refusal", "completed (end_turn, refusal)"),
    (A, C, "stop+refusal", "completed (refusal)"),  # the client got Anthropic's refusal stop
]


@pytest.mark.parametrize("streamed", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize(
    "case", NOT_TRUNCATED, ids=[f"{SHORT[c]}<-{SHORT[u]}-{s}" for c, u, s, _ in NOT_TRUNCATED]
)
def test_a_whole_answer_is_not_marked(addon: ProxAI, case: tuple[str, str, str, str], streamed: bool) -> None:
    client, upstream, stop, text = case
    f = _run(addon, client, upstream, stop, streamed)
    head = f"{_label(client, upstream)} {MODEL[upstream]}"
    assert f.marked == ""
    ttft = "0.00s" if streamed else "-"
    assert f.comment == f"{text} · {head} · 10 in/5 out"
    assert dump_line(f.metadata["proxai"]) == f"proxai {head} · {text} · 10 in/5 out · ttft {ttft} · 0.00s"
