"""Responses background mode (docs/design/protocol-grammars.md, "Background mode"), through the
addon's real ``Carrier`` in every mode, the client's bytes read by the official Python SDK.

Two streams: the verbatim recording of ``GET /v1/responses/{id}?stream=true&starting_after=0``
(tests/fixtures/real/SOURCES.md, pydantic-ai), which begins with ``response.queued`` and holds
every item whole; and the same response resumed after event 6, which begins with an
``output_text.delta``. No recording of a resume that far in is known: that body is the
recording of the whole stream (interaction 0 of the same cassette) without its first seven
events, as ``starting_after=6`` sends it.

The SDK's readings: its stream helper (``responses.stream``, also with ``response_id=`` and
``starting_after=``, which fetches the whole replay and filters it itself) raises on a stream
without ``response.created`` first; ``responses.retrieve(id, stream=True, starting_after=N)``
yields the events as they come, the last one ``response.completed`` with the final response.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import openai
import orjson
import pytest
from corpus import run as corpus_run
from corpus import streams
from mitmproxy import http
from mitmproxy.test import taddons, tflow, tutils

from proxai.core.model import Outcome, Protocol
from proxai.mitm.addon import ProxAI

from .harness import sdk_anthropic, sdk_chat, sdk_responses

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
_BY_NAME = {s.name: s for s in streams.load()}
QUEUED = _BY_NAME["responses/openai--pydantic-ai--background-mode-streaming-starting-after-vcr-2.sse"]
WHOLE = _BY_NAME["responses/openai--pydantic-ai--background-mode-streaming-starting-after-vcr.sse"]
TEXT = "2 + 2 equals 4."
RID = "resp_0850765c843cca5300699cc47d93c0819089a181f5feeff8eb"


def _events(body: bytes) -> list[bytes]:
    return [block + b"\n\n" for block in body.split(b"\n\n") if block.strip()]


RESUMED = b"".join(_events(WHOLE.body())[7:])  # starting_after=6


def _client(body: bytes, seen: list[str] | None = None) -> openai.OpenAI:
    def handler(request: httpx2.Request) -> httpx2.Response:
        if seen is not None:
            seen.append(f"{request.method} {request.url}")
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    http_client = httpx2.Client(transport=httpx2.MockTransport(handler))
    return openai.OpenAI(
        api_key="sk-t", base_url="http://127.0.0.1:9/v1", http_client=http_client, max_retries=0
    )


def _retrieved(body: bytes, after: int) -> list[Any]:
    """The Python SDK's reading of a resumed stream: every event, as it came."""
    seen: list[str] = []
    events = list(_client(body, seen).responses.retrieve(RID, stream=True, starting_after=after))
    assert seen == [f"GET http://127.0.0.1:9/v1/responses/{RID}?starting_after={after}&stream=true"]
    return events


def _carry(body: bytes, client: Protocol | None) -> corpus_run.Carried:
    path = Path(f"/tmp/proxai-bg-{id(body)}.sse")
    path.write_bytes(body)
    try:
        return corpus_run.carry(streams.Stream("responses/bg.sse", path, R, "t", "t", False), client)
    finally:
        path.unlink()


def _types(body: bytes) -> list[tuple[str, int]]:
    out = []
    for block in _events(body):
        data = next(line[6:] for line in block.split(b"\n") if line.startswith(b"data: "))
        obj = orjson.loads(data)
        out.append((obj["type"], obj["sequence_number"]))
    return out


def test_a_stream_that_begins_with_response_queued() -> None:
    """Observed whole (completed, its text), passed on as it came when observed only, and written
    for every client from ``response.queued``'s snapshot: the Python helper, which raises on the
    original, reads the normalized stream."""
    with pytest.raises(
        RuntimeError, match=r"Expected to have received `response.created` before `response.queued`"
    ):
        sdk_responses(QUEUED.body())
    events = _retrieved(QUEUED.body(), 0)
    assert [(e.type, e.sequence_number) for e in events] == _types(QUEUED.body())
    assert events[-1].response.output_text == TEXT

    got = corpus_run.carry(QUEUED, None)
    assert got.out == QUEUED.body()
    s = got.summary
    assert (s.outcome, s.id, s.model, s.stop_reason, s.text_bytes) == (
        Outcome.COMPLETED,
        RID,
        "gpt-4o-2024-08-06",
        "completed",
        len(TEXT),
    )
    assert s.extra["notes"] == ["response.queued came before response.created"]
    assert [c["rule"] for c in s.extra["conformance"]] == ["openai_responses.created_first"]

    normalized = corpus_run.carry(QUEUED, R)
    assert [t for t, _ in _types(normalized.out)] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * 8,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    final = sdk_responses(normalized.out)
    assert (final.id, final.status, final.output_text) == (RID, "completed", TEXT)
    msg = sdk_anthropic(corpus_run.carry(QUEUED, A).out)
    assert ([b.text for b in msg.content], msg.stop_reason) == ([TEXT], "end_turn")
    chat = sdk_chat(corpus_run.carry(QUEUED, C).out)
    assert (chat.choices[0].message.content, chat.choices[0].finish_reason) == (TEXT, "stop")


