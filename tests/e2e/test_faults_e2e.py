"""Fault injection through a real mitmdump, asserted on the real openai / anthropic SDKs.

Each recipe of docs/agent-testing.md is one test here. One mitmdump serves the module with a rules
file whose rules are selected by an ``x-proxai-fault`` request header (a mitmproxy filter), so each
test faults only its own requests. Stalls are tested by conditions, never by the clock: a stall
far longer than the SDK's timeout makes the timeout fire; a stall far shorter lets the call finish.
Retries are counted as flows (mitmdump's) and as requests the fake upstream saw.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from proxai.outputs import cost
from proxai.upstream.scenarios import ARGS_PARIS, TEXT, TEXT_BEFORE_TOOLS, tokens

from .harness import Mitmdump, anthropic_client, openai_client, proxai_meta, running_mitmdump, tag

pytestmark = pytest.mark.e2e

MESSAGES: Any = [{"role": "user", "content": "What's the weather in Paris and Tokyo?"}]
LONG = 30  # a stall far longer than the SDK timeout below
TIMEOUT = 1.0  # the SDK's timeout when a stall must make it fire
SHORT = 0.2  # a stall far shorter than the default timeouts

RULES = f"""
[[fault]]
fault = "http_error"
error = "overloaded"
count = 1
filter = '~hq "x-proxai-fault: 529-once"'

[[fault]]
fault = "http_error"
error = "overloaded"
filter = '~hq "x-proxai-fault: 529-always"'

[[fault]]
fault = "http_error"
error = "rate_limited"
filter = '~hq "x-proxai-fault: 429-always"'

[[fault]]
fault = "http_error"
error = "rate_limited"
retry_after = 0.05
count = 1
filter = '~hq "x-proxai-fault: 429-once"'

[[fault]]
fault = "stall"
at = "tool_args"
seconds = {LONG}
filter = '~hq "x-proxai-fault: stall-tool-long"'

[[fault]]
fault = "stall"
at = "tool_args"
seconds = {SHORT}
filter = '~hq "x-proxai-fault: stall-tool-short"'

[[fault]]
fault = "stall"
at = "first_token"
seconds = {LONG}
filter = '~hq "x-proxai-fault: stall-first-long"'

[[fault]]
fault = "truncate"
after_events = 6
filter = '~hq "x-proxai-fault: truncate-6"'

[[fault]]
fault = "truncate"
at = "tool_args"
filter = '~hq "x-proxai-fault: truncate-tool"'

[[fault]]
fault = "error_event"
error = "overloaded"
at = "tool_args"
filter = '~hq "x-proxai-fault: error-tool"'

[[fault]]
fault = "error_event"
error = "server"
after_events = 4
filter = '~hq "x-proxai-fault: error-4"'

[[fault]]
fault = "reset"
after_events = 4
filter = '~hq "x-proxai-fault: reset-4"'

[[fault]]
fault = "slow"
rate = 0.2
filter = '~hq "x-proxai-fault: slow-crawl"'

[[fault]]
fault = "slow"
rate = 200
filter = '~hq "x-proxai-fault: slow-ok"'
"""


def _routes(upstream_url: str) -> str:
    # A Chat client served by the Anthropic upstream, only for models named xlate-*.
    return f"""
