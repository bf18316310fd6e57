"""genai-prices' price table without genai-prices in the proxy's process (docs/design/cost.md, rules 1
and 8).

Importing genai-prices and loading its table costs a process about 10 MB of memory for good (its
modules with pydantic's, and some 2,300 models as objects), more than the rest of ProxAI's
pricing needs. So the table is read once by a short-lived helper process (this file run as a
script: ``python -P price_table.py``), which imports the installed genai-prices and writes the
table's facts as JSON: the unit registry, each provider's address pattern and matching clauses,
and each provider's models (their matching clauses and prices) compressed. The proxy keeps the
models compressed (about 55 KB in all) and reads a provider's only when a flow is priced with it,
a model's prices only when that model is priced.

The pricing itself is ProxAI's own (``Table.find``, ``Table.prices_at``, ``Plan.calc``): the same
rules as genai-prices' ``calc_price`` (its model lookup, its price in force at a moment, its unit
arithmetic on Decimals in its order, its refusals with its messages), checked digit for digit
against genai-prices over every price of its table (tests/cost/test_price_table.py). Those rules
are a release's behaviour, so they price only the releases that comparison passed with
(``CHECKED_RELEASES``); ``proxai.outputs.cost`` prices any other release with genai-prices itself.
A usage's counts are ProxAI's whole-number units (``cost.price_tokens``); a price context (service
tiers) is never passed, so genai-prices' price variants do not apply.
"""

from __future__ import annotations

import base64
import re
import subprocess
import sys
import threading
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import orjson

# The genai-prices releases whose calc_price the rules here were compared with over every price of
# its table (tests/cost/test_price_table.py); a release goes in once that comparison passes.
CHECKED_RELEASES = frozenset({"0.2.3"})
HELPER_TIMEOUT = 300.0  # seconds: the helper imports genai-prices (about a second on an idle machine)
MAX_REMEMBERED = 1024  # model lookups and plans kept; emptied when full

type Clause = Mapping[str, Any]
type PriceValue = Decimal | tuple[Decimal, tuple[tuple[int, Decimal], ...]]  # a price, or (base, tiers)


# -- the helper: genai-prices' table as JSON ---------------------------------------------------


def _clause(c: Any) -> dict[str, Any]:
    from genai_prices import types as t

    simple = {
        t.ClauseStartsWith: "starts_with",
        t.ClauseEndsWith: "ends_with",
        t.ClauseContains: "contains",
        t.ClauseRegex: "regex",
        t.ClauseEquals: "equals",
    }
    kind = simple.get(type(c))
    if kind is not None:
        return {kind: getattr(c, kind)}
    if type(c) is t.ClauseOr:
        return {"or": [_clause(x) for x in c.or_]}
    if type(c) is t.ClauseAnd:
        return {"and": [_clause(x) for x in c.and_]}
    raise TypeError(f"unknown clause {type(c).__name__}")


def _price_value(v: Any) -> Any:
    from genai_prices import types as t

    if isinstance(v, t.TieredPrices):
        return {"base": str(v.base), "tiers": [[tier.start, str(tier.price)] for tier in v.tiers]}
    if isinstance(v, Decimal):
        return str(v)
    raise TypeError(f"unknown price value {type(v).__name__}")


def _model_price(p: Any) -> dict[str, Any]:
    from genai_prices import types as t

    if type(p) is not t.ModelPrice:
        raise TypeError(f"unknown model price {type(p).__name__}")
    return {k: _price_value(v) for k, v in vars(p).items() if not k.startswith("_") and v is not None}


def _constraint(c: Any) -> dict[str, str] | None:
    from genai_prices import types as t

    if c is None:
        return None
    if type(c) is t.StartDateConstraint:
        return {"start_date": c.start_date.isoformat()}
    if type(c) is t.TimeOfDateConstraint:
        return {"start_time": c.start_time.isoformat(), "end_time": c.end_time.isoformat()}
    raise TypeError(f"unknown price constraint {type(c).__name__}")


def _prices(prices: Any) -> Any:
    from genai_prices import types as t

    if isinstance(prices, t.ModelPrice):
        return _model_price(prices)
    return [[_constraint(c.constraint), _model_price(c.prices)] for c in prices]


