"""What one LLM flow cost: its reported usage priced with ``genai-prices`` (docs/design/cost.md).

Pure: a flow's summary (``flow.metadata["proxai"]``), the upstream URL and the moment the request
was sent go in; the ``cost`` object of the summary comes out, or ``None`` with a note saying why.
Prices come from the price table bundled with the installed ``genai-prices`` release; it is never
updated from the network, so a cost names the release that priced it.

The rules (docs/design/cost.md):

- The model priced is the one the upstream reported (``model``), never the requested one.
- The provider is the one whose API address the upstream URL is; an address no provider has (a
  gateway, a local test server) leaves the provider to the model's name (the maker's list price),
  and ``matched_by`` says which.
- Tokens are mapped to genai-prices' units by protocol: Anthropic reports ``input_tokens``
  without the cached ones, OpenAI's ``prompt_tokens`` / ``input_tokens`` include them; genai-prices
  counts cache reads and writes inside its ``input_tokens``. Cache writes split by lifetime
  (Anthropic's 5-minute and 1-hour writes) go in as genai-prices' ``cache_write_5m_tokens`` /
  ``cache_write_1h_tokens``, inside its ``cache_write_tokens``, each priced at its own rate.
- No model, no usage, or a model genai-prices does not know: ``None`` and a note, never a guess.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from genai_prices.types import ModelPrice, TieredPrices
    from genai_prices.units import UnitDef

SOURCE = "genai-prices"
CURRENCY = "USD"  # genai-prices prices every model in US dollars
ANTHROPIC = "anthropic_messages"
NOTE_PREFIX = "cost: "  # every note this module writes starts with it
# The summary's cache writes by lifetime; genai-prices' usage units have the same names.
LIFETIME_KEYS = ("cache_write_5m_tokens", "cache_write_1h_tokens")


@dataclass(frozen=True, slots=True)
class Priced:
    """The outcome of pricing one flow: a ``cost`` object, or ``None`` and the reason."""

    cost: dict[str, Any] | None
    note: str | None = None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _amount(d: Decimal) -> float:
    return float(round(d, 12))


def price_tokens(meta: Mapping[str, Any]) -> dict[str, int] | None:
    """The flow's usage in genai-prices' units, or ``None`` when the upstream reported none."""
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
        total_in += read + write  # Anthropic's input_tokens leaves the cached tokens out
    units = {"input_tokens": total_in, "output_tokens": out or 0}
    if read:
        units["cache_read_tokens"] = read
    if write:
        units["cache_write_tokens"] = write
        # The writes by lifetime, inside cache_write_tokens: genai-prices prices each at its own
        # rate where the model has one (a 1-hour write costs more) and what is left of the total
        # at the plain cache-write rate.
        for key in LIFETIME_KEYS:
            n = _int(usage.get(key))
            if n:
                units[key] = n
    return units


@functools.cache
def version() -> str:
    """The installed genai-prices release (its price table is the one bundled with it)."""
    mod = importlib.import_module("genai_prices")
    return str(mod.__version__)


def warm() -> None:
    """Import genai-prices and load its price table (about half a second, once per process), so
    the first flow does not wait for it: the addon calls this off the event loop at start-up."""
    price_flow({"protocol": ANTHROPIC, "model": "claude-sonnet-4-5", "usage": {"input_tokens": 1}}, at=None)


def _provider_for(api_url: str | None) -> str | None:
    """The genai-prices provider whose API address ``api_url`` is, or ``None``."""
    if not api_url:
        return None
    from genai_prices.data_snapshot import get_snapshot

    try:
        return get_snapshot().find_provider(None, None, api_url).id
    except LookupError:
        return None


def price_flow(meta: Mapping[str, Any], *, api_url: str | None = None, at: float | None = None) -> Priced:
    """Price one flow. ``api_url``: the URL the request went to upstream; ``at``: the request's wall
    clock time (seconds since the epoch) that selects the prices in force, ``None`` for now."""
    from genai_prices.data_snapshot import get_snapshot

    model = meta.get("model")
    units = price_tokens(meta)
    if units is None:
        return Priced(None, "cost: the upstream reported no usage")
    if not isinstance(model, str) or not model:
        return Priced(None, "cost: the upstream reported no model")
    when = datetime.fromtimestamp(at, UTC) if at is not None else datetime.now(tz=UTC)
    provider_id = _provider_for(api_url)
    try:
        if _stepwise():
            # genai-prices' calc_price, step by step (its lookup, its price in force, its units'
            # arithmetic), with what depends only on the price remembered (``_plan``)
            snapshot = get_snapshot()
            try:
                provider, info = snapshot.find_provider_model(model, None, provider_id, None)
            finally:  # found or not, with _provider_for's lookup
                _bound_lookups(snapshot)
            input_price, output_price, total_price = _calc(_plan(info.get_prices(when)), units)
        else:
            from genai_prices import calc_price

            calc = calc_price(_usage(units), model, provider_id=provider_id, genai_request_timestamp=when)
            provider, info = calc.provider, calc.model
            input_price, output_price, total_price = calc.input_price, calc.output_price, calc.total_price
    except LookupError:
        return Priced(None, f"cost: {SOURCE} {version()} has no price for model {model!r}")
    except (ValueError, ArithmeticError) as exc:  # usage the price table cannot take
        return Priced(None, f"cost: the usage cannot be priced: {exc}")
    return Priced(
        {
            "amount": _amount(total_price),
            "currency": CURRENCY,
            "input": _amount(input_price),
            "output": _amount(output_price),
            "tokens": units,
            "provider": provider.id,
            "model": info.id,
            "matched_by": "model" if provider_id is None else "api_url",
            "source": SOURCE,
            "version": version(),
        }
    )


# -- genai-prices' arithmetic, with what depends only on the price remembered ---------------------
#
# ``genai_prices.calc_price`` spends nearly all of its time (about 1 M machine instructions a flow)
# on work that depends only on the model's price, not on the usage: which of its prices are set,
# checking them against its unit registry, and which priced units lie inside which; and on
# inferring the units the usage leaves out, which depends only on which units the usage reports
# as non-zero. Both are remembered here; the usage's own arithmetic runs each time, in
# genai-prices' order with genai-prices' functions, so a cost is the same Decimal to the last
# digit (tests/cost/test_cost_plan.py compares every price in the table with ``calc_price``).
# What ModelInfo.calc_price adds around this (a price context, the special case of two audio
# models billed by the second) applies only to usage ProxAI never reports.


# The step-by-step pricing calls genai-prices' internals (private functions a later release may
# rename, drop or make compute otherwise), so it runs only on the releases the comparison in
# tests/cost/test_cost_plan.py passed with; any other release (pyproject.toml allows newer ones, for
# their newer price tables) is priced by its public ``calc_price``: the same figures, about 1 M
# machine instructions a flow instead of 0.15 M. A release goes in here once that comparison passes.
STEPWISE_RELEASES = frozenset({"0.2.3"})


@functools.cache
def _stepwise() -> bool:
    """Whether the installed genai-prices is one the step-by-step pricing was checked against, with
    every internal it calls present."""
    if version() not in STEPWISE_RELEASES:
        return False
    try:
        from genai_prices.data_snapshot import DataSnapshot
        from genai_prices.decompose import compute_leaf_values, is_descendant_or_self  # noqa: F401
        from genai_prices.types import (  # noqa: F401
            ModelInfo,
            TieredPrices,
            _collect_resolved_model_prices,
            calc_unit_price,
        )
        from genai_prices.units import _get_registry  # noqa: F401
        from genai_prices.validation import validate_priced_units  # noqa: F401
    except ImportError:
        return False
    fields = getattr(DataSnapshot, "__dataclass_fields__", {})
    return (
        hasattr(DataSnapshot, "find_provider_model")
        and hasattr(ModelInfo, "get_prices")
        and all(name in fields for name in _LOOKUP_MEMOS)
    )


# genai-prices' table remembers the answer to every lookup it was asked (by model name, provider
# and full upstream URL, found or not) without a bound: a long-running proxy would keep every
# distinct model name and URL (a query's credentials with it) a client or upstream ever sent. Those
# memories only spare the lookup, so they are emptied when one holds more than MAX_LOOKUPS answers.
MAX_LOOKUPS = 1024
_LOOKUP_MEMOS = ("_lookup_cache", "_provider_cache", "_provider_misses")


def _bound_lookups(snapshot: Any) -> None:
    for name in _LOOKUP_MEMOS:
        memo = getattr(snapshot, name)
        if len(memo) > MAX_LOOKUPS:
            memo.clear()


@dataclass(frozen=True, slots=True)
class _Plan:
    """What pricing with one model price needs that the usage does not change."""

    prices: tuple[tuple[UnitDef, Decimal | TieredPrices, str | None], ...]
    """(unit, price, direction) in the price's order: the order the amounts are summed in."""
    leaves: tuple[tuple[str, tuple[str, ...]], ...]
    """(usage key, the priced usage keys inside it) in the order genai-prices computes them: a
    unit's own count is its usage less the own counts of the priced units inside it."""
    tiered: bool
    """A price changes with the input tokens (genai-prices then reads them)."""
    requests: bool
    """A price per request (counted once)."""


