"""ProxAI's own pricing (``proxai.outputs.price_table``) against genai-prices itself, to the last digit.

The proxy prices flows without genai-prices in its process: a helper process writes genai-prices'
table as JSON and ProxAI looks models up and computes the prices itself. Compared here with
genai-prices' own calls over its whole bundled table: every price of every model of every provider
(every dated price) with every usage shape ``cost.price_tokens`` produces (cache reads, cache
writes, writes split by lifetime, tiers past 200k input tokens, no output, more cached than input
tokens, more 1-hour writes than writes); the price in force at the days and hours where a model's
prices change; the model and provider lookups for every name the table's clauses name (in other
cases, with compact dates) and for the address of every provider; and the whole ``cost`` object and
note of ``price_flow`` against ``calc_price``. Then: genai-prices never loads into the pricing
process, the helper's failure falls back to the same table, the memories are bounded, and a
release the comparison was not run with is priced by genai-prices' ``calc_price``.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from genai_prices import Usage, calc_price
from genai_prices import types as gt
from genai_prices.data_snapshot import get_snapshot

from proxai.outputs import cost, price_table

# The units price_tokens can produce: input and output always, cache reads and writes when non-zero,
# and the writes by lifetime (5-minute, 1-hour) inside the writes when the upstream split them.
USAGES: list[dict[str, int]] = [
    {"input_tokens": 0, "output_tokens": 0},
    {"input_tokens": 1, "output_tokens": 0},
    {"input_tokens": 0, "output_tokens": 7},
    {"input_tokens": 2723, "output_tokens": 150, "cache_read_tokens": 1200},
    {"input_tokens": 1500, "output_tokens": 33, "cache_write_tokens": 1500},
    {"input_tokens": 1300, "output_tokens": 50, "cache_read_tokens": 1000, "cache_write_tokens": 200},
    {"input_tokens": 250_000, "output_tokens": 4_000, "cache_read_tokens": 30_000},
    {"input_tokens": 1_000_003, "output_tokens": 999_999, "cache_write_tokens": 17},
    {"input_tokens": 100, "output_tokens": 5, "cache_read_tokens": 101},  # more cached than input
    {"input_tokens": 100, "output_tokens": 5, "cache_read_tokens": 60, "cache_write_tokens": 60},
    {"input_tokens": 3, "output_tokens": 123_456_789, "cache_read_tokens": 3},
    {"input_tokens": 4100, "output_tokens": 9, "cache_write_tokens": 4000, "cache_write_1h_tokens": 4000},
    {
        "input_tokens": 6000,
        "output_tokens": 100,
        "cache_read_tokens": 1000,
        "cache_write_tokens": 3000,
        "cache_write_5m_tokens": 1000,
        "cache_write_1h_tokens": 2000,
    },
    {
        "input_tokens": 300_000,
        "output_tokens": 1,
        "cache_write_tokens": 70_000,
        "cache_write_1h_tokens": 20_000,
    },
    # more 1-hour writes than writes
    {"input_tokens": 500, "output_tokens": 2, "cache_write_tokens": 100, "cache_write_1h_tokens": 101},
    {"input_tokens": 90, "output_tokens": 2, "cache_write_tokens": 80, "cache_write_5m_tokens": 80},
    # tiers start at 128k, 200k and 272k input tokens: at one (its base price) and just past each
    {"input_tokens": 200_000, "output_tokens": 10, "cache_read_tokens": 100_000},
    {"input_tokens": 128_001, "output_tokens": 10, "cache_read_tokens": 128_000},
    {"input_tokens": 200_001, "output_tokens": 10, "cache_write_tokens": 1, "cache_write_5m_tokens": 1},
    {"input_tokens": 272_001, "output_tokens": 10},
]


def _table() -> price_table.Table:
    return price_table.table(helper=True)


def _pairs() -> Iterator[tuple[gt.Provider, price_table.Provider]]:
    ours = _table().providers
    theirs = get_snapshot().providers
    assert [p.id for p in ours] == [p.id for p in theirs]
    yield from zip(theirs, ours, strict=True)


def _model_pairs() -> Iterator[tuple[gt.Provider, gt.ModelInfo, price_table.Provider, price_table.Model]]:
    for gp, op in _pairs():
        assert [m.id for m in op.models()] == [m.id for m in gp.models]
        for gm, om in zip(gp.models, op.models(), strict=True):
            yield gp, gm, op, om


def _price_pairs() -> list[tuple[gt.ModelPrice, dict[str, Any]]]:
    out: list[tuple[gt.ModelPrice, dict[str, Any]]] = []
    for _, gm, _, om in _model_pairs():
        theirs = [gm.prices] if isinstance(gm.prices, gt.ModelPrice) else [c.prices for c in gm.prices]
        prices = om.prices()
        ours = [prices] if isinstance(prices, dict) else [p for _, p in prices]
        out += zip(theirs, ours, strict=True)
    return out


def _outcome(run: Any) -> tuple[Decimal, Decimal, Decimal] | str:
    try:
        return run()  # type: ignore[no-any-return]
    except (ValueError, ArithmeticError, LookupError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _genai(price: gt.ModelPrice, units: dict[str, int]) -> tuple[Decimal, Decimal, Decimal] | str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        usage = Usage(**units)

    def run() -> tuple[Decimal, Decimal, Decimal]:
        r = price.calc_price(usage)
        return r["input_price"], r["output_price"], r["total_price"]

    return _outcome(run)


def _ours(price: dict[str, Any], units: dict[str, int]) -> tuple[Decimal, Decimal, Decimal] | str:
    t = _table()
    return _outcome(lambda: t.plan(price).calc(t, units))


def test_every_price_of_the_table_with_every_usage_as_genai_prices_computes_it() -> None:
    pairs = _price_pairs()
    assert len(pairs) > 2500
    refused = tiered = split = 0
    for i, (theirs, ours) in enumerate(pairs):
        # each price with half of the usages, in turn, so every usage meets every kind of price
        for units in USAGES[i % 2 :: 2]:
            want, got = _genai(theirs, units), _ours(ours, units)
            # the same Decimals, digit for digit (not only equal in value), or the same refusal
            assert repr(got) == repr(want), (theirs, units)
            refused += isinstance(want, str)
            tiered += (
                "TieredPrices" in repr(theirs)
                and units["input_tokens"] > 200_000
                and not isinstance(want, str)
            )
            split += "cache_write_1h_mtok" in repr(theirs) and "cache_write_1h_tokens" in units
    assert refused and tiered and split  # each rule was met


def test_a_price_the_table_would_refuse_is_refused_with_genai_prices_words() -> None:
    # the bundled table holds none, so made here: a cache price without an input price, a join left
    # unpriced, a negative price and tiers out of order
    made = [
        {"cache_read_mtok": Decimal("0.3"), "output_mtok": Decimal(1)},
        {"input_mtok": Decimal(1), "input_text_mtok": Decimal(1), "cache_read_mtok": Decimal(1)},
        {"input_mtok": Decimal(-1)},
        {"input_mtok": gt.TieredPrices(base=Decimal(1), tiers=[gt.Tier(start=-5, price=Decimal(2))])},
        {"input_mtok": Decimal(1), "made_up_mtok": Decimal(9), "output_mtok": Decimal("2.5")},
        {"input_mtok": Decimal(1), "requests_kcount": Decimal(3)},
    ]
    for kwargs in made:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = gt.ModelPrice(**kwargs)
        ours = price_table._model_price(theirs)
        for units in USAGES[:6]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = _genai(theirs, units)
            assert repr(_ours(ours, units)) == repr(want), (kwargs, units)


def _moments(prices: list[Any]) -> Iterator[datetime]:
    """The moments around each change of a model's prices."""
    yield datetime(2020, 1, 1, tzinfo=UTC)
    yield datetime(2030, 1, 1, 12, tzinfo=UTC)
    for c in prices:
        con = c.constraint
        if isinstance(con, gt.StartDateConstraint):
            day = datetime(con.start_date.year, con.start_date.month, con.start_date.day, tzinfo=UTC)
            yield from (day - timedelta(seconds=1), day, day + timedelta(hours=23, minutes=59))
        elif isinstance(con, gt.TimeOfDateConstraint):
            for hour in range(24):
                for minute in (0, 29, 30, 59):
                    yield datetime(2026, 3, 1, hour, minute, tzinfo=UTC)