def dump() -> bytes:
    """The installed genai-prices' bundled table as JSON (what the helper process writes): read
    from its two data modules, the providers with their models and prices, and the units."""
    from importlib.metadata import version

    from genai_prices.data import providers as bundled
    from genai_prices.data_units import unit_data

    units = {
        k: [raw.get("price_key", k), raw["per"], dict(raw.get("dimensions", {}))]
        for k, raw in unit_data.items()
    }
    providers = [
        {
            "id": p.id,
            "api_pattern": p.api_pattern,
            "model_match": _clause(p.model_match) if p.model_match is not None else None,
            "provider_match": _clause(p.provider_match) if p.provider_match is not None else None,
            "fallback": list(p.fallback_model_providers or ()),
            # the models compressed (base64 of zlib of their JSON), read when the provider is first used
            "models": base64.b64encode(
                zlib.compress(
                    orjson.dumps(
                        [[m.id, _clause(m.match), orjson.dumps(_prices(m.prices)).decode()] for m in p.models]
                    ),
                    9,
                )
            ).decode(),
        }
        for p in bundled
    ]
    return orjson.dumps({"release": version("genai-prices"), "units": units, "providers": providers})


def from_helper() -> bytes:
    """``dump()`` run by a helper process, so genai-prices never loads into this one; in this
    process when the helper cannot run (the same table, at the memory cost of genai-prices)."""
    try:
        out = subprocess.run(
            [sys.executable, "-P", __file__],
            capture_output=True,
            timeout=HELPER_TIMEOUT,
            check=True,
            stdin=subprocess.DEVNULL,
        )
        orjson.loads(out.stdout)  # whole
    except (OSError, subprocess.SubprocessError, orjson.JSONDecodeError):
        return dump()
    return out.stdout


# -- the table in the proxy ----------------------------------------------------------------------


def _ci(kind: str, needle: str, text: str) -> bool:
    n, t = needle.lower(), text.lower()
    if kind == "equals":
        return t == n
    if kind == "starts_with":
        return t.startswith(n)
    if kind == "ends_with":
        return t.endswith(n)
    return n in t  # contains


def matches(clause: Clause, text: str) -> bool:
    """Whether ``text`` meets a matching clause: ``equals``, ``starts_with``, ``ends_with`` and
    ``contains`` ignore case, ``regex`` is searched as written, ``or`` / ``and`` combine."""
    ((kind, arg),) = clause.items()
    if kind == "or":
        return any(matches(c, text) for c in arg)
    if kind == "and":
        return all(matches(c, text) for c in arg)
    if kind == "regex":
        return re.search(arg, text) is not None
    return _ci(kind, arg, text)


_DATED = re.compile(r"-(20\d\d)(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)")


def undash_dates(ref: str) -> str:
    """``gpt-5.2-20251211`` -> ``gpt-5.2-2025-12-11``: a compact date suffix (a real calendar day)
    in the dashed form the table's names use."""

    def dashed(m: re.Match[str]) -> str:
        y, mo, d = (int(g) for g in m.groups())
        try:
            date(y, mo, d)
        except ValueError:
            return m.group(0)
        return f"-{y:04d}-{mo:02d}-{d:02d}"

    return _DATED.sub(dashed, ref)


@dataclass(frozen=True, slots=True)
class Unit:
    key: str
    price_key: str
    per: int
    dims: frozenset[tuple[str, str]]
    direction: str | None

    def inside(self, other: Unit) -> bool:
        """``other`` is this unit or a part of it (its dimensions include this one's)."""
        return self.dims <= other.dims

    def compatible(self, other: Unit) -> bool:
        """No dimension the two units name has different values."""
        mine = dict(self.dims)
        return all(mine.get(k, v) == v for k, v in other.dims)


class Model:
    """One model of a provider: its id, its matching clause, its prices (read on first use)."""

    __slots__ = ("_prices", "_raw", "id", "match")

    def __init__(self, model_id: str, match: Clause, raw_prices: str) -> None:
        self.id = model_id
        self.match = match
        self._raw: str | None = raw_prices
        self._prices: Any = None

    def prices(self) -> Any:
        if self._raw is not None:
            self._prices, self._raw = orjson.loads(self._raw), None
        return self._prices


class Provider:
    __slots__ = ("_blob", "_models", "api_pattern", "fallback", "id", "model_match", "provider_match")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.id: str = raw["id"]
        self.api_pattern = re.compile(raw["api_pattern"])
        self.model_match: Clause | None = raw["model_match"]
        self.provider_match: Clause | None = raw["provider_match"]
        self.fallback: tuple[str, ...] = tuple(raw["fallback"])
        self._blob: bytes | None = base64.b64decode(raw["models"])
        self._models: tuple[Model, ...] = ()

    def models(self) -> tuple[Model, ...]:
        if self._blob is not None:
            raw = orjson.loads(zlib.decompress(self._blob))
            self._models, self._blob = tuple(Model(i, m, p) for i, m, p in raw), None
        return self._models