_PLANS: dict[int, tuple[ModelPrice, _Plan]] = {}
MAX_PLANS = 1024  # model prices remembered (a proxy prices a few dozen; the table holds about 2,600)


def _plan(price: ModelPrice) -> _Plan:
    """The plan of one of the table's model prices (remembered by identity: the entry keeps the
    price alive, so its id is never reused; at most ``MAX_PLANS``, the oldest forgotten first)."""
    hit = _PLANS.get(id(price))
    if hit is not None and hit[0] is price:
        return hit[1]
    from genai_prices.decompose import is_descendant_or_self
    from genai_prices.types import TieredPrices, _collect_resolved_model_prices
    from genai_prices.units import _get_registry
    from genai_prices.validation import validate_priced_units

    registry = _get_registry()
    resolved = _collect_resolved_model_prices(price, registry)
    validate_priced_units(tuple(unit for unit, _ in resolved), registry)  # raises ValueError
    units = sorted(
        {unit.usage_key: unit for unit, _ in resolved if unit.usage_key != "requests"}.values(),
        key=lambda unit: (-len(unit.dimensions), unit.usage_key),
    )
    plan = _Plan(
        prices=tuple((unit, p, unit.dimensions.get("direction")) for unit, p in resolved),
        leaves=tuple(
            (
                unit.usage_key,
                tuple(d.usage_key for d in units if d is not unit and is_descendant_or_self(unit, d)),
            )
            for unit in units
        ),
        tiered=any(isinstance(p, TieredPrices) for _, p in resolved),
        requests=any(unit.usage_key == "requests" for unit, _ in resolved),
    )
    if len(_PLANS) >= MAX_PLANS:
        del _PLANS[next(iter(_PLANS))]
    _PLANS[id(price)] = (price, plan)
    return plan