def test_the_price_in_force_at_each_change_as_genai_prices_chooses_it() -> None:
    t = _table()
    dated = 0
    for _, gm, _, om in _model_pairs():
        if isinstance(gm.prices, gt.ModelPrice):
            assert t.prices_at(om, datetime.now(UTC)) == price_table._model_price(gm.prices)
            continue
        dated += 1
        for when in _moments(gm.prices):
            assert t.prices_at(om, when) == price_table._model_price(gm.get_prices(when)), (gm.id, when)
    assert dated > 100


def _names(clause: Any) -> Iterator[str]:
    for attr in ("equals", "starts_with", "ends_with", "contains"):
        if isinstance(v := getattr(clause, attr, None), str):
            yield v
    for sub in [*getattr(clause, "or_", ()), *getattr(clause, "and_", ())]:
        yield from _names(sub)


def _refs(gm: gt.ModelInfo, *, other_cases: bool) -> Iterator[str]:
    """The names the model's clauses name: as written, in the compact date form, with a compact
    date added; ``other_cases``: upper case and ``-latest`` too (those are matches and misses in
    the model's own provider, the dearer lookups)."""
    for name in sorted({*_names(gm.match), gm.id}):
        yield name
        yield re.sub(r"-(20\d\d)-(\d\d)-(\d\d)", r"-\1\2\3", name)  # the compact date form
        yield name + "-20251211"
        if other_cases:
            yield name.upper()
            yield name + "-latest"