class Table:
    """genai-prices' table as read from ``dump()``'s JSON, with ProxAI's own lookups."""

    def __init__(self, doc: bytes) -> None:
        raw = orjson.loads(doc)
        self.release: str = raw["release"]
        self.units: dict[str, Unit] = {}
        self._by_price_key: dict[str, Unit] = {}
        self._by_dims: dict[frozenset[tuple[str, str]], Unit] = {}
        for key, (price_key, per, dims) in raw["units"].items():
            u = Unit(key, price_key, per, frozenset(dims.items()), dims.get("direction"))
            self.units[key] = u
            self._by_price_key[price_key] = u
            self._by_dims[u.dims] = u
        self.providers = tuple(Provider(p) for p in raw["providers"])
        self._by_id = {p.id: p for p in self.providers}
        self._found: dict[tuple[str | None, str], tuple[Provider, Model] | None] = {}
        self._plans: dict[int, tuple[Mapping[str, Any], Plan]] = {}
        # per flow the same upstream URL and the same reported units come again: the provider of
        # an address and the inferred count of a unit (or its refusal) are remembered
        self._by_url: dict[str, Provider | None] = {}
        self._inferred: dict[tuple[str, tuple[str, ...]], str | None] = {}
        self._lock = threading.Lock()

    # lookups

    def provider_for(self, api_url: str) -> Provider | None:
        """The provider whose address pattern matches the start of ``api_url`` (the first one)."""
        if api_url in self._by_url:
            return self._by_url[api_url]
        found = next((p for p in self.providers if p.api_pattern.match(api_url)), None)
        if len(self._by_url) >= MAX_REMEMBERED:
            self._by_url.clear()
        self._by_url[api_url] = found
        return found

    def provider_by_id(self, provider_id: str) -> Provider | None:
        pid = provider_id.lower().strip()
        found = self._by_id.get(pid)
        if found is not None:
            return found
        return next((p for p in self.providers if p.provider_match and matches(p.provider_match, pid)), None)

    def _by_name(self, ref: str) -> Provider | None:
        return next((p for p in self.providers if p.model_match and matches(p.model_match, ref)), None)

    def _match(self, provider: Provider, ref: str, fallback: bool) -> Model | None:
        for m in provider.models():
            if matches(m.match, ref):
                return m
        if fallback:
            for pid in provider.fallback:  # one step: a fallback's own fallbacks are not asked
                other = self._by_id.get(pid)
                found = self._match(other, ref, False) if other is not None else None
                if found is not None:
                    return found
        return None

    def find(self, model_ref: str, provider: Provider | None) -> tuple[Provider, Model] | None:
        """The provider and model priced for ``model_ref``: the model in ``provider`` (the one
        the upstream's address belongs to) or its fallback providers; with no provider, the
        provider whose name rule matches the model's name, then the model there. A name with a
        compact date (``-20251211``) that matches nothing is tried in the dashed form."""
        ref = model_ref.lower()
        key = (provider.id if provider else None, ref)
        if key in self._found:
            return self._found[key]
        if provider is None:
            provider = next(
                (p for p in self.providers if p.model_match and matches(p.model_match, ref)), None
            )
        found = None
        if provider is not None:
            m = self._match(provider, ref, True)
            if m is None and (dashed := undash_dates(ref)) != ref:
                m = self._match(provider, dashed, True)
            found = (provider, m) if m is not None else None
        if len(self._found) >= MAX_REMEMBERED:
            self._found.clear()
        self._found[key] = found
        return found

    # prices

    def prices_at(self, model: Model, when: datetime) -> Mapping[str, Any]:
        """The model's prices in force at ``when`` (an aware datetime): the last of its dated
        prices whose condition holds (a start day, reached in UTC; a daily UTC interval), else
        its first."""
        prices = model.prices()
        if isinstance(prices, dict):
            return prices
        for constraint, p in reversed(prices):
            if constraint is None or _active(constraint, when):
                return p  # type: ignore[no-any-return]
        return prices[0][1]  # type: ignore[no-any-return]

    def plan(self, prices: Mapping[str, Any]) -> Plan:
        """What pricing with ``prices`` needs that no usage changes (remembered per price)."""
        hit = self._plans.get(id(prices))
        if hit is not None and hit[0] is prices:
            return hit[1]
        plan = Plan.of(self, prices)
        if len(self._plans) >= MAX_REMEMBERED:
            self._plans.clear()
        self._plans[id(prices)] = (prices, plan)
        return plan

    # the registry's rules

    def unit_for_price_key(self, price_key: str) -> Unit | None:
        return self._by_price_key.get(price_key)

    def join(self, a: Unit, b: Unit) -> Unit | None:
        return self._by_dims.get(a.dims | b.dims) if a.compatible(b) else None

    def inferred(self, key: str, units: Mapping[str, int]) -> int:
        """The count of a unit the usage does not report: 0, unless reported parts of it (or two
        reported units that together make it) say it cannot be 0: then genai-prices' refusal. The
        answer depends only on ``key`` and which units are reported: remembered per both."""
        return self.inferred_of(key, self.reported(units))

    def reported(self, units: Mapping[str, int]) -> tuple[str, ...]:
        """The units a usage reports (a count above 0), in its order: what ``inferred`` depends on."""
        known = self.units
        return tuple(k for k, v in units.items() if v > 0 and k in known)

    def inferred_of(self, key: str, names: tuple[str, ...]) -> int:
        """``inferred`` of a usage that reports ``names`` (``reported``)."""
        known = self.units
        memo = (key, names)
        if memo in self._inferred:
            refusal = self._inferred[memo]
        else:
            refusal = self._refusal(known[key], [known[k] for k in names])
            if len(self._inferred) >= MAX_REMEMBERED:
                self._inferred.clear()
            self._inferred[memo] = refusal
        if refusal is not None:
            raise ValueError(refusal)
        return 0

    @staticmethod
    def _refusal(unit: Unit, reported: list[Unit]) -> str | None:
        """genai-prices' refusal of a usage that reports ``reported`` and not ``unit``, or None."""
        key = unit.key
        parts = [u.key for u in reported if u is not unit and unit.inside(u)]
        if parts:
            return (
                f"Missing usage for {key}: reported descendant usage keys {', '.join(sorted(parts))} "
                f"require explicit {key}"
            )
        ordered = sorted(reported, key=lambda u: u.key)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                if a.compatible(b) and not a.inside(b) and not b.inside(a) and unit.dims == a.dims | b.dims:
                    return (
                        f"Missing usage for {key}: reported overlapping usage keys {a.key}, {b.key} "
                        f"require explicit {key}"
                    )
        return None


