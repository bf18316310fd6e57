"""OpenTelemetry export end to end: a real mitmdump with ``proxai_otlp`` exports one span per LLM
flow to a real receiver, Arize Phoenix (its own process on loopback), and the spans are read back
through Phoenix's REST API. The real SDKs talk to the fake upstream through the proxy.

``proxai_otlp=otel`` with only the standard ``OTEL_*`` variables exports to Phoenix (its project
chosen by the headers variable) and to a small test receiver (``tests/otlp/receiver.py``) that
sees the configured headers, compression and service name.

Also: a dead receiver costs one warning and no flow.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import anthropic
import orjson
import pytest

from tests.otlp.receiver import attributes, running_receiver

from .harness import Mitmdump, anthropic_client, openai_client, proxai_meta, running_mitmdump, tag
from .phoenix import Phoenix, running_phoenix

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
SECRET = "sk-ant-api03-" + "Q" * 40  # a credential-shaped string a user pasted into a message
SCENARIO = "x-proxai-scenario"


@pytest.fixture(scope="module")
def phoenix() -> Iterator[Phoenix]:
    with running_phoenix() as phx:
        yield phx


def _mitm(upstream: Any, phx: Phoenix, project: str, tmp: Any, **options: Any) -> Any:
    return running_mitmdump(
        upstream.url,
        mode="reverse",
        workdir=tmp,
        options={"proxai_otlp": phx.url, "proxai_otlp_headers": f"x-project-name={project}", **options},
    )


def _by_flow(spans: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s["attributes"]["proxai.flow_id"]: s for s in spans}


def _flows_of_run(md: Mitmdump, t: str, count: int) -> list[Any]:
    return md.wait_flows(t, count)


def _run_agent_turns(md: Mitmdump, t: str) -> None:
    """Five flows: three protocols, streamed and not, tool calls, an error, an unknown model."""
    claude = anthropic_client(md, t)
    gpt = openai_client(md, t)
    messages: Any = [{"role": "user", "content": f"my key is {SECRET}, what is the weather?"}]
    with claude.messages.stream(
        model="claude-sonnet-4-6",
        max_tokens=256,
        messages=messages,
        extra_headers={SCENARIO: "cache_usage", "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
    ) as s:
        s.get_final_message()
    stream = gpt.chat.completions.create(
        model="gpt-4o-2024-08-06",
        messages=[{"role": "user", "content": "weather in Paris and Rome?"}],
        stream=True,
        stream_options={"include_usage": True},
        extra_headers={SCENARIO: "parallel_tools"},
    )
    for _ in stream:
        pass
    gpt.responses.create(model="gpt-5", input="hi", extra_headers={SCENARIO: "text"})
    with (
        pytest.raises(anthropic.APIStatusError),
        claude.messages.stream(
            model="claude-haiku-4-5",
            max_tokens=64,
            messages=messages,
            extra_headers={SCENARIO: "error_midstream"},
        ) as s,
    ):
        s.get_final_message()
    gpt.chat.completions.create(
        model="house-model-7", messages=[{"role": "user", "content": "hi"}], extra_headers={SCENARIO: "text"}
    )


def _expected_input(meta: dict[str, Any]) -> int:
    u = meta["usage"]
    n = u["input_tokens"]
    if meta["protocol"] == "anthropic_messages":
        n += (u["cache_read_tokens"] or 0) + (u["cache_write_tokens"] or 0)
    return int(n)


def test_phoenix_holds_one_span_per_llm_flow_with_genai_attributes(
    upstream: Any, phoenix: Phoenix, tmp_path: Any
) -> None:
    project = f"proxai-{tag()}"
    t = tag()
    with _mitm(upstream, phoenix, project, tmp_path) as md:
        _run_agent_turns(md, t)
        flows = _flows_of_run(md, t, 5)
        spans = phoenix.wait_spans(project, 5)
    assert len(spans) == 5, "one span per LLM flow, no more"
    by_flow = _by_flow(spans)
    assert set(by_flow) == {f.id for f in flows}
    requested = [
        "claude-sonnet-4-6",
        "gpt-4o-2024-08-06",
        "gpt-5",
        "claude-haiku-4-5",
        "house-model-7",
    ]
    systems = ["anthropic", "openai", "openai", "anthropic", "openai"]
    for f, model, system in zip(flows, requested, systems, strict=True):
        meta = proxai_meta(f)
        span = by_flow[f.id]
        a = span["attributes"]
        assert span["name"] == f"chat {model}"
        assert span["span_kind"] == "LLM"  # Phoenix's reading of openinference.span.kind
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.system"] == a["gen_ai.provider.name"] == system
        assert a["gen_ai.request.model"] == model
        assert a["gen_ai.response.model"] == meta["model"] == model  # the fake upstream echoes it
        assert a["gen_ai.response.id"] == meta["id"]
        assert a["gen_ai.usage.input_tokens"] == _expected_input(meta)
        assert a["gen_ai.usage.output_tokens"] == meta["usage"]["output_tokens"]
        stop = meta["stop_reason"]
        assert a.get("gen_ai.response.finish_reasons") == ([stop] if stop is not None else None)
        assert a["proxai.outcome"] == meta["outcome"]
        assert a["proxai.protocol"] == meta["protocol"]
        assert a["http.response.status_code"] == meta["status_code"]
        assert a["server.address"] == "127.0.0.1"
        assert a["server.port"] == int(upstream.url.rsplit(":", 1)[1])
        assert a["proxai.duration_s"] == pytest.approx(meta["timing"]["total_s"])
        if meta["cost"] is None:
            assert "proxai.cost.amount" not in a
        else:
            assert a["proxai.cost.amount"] == pytest.approx(meta["cost"]["amount"])
            assert a["proxai.cost.currency"] == "USD"
        # No content without proxai_otlp_content, and never the credential the user typed.
        content_keys = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}
        assert not (content_keys | {"input.value"}) & set(a)
        # Phoenix derives an output.value of its own from the response's id and model; nothing more.
        if "output.value" in a:
            assert set(orjson.loads(a["output.value"])) <= {"id", "model"}
        assert SECRET not in repr(span)

    cached, tools, responses, failed, unknown = (by_flow[f.id] for f in flows)
    # The client's W3C trace context puts the span in the client's trace.
    assert cached["context"]["trace_id"] == TRACE_ID and cached["parent_id"] == PARENT_ID
    assert tools["parent_id"] is None
    assert cached["attributes"]["gen_ai.usage.cache_read.input_tokens"] > 0
    assert cached["attributes"]["proxai.cost.amount"] > 0
    assert tools["attributes"]["proxai.tool_calls"] == [
        c["name"] for c in proxai_meta(flows[1])["tool_calls"]
    ]
    assert len(tools["attributes"]["proxai.tool_calls"]) == 2
    assert responses["attributes"]["proxai.streaming"] is False
    assert failed["status_code"] == "ERROR"
    assert failed["attributes"]["error.type"] == failed["attributes"]["proxai.error.kind"] == "overloaded"
    assert failed["attributes"]["proxai.outcome"] == "error"
    assert {s["status_code"] for s in (cached, tools, responses, unknown)} == {"UNSET"}
    assert "proxai.cost.amount" not in unknown["attributes"]


def test_content_export_is_redacted(upstream: Any, phoenix: Phoenix, tmp_path: Any) -> None:
    project = f"proxai-{tag()}"
    t = tag()
    with _mitm(upstream, phoenix, project, tmp_path, proxai_otlp_content=True) as md:
        claude = anthropic_client(md, t)
        answer = claude.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=64,
            system="You are terse.",
            messages=[{"role": "user", "content": f"my key is {SECRET}"}],
            extra_headers={SCENARIO: "text"},
        )
        (f,) = _flows_of_run(md, t, 1)
        (span,) = phoenix.wait_spans(project, 1)
    a = span["attributes"]
    assert SECRET not in repr(span)
    assert "[REDACTED]" in a["gen_ai.input.messages"] and "my key is" in a["gen_ai.input.messages"]
    assert a["gen_ai.system_instructions"] == '[{"type":"text","content":"You are terse."}]'
    text = "".join(b.text for b in answer.content if b.type == "text")
    assert text and text in a["gen_ai.output.messages"]
    assert a["input.value"] == a["gen_ai.input.messages"]
    assert a["proxai.flow_id"] == f.id


def test_a_dead_receiver_costs_one_warning_and_no_flow(upstream: Any, tmp_path: Any) -> None:
    from bench.procs import free_port

    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    t = tag()
    with running_mitmdump(
        upstream.url, mode="reverse", workdir=tmp_path, options={"proxai_otlp": dead}
    ) as md:
        gpt = openai_client(md, t)
        for _ in range(12):
            r = gpt.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hi"}], extra_headers={SCENARIO: "text"}
            )
            assert r.choices[0].message.content
        flows = md.wait_flows(t, 12)
        assert all(proxai_meta(f)["outcome"] == "completed" for f in flows)
        gpt.close()  # no client connection left open at shutdown
        md.stop()
        log = md.log_tail(100_000)
    warnings = re.findall(r"OTLP export to \S+ failed", log)
    assert warnings == [f"OTLP export to {dead}/v1/traces failed"], log
    assert "Traceback" not in log
    assert re.search(r"OTLP export to \S+: 0 spans sent, 12 not sent", log), log


RECEIVER_KEY = "sk-proj-" + "R" * 40  # the receiver's API key, in the headers variable


def _no_otel(env: dict[str, str]) -> dict[str, str]:
    """``env`` over the test's environment with every other OTEL_ variable set empty (the SDK and
    ProxAI read an empty variable as unset), so only the ones given count."""
    import os

    return {**{k: "" for k in os.environ if k.startswith("OTEL_")}, **env}


def test_otel_mode_with_only_the_standard_variables_exports_to_phoenix(
    upstream: Any, phoenix: Phoenix, tmp_path: Any
) -> None:
    project = f"proxai-{tag()}"
    t = tag()
    env = _no_otel(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url,
            "OTEL_EXPORTER_OTLP_HEADERS": f"x-project-name={project}",  # Phoenix's project: the header
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            "OTEL_SERVICE_NAME": "proxai-otel-mode",
        }
    )
    with running_mitmdump(
        upstream.url, mode="reverse", workdir=tmp_path, options={"proxai_otlp": "otel"}, env=env
    ) as md:
        gpt = openai_client(md, t)
        gpt.chat.completions.create(
            model="gpt-4o-2024-08-06",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={SCENARIO: "text"},
        )
        (f,) = md.wait_flows(t, 1)
        (span,) = phoenix.wait_spans(project, 1)
    meta = proxai_meta(f)
    a = span["attributes"]
    assert span["name"] == "chat gpt-4o-2024-08-06"
    assert a["proxai.flow_id"] == f.id
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.system"] == "openai"
    assert a["gen_ai.request.model"] == a["gen_ai.response.model"] == "gpt-4o-2024-08-06"
    assert a["gen_ai.usage.input_tokens"] == meta["usage"]["input_tokens"]
    assert a["gen_ai.usage.output_tokens"] == meta["usage"]["output_tokens"]
    assert a["proxai.outcome"] == "completed"


def test_otel_mode_sends_the_configured_headers_to_the_receiver(upstream: Any, tmp_path: Any) -> None:
    t = tag()
    with running_receiver() as rx:
        env = _no_otel(
            {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{rx.url}/v1/traces",
                "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{RECEIVER_KEY},x-tenant=ci",
                "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
                "OTEL_SERVICE_NAME": "ci-proxy",
                "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=ci",
            }
        )
        options = {"proxai_otlp": "otel", "termlog_verbosity": "debug"}  # the SDK's lines too
        with running_mitmdump(upstream.url, mode="reverse", workdir=tmp_path, options=options, env=env) as md:
            claude = anthropic_client(md, t)
            claude.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=64,
                messages=[{"role": "user", "content": "hi"}],
                extra_headers={SCENARIO: "cache_usage"},
            )
            (f,) = md.wait_flows(t, 1)
            rx.wait(lambda r: len(r.spans()) == 1, "the flow's span")
            claude.close()  # no client connection left open at shutdown
            md.stop()
            log = md.log_tail(1_000_000)
    (req,) = rx.received
    assert req.path == "/v1/traces"
    assert req.headers["authorization"] == f"Bearer {RECEIVER_KEY}"
    assert req.headers["x-tenant"] == "ci"
    assert req.headers["content-encoding"] == "gzip"
    res = req.resource()
    assert (res["service.name"], res["deployment.environment"]) == ("ci-proxy", "ci")
    meta = proxai_meta(f)
    (span,) = req.spans()
    a = attributes(span)
    assert a["proxai.flow_id"] == f.id
    assert a["gen_ai.system"] == a["gen_ai.provider.name"] == "anthropic"
    assert a["gen_ai.request.model"] == "claude-sonnet-4-6"
    assert a["gen_ai.usage.input_tokens"] == _expected_input(meta)
    assert a["gen_ai.usage.cache_read.input_tokens"] == meta["usage"]["cache_read_tokens"]
    assert a["proxai.outcome"] == "completed"
    # The span's times are the flow's own.
    assert span.start_time_unix_nano == int(f.request.timestamp_start * 1e9)
    assert span.end_time_unix_nano == int((f.request.timestamp_start + meta["timing"]["total_s"]) * 1e9)
    assert RECEIVER_KEY not in log
    assert "OTLP export" not in log  # it worked: nothing to say
    assert "Traceback" not in log
