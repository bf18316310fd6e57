"""Every event and body the fake upstream sends validates against the SDKs' own pydantic models.

The SDK accumulators build objects with ``construct`` (no validation), so a missing required
field would slip through them; here each SSE payload and each JSON body is validated in full
(``anthropic.types.RawMessageStreamEvent`` / ``Message``, ``openai`` ``ChatCompletionChunk`` /
``ChatCompletion``, ``ResponseStreamEvent`` / ``Response``).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pydantic
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent

from proxai.upstream import FakeUpstream, list_scenarios

from .test_wire import PATHS, PLAIN, request_body
from .validators import scan

STREAM_TYPES: dict[str, pydantic.TypeAdapter[Any]] = {
    "anthropic": pydantic.TypeAdapter(RawMessageStreamEvent),
    "chat": pydantic.TypeAdapter(ChatCompletionChunk),
    "responses": pydantic.TypeAdapter(ResponseStreamEvent),
}
BODY_TYPES: dict[str, pydantic.TypeAdapter[Any]] = {
    "anthropic": pydantic.TypeAdapter(Message),
    "chat": pydantic.TypeAdapter(ChatCompletion),
    "responses": pydantic.TypeAdapter(Response),
}
NOT_JSON = {
    "huge_line",
    "malformed_json",
    "reset",
    "dropped",
    "rate_limit",
    "prompt_too_long",
    "html_500",
    "auth_echo",
}
SCENARIOS = [name for name, _ in list_scenarios() if name not in NOT_JSON]


@pytest.mark.parametrize("protocol", list(PATHS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_events_and_bodies_match_sdk_models(upstream: FakeUpstream, scenario: str, protocol: str) -> None:
    headers = {"x-proxai-events": "20", "x-proxai-time-scale": "0"}
    with httpx.Client(verify=PLAIN) as client:
        r = client.post(
            upstream.url + PATHS[protocol], json=request_body(protocol, scenario), headers=headers
        )
        validated = 0
        for ev in scan(r.content):
            if ev.data == "[DONE]" or ev.event in ("ping", "error"):
                continue
            data = json.loads(ev.data)
            if protocol == "chat" and "error" in data:
                continue
            STREAM_TYPES[protocol].validate_python(data)
            validated += 1
        assert validated > 2
        if scenario == "truncated":
            return  # non-streamed: the body is cut short on purpose
        r = client.post(
            upstream.url + PATHS[protocol],
            json=request_body(protocol, scenario, stream=False),
            headers=headers,
        )
        if r.status_code == 200:
            BODY_TYPES[protocol].validate_python(r.json())
        else:
            assert scenario in ("error_midstream", "auth_error_midstream", "key_echo")
