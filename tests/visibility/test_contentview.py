"""The "ProxAI" contentview through mitmproxy's own contentview API, against golden text.

Each fixture scenario of the embedded upstream, for the three protocols, streamed and not: the
auto-selected view must be ours and its text exact. Regenerate the golden files after an intended
change with ``PROXAI_REGEN_GOLDEN=1 pytest tests/visibility`` and review the diff.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from mitmproxy import contentviews, http
from mitmproxy.test import taddons, tflow

from proxai.core.model import Protocol
from proxai.mitm import contentview
from proxai.mitm.commands import Visibility

from .flows import llm_flow, observed_meta, request_body, scenario_flow
from .scenario_bodies import scenario_body

GOLDEN = Path(__file__).parent / "golden" / "contentview"
REGEN = os.environ.get("PROXAI_REGEN_GOLDEN") == "1"

SCENARIOS = [
    "text",
    "parallel_tools",
    "thinking",
    "max_tokens",
    "refusal",
    "error_midstream",
    "truncated",
    "tool_stall",
    "rate_limit",
    "prompt_too_long",
    "cache_usage",
]
SHORT = {
    Protocol.ANTHROPIC_MESSAGES: "anthropic",
    Protocol.OPENAI_CHAT: "chat",
    Protocol.OPENAI_RESPONSES: "responses",
}
CASES = [(p, s, st) for p in Protocol for s in SCENARIOS for st in (True, False)]


def golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if REGEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden file {path} (PROXAI_REGEN_GOLDEN=1 creates it)"
    assert text == path.read_text()


@pytest.fixture(scope="module")
def tctx() -> Iterator[taddons.context]:
    with taddons.context(Visibility()) as ctx:
        yield ctx


def case_id(p: Protocol, s: str, st: bool) -> str:
    return f"{SHORT[p]}__{s}__{'sse' if st else 'json'}"


@pytest.mark.parametrize(("protocol", "scenario", "stream"), CASES, ids=[case_id(*c) for c in CASES])
def test_response_view(tctx: taddons.context, protocol: Protocol, scenario: str, stream: bool) -> None:
    f = scenario_flow(protocol, scenario, stream)
    assert f.response is not None
    res = contentviews.prettify_message(f.response, f)
    assert res.view_name == "ProxAI"
    golden(case_id(protocol, scenario, stream), res.text)


@pytest.mark.parametrize("protocol", list(Protocol), ids=[SHORT[p] for p in Protocol])
def test_request_view(tctx: taddons.context, protocol: Protocol) -> None:
    f = scenario_flow(protocol, "text", True)
    res = contentviews.prettify_message(f.request, f)
    assert res.view_name == "ProxAI"
    golden(f"request__{SHORT[protocol]}", res.text)


def test_flow_without_metadata_is_observed_from_its_body(tctx: taddons.context) -> None:
    """A flow saved without ProxAI (no metadata): the view still recognizes and renders it."""
    f = scenario_flow(Protocol.OPENAI_CHAT, "parallel_tools", True, with_meta=False)
    assert f.response is not None
    res = contentviews.prettify_message(f.response, f)
    assert res.view_name == "ProxAI"
    golden("bare__chat__parallel_tools__sse", res.text)


def test_streamed_body_not_stored_shows_live_summary(tctx: taddons.context) -> None:
    """Streamed without store_streamed_bodies: an empty body, the summary from the metadata."""
    body = scenario_body(Protocol.ANTHROPIC_MESSAGES, "parallel_tools", True)
    f = llm_flow(Protocol.ANTHROPIC_MESSAGES, body, stream=True)
    assert f.response is not None
    f.response.content = b""
    res = contentviews.prettify_message(f.response, f)
    assert res.view_name == "ProxAI"
    golden("not_stored__anthropic__parallel_tools", res.text)


def test_translated_flow_shows_both_sides(tctx: taddons.context) -> None:
    """Client speaks Anthropic, upstream speaks Chat: the request sent upstream is Chat, the body the
    client received is Anthropic SSE, the metadata describes the upstream (Chat) stream."""
    client_body = scenario_body(Protocol.ANTHROPIC_MESSAGES, "parallel_tools", True)
    upstream_body = scenario_body(Protocol.OPENAI_CHAT, "parallel_tools", True)
    f = llm_flow(Protocol.OPENAI_CHAT, client_body, stream=True)
    meta = observed_meta(Protocol.OPENAI_CHAT, upstream_body)
    meta["client_protocol"] = "anthropic_messages"
    meta["original_url"] = "http://127.0.0.1:8080/v1/messages"
    # The routing keeps the client's request as JSON text (secrets masked) beside its URL.
    meta["client_request"] = {
        "url": "http://127.0.0.1:8080/v1/messages",
        "body": orjson.dumps(request_body(Protocol.ANTHROPIC_MESSAGES, True)).decode(),
    }
    meta["route"] = {
        "name": "claude-on-vllm",
        "client_protocol": "anthropic_messages",
        "upstream_protocol": "openai_chat",
        "target_url": "http://127.0.0.1:8000/v1/chat/completions",
        "normalize": False,
        "stream": True,
    }
    f.metadata["proxai"] = meta
    assert f.response is not None
    res = contentviews.prettify_message(f.response, f)
    assert res.view_name == "ProxAI"
    golden("translated__anthropic_from_chat__response", res.text)
    req = contentviews.prettify_message(f.request, f)
    assert req.view_name == "ProxAI"
    golden("translated__anthropic_from_chat__request", req.text)


def test_guard_stall_details(tctx: taddons.context) -> None:
    f = scenario_flow(Protocol.OPENAI_RESPONSES, "tool_stall", True)
    meta = f.metadata["proxai"]
    meta["extra"] = {
        "guard": {
            "kind": "tool_stall",
            "message": "ProxAI guard: tool call 'get_weather' (id call_2) stalled",
            "tool_id": "call_2",
            "tool_name": "get_weather",
            "since_last_delta_s": 30.0,
            "idle_s": 1.5,
            "arguments_bytes": 12,
            "threshold_s": 30.0,
            "injected": True,
        }
    }
    meta["diagnostics"] = "flows/diagnostics/unfinished-tool-x.json"
    assert f.response is not None
    res = contentviews.prettify_message(f.response, f)
    golden("guard__responses__tool_stall", res.text)


def test_not_chosen_for_other_flows(tctx: taddons.context) -> None:
    f = tflow.tflow(resp=True)
    f.request.path = "/index.html"
    assert f.response is not None
    f.response.headers["content-type"] = "application/json"
    f.response.content = b'{"a": 1}'
    assert contentviews.prettify_message(f.response, f).view_name != "ProxAI"
    # An LLM path, but a body that is neither JSON nor SSE (an HTML error page)
    g = scenario_flow(Protocol.OPENAI_CHAT, "text", False)
    assert g.response is not None
    g.response.headers["content-type"] = "text/html"
    g.response.content = b"<html>502</html>"
    view = contentviews.registry.get_view(
        g.response.content, contentviews.Metadata(flow=g, http_message=g.response, content_type="text/html")
    )
    assert view.name != "ProxAI"
    # The view can still be picked by name; it renders the summary.
    assert contentviews.prettify_message(g.response, g, view_name="proxai").view_name == "ProxAI"


def test_registered_once_and_removable() -> None:
    contentview.register()
    contentview.register()
    assert contentviews.registry["proxai"] is contentview.view
    contentview.unregister()
    assert "proxai" not in contentviews.registry
    contentview.register()
    assert "proxai" in contentviews.registry


def test_non_http_flow_not_claimed() -> None:
    f = tflow.ttcpflow()
    meta = contentviews.Metadata(flow=f)
    assert contentview.view.render_priority(b'{"a":1}', meta) == 0
    with pytest.raises(ValueError):
        contentview.view.prettify(b"{}", meta)
    assert isinstance(tflow.tflow(), http.HTTPFlow)


def test_unstored_streamed_body_gets_an_empty_placeholder(tctx: taddons.context) -> None:
    """mitmproxy leaves a streamed, unstored body as None and then shows "Content is missing." without
    asking any view; the visibility addon turns it into b"" (headers untouched) so the view shows the
    live summary."""
    body = scenario_body(Protocol.ANTHROPIC_MESSAGES, "parallel_tools", True)
    f = llm_flow(Protocol.ANTHROPIC_MESSAGES, body, stream=True)
    f.live = True
    assert f.response is not None
    f.response.headers["transfer-encoding"] = "chunked"
    del f.response.headers["content-length"]
    f.response.raw_content = None
    assert contentviews.prettify_message(f.response, f).text == "Content is missing."
    headers = f.response.headers.fields
    Visibility().after_response(f)
    assert f.response.raw_content == b"" and f.response.headers.fields == headers
    res = contentviews.prettify_message(f.response, f)
    assert res.view_name == "ProxAI"
    assert res.text == (GOLDEN / "not_stored__anthropic__parallel_tools.txt").read_text()
    # Loaded (not live) flows and flows ProxAI did not handle are left alone.
    g = llm_flow(Protocol.ANTHROPIC_MESSAGES, body, stream=True, with_meta=False)
    assert g.response is not None
    g.live = True
    g.response.raw_content = None
    Visibility().after_error(g)
    assert g.response.raw_content is None