@pytest.mark.parametrize("half", [0, 1])
def test_every_model_name_is_found_in_its_provider_as_genai_prices_finds_it(half: int) -> None:
    # in the provider the upstream's address names, then its fallback providers (every other
    # model in each half: the test stays short on a loaded machine)
    snapshot = get_snapshot()
    by_id = {p.id: p for p in _table().providers}
    checked = 0
    for gp, gm, _, _ in itertools.islice(_model_pairs(), half, None, 2):
        for ref in _refs(gm, other_cases=True):
            want = gp.find_model(ref, all_providers=snapshot.providers)
            got = _table().find(ref, by_id[gp.id])
            assert (got[1].id if got else None) == (want.id if want else None), (gp.id, ref)
            checked += 1
    assert checked > 5_000


def test_every_model_name_is_found_by_name_alone_as_genai_prices_finds_it() -> None:
    # an address of no provider: the provider whose name rule matches, then the model there
    snapshot = get_snapshot()
    checked = 0
    for _, gm, _, _ in _model_pairs():
        for ref in _refs(gm, other_cases=False):
            try:
                wp, wm = snapshot.find_provider_model(ref, None, None, None)
                expect: tuple[str, str] | None = (wp.id, wm.id)
            except LookupError:
                expect = None
            found = _table().find(ref, None)
            assert ((found[0].id, found[1].id) if found else None) == expect, ref
            checked += 1
    assert checked > 5_000


def _urls() -> Iterator[str]:
    """Every provider's address where its pattern is a plain address, and addresses of no provider."""
    for p in get_snapshot().providers:
        plain = p.api_pattern.replace(r"\.", ".")
        if re.fullmatch(r"https?://[\w.\-/]+", plain):
            yield plain + "/v1/chat/completions"
            yield plain.replace("https://", "http://") + "/v1"
    yield from [
        "http://127.0.0.1:9/v1/chat/completions",
        "https://gateway.example.com/openai/v1/responses",
        "https://my-resource.openai.azure.com/openai/deployments/x/chat/completions?api-version=1",
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/x/invoke",
        "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions",
        "https://gateway.ai.cloudflare.com/v1/acc/gw/openai/chat/completions",
        "https://router.huggingface.co/cerebras/v1/chat/completions",
        "https://openrouter.ai/api/v1/chat/completions",
    ]


