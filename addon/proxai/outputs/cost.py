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

import contextlib
import functools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from proxai.outputs import price_table

# ``isinstance(v, _MAPPING)`` is ``isinstance(v, Mapping)``, a dict found by its own type without the
# ABC's ``__instancecheck__`` (a Python call); None is told apart before it.
_MAPPING = (dict, Mapping)

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
    if not (usage is not None and isinstance(usage, _MAPPING)):
        return None
    # an int as it is, without the call
    inp = usage.get("input_tokens")
    if type(inp) is not int or inp < 0:
        inp = _int(inp)
    out = usage.get("output_tokens")
    if type(out) is not int or out < 0:
        out = _int(out)
    read = usage.get("cache_read_tokens")
    if type(read) is not int or read < 0:
        read = _int(read) or 0
    write = usage.get("cache_write_tokens")
    if type(write) is not int or write < 0:
        write = _int(write) or 0
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
    from importlib.metadata import version as installed

    return installed("genai-prices")


def warm() -> None:
    """Read the price table through a helper process (about a second, once per process), so
    genai-prices never loads into this one and the first flow does not wait for it: the addon
    calls this off the event loop at start-up. Without it the table is read in this process on
    first use (a command-line run)."""
    if _checked():
        price_table.table(helper=True)
    price_flow({"protocol": ANTHROPIC, "model": "claude-sonnet-4-5", "usage": {"input_tokens": 1}}, at=None)


def _checked() -> bool:
    """Whether ProxAI's own pricing (``price_table``) was compared with the installed release."""
    return version() in price_table.CHECKED_RELEASES


def price_flow(meta: Mapping[str, Any], *, api_url: str | None = None, at: float | None = None) -> Priced:
    """Price one flow. ``api_url``: the URL the request went to upstream; ``at``: the request's wall
    clock time (seconds since the epoch) that selects the prices in force, ``None`` for now."""
    model = meta.get("model")
    units = price_tokens(meta)
    if units is None:
        return Priced(None, "cost: the upstream reported no usage")
    if not isinstance(model, str) or not model:
        return Priced(None, "cost: the upstream reported no model")
    try:
        if _checked():
            table = price_table.table()
            by_url = table.provider_for(api_url) if api_url else None
            found = table.find(model, by_url)
            if found is None:
                raise LookupError(model)
            provider, info = found
            provider_id, model_id = provider.id, info.id
            prices = info.prices()
            if not isinstance(prices, dict):  # dated prices: the ones in force when it was sent
                prices = table.prices_at(info, _when(at))
            input_price, output_price, total_price = table.plan(prices).calc(table, units)
            matched_by_url = by_url is not None
        else:
            when = _when(at)
            provider_id, model_id, input_price, output_price, total_price, matched_by_url = _public(
                model, units, api_url, when
            )
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
            "provider": provider_id,
            "model": model_id,
            "matched_by": "api_url" if matched_by_url else "model",
            "source": SOURCE,
            "version": version(),
        }
    )


def _when(at: float | None) -> datetime:
    """The moment whose prices apply: the request's wall clock time, or now."""
    return datetime.fromtimestamp(at, UTC) if at is not None else datetime.now(tz=UTC)


def _public(
    model: str, units: Mapping[str, int], api_url: str | None, when: datetime
) -> tuple[str, str, Decimal, Decimal, Decimal, bool]:
    """A release ProxAI's pricing was not compared with: genai-prices' own ``calc_price``, in this
    process (the same figures; genai-prices and its table then stay loaded here)."""
    from genai_prices import Usage, calc_price
    from genai_prices.data_snapshot import get_snapshot

    provider_id = None
    snapshot = get_snapshot()
    if api_url:
        with contextlib.suppress(LookupError):
            provider_id = snapshot.find_provider(None, None, api_url).id
    # genai-prices' table remembers every lookup it was asked (the full upstream URL with its
    # query, found or not) without a bound: emptied past MAX_LOOKUPS, so a long-running proxy
    # does not keep every URL and model name it priced
    for name in ("_lookup_cache", "_provider_cache", "_provider_misses"):
        memo = getattr(snapshot, name, None)
        if memo is not None and len(memo) > price_table.MAX_REMEMBERED:
            memo.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unknown usage key would warn; ours are all known
        usage = Usage(**units)
    calc = calc_price(usage, model, provider_id=provider_id, genai_request_timestamp=when)
    return (
        calc.provider.id,
        calc.model.id,
        calc.input_price,
        calc.output_price,
        calc.total_price,
        provider_id is not None,
    )


def add_cost(meta: dict[str, Any], *, api_url: str | None, at: float | None) -> None:
    """Write ``cost`` into a summary dict; an unpriced flow gets ``None`` and a note in
    ``extra.notes``."""
    priced = price_flow(meta, api_url=api_url, at=at)
    meta["cost"] = priced.cost
    if priced.note is not None:
        extra = meta.get("extra")
        extra = dict(extra) if (extra is not None and isinstance(extra, _MAPPING)) else {}
        notes = extra.get("notes")
        extra["notes"] = [*(notes if isinstance(notes, list) else []), priced.note]
        meta["extra"] = extra


def amount(meta: Mapping[str, Any]) -> float | None:
    """The priced amount of a summary, or ``None``."""
    c = meta.get("cost")
    if c is not None and isinstance(c, _MAPPING):
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
    notes = extra.get("notes") if (extra is not None and isinstance(extra, _MAPPING)) else None
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