def _utc_time(iso: str) -> time:
    t = time.fromisoformat(iso)
    if t.tzinfo is None:
        return t.replace(tzinfo=UTC)
    return datetime.combine(date(1970, 1, 1), t).astimezone(UTC).timetz()


def _active(constraint: Mapping[str, str], when: datetime) -> bool:
    utc = when.astimezone(UTC)
    start_date = constraint.get("start_date")
    if start_date is not None:
        return utc.date() >= date.fromisoformat(start_date)
    now, start, end = utc.timetz(), _utc_time(constraint["start_time"]), _utc_time(constraint["end_time"])
    if end < start:  # the interval crosses midnight
        return now >= start or now < end
    return start <= now < end


def _value(raw: Any, price_key: str) -> PriceValue:
    def price(s: Any) -> Decimal:
        d = Decimal(s) if isinstance(s, str) else None
        if d is None or not d.is_finite() or d < 0:
            raise ValueError(
                f"Invalid price value for {price_key}: "
                "expected a finite non-negative Decimal or valid tiered prices"
            )
        return d

    if not isinstance(raw, dict):
        return price(raw)
    tiers: list[tuple[int, Decimal]] = []
    for start, p in raw["tiers"]:
        if type(start) is not int or start < 0 or (tiers and start < tiers[-1][0]):
            price(None)
        tiers.append((start, price(p)))
    return price(raw["base"]), tuple(tiers)