def _calc(plan: _Plan, units: dict[str, int]) -> tuple[Decimal, Decimal, Decimal]:
    """(input, output, total) price of ``units`` (``price_tokens``' whole numbers) under ``plan``,
    as genai-prices' ``ModelPrice.calc_price`` computes them."""
    from genai_prices.types import calc_unit_price

    counts: dict[str, int] = {}
    reported: frozenset[str] | None = None
    for key, inside in plan.leaves:
        value = units.get(key)
        if value is None:
            if reported is None:
                reported = frozenset(k for k, v in units.items() if v > 0)
            value = _inferred(key, reported)
        own = value - sum(counts[k] for k in inside)
        if own < 0:
            _refuse(plan, units)
        counts[key] = own
    if plan.requests:
        counts["requests"] = 1
    total_input = units["input_tokens"] if plan.tiered else 0
    input_price = output_price = total_price = Decimal(0)
    for unit, price, direction in plan.prices:
        amount = calc_unit_price(price, counts[unit.usage_key], total_input, unit.per)
        total_price += amount
        if direction == "input":
            input_price += amount
        elif direction == "output":
            output_price += amount
    return input_price, output_price, total_price


def _usage(units: Mapping[str, int]) -> Any:
    from genai_prices import Usage

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unknown usage key would warn; ours are all known
        return Usage(**units)


