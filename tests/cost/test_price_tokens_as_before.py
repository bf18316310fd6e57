"""``cost.price_tokens`` and ``cost.price_flow`` against their computations as they were written
before the per-flow work was cut (ints taken without a call, the moment read only for dated
prices, the reported units read once per price): the same units, the same cost object and note,
over generated usages and over every model of the price table with dated prices."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.outputs import cost, price_table
from proxai.outputs.cost import ANTHROPIC, LIFETIME_KEYS, _int


def _reference_tokens(meta: Mapping[str, Any]) -> dict[str, int] | None:
    usage = meta.get("usage")
    if not isinstance(usage, Mapping):
        return None
    inp = _int(usage.get("input_tokens"))
    out = _int(usage.get("output_tokens"))
    read = _int(usage.get("cache_read_tokens")) or 0
    write = _int(usage.get("cache_write_tokens")) or 0
    if inp is None and out is None:
        return None
    total_in = inp or 0
    if meta.get("protocol") == ANTHROPIC:
        total_in += read + write
    units = {"input_tokens": total_in, "output_tokens": out or 0}
    if read:
        units["cache_read_tokens"] = read
    if write:
        units["cache_write_tokens"] = write
        for key in LIFETIME_KEYS:
            n = _int(usage.get(key))
            if n:
                units[key] = n
    return units


class _Int(int):
    pass


class _Usage(Mapping[str, Any]):
    def __init__(self, d: dict[str, Any]) -> None:
        self.d = d

    def __getitem__(self, k: str) -> Any:
        return self.d[k]

    def __iter__(self) -> Any:
        return iter(self.d)

    def __len__(self) -> int:
        return len(self.d)


_COUNTS = st.one_of(
    st.none(),
    st.integers(-5, 10**7),
    st.booleans(),
    st.floats(allow_nan=False, max_value=1e7),
    st.sampled_from(["12", _Int(7), _Int(-1), 0]),
)
_USAGE = st.fixed_dictionaries(
    {},
    optional={
        k: _COUNTS
        for k in (
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "cache_write_5m_tokens",
            "cache_write_1h_tokens",
        )
    },
)


@settings(max_examples=500, deadline=None)
@given(
    usage=st.one_of(_USAGE, _USAGE.map(_Usage), st.none(), st.just([1])),
    protocol=st.sampled_from([ANTHROPIC, "openai_chat", "openai_responses", None]),
)
def test_price_tokens_as_before(usage: Any, protocol: Any) -> None:
    meta = {"protocol": protocol, "usage": usage}
    got = cost.price_tokens(meta)
    want = _reference_tokens(meta)
    assert got == want
    assert [type(v) for v in (got or {}).values()] == [type(v) for v in (want or {}).values()]


def _reference_flow(meta: Mapping[str, Any], api_url: str | None, at: float | None) -> cost.Priced:
    """``price_flow``'s checked-release path as it was: the moment made first, the price in force
    looked up through ``prices_at`` on every flow."""
    model = meta.get("model")
    units = _reference_tokens(meta)
    if units is None:
        return cost.Priced(None, "cost: the upstream reported no usage")
    if not isinstance(model, str) or not model:
        return cost.Priced(None, "cost: the upstream reported no model")
    when = datetime.fromtimestamp(at, UTC) if at is not None else datetime.now(tz=UTC)
    table = price_table.table()
    try:
        by_url = table.provider_for(api_url) if api_url else None
        found = table.find(model, by_url)
        if found is None:
            raise LookupError(model)
        provider, info = found
        inp, outp, tot = table.plan(table.prices_at(info, when)).calc(table, units)
    except LookupError:
        return cost.Priced(None, f"cost: {cost.SOURCE} {cost.version()} has no price for model {model!r}")
    except (ValueError, ArithmeticError) as exc:
        return cost.Priced(None, f"cost: the usage cannot be priced: {exc}")
    return cost.Priced(
        {
            "amount": cost._amount(tot),
            "currency": cost.CURRENCY,
            "input": cost._amount(inp),
            "output": cost._amount(outp),
            "tokens": units,
            "provider": provider.id,
            "model": info.id,
            "matched_by": "api_url" if by_url is not None else "model",
            "source": cost.SOURCE,
            "version": cost.version(),
        }
    )


_USAGES = [
    {"input_tokens": 1000, "output_tokens": 200},
    {"input_tokens": 1000, "output_tokens": 200, "cache_read_tokens": 300, "cache_write_tokens": 50},
    {
        "input_tokens": 250_000,
        "output_tokens": 9,
        "cache_write_tokens": 70,
        "cache_write_5m_tokens": 30,
        "cache_write_1h_tokens": 40,
    },
    {"output_tokens": 5},
    {"input_tokens": 10, "output_tokens": 0, "cache_read_tokens": 20},
]
# before, inside and after dated prices' start days and daily intervals (2023 to 2027, UTC hours)
_MOMENTS = [
    None,
    *(
        datetime(y, m, 1, h, tzinfo=UTC).timestamp()
        for y in range(2023, 2028)
        for m in (1, 7)
        for h in (0, 17)
    ),
]


def test_price_flow_as_before_over_dated_prices() -> None:
    if not cost._checked():
        return  # another release prices through genai-prices itself (tests/cost/test_cost.py)
    table = price_table.table()
    dated = [(p, m) for p in table.providers for m in p.models() if not isinstance(m.prices(), dict)]
    assert dated  # the table has models whose prices changed at a date or by the hour
    plain = [(p, m) for p in table.providers[:6] for m in p.models()[:5] if isinstance(m.prices(), dict)]
    checked = 0
    for provider, model in [*dated, *plain]:
        for usage in _USAGES:
            for protocol in (ANTHROPIC, "openai_chat"):
                meta = {"protocol": protocol, "model": model.id, "usage": usage}
                for at in _MOMENTS:
                    if at is None:
                        continue  # now: the two calls may see different moments
                    got = cost.price_flow(meta, api_url=None, at=at)
                    assert got == _reference_flow(meta, None, at), (provider.id, model.id, at)
                    checked += 1
    assert checked > 1000
