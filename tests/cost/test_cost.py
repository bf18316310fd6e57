"""Cost per flow (``proxai.outputs.cost``): known models priced from genai-prices' bundled table, token
mapping per protocol (cache reads and writes), and no guess for what the table does not know."""

from __future__ import annotations

from typing import Any

import genai_prices
import pytest

from proxai.outputs import cost

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
AT = 1_767_225_600.0  # 2026-01-01T00:00:00Z: the prices in force then


def _meta(protocol: str, model: str | None, **usage: int | None) -> dict[str, Any]:
    return {"protocol": protocol, "model": model, "usage": usage}


def test_anthropic_prices_cache_reads_and_writes_at_their_own_rates() -> None:
    # claude-sonnet-4-5: $3 / MTok input, $15 output, $0.30 cache read, $3.75 cache write (5 min).
    meta = _meta(
        "anthropic_messages",
        "claude-sonnet-4-5-20250929",
        input_tokens=100,
        output_tokens=50,
        cache_read_tokens=1000,
        cache_write_tokens=200,
    )
    priced = cost.price_flow(meta, api_url=ANTHROPIC_URL, at=AT)
    assert priced.note is None
    expected_in = (100 * 3 + 1000 * 0.30 + 200 * 3.75) / 1e6
    expected_out = 50 * 15 / 1e6
    assert priced.cost == {
        "amount": pytest.approx(expected_in + expected_out, abs=1e-12),
        "currency": "USD",
        "input": pytest.approx(expected_in, abs=1e-12),
        "output": pytest.approx(expected_out, abs=1e-12),
        # Anthropic's input_tokens excludes the cached ones; genai-prices counts them inside.
        "tokens": {
            "input_tokens": 1300,
            "output_tokens": 50,
            "cache_read_tokens": 1000,
            "cache_write_tokens": 200,
        },
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "matched_by": "api_url",
        "source": "genai-prices",
        "version": genai_prices.__version__,
    }


def test_openai_cached_tokens_are_part_of_the_prompt() -> None:
    # gpt-4o: $2.50 / MTok input, $1.25 cached input, $10 output; prompt_tokens includes the cached.
    meta = _meta(
        "openai_chat", "gpt-4o-2024-08-06", input_tokens=2000, output_tokens=100, cache_read_tokens=1000
    )
    priced = cost.price_flow(meta, api_url=OPENAI_URL, at=AT)
    assert priced.cost is not None
    assert priced.cost["tokens"] == {"input_tokens": 2000, "output_tokens": 100, "cache_read_tokens": 1000}
    assert priced.cost["amount"] == pytest.approx((1000 * 2.5 + 1000 * 1.25 + 100 * 10) / 1e6, abs=1e-12)
    assert (priced.cost["provider"], priced.cost["model"]) == ("openai", "gpt-4o")


def test_responses_protocol_uses_the_openai_mapping() -> None:
    meta = _meta("openai_responses", "gpt-5", input_tokens=1000, output_tokens=1000)
    priced = cost.price_flow(meta, api_url="https://api.openai.com/v1/responses", at=AT)
    assert priced.cost is not None  # gpt-5: $1.25 in, $10 out
    assert priced.cost["amount"] == pytest.approx((1000 * 1.25 + 1000 * 10) / 1e6, abs=1e-12)


def test_an_address_no_provider_has_leaves_the_provider_to_the_model_name() -> None:
    meta = _meta("anthropic_messages", "claude-sonnet-4-5", input_tokens=1000, output_tokens=0)
    priced = cost.price_flow(meta, api_url="http://127.0.0.1:9000/v1/messages", at=AT)
    assert priced.cost is not None
    assert priced.cost["provider"] == "anthropic" and priced.cost["matched_by"] == "model"
    assert priced.cost["amount"] == pytest.approx(1000 * 3 / 1e6, abs=1e-12)


@pytest.mark.parametrize(
    ("meta", "url", "note"),
    [
        (
            _meta("openai_chat", "my-local-llama-finetune", input_tokens=10, output_tokens=5),
            "http://127.0.0.1:8000/v1/chat/completions",
            "cost: genai-prices {v} has no price for model 'my-local-llama-finetune'",
        ),
        # The address says OpenAI, which lists no such model: no price from another provider.
        (
            _meta("openai_chat", "claude-sonnet-4-5", input_tokens=10, output_tokens=5),
            OPENAI_URL,
            "cost: genai-prices {v} has no price for model 'claude-sonnet-4-5'",
        ),
        (_meta("openai_chat", "gpt-4o"), OPENAI_URL, "cost: the upstream reported no usage"),
        (
            _meta("openai_chat", None, input_tokens=10, output_tokens=5),
            OPENAI_URL,
            "cost: the upstream reported no model",
        ),
        (
            _meta("openai_chat", "gpt-4o", input_tokens=10, output_tokens=5, cache_read_tokens=50),
            OPENAI_URL,
            "cost: the usage cannot be priced: Invalid usage data: cache_read_tokens (50) "
            "cannot exceed input_tokens (10)",
        ),
    ],
)
def test_no_price_is_null_with_a_note(meta: dict[str, Any], url: str, note: str) -> None:
    priced = cost.price_flow(meta, api_url=url, at=AT)
    assert priced.cost is None
    assert priced.note == note.format(v=genai_prices.__version__)


def test_add_cost_writes_the_summary_and_appends_the_note() -> None:
    known = _meta("openai_chat", "gpt-4o", input_tokens=4, output_tokens=1)
    cost.add_cost(known, api_url=OPENAI_URL, at=AT)
    assert known["cost"]["amount"] == pytest.approx((4 * 2.5 + 10) / 1e6, abs=1e-12)
    assert "extra" not in known
    unknown = {**_meta("openai_chat", "nope", input_tokens=4, output_tokens=1), "extra": {"notes": ["a"]}}
    cost.add_cost(unknown, api_url=OPENAI_URL, at=AT)
    assert unknown["cost"] is None
    assert unknown["extra"]["notes"] == [
        "a",
        f"cost: genai-prices {genai_prices.__version__} has no price for model 'nope'",
    ]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "-"),
        (0.0, "$0"),
        (0.000315, "$0.000315"),
        (8.25e-05, "$0.0000825"),  # never an exponent
        (0.0123456, "$0.0123"),
        (12.345, "$12.35"),
    ],
)
def test_format_amount(value: float | None, text: str) -> None:
    assert cost.format_amount(value) == text
