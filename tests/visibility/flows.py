"""Test flows for the visibility tests: LLM requests and scenario responses as mitmproxy flows.

Metadata is what the addon writes (``StreamSummary.to_metadata()`` plus its keys), computed with
``observe_body`` and fixed clock values so every rendering is exact.
"""

from __future__ import annotations

from typing import Any

import orjson
from mitmproxy import http
from mitmproxy.test import tflow

from proxai.core.model import Protocol
from proxai.pipeline.observe import observe_body
from tests.e2e.harness import PATHS

from .scenario_bodies import MODELS, Body, scenario_body

TOOLS_ANTHROPIC = [
    {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
TOOLS_CHAT = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
TOOLS_RESPONSES = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def request_body(protocol: Protocol, stream: bool) -> dict[str, Any]:
    """A two-turn conversation with a tool round trip, in ``protocol``'s shape."""
    model = MODELS[protocol]
    if protocol is Protocol.ANTHROPIC_MESSAGES:
        return {
            "model": model,
            "max_tokens": 1024,
            "stream": stream,
            "system": "You are a terse weather bot.",
            "messages": [
                {"role": "user", "content": "Weather in Paris and Tokyo?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Checking Paris."},
                        {
                            "type": "tool_use",
                            "id": "toolu_01",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "24C, sunny"}],
                },
            ],
            "tools": TOOLS_ANTHROPIC,
        }
    if protocol is Protocol.OPENAI_CHAT:
        return {
            "model": model,
            "stream": stream,
            **({"stream_options": {"include_usage": True}} if stream else {}),
            "messages": [
                {"role": "system", "content": "You are a terse weather bot."},
                {"role": "user", "content": "Weather in Paris and Tokyo?"},
                {
                    "role": "assistant",
                    "content": "Checking Paris.",
                    "tool_calls": [
                        {
                            "id": "call_01",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_01", "content": "24C, sunny"},
            ],
            "tools": TOOLS_CHAT,
        }
    return {
        "model": model,
        "stream": stream,
        "instructions": "You are a terse weather bot.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris and Tokyo?"}]},
            {
                "type": "function_call",
                "call_id": "call_01",
                "name": "get_weather",
                "arguments": '{"city":"Paris"}',
            },
            {"type": "function_call_output", "call_id": "call_01", "output": "24C, sunny"},
        ],
        "tools": TOOLS_RESPONSES,
        "reasoning": {"effort": "low", "summary": "auto"},
    }


def llm_flow(
    protocol: Protocol,
    body: Body,
    *,
    stream: bool,
    with_meta: bool = True,
    request: dict[str, Any] | None = None,
    host: str = "127.0.0.1",
) -> http.HTTPFlow:
    f = tflow.tflow(resp=True)
    req = f.request
    req.method = "POST"
    req.scheme = "http"
    req.host = host
    req.port = 8080
    req.path = PATHS[protocol]
    req.headers.clear()
    req.headers["host"] = f"{host}:8080"
    req.headers["content-type"] = "application/json"
    req.content = orjson.dumps(request if request is not None else request_body(protocol, stream))
    assert f.response is not None
    resp = f.response
    resp.status_code = body.status
    resp.reason = b"OK" if body.status == 200 else b"Error"
    resp.headers.clear()
    resp.headers["content-type"] = body.content_type
    resp.content = body.data
    if with_meta:
        f.metadata["proxai"] = observed_meta(protocol, body)
    return f


def observed_meta(protocol: Protocol, body: Body) -> dict[str, Any]:
    summary = observe_body(
        protocol,
        body.data,
        status_code=body.status,
        start=100.0,
        headers_at=100.25,
        end=101.5,
        content_type=body.content_type,
    )
    meta = summary.to_metadata()
    meta["detected_by"] = "path"
    meta["original_url"] = f"http://127.0.0.1:8080{PATHS[protocol]}"
    return meta


def scenario_flow(
    protocol: Protocol, scenario: str, stream: bool, *, with_meta: bool = True
) -> http.HTTPFlow:
    return llm_flow(protocol, scenario_body(protocol, scenario, stream), stream=stream, with_meta=with_meta)