def test_every_provider_address_as_genai_prices_reads_it() -> None:
    snapshot = get_snapshot()
    t = _table()
    seen = set()
    for url in _urls():
        try:
            want: str | None = snapshot.find_provider(None, None, url).id
        except LookupError:
            want = None
        got = t.provider_for(url)
        assert (got.id if got else None) == want, url
        seen.add(want)
    assert len(seen) > 20
    for gp, op in _pairs():
        assert t.provider_by_id(gp.id) is op


def _reference(meta: dict[str, Any], api_url: str | None, at: float | None) -> cost.Priced:
    """``price_flow`` through genai-prices' ``calc_price``."""
    units = cost.price_tokens(meta)
    model = meta.get("model")
    if units is None:
        return cost.Priced(None, "cost: the upstream reported no usage")
    if not isinstance(model, str) or not model:
        return cost.Priced(None, "cost: the upstream reported no model")
    when = datetime.fromtimestamp(at, UTC) if at is not None else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        usage = Usage(**units)
    provider_id = None
    if api_url:
        with contextlib.suppress(LookupError):
            provider_id = get_snapshot().find_provider(None, None, api_url).id
    try:
        calc = calc_price(usage, model, provider_id=provider_id, genai_request_timestamp=when)
    except LookupError:
        return cost.Priced(None, f"cost: genai-prices {cost.version()} has no price for model {model!r}")
    except (ValueError, ArithmeticError) as exc:
        return cost.Priced(None, f"cost: the usage cannot be priced: {exc}")
    return cost.Priced(
        {
            "amount": float(round(calc.total_price, 12)),
            "currency": "USD",
            "input": float(round(calc.input_price, 12)),
            "output": float(round(calc.output_price, 12)),
            "tokens": units,
            "provider": calc.provider.id,
            "model": calc.model.id,
            "matched_by": "model" if provider_id is None else "api_url",
            "source": "genai-prices",
            "version": cost.version(),
        }
    )


MODELS = [
    "claude-sonnet-4-5-20250929",
    "claude-3-5-haiku-latest",
    "claude-opus-4-1",
    "gpt-4o-2024-08-06",
    "gpt-4o-mini",
    "gpt-5",
    "o3",
    "gemini-2.5-pro",
    "deepseek-chat",
    "no-such-model-xyz",
    "",
]
URLS = [
    None,
    "https://api.anthropic.com/v1/messages",
    "https://api.openai.com/v1/responses",
    "http://127.0.0.1:9/v1/chat/completions",
    "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions",
    "https://api.deepseek.com/chat/completions",
]


@pytest.mark.parametrize("protocol", ["anthropic_messages", "openai_chat", "openai_responses"])
def test_price_flow_as_calc_price(protocol: str) -> None:
    usages: list[dict[str, Any] | None] = [
        None,
        {},
        {"input_tokens": 12, "output_tokens": 300, "cache_read_tokens": 5, "cache_write_tokens": 0},
        {"input_tokens": 220_000, "output_tokens": 10, "cache_write_tokens": 9},
        {"input_tokens": 10, "output_tokens": 1, "cache_read_tokens": 50},
        {"output_tokens": 4},
        {
            "input_tokens": 7,
            "output_tokens": 40,
            "cache_write_tokens": 900,
            "cache_write_5m_tokens": 300,
            "cache_write_1h_tokens": 600,
        },
        {"input_tokens": 210_000, "output_tokens": 3, "cache_write_tokens": 5, "cache_write_1h_tokens": 6},
    ]
    # 2026-01-01 00:00, 2030-03-17 21:20 and 17:00 UTC (DeepSeek's off-peak hours start at 16:30)
    moments = [1_767_225_600.0, 1.9e9, 1.9e9 - 4.33 * 3600]
    seen_priced = seen_refused = 0
    for model, url, at, usage in itertools.product(MODELS, URLS, moments, usages):
        meta: dict[str, Any] = {"protocol": protocol, "model": model}
        if usage is not None:
            meta["usage"] = usage
        want = _reference(meta, url, at)
        assert cost.price_flow(meta, api_url=url, at=at) == want, (model, url, at, usage)
        seen_priced += want.cost is not None
        seen_refused += "cannot be priced" in (want.note or "")
    assert seen_priced
    # Anthropic's input_tokens leave the cached ones out, so its mapping never has more cached
    assert seen_refused or protocol == "anthropic_messages"