[[route]]
name = "chat-on-anthropic"
match = {{ path = "/v1/chat/completions", model = "xlate-*" }}
upstream = "{upstream_url}"
protocol = "anthropic_messages"
model = "parallel_tools"
"""


@pytest.fixture(scope="module")
def md(upstream: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    work = tmp_path_factory.mktemp("mitm-faults")
    rules = work / "faults.toml"
    rules.write_text(RULES)
    routes = work / "routes.toml"
    routes.write_text(_routes(upstream.url))
    with running_mitmdump(
        upstream.url,
        mode="reverse",
        workdir=work,
        options={"proxai_faults": str(rules), "proxai_routes": str(routes)},
    ) as m:
        yield m


WEATHER = [{"city": "Paris", "unit": "celsius", "days": 2}, {"city": "Tokyo", "unit": "celsius", "days": 2}]


def _tool_inputs(final: Any) -> list[Any]:
    return [b.input for b in final.content if b.type == "tool_use"]


def _fault(name: str) -> dict[str, str]:
    return {"x-proxai-fault": name}


def _upstream_requests(upstream: Any, t: str) -> int:
    return sum(1 for r in upstream.requests if r.headers.get("x-proxai-test") == t)


def _fault_meta(m: dict[str, Any]) -> dict[str, Any]:
    fault = m["extra"]["fault"]
    assert isinstance(fault, dict)
    return fault


# -- "does my agent retry on 529?" ----------------------------------------------------------------


def test_anthropic_retries_once_on_529(md: Mitmdump, upstream: Any) -> None:
    t = tag()
    client = anthropic_client(md, t, default_headers=_fault("529-once")).with_options(max_retries=2)
    with client.messages.stream(model="text", max_tokens=256, messages=MESSAGES) as s:
        final = s.get_final_message()
    assert final.content[0].type == "text" and final.content[0].text == TEXT
    first, second = md.wait_flows(t, 2)
    assert first.response is not None and first.response.status_code == 529
    assert first.response.headers["x-should-retry"] == "true"
    m1 = proxai_meta(first)
    assert m1["outcome"] == "error"
    assert m1["error"]["kind"] == "overloaded" and m1["error"]["source"] == "injected"
    assert m1["error"]["type"] == "overloaded_error"
    assert _fault_meta(m1) == {
        "fault": "http_error",
        "rule": "http_error filter='~hq \"x-proxai-fault: 529-once\"' count=1",
        "injected": True,
        "error": "overloaded",
        "status": 529,
    }
    assert "injected fault http_error" in first.comment
    m2 = proxai_meta(second)
    assert m2["outcome"] == "completed"
    # no fault on the retry: its extra holds only the cost note ("text" is no priced model)
    unpriced = f"cost: genai-prices {cost.version()} has no price for model 'text'"
    assert m2.get("extra") == {"notes": [unpriced]}
    assert _upstream_requests(upstream, t) == 1  # the 529 never reached the upstream


def test_anthropic_without_retries_raises_overloaded(md: Mitmdump, upstream: Any) -> None:
    t = tag()
    client = anthropic_client(md, t, default_headers=_fault("529-always"))
    with (
        pytest.raises(anthropic.OverloadedError) as info,
        client.messages.stream(model="text", max_tokens=256, messages=MESSAGES) as s,
    ):
        s.get_final_message()
    assert info.value.status_code == 529
    assert info.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
        "request_id": info.value.response.headers["request-id"],
    }
    assert proxai_meta(md.wait_flow(t))["error"]["source"] == "injected"
    assert _upstream_requests(upstream, t) == 0


def test_anthropic_retry_budget_runs_out_on_529(md: Mitmdump, upstream: Any) -> None:
    t = tag()
    client = anthropic_client(md, t, default_headers=_fault("529-always")).with_options(max_retries=2)
    with pytest.raises(anthropic.OverloadedError):
        client.messages.create(model="text", max_tokens=256, messages=MESSAGES)
    flows = md.wait_flows(t, 3)
    assert [f.response.status_code for f in flows if f.response is not None] == [529, 529, 529]
    assert _upstream_requests(upstream, t) == 0


# -- "does it honour retry-after on a 429?" -------------------------------------------------------


def test_openai_429_carries_retry_after(md: Mitmdump, upstream: Any) -> None:
    t = tag()
    client = openai_client(md, t, default_headers=_fault("429-always"))
    with pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(model="text", messages=MESSAGES)
    err = info.value
    assert err.status_code == 429 and err.code == "rate_limit_exceeded" and err.type == "tokens"
    assert err.response.headers["retry-after"] == "2"
    assert err.message.startswith("Error code: 429 - ")
    m = proxai_meta(md.wait_flow(t))
    assert m["error"]["kind"] == "rate_limited" and m["error"]["source"] == "injected"
    assert _upstream_requests(upstream, t) == 0


def test_openai_retries_after_429(md: Mitmdump, upstream: Any) -> None:
    t = tag()
    client = openai_client(md, t, default_headers=_fault("429-once")).with_options(max_retries=1)
    final = client.responses.create(model="text", input="hi")
    assert final.output_text == TEXT
    first, second = md.wait_flows(t, 2)
    assert first.response is not None and first.response.status_code == 429
    assert first.response.headers["retry-after"] == "0.05"
    assert proxai_meta(first)["protocol"] == "openai_responses"
    assert proxai_meta(second)["outcome"] == "completed"
    assert _upstream_requests(upstream, t) == 1


# -- "does it survive a stall in the middle of a tool call?" --------------------------------------


def _anthropic_events(client: Any, seen: list[Any], model: str = "parallel_tools") -> Any:
    with client.messages.stream(model=model, max_tokens=256, messages=MESSAGES) as s:
        for event in s:
            seen.append(event)
        return s.get_final_message()


def test_stall_in_tool_call_longer_than_timeout(md: Mitmdump) -> None:
    t = tag()
    client = anthropic_client(md, t, default_headers=_fault("stall-tool-long")).with_options(timeout=TIMEOUT)
    seen: list[Any] = []
    with pytest.raises(httpx2.ReadTimeout):
        _anthropic_events(client, seen)
    raw = [e for e in seen if e.type in ("content_block_start", "content_block_delta")]
    # the last thing the agent got: the first argument fragment of the first call
    assert raw[-2].type == "content_block_start" and raw[-2].content_block.type == "tool_use"
    assert raw[-1].delta.type == "input_json_delta" and raw[-1].delta.partial_json == ARGS_PARIS[:6]
    m = proxai_meta(md.wait_flow(t))
    fault = _fault_meta(m)
    assert fault["fault"] == "stall" and fault["injected"] is True and fault["seconds"] == LONG
    assert fault["at"] == "tool_args" and fault["client_outcome"] == "unfinished_tool"
    assert m["outcome"] == "unfinished_tool"
    assert "injected fault stall" in md.wait_flow(t).comment


def test_stall_in_tool_call_shorter_than_timeout(md: Mitmdump) -> None:
    t = tag()
    client = anthropic_client(md, t, default_headers=_fault("stall-tool-short"))
    seen: list[Any] = []
    final = _anthropic_events(client, seen)
    assert _tool_inputs(final) == WEATHER
    m = proxai_meta(md.wait_flow(t))
    fault = _fault_meta(m)
    assert fault["injected"] is True and fault["client_outcome"] == "completed"
    assert m["outcome"] == "completed" and m["carrier"]["client_bytes"] == m["carrier"]["upstream_bytes"]
    # the stall started right after the first argument delta the client got (the SDK does not
    # yield the ping after message_start, nor do its derived events come from the wire)
    wire = [e for e in seen if e.type not in ("text", "input_json", "thinking", "signature", "citation")]
    first_arg = next(
        i
        for i, e in enumerate(wire)
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    )
    assert fault["at_event"] == first_arg + 2


def test_stall_before_first_token(md: Mitmdump) -> None:
    t = tag()
    client = openai_client(md, t, default_headers=_fault("stall-first-long")).with_options(timeout=TIMEOUT)
    seen: list[str] = []
    # the openai SDK wraps the transport's timeout (the anthropic SDK lets httpx's own through)
    with pytest.raises(openai.APITimeoutError), client.responses.stream(model="text", input="hi") as s:
        for event in s:
            seen.append(event.type)
    assert seen == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    fault = _fault_meta(proxai_meta(md.wait_flow(t)))
    assert fault["at"] == "first_token" and fault["at_event"] == 4
    assert fault["client_outcome"] == "error"  # the client gave up: its connection closed


# -- truncation ----------------------------------------------------------------------------------


def test_truncated_anthropic_stream_is_accepted_silently(md: Mitmdump) -> None:
    t = tag()
    client = anthropic_client(md, t, default_headers=_fault("truncate-6"))
    with client.messages.stream(model="text", max_tokens=256, messages=MESSAGES) as s:
        final = s.get_final_message()
    # message_start, ping, content_block_start and three text deltas: no message_stop
    assert final.content[0].type == "text" and final.content[0].text == "".join(tokens(TEXT)[:3])
    assert final.stop_reason is None
    f = md.wait_flow(t)
    m = proxai_meta(f)
    assert m["outcome"] == "closed" and m["error"] is None
    # the body kept for the views is what the client got: six events
    assert f.response is not None and (f.response.content or b"").count(b"\n\n") == 6
    assert _fault_meta(m)["at_event"] == 6 and _fault_meta(m)["client_outcome"] == "closed"


def test_truncated_responses_stream_raises(md: Mitmdump) -> None:
    t = tag()
    client = openai_client(md, t, default_headers=_fault("truncate-6"))
    with (
        pytest.raises(RuntimeError, match=r"Didn't receive a `response.completed` event\."),
        client.responses.stream(model="text", input="hi") as s,
    ):
        s.get_final_response()
    assert _fault_meta(proxai_meta(md.wait_flow(t)))["client_outcome"] == "closed"


def test_truncated_in_tool_call_chat_loses_the_arguments(md: Mitmdump) -> None:
    t = tag()
    client = openai_client(md, t, default_headers=_fault("truncate-tool"))
    with client.chat.completions.stream(model="parallel_tools", messages=MESSAGES) as s:
        final = s.get_final_completion()
    message = final.choices[0].message
    assert message.content == TEXT_BEFORE_TOOLS and final.choices[0].finish_reason is None
    # both calls had started (Chat opens the second before the first's arguments interleave)
    assert message.tool_calls is not None
    assert [c.function.arguments for c in message.tool_calls] == [ARGS_PARIS[:6], ""]
    m = proxai_meta(md.wait_flow(t))
    assert m["outcome"] == "unfinished_tool"
    assert _fault_meta(m)["client_outcome"] == "unfinished_tool"


# -- error events mid-stream, in the client's protocol ---------------------------------------------


def test_overloaded_event_in_tool_call_anthropic(md: Mitmdump) -> None:
    t = tag()
    client = anthropic_client(md, t, default_headers=_fault("error-tool"))
    with pytest.raises(anthropic.APIStatusError) as info:
        _anthropic_events(client, [])
    assert info.value.status_code == 200  # the stream was already 200
    assert info.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    m = proxai_meta(md.wait_flow(t))
    assert m["outcome"] == "error"
    assert m["error"] == {
        "kind": "overloaded",
        "message": "Overloaded",
        "source": "injected",
        "status": None,
        "type": "overloaded",
    }


def test_server_error_event_chat(md: Mitmdump) -> None:
    t = tag()
    client = openai_client(md, t, default_headers=_fault("error-4"))
    with (
        pytest.raises(openai.APIError) as info,
        client.chat.completions.stream(model="text", messages=MESSAGES) as s,
    ):
        s.get_final_completion()
    assert info.value.message == "The server had an error while processing your request. Sorry about that!"
    assert proxai_meta(md.wait_flow(t))["error"]["source"] == "injected"


def test_server_error_event_responses(md: Mitmdump) -> None:
    t = tag()
    client = openai_client(md, t, default_headers=_fault("error-4"))
    with pytest.raises(openai.APIError) as info, client.responses.stream(model="text", input="hi") as s:
        s.get_final_response()
    assert info.value.message == "The server had an error while processing your request. Sorry about that!"


def test_error_event_on_a_translated_route_is_in_the_clients_protocol(md: Mitmdump, upstream: Any) -> None:
    t = tag()
    client = openai_client(md, t, default_headers=_fault("error-tool"))
    with (
        pytest.raises(openai.APIError) as info,
        client.chat.completions.stream(model="xlate-tools", messages=MESSAGES) as s,
    ):
        s.get_final_completion()
    assert info.value.message == "The server is overloaded or not ready yet."
    m = proxai_meta(md.wait_flow(t))
    assert m["client_protocol"] == "openai_chat" and m["protocol"] == "anthropic_messages"
    assert m["error"]["source"] == "injected" and _fault_meta(m)["at"] == "tool_args"
    assert [r.path for r in upstream.requests if r.headers.get("x-proxai-test") == t] == ["/v1/messages"]


def test_http_error_on_a_translated_route_is_the_clients_provider(md: Mitmdump, upstream: Any) -> None:
    t = tag()
    client = openai_client(md, t, default_headers=_fault("529-always"))
    with pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(model="xlate-tools", messages=MESSAGES)
    assert info.value.status_code == 503  # OpenAI's overloaded, not Anthropic's 529
    assert info.value.message == "Error code: 503 - The server is overloaded or not ready yet."
    assert info.value.body == {
        "message": "The server is overloaded or not ready yet.",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    m = proxai_meta(md.wait_flow(t))
    assert m["protocol"] == "openai_chat" and "client_protocol" not in m
    assert _upstream_requests(upstream, t) == 0


# -- dropped connections ---------------------------------------------------------------------------


def test_reset_raises_remote_protocol_error(md: Mitmdump) -> None:
    t = tag()
    client = anthropic_client(md, t, default_headers=_fault("reset-4"))
    seen: list[Any] = []
    with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"):
        _anthropic_events(client, seen, model="text")
    assert [e.type for e in seen if e.type != "text"] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
    ]
    m = proxai_meta(md.wait_flow(t))
    assert m["outcome"] == "error" and m["error"]["kind"] == "connection"
    assert m["error"]["source"] == "injected" and _fault_meta(m)["at_event"] == 4


def test_reset_chat(md: Mitmdump) -> None:
    t = tag()
    client = openai_client(md, t, default_headers=_fault("reset-4"))
    with (
        pytest.raises(openai.APIConnectionError, match=r"^Connection error\.$"),
        client.chat.completions.stream(model="text", messages=MESSAGES) as s,
    ):
        s.get_final_completion()
    assert proxai_meta(md.wait_flow(t))["error"]["source"] == "injected"


# -- slow tokens ---------------------------------------------------------------------------------


def test_slow_tokens_slower_than_timeout(md: Mitmdump) -> None:
    t = tag()
    client = openai_client(md, t, default_headers=_fault("slow-crawl")).with_options(timeout=TIMEOUT)
    seen: list[str] = []
    with pytest.raises(openai.APITimeoutError), client.responses.stream(model="text", input="hi") as s:
        for event in s:
            seen.append(event.type)
    assert "response.output_text.delta" not in seen  # the first token waits 1/rate = 5 s
    fault = _fault_meta(proxai_meta(md.wait_flow(t)))
    assert fault["fault"] == "slow" and fault["rate"] == 0.2


def test_slow_tokens_arrive_complete(md: Mitmdump) -> None:
    t = tag()
    client = anthropic_client(md, t, default_headers=_fault("slow-ok"))
    final = _anthropic_events(client, [], model="parallel_tools")
    assert _tool_inputs(final) == WEATHER
    m = proxai_meta(md.wait_flow(t))
    assert m["outcome"] == "completed" and _fault_meta(m)["client_outcome"] == "completed"
    assert m["carrier"]["client_bytes"] == m["carrier"]["upstream_bytes"]


# -- regular mode: CONNECT + TLS ------------------------------------------------------------------


@pytest.fixture(scope="module")
def md_regular(upstream_tls: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    work = tmp_path_factory.mktemp("mitm-faults-regular")
    rules = work / "faults.toml"
    rules.write_text(RULES)
    with running_mitmdump(
        upstream_tls.url, mode="regular", workdir=work, options={"proxai_faults": str(rules)}
    ) as m:
        yield m


def test_faults_through_a_connect_tunnel(md_regular: Mitmdump) -> None:
    t = tag()
    client = anthropic_client(md_regular, t, default_headers=_fault("stall-tool-short"))
    final = _anthropic_events(client, [])
    assert _tool_inputs(final) == WEATHER
    assert _fault_meta(proxai_meta(md_regular.wait_flow(t)))["injected"] is True
    t = tag()
    client = anthropic_client(md_regular, t, default_headers=_fault("reset-4"))
    with pytest.raises(httpx2.RemoteProtocolError):
        _anthropic_events(client, [], model="text")
    assert proxai_meta(md_regular.wait_flow(t))["error"]["source"] == "injected"