@functools.lru_cache(maxsize=1024)
def _inferred(key: str, reported: frozenset[str]) -> int:
    """genai-prices' count of a unit the usage leaves out (0, or its ValueError when the usage
    reports units that would need it): it depends only on which units are reported non-zero."""
    value = getattr(_usage(dict.fromkeys(reported, 1)), key)
    assert isinstance(value, int)
    return value


def _refuse(plan: _Plan, units: Mapping[str, int]) -> None:
    """More of a unit inside another than the other holds (more cached than input tokens):
    genai-prices' own count raises its ValueError, which names the units."""
    from genai_prices.decompose import compute_leaf_values
    from genai_prices.units import _get_registry

    by_key = {k: _get_registry().units[k] for k, _ in plan.leaves}
    compute_leaf_values(set(by_key), _usage(units), by_key)
    raise AssertionError("genai-prices counted a negative unit")  # pragma: no cover


def add_cost(meta: dict[str, Any], *, api_url: str | None, at: float | None) -> None:
    """Write ``cost`` into a summary dict; an unpriced flow gets ``None`` and a note in
    ``extra.notes``."""
    priced = price_flow(meta, api_url=api_url, at=at)
    meta["cost"] = priced.cost
    if priced.note is not None:
        extra = meta.get("extra")
        extra = dict(extra) if isinstance(extra, Mapping) else {}
        notes = extra.get("notes")
        extra["notes"] = [*(notes if isinstance(notes, list) else []), priced.note]
        meta["extra"] = extra


def amount(meta: Mapping[str, Any]) -> float | None:
    """The priced amount of a summary, or ``None``."""
    c = meta.get("cost")
    if isinstance(c, Mapping):
        v = c.get("amount")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def total(amounts: Sequence[float | None]) -> dict[str, Any]:
    """The cost of many flows: the sum of the priced ones, and how many had no price."""
    priced = [a for a in amounts if a is not None]
    return {
        "amount": round(sum(priced), 12) if priced else None,
        "currency": CURRENCY,
        "priced_flows": len(priced),
        "unpriced_flows": len(amounts) - len(priced),
    }


def total_text(amounts: Sequence[float | None]) -> str:
    """``$0.001315``, ``$0.001315 (1 flow without a price)``, ``- (2 flows without a price)``."""
    t = total(amounts)
    n = t["unpriced_flows"]
    unpriced = f" ({n} flow{'s' if n != 1 else ''} without a price)" if n else ""
    return format_amount(t["amount"]) + unpriced


def note(meta: Mapping[str, Any]) -> str | None:
    """Why a flow has no price: its cost note (``extra.notes``), without the ``cost: `` prefix."""
    extra = meta.get("extra")
    notes = extra.get("notes") if isinstance(extra, Mapping) else None
    for n in notes if isinstance(notes, list) else []:
        if isinstance(n, str) and n.startswith(NOTE_PREFIX):
            return n[len(NOTE_PREFIX) :]
    return None


def lifetimes_text(usage: Mapping[str, Any]) -> str | None:
    """The cache writes by lifetime, ``1000 5m, 2000 1h``, where the upstream split them (shown
    beside the cache writes wherever they show); ``None`` when it did not."""
    parts = [
        f"{n} {label}"
        for key, label in zip(LIFETIME_KEYS, ("5m", "1h"), strict=True)
        if (n := _int(usage.get(key))) is not None
    ]
    return ", ".join(parts) if parts else None


def format_amount(value: float | None) -> str:
    """``$1.23``, ``$0.0123``, ``$0.0000825`` (four significant digits below a cent); ``-`` unpriced."""
    if value is None:
        return "-"
    if value >= 1:
        return f"${value:,.2f}"
    if value >= 0.01:
        return f"${value:.4f}"
    if value == 0:
        return "$0"
    return "$" + format(Decimal(f"{value:.4g}"), "f")  # four significant digits, never an exponent
