"""Anthropic's cache writes by lifetime: a flow with 5-minute and 1-hour writes, read by the addon
from the upstream's bytes (a stream through the carrier, byte by byte, and a JSON body; untranslated
and as the upstream of a translated flow), keeps the split in its summary and costs exactly what the
list prices give by hand.

The list prices, per million tokens, for claude-sonnet-4-5 (Anthropic's published pricing, the
"Claude API" price list and its prompt-caching table): input $3, output $15, cache hits and
refreshes $0.30 (0.1x input), 5-minute cache writes $3.75 (1.25x input), 1-hour cache writes $6
(2x input). Below 200,000 input tokens, where no long-context rate applies.
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import http
from mitmproxy.test import taddons, tflow, tutils

from proxai.mitm.addon import ProxAI
from proxai.outputs import cost, verdict, view_text
from proxai.outputs.run import USAGE_KEYS, FlowInput, build_run
from proxai.outputs.run_csv import render_csv
from proxai.outputs.run_html import render_html

MTOK = Decimal(1_000_000)
INPUT, OUTPUT, CACHE_READ, WRITE_5M, WRITE_1H = (Decimal(p) for p in ("3", "15", "0.30", "3.75", "6"))

MODEL = "claude-sonnet-4-5-20250929"
# Anthropic's usage: input_tokens leaves the cached tokens out; cache_creation splits the writes.
UNCACHED, READ, W5M, W1H, OUT = 6000, 1000, 1000, 2000, 100
ANTHROPIC_USAGE = {
    "input_tokens": UNCACHED,
    "cache_creation_input_tokens": W5M + W1H,
    "cache_read_input_tokens": READ,
    "cache_creation": {"ephemeral_5m_input_tokens": W5M, "ephemeral_1h_input_tokens": W1H},
    "output_tokens": OUT,
    "service_tier": "standard",
}
HAND_INPUT = (UNCACHED * INPUT + READ * CACHE_READ + W5M * WRITE_5M + W1H * WRITE_1H) / MTOK
HAND_OUTPUT = OUT * OUTPUT / MTOK
SUMMARY_USAGE = {
    "input_tokens": UNCACHED,
    "output_tokens": OUT,
    "total_tokens": UNCACHED + READ + W5M + W1H + OUT,
    "cache_read_tokens": READ,
    "cache_write_tokens": W5M + W1H,
    "cache_write_5m_tokens": W5M,
    "cache_write_1h_tokens": W1H,
}


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def _stream() -> bytes:
    """A real stream's shape: the split in message_start, again (cumulative) in message_delta."""
    start_usage = {**ANTHROPIC_USAGE, "output_tokens": 1}
    message = {
        "id": "msg_01Lifetimes",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    return b"".join(
        [
            _event("message_start", {"type": "message_start", "message": message}),
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            _event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "Cached."},
                },
            ),
            _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": ANTHROPIC_USAGE,
                },
            ),
            _event("message_stop", {"type": "message_stop"}),
        ]
    )