def test_pricing_never_loads_genai_prices_into_the_process() -> None:
    code = (
        "import sys\n"
        "from proxai.outputs import cost\n"
        "cost.warm()\n"
        "p = cost.price_flow({'protocol': 'openai_chat', 'model': 'gpt-4o-mini',"
        " 'usage': {'input_tokens': 3, 'output_tokens': 4}}, api_url='https://api.openai.com/v1')\n"
        "assert p.cost and p.cost['provider'] == 'openai', p\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('genai_prices', 'pydantic')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.strip() == "[]"


def test_the_helper_failing_gives_the_same_table_from_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    helper = price_table.from_helper()
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    assert price_table.from_helper() == helper == price_table.dump()


def test_the_memories_are_bounded_and_keep_no_address() -> None:
    t = _table()
    for i in range(3 * price_table.MAX_REMEMBERED):
        for model in (f"gpt-4o-mini-{i}", f"no-such-model-{i}"):
            meta = {
                "protocol": "openai_chat",
                "model": model,
                "usage": {"input_tokens": 3, "output_tokens": 4},
            }
            cost.price_flow(
                meta, api_url=f"https://api.openai.com/v1/chat/completions?key=sk-{i:06d}", at=1.8e9
            )
        assert len(t._found) <= price_table.MAX_REMEMBERED
        assert len(t._plans) <= price_table.MAX_REMEMBERED
    assert not any("sk-" in str(key) for key in t._found)
    meta = {
        "protocol": "openai_chat",
        "model": "gpt-4o-mini",
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    url = "https://api.openai.com/v1/chat/completions"
    assert cost.price_flow(meta, api_url=url, at=1.8e9) == _reference(meta, url, 1.8e9)


# -- another genai-prices release: its public calc_price, never ProxAI's pricing ------------------


def test_the_installed_release_is_priced_by_proxai() -> None:
    # constraints.txt pins the release CI checks; a newer pin fails here until the comparison above
    # passes with it and the release is added to price_table.CHECKED_RELEASES
    assert cost.version() in price_table.CHECKED_RELEASES, cost.version()
    assert _table().release == cost.version()


def test_the_units_are_genai_prices_registry() -> None:
    from genai_prices.units import _get_registry

    registry = _get_registry().units
    assert {k: (u.price_key, u.per, u.dims) for k, u in _table().units.items()} == {
        k: (u.price_key, u.per, frozenset(u.dimensions.items())) for k, u in registry.items()
    }


@pytest.mark.parametrize("protocol", ["anthropic_messages", "openai_chat"])
def test_a_release_not_checked_is_priced_by_calc_price(
    monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    import genai_prices

    calls: list[int] = []
    real = genai_prices.calc_price

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    def no_table() -> Any:
        raise AssertionError("ProxAI's pricing ran on a release it was not checked with")

    monkeypatch.setattr(genai_prices, "calc_price", counted)
    monkeypatch.setattr(price_table, "table", no_table)
    monkeypatch.setattr(cost, "version", lambda: "99.0.0")
    n = 0
    for model, url, usage in itertools.product(
        MODELS[:6] + MODELS[-2:],
        URLS,
        [
            {"input_tokens": 12, "output_tokens": 300, "cache_read_tokens": 5},
            {"input_tokens": 10, "cache_read_tokens": 50},
        ],
    ):
        meta: dict[str, Any] = {"protocol": protocol, "model": model, "usage": usage}
        want = _reference(meta, url, 1_767_225_600.0)
        assert cost.price_flow(meta, api_url=url, at=1_767_225_600.0) == want, (model, url, usage)
        n += want.cost is not None
    assert n and calls
    # a priced flow still names the release that priced it
    meta = {"protocol": protocol, "model": "gpt-4o-mini", "usage": {"input_tokens": 3, "output_tokens": 4}}
    priced = cost.price_flow(meta)
    assert priced.cost is not None and priced.cost["version"] == "99.0.0"
    assert priced.cost["amount"] == pytest.approx(3 * 0.15e-6 + 4 * 0.6e-6)