REFUSAL = (
    "starting_after: the stream starts mid-way (response.output_text.delta, sequence_number 7): a"
    " resumed background response has no beginning to translate"
)


def test_a_stream_resumed_mid_way() -> None:
    """Observed: completed, its content from the terminal snapshot (the deltas of an item added
    before the stream began are not counted); the client reads what the upstream sent. It cannot
    be written whole for another client, nor normalized (its beginning is gone): a typed error
    in the client's protocol."""
    events = _retrieved(RESUMED, 6)
    assert [(e.type, e.sequence_number) for e in events][:2] == [
        ("response.output_text.delta", 7),
        ("response.output_text.delta", 8),
    ]
    assert (events[-1].type, events[-1].response.output_text) == ("response.completed", TEXT)

    got = _carry(RESUMED, None)
    assert got.out == RESUMED and got.bugs == []
    s = got.summary
    assert (s.outcome, s.id, s.stop_reason, s.text_bytes, s.error) == (
        Outcome.COMPLETED,
        RID,
        "completed",
        len(TEXT),
        None,
    )
    assert s.extra["notes"] == [
        "response.output_text.delta came before response.created",
        "the stream starts mid-way at response.output_text.delta",
    ]

    for client in (R, A, C):
        carried = _carry(RESUMED, client)
        assert carried.translation["error"] == f"TranslationError: {REFUSAL}"
    with pytest.raises(openai.APIError) as info:
        sdk_responses(_carry(RESUMED, R).out)
    assert info.value.message == REFUSAL
    with pytest.raises(openai.APIError) as info:
        sdk_chat(_carry(RESUMED, C).out)
    assert info.value.message == REFUSAL
    import anthropic

    with pytest.raises(anthropic.APIStatusError) as ainfo:
        sdk_anthropic(_carry(RESUMED, A).out)
    assert ainfo.value.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": REFUSAL},
    }


ROUTES = """
[[route]]
name = "responses-normalized"
match = { path = "/v1/responses", host = "bg.test" }
upstream = "http://127.0.0.1:9100/v1"
protocol = "openai_responses"
normalize = true

[[route]]
name = "responses-on-chat"
match = { path = "/v1/responses", host = "chat.test" }
upstream = "http://127.0.0.1:9000/v1"
protocol = "openai_chat"
"""


@pytest.fixture
def addon(tmp_path: Path) -> Any:
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    a = ProxAI()
    with taddons.context(a) as ctx:  # type: ignore[no-untyped-call]
        ctx.configure(a, proxai_diagnostics_dir=str(tmp_path / "diag"), proxai_routes=str(routes))
        yield a


def _get(host: str) -> http.HTTPFlow:
    path = f"/v1/responses/{RID}?stream=true&starting_after=6"
    f = tflow.tflow(req=tutils.treq(method=b"GET", path=path.encode(), content=b""))
    f.request.host = host
    f.request.headers["authorization"] = "Bearer k"
    return f


def test_the_get_of_a_resumed_stream_is_observed_and_passed_on_as_it_came(addon: ProxAI) -> None:
    """``GET /v1/responses/{id}?stream=true&starting_after=6`` is a Responses stream. On a
    normalize route it goes to the route's upstream with its query and the client gets the
    upstream's bytes (a rewritten stream would renumber the events the client resumes by); the
    flow's summary is the observed one."""
    f = _get("bg.test")
    addon.request(f)
    assert f.response is None
    assert f.request.url == f"http://127.0.0.1:9100/v1/responses/{RID}?stream=true&starting_after=6"
    assert f.request.headers["authorization"] == "Bearer k"
    f.response = tutils.tresp(
        status_code=200, headers=http.Headers(content_type="text/event-stream"), content=None
    )
    addon.responseheaders(f)
    stream = f.response.stream
    assert callable(stream)
    got = b""
    for i in range(0, len(RESUMED), 97):
        out = stream(RESUMED[i : i + 97])
        got += out if isinstance(out, bytes) else b"".join(out)
    out = stream(b"")
    got += out if isinstance(out, bytes) else b"".join(out)
    addon.response(f)
    assert got == RESUMED
    meta = f.metadata["proxai"]
    assert (meta["protocol"], meta["outcome"], meta["route"]["name"], meta["route"]["resume"]) == (
        "openai_responses",
        "completed",
        "responses-normalized",
        True,
    )
    assert meta["extra"]["notes"] == [
        "response.output_text.delta came before response.created",
        "the stream starts mid-way at response.output_text.delta",
    ]
    assert _retrieved(got, 6)[-1].response.output_text == TEXT


def test_the_get_of_a_resumed_stream_on_a_route_to_another_protocol_is_refused(addon: ProxAI) -> None:
    f = _get("chat.test")
    addon.request(f)
    assert f.response is not None and f.response.status_code == 400
    message = (
        "proxai cannot translate this request for openai_chat: response_id: a background"
        " response's stream is only on a Responses upstream, not openai_chat"
    )
    assert orjson.loads(f.response.content or b"")["error"]["message"] == message
