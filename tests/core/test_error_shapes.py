"""``proxai.core.errors.shapes``: every injected / translated error is one the real SDKs raise on, with
our message, and every event validates against the SDK's own typed model."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai
import orjson
import pytest
from openai.types.responses import ResponseErrorEvent, ResponseFailedEvent

from proxai.core.errors.shapes import error_body, error_event, http_status_for
from proxai.core.model import ErrorKind, Protocol
from proxai.core.sse import SseScanner

A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES
MESSAGE = "proxai: tool call get_time (call_b) stalled for 1.5 s after 12 argument bytes"
PREFIXES: dict[Protocol, bytes] = {
    A: b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
    b'"role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,'
    b'"usage":{"input_tokens":3,"output_tokens":1}}}\n\n',
    C: b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\n',
    R: b'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":'
    b'{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"m","output":[],'
    b'"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}}\n\n',
}


def _client(body: bytes, status: int = 200, ctype: str = "text/event-stream") -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, headers={"content-type": ctype}, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def _consume(protocol: Protocol, http: httpx2.Client) -> Any:
    if protocol is A:
        a = anthropic.Anthropic(api_key="k", base_url="http://t", http_client=http, max_retries=0)
        with a.messages.stream(model="m", max_tokens=9, messages=[{"role": "user", "content": "x"}]) as s:
            return s.get_final_message()
    o = openai.OpenAI(api_key="k", base_url="http://t/v1", http_client=http, max_retries=0)
    if protocol is C:
        with o.chat.completions.stream(model="m", messages=[{"role": "user", "content": "x"}]) as s:
            return s.get_final_completion()
    with o.responses.stream(model="m", input="x") as s:
        return s.get_final_response()


@pytest.mark.parametrize("protocol", [A, C, R])
@pytest.mark.parametrize("kind", [ErrorKind.TOOL_STALL, ErrorKind.IDLE_TIMEOUT, ErrorKind.OVERLOADED])
def test_sse_error_makes_the_real_sdk_raise_our_message(protocol: Protocol, kind: ErrorKind) -> None:
    body = PREFIXES[protocol] + error_event(protocol, kind, MESSAGE, response_id="resp_1", sequence_number=1)
    expected = anthropic.APIStatusError if protocol is A else openai.APIError
    with pytest.raises(expected) as info:
        _consume(protocol, _client(body))
    assert MESSAGE in str(info.value)


def test_responses_error_events_validate_against_the_sdk_models() -> None:
    events = SseScanner().feed(
        error_event(R, ErrorKind.TOOL_STALL, MESSAGE, response_id="resp_9", model="gpt-x", sequence_number=7)
    )
    assert [e.event for e in events] == ["error", "response.failed"]
    err = ResponseErrorEvent.model_validate(orjson.loads(events[0].data))
    assert err.message == MESSAGE and err.sequence_number == 7 and err.code == "proxai_tool_stall"
    failed = ResponseFailedEvent.model_validate(orjson.loads(events[1].data))
    assert failed.sequence_number == 8 and failed.response.id == "resp_9" and failed.response.model == "gpt-x"
    assert failed.response.status == "failed" and failed.response.error is not None
    assert failed.response.error.message == MESSAGE


@pytest.mark.parametrize("protocol", [A, C, R])
def test_json_error_body_raises_the_sdk_status_error(protocol: Protocol) -> None:
    status = http_status_for(ErrorKind.RATE_LIMITED, protocol)
    assert status == 429
    body = error_body(protocol, ErrorKind.RATE_LIMITED, "slow down", param="model")
    module: Any = anthropic if protocol is A else openai
    with pytest.raises(module.RateLimitError) as info:
        _consume(protocol, _client(body, status, "application/json"))
    assert "slow down" in str(info.value)