def _body() -> bytes:
    return orjson.dumps(
        {
            "id": "msg_01Lifetimes",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [{"type": "text", "text": "Cached."}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": ANTHROPIC_USAGE,
        }
    )


ROUTES = """
[[route]]
name = "chat-on-claude"
match = { path = "/v1/chat/completions" }
upstream = "https://api.anthropic.com"
protocol = "anthropic_messages"
auth = { env = "PROXAI_TEST_LIFETIMES_KEY" }
"""


@pytest.fixture
def addon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PROXAI_TEST_LIFETIMES_KEY", "sk-ant-lifetimes-test")
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    a = ProxAI()
    with taddons.context(a) as ctx:  # type: ignore[no-untyped-call]
        ctx.configure(a, proxai_diagnostics_dir=str(tmp_path / "diag"), proxai_routes=str(routes))
        yield a


def _flow(client: str, streamed: bool) -> http.HTTPFlow:
    if client == "anthropic":
        path, body = "/v1/messages", {"model": MODEL, "max_tokens": 64, "messages": []}
    else:
        path, body = "/v1/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    req = tutils.treq(method=b"POST", path=path.encode(), content=orjson.dumps({**body, "stream": streamed}))
    req.host, req.port, req.scheme = "api.anthropic.com", 443, "https"
    req.headers["content-type"] = "application/json"
    return tflow.tflow(req=req)


def _run(a: ProxAI, client: str, streamed: bool) -> dict[str, Any]:
    f = _flow(client, streamed)
    a.request(f)
    assert f.request.url == "https://api.anthropic.com/v1/messages"
    if streamed:
        f.response = tutils.tresp(
            status_code=200, headers=http.Headers(content_type="text/event-stream"), content=None
        )
        a.responseheaders(f)
        stream = f.response.stream
        assert callable(stream)
        for b in _stream():  # one byte at a time, as the carrier may be handed them
            stream(bytes([b]))
        stream(b"")
    else:
        f.response = tutils.tresp(
            status_code=200, headers=http.Headers(content_type="application/json"), content=_body()
        )
        a.responseheaders(f)
    a.response(f)
    meta: dict[str, Any] = f.metadata["proxai"]
    return meta


@pytest.mark.parametrize("streamed", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize("client", ["anthropic", "chat"], ids=["untranslated", "chat-client"])
def test_one_hour_writes_cost_what_the_list_prices_give(addon: Any, client: str, streamed: bool) -> None:
    meta = _run(addon, client, streamed)
    assert meta["protocol"] == "anthropic_messages" and meta["outcome"] == "completed"
    assert verdict.client_protocol(meta) == (None if client == "anthropic" else "openai_chat")
    assert meta["usage"] == SUMMARY_USAGE
    c = meta["cost"]
    assert (c["provider"], c["model"], c["matched_by"]) == ("anthropic", "claude-sonnet-4-5", "api_url")
    assert c["tokens"] == {
        "input_tokens": UNCACHED + READ + W5M + W1H,
        "output_tokens": OUT,
        "cache_read_tokens": READ,
        "cache_write_tokens": W5M + W1H,
        "cache_write_5m_tokens": W5M,
        "cache_write_1h_tokens": W1H,
    }
    assert c["input"] == float(HAND_INPUT) == 0.03405
    assert c["output"] == float(HAND_OUTPUT) == 0.0015
    assert c["amount"] == float(HAND_INPUT + HAND_OUTPUT) == 0.03555
    # every write at the 5-minute rate would have cost less: the split is what was priced
    assert c["amount"] > float(
        (UNCACHED * INPUT + READ * CACHE_READ + (W5M + W1H) * WRITE_5M) / MTOK + HAND_OUTPUT
    )


def test_a_flow_without_the_split_prices_its_writes_at_the_five_minute_rate() -> None:
    meta = {
        "protocol": "anthropic_messages",
        "model": MODEL,
        "usage": {"input_tokens": UNCACHED, "output_tokens": OUT, "cache_write_tokens": 3000},
    }
    priced = cost.price_flow(meta, api_url="https://api.anthropic.com/v1/messages", at=1_767_225_600.0)
    assert priced.cost is not None
    assert priced.cost["amount"] == float((UNCACHED * INPUT + 3000 * WRITE_5M) / MTOK + HAND_OUTPUT)


def test_one_hour_writes_only() -> None:
    meta = {
        "protocol": "anthropic_messages",
        "model": MODEL,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 0,
            "cache_write_tokens": 4000,
            "cache_write_5m_tokens": 0,
            "cache_write_1h_tokens": 4000,
        },
    }
    priced = cost.price_flow(meta, api_url="https://api.anthropic.com/v1/messages", at=1_767_225_600.0)
    assert priced.cost is not None
    assert priced.cost["amount"] == float((10 * INPUT + 4000 * WRITE_1H) / MTOK) == 0.02403


def test_more_one_hour_writes_than_writes_is_not_priced() -> None:
    meta = {
        "protocol": "anthropic_messages",
        "model": MODEL,
        "usage": {"input_tokens": 1, "output_tokens": 1, "cache_write_tokens": 5, "cache_write_1h_tokens": 6},
    }
    priced = cost.price_flow(meta, api_url="https://api.anthropic.com/v1/messages", at=1_767_225_600.0)
    assert priced.cost is None
    assert priced.note is not None and priced.note.startswith("cost: the usage cannot be priced: ")


@pytest.mark.parametrize(
    ("usage", "text"),
    [
        (
            {"cache_write_tokens": 3000, "cache_write_5m_tokens": 1000, "cache_write_1h_tokens": 2000},
            "1000 5m, 2000 1h",
        ),
        (
            {"cache_write_tokens": 3000, "cache_write_5m_tokens": None, "cache_write_1h_tokens": 3000},
            "3000 1h",
        ),
        ({"cache_write_tokens": 3000, "cache_write_5m_tokens": None, "cache_write_1h_tokens": None}, None),
        ({"cache_write_tokens": 3000}, None),
    ],
)
def test_lifetimes_text(usage: dict[str, Any], text: str | None) -> None:
    assert cost.lifetimes_text(usage) == text


def test_the_view_and_the_run_report_show_the_split(addon: Any) -> None:
    meta = _run(addon, "anthropic", streamed=False)
    assert view_text.usage_lines(meta)[1] == (
        "tokens: input 6000 · output 100 · total 10100 · cache read 1000"
        " · cache write 3000 (1000 5m, 2000 1h)"
    )
    unsplit = {
        **meta,
        "usage": {**SUMMARY_USAGE, "cache_write_5m_tokens": None, "cache_write_1h_tokens": None},
    }
    run = build_run(
        [
            FlowInput(i, f"f{i}", "POST", "https://api.anthropic.com/v1/messages", 200, 1000.0 + i, m)
            for i, m in enumerate([meta, unsplit], 1)
        ]
    )
    first = run.turns[0]
    assert first.usage == {k: SUMMARY_USAGE[k] for k in USAGE_KEYS}
    tot = run.totals()
    assert (tot["cache_write_tokens"], tot["cache_write_5m_tokens"], tot["cache_write_1h_tokens"]) == (
        6000,
        1000,
        2000,
    )
    rows = list(csv.DictReader(io.StringIO(render_csv(run))))
    assert [
        (r["cache_write_tokens"], r["cache_write_5m_tokens"], r["cache_write_1h_tokens"]) for r in rows
    ] == [
        ("3000", "1000", "2000"),
        ("3000", "", ""),
    ]
    page = render_html(run, title="lifetimes")
    assert "<b>6000</b> in · <b>100</b> out · 1000 cache read · 3000 cache write (1000 5m, 2000 1h)" in page
    assert "<b>6000</b> in · <b>100</b> out · 1000 cache read · 3000 cache write · " in page
    assert "12000 in · 200 out · 2000 cache read · 6000 cache write (1000 5m, 2000 1h)" in page
