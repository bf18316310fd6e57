"""Spans of LLM flows (``proxai.outputs.otel``): the GenAI attributes, trace context, status, no content
unless asked, and never a secret. What the SDK makes of them on the wire:
``tests/otlp/test_sdk_export.py``."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest

from proxai.outputs.otel import FlowFacts, build_span, span_ids

SECRET = "sk-ant-api03-" + "Z" * 40
START = 1_767_225_600_000_000_000


def _meta(**over: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "protocol": "anthropic_messages",
        "streaming": True,
        "outcome": "completed",
        "id": "msg_1",
        "model": "claude-sonnet-4-6",
        "status_code": 200,
        "stop_reason": "tool_use",
        "stop_class": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 7, "cache_read_tokens": 100, "cache_write_tokens": 20},
        "tool_calls": [
            {"id": "toolu_1", "name": "get_weather", "arguments_complete": True},
            {"id": "toolu_2", "name": "get_time", "arguments_complete": False},
        ],
        "error": None,
        "timing": {"first_token_s": 0.25, "total_s": 1.5},
        "cost": {
            "amount": 0.0012,
            "currency": "USD",
            "source": "genai-prices",
            "version": "0.2.3",
            "provider": "anthropic",
            "matched_by": "api_url",
        },
    }
    meta.update(over)
    return meta


BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 512,
    "temperature": 0.5,
    "system": "be brief",
    "messages": [{"role": "user", "content": f"key={SECRET} weather?"}],
}


def _facts(**over: Any) -> FlowFacts:
    kw: dict[str, Any] = {
        "flow_id": "flow-1",
        "url": f"https://api.anthropic.com/v1/messages?api_key={SECRET}",
        "start_ns": START,
        "end_ns": START + 1_500_000_000,
        "request_body": BODY,
    }
    kw.update(over)
    return FlowFacts(**kw)


def test_attributes_follow_the_genai_conventions() -> None:
    span = build_span(_meta(), _facts())
    assert span.name == "chat claude-sonnet-4-6"
    assert span.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "anthropic",
        "gen_ai.provider.name": "anthropic",
        "openinference.span.kind": "LLM",
        "llm.provider": "anthropic",
        "proxai.flow_id": "flow-1",
        "gen_ai.request.model": "claude-sonnet-4-6",
        "gen_ai.request.max_tokens": 512,
        "gen_ai.request.temperature": 0.5,
        "gen_ai.response.model": "claude-sonnet-4-6",
        "llm.model_name": "claude-sonnet-4-6",
        "gen_ai.response.id": "msg_1",
        "gen_ai.response.finish_reasons": ["tool_use"],
        # Anthropic's input_tokens leave the cached ones out; the conventions count them in.
        "gen_ai.usage.input_tokens": 130,
        "llm.token_count.prompt": 130,
        "gen_ai.usage.output_tokens": 7,
        "llm.token_count.completion": 7,
        "llm.token_count.total": 137,
        "gen_ai.usage.cache_read.input_tokens": 100,
        "gen_ai.usage.cache_creation.input_tokens": 20,
        "server.address": "api.anthropic.com",
        "server.port": 443,
        "url.full": "https://api.anthropic.com/v1/messages?api_key=[REDACTED]",
        "http.response.status_code": 200,
        "proxai.outcome": "completed",
        "proxai.protocol": "anthropic_messages",
        "proxai.stop_class": "tool_use",
        "proxai.streaming": True,
        "proxai.time_to_first_token_s": 0.25,
        "proxai.duration_s": 1.5,
        "proxai.tool_calls": ["get_weather", "get_time"],
        "proxai.tool_calls.unfinished": 1,
        "proxai.cost.amount": 0.0012,
        "proxai.cost.currency": "USD",
        "proxai.cost.source": "genai-prices 0.2.3",
    }
    assert not span.error and span.status_message == ""
    assert (span.start_ns, span.end_ns) == (START, START + 1_500_000_000)
    assert SECRET not in repr(span)


def test_an_error_flow_has_error_status_and_a_redacted_message() -> None:
    err = {"kind": "overloaded", "message": f"Overloaded (request had {SECRET})", "source": "event"}
    span = build_span(_meta(outcome="error", error=err, stop_reason=None, cost=None), _facts())
    assert span.error
    assert span.status_message == "Overloaded (request had [REDACTED])"
    assert span.attributes["error.type"] == span.attributes["proxai.error.kind"] == "overloaded"
    assert span.attributes["proxai.error.message"] == span.status_message
    assert "gen_ai.response.finish_reasons" not in span.attributes
    assert "proxai.cost.amount" not in span.attributes


def test_a_closed_stream_is_an_error_span_typed_by_its_outcome() -> None:
    span = build_span(_meta(outcome="closed", stop_reason=None), _facts())
    assert span.error and span.status_message == "the stream ended closed"
    assert span.attributes["error.type"] == "closed"


def test_trace_context_from_traceparent_or_from_the_flow_id() -> None:
    tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    digest = hashlib.sha256(b"flow-1").digest()
    assert span_ids("flow-1", tp) == (
        bytes.fromhex("0af7651916cd43dd8448eb211c80319c"),
        digest[:8],
        bytes.fromhex("b7ad6b7169203331"),
    )
    assert span_ids("flow-1", None) == (digest[8:24], digest[:8], None)
    # invalid or all-zero trace contexts are ignored
    for bad in (
        "garbage",
        "00-" + "0" * 32 + "-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-" + "0" * 16 + "-01",
    ):
        assert span_ids("flow-1", bad) == (digest[8:24], digest[:8], None)


def test_no_content_unless_asked_and_content_is_redacted() -> None:
    captured = {
        "text": f"use {SECRET}",
        "reasoning": "thinking",
        "tool_arguments": ['{"city":"Paris"}', None],
    }
    plain = build_span(_meta(), _facts(), captured=captured)
    assert not [k for k in plain.attributes if "messages" in k or k.endswith(".value") or "instructions" in k]
    full = build_span(_meta(), _facts(), content=True, captured=captured)
    a = full.attributes
    assert orjson.loads(str(a["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "key=[REDACTED] weather?"}]}
    ]
    assert a["input.value"] == a["gen_ai.input.messages"]
    assert orjson.loads(str(a["gen_ai.system_instructions"])) == [{"type": "text", "content": "be brief"}]
    assert orjson.loads(str(a["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "thinking"},
                {"type": "text", "content": "use [REDACTED]"},
                {
                    "type": "tool_call",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "arguments": '{"city":"Paris"}',
                },
                {"type": "tool_call", "id": "toolu_2", "name": "get_time"},
            ],
            "finish_reason": "tool_use",
        }
    ]
    assert SECRET not in repr(full)


@pytest.mark.parametrize(
    ("protocol", "body", "expected"),
    [
        (
            "openai_chat",
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
            [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}],
        ),
        (
            "openai_responses",
            {
                "model": "gpt-5",
                "instructions": "x",
                "top_k": 3,  # a field the translation refuses: the conversation is read all the same
                "input": [
                    {"role": "user", "content": "hi"},
                    {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": '{"p":"/"}'},
                    {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
                    {"type": "web_search_call", "id": "ws1"},
                    {"type": "mcp_call", "id": "m1"},
                ],
            },
            [
                {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
                {
                    "role": "assistant",
                    "parts": [{"type": "tool_call", "id": "c1", "name": "ls", "arguments": {"p": "/"}}],
                },
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "a.txt"}]},
                {"role": "user", "parts": [{"type": "unread", "content": {"type": "mcp_call", "id": "m1"}}]},
            ],
        ),
    ],
)
def test_input_messages_by_protocol(protocol: str, body: dict[str, Any], expected: Any) -> None:
    meta = _meta(protocol=protocol, cost=None)
    span = build_span(meta, _facts(request_body=body, url="http://127.0.0.1:9/v1/x"), content=True)
    assert orjson.loads(str(span.attributes["gen_ai.input.messages"])) == expected
    assert span.attributes["gen_ai.system"] == "openai"
    assert span.attributes["server.port"] == 9


AZURE = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"  # an Azure key: 32 hex digits, no shape to spot


def test_the_flows_redactor_removes_echoes_of_its_credentials_from_every_attribute() -> None:
    """A key without a known shape, sent in a credential header, is found by echo wherever the
    span would carry it: the conversation, the output, the error message, a tool name."""
    from proxai.safety.redact import REDACTED, Redactor

    red = Redactor()
    red.learn_headers([(b"api-key", AZURE.encode())])
    body = {**BODY, "messages": [{"role": "user", "content": f"my key is {AZURE}"}]}
    meta = _meta(
        outcome="error",
        error={"kind": "authentication", "message": f"Incorrect API key provided: {AZURE}"},
        tool_calls=[{"id": "t1", "name": f"tool_{AZURE}", "arguments_complete": True}],
    )
    captured = {"text": f"Your key is {AZURE}.", "reasoning": "", "tool_arguments": [f'{{"k": "{AZURE}"}}']}
    plain = build_span(meta, _facts(request_body=body), content=True, captured=captured)
    assert AZURE in orjson.dumps(plain.attributes).decode()  # no rule without the flow's echo set
    span = build_span(meta, _facts(request_body=body), content=True, captured=captured, redactor=red)
    dumped = orjson.dumps(span.attributes).decode() + span.status_message
    assert AZURE not in dumped
    assert span.attributes["proxai.error.message"] == f"Incorrect API key provided: {REDACTED}"
    assert span.status_message == f"Incorrect API key provided: {REDACTED}"
    assert span.attributes["proxai.tool_calls"] == [f"tool_{REDACTED}"]
    # counts and flags are left as they are
    assert {k: v for k, v in span.attributes.items() if not isinstance(v, (str, list))} == {
        k: v for k, v in plain.attributes.items() if not isinstance(v, (str, list))
    }