@dataclass(frozen=True, slots=True)
class Plan:
    """One price's units: each priced unit with its price (in the price's order, the order the
    amounts are summed in), and the order the units' own counts are taken in."""

    prices: tuple[tuple[Unit, PriceValue], ...]
    leaves: tuple[tuple[Unit, tuple[Unit, ...]], ...]
    """Each priced unit (the most specific first) with the priced units inside it: a unit's own
    count is its usage less the own counts of those."""
    tiered: bool
    requests: bool
    leaf_keys: tuple[tuple[Unit, tuple[Unit, ...], tuple[str, ...]], ...] = ()
    """``leaves`` with the keys of the units inside each (what ``calc`` sums, in C)."""

    @staticmethod
    def of(table: Table, raw: Mapping[str, Any]) -> Plan:
        prices: list[tuple[Unit, PriceValue]] = []
        for price_key, value in raw.items():
            unit = table.unit_for_price_key(price_key)
            if unit is not None:  # a price of a unit the registry does not know is left out
                prices.append((unit, _value(value, price_key)))
        priced = {u.key for u, _ in prices}
        for key in sorted(priced):  # every unit a priced unit lies inside must be priced too
            missing = {
                u.key for u in table.units.values() if u.key != key and u.inside(table.units[key])
            } - priced
            if missing:
                raise ValueError(f"Missing ancestor price for {key}: {', '.join(sorted(missing))}")
        ordered = sorted((u for u, _ in prices), key=lambda u: u.key)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                if not a.compatible(b):
                    continue
                joined = table.join(a, b)
                if joined is None:
                    raise ValueError(f"Missing registered join unit for priced units {a.key} and {b.key}")
                if joined.key not in priced:
                    raise ValueError(f"Missing join price for {a.key} and {b.key}: {joined.key}")
        counted = sorted(
            {u.key: u for u, _ in prices if u.key != "requests"}.values(), key=lambda u: (-len(u.dims), u.key)
        )
        leaves = tuple((u, tuple(d for d in counted if d is not u and u.inside(d))) for u in counted)
        return Plan(
            prices=tuple(prices),
            leaves=leaves,
            leaf_keys=tuple((u, inside, tuple(d.key for d in inside)) for u, inside in leaves),
            tiered=any(isinstance(v, tuple) for _, v in prices),
            requests="requests" in priced,
        )

    def calc(self, table: Table, units: Mapping[str, int]) -> tuple[Decimal, Decimal, Decimal]:
        """(input, output, total) price of ``units``: each unit's own count times its price (a
        tiered price by the input tokens: the highest tier whose start they pass), over its
        ``per``, summed in the price's order."""

        names: tuple[str, ...] | None = None  # the reported units, once a count is inferred

        def count(key: str) -> int:
            nonlocal names
            v = units.get(key)
            if v is not None:
                return v
            if names is None:
                names = table.reported(units)
            return table.inferred_of(key, names)

        own: dict[str, int] = {}
        get = own.__getitem__
        for unit, inside, inside_keys in self.leaf_keys:
            total = count(unit.key)
            n = total - sum(map(get, inside_keys)) if inside_keys else total
            if n < 0:
                raise ValueError(_too_many(unit, inside, total, n, count))
            own[unit.key] = n
        if self.requests:
            own["requests"] = 1
        input_tokens = count("input_tokens") if self.tiered else 0
        inp = out = total_price = Decimal(0)
        for unit, price in self.prices:
            if isinstance(price, tuple):
                base, tiers = price
                rate = next((p for start, p in reversed(tiers) if input_tokens > start), base)
            else:
                rate = price
            amount = rate * Decimal(own[unit.key]) / unit.per
            total_price += amount
            if unit.direction == "input":
                inp += amount
            elif unit.direction == "output":
                out += amount
        return inp, out, total_price


def _too_many(unit: Unit, inside: Sequence[Unit], total: int, n: int, count: Any) -> str:
    parts = [(d, v) for d in inside if (v := count(d.key)) > 0]
    for d, v in parts:
        if v > total:
            return f"Invalid usage data: {d.key} ({v}) cannot exceed {unit.key} ({total})"
    keys = ", ".join(d.key for d, _ in parts)
    exceeds = f"which exceeds {unit.key} ({total})"
    return f"Invalid usage data: more-specific usage for {keys} totals {total - n}, {exceeds}"


_table: Table | None = None
_loading = threading.Lock()


def table(*, helper: bool = False) -> Table:
    """The installed genai-prices' table, read on first use (one at a time: a second caller waits
    for the first's): by the helper process when ``helper`` (the proxy, which must not hold
    genai-prices), else in this process (a command-line run, which would start an interpreter
    more for nothing)."""
    global _table
    with _loading:
        if _table is None:
            _table = Table(from_helper() if helper else dump())
        return _table


if __name__ == "__main__":
    sys.stdout.buffer.write(dump())
