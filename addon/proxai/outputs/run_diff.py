"""Two runs of an agent, turn by turn: which turns pair up, and per pair and in total what differs
(outcome, stop reason, tool calls, the answer's text, tokens, cost, time to first token, duration)
and whether the runs diverged (docs/design/run-report.md, "Comparing two runs").

Pure: two ``proxai.outputs.run.Run`` in (built, and so redacted, by the caller), a ``RunDiff`` out,
JSON-able through ``to_json``. The pairing is a longest common subsequence of the turns' steps
(``step``), matched from the end so that of a retried step the last attempt is the one paired; the
turns left between two matches are paired in order, and the rest stand alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from proxai.outputs import cost as pricing
from proxai.outputs.run import Run, Turn

MAX_CELLS = 1_000_000  # turns x turns the pairing's table may hold; past it turns pair in order
TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
# why a pair diverged, in the order they are reported
ONLY_BASE, ONLY_NEW, OUTCOME, TOOL_CALLS = "only_in_base", "only_in_new", "outcome", "tool_calls"

Step = tuple[str, int]


def step(t: Turn) -> Step:
    """What a turn is in its run, for pairing: the protocol the client spoke and how many messages
    its request carried (its depth in the conversation). Contents are left out, so a turn whose
    history holds other tool arguments still pairs with its counterpart."""
    return (t.client_protocol or t.protocol, len(t.messages))


def answer_text(t: Turn) -> str | None:
    texts = [str(p.get("text") or "") for p in t.answer["parts"] if p.get("type") == "text"]
    return "\n".join(texts) if texts else None


def _same_arguments(a: str | None, b: str | None) -> bool:
    """Tool arguments are equal when they are the same JSON value (spacing and key order aside), or,
    when either is not JSON, the same text."""
    if a is None or b is None:
        return a is b
    if a == b:
        return True
    try:
        return bool(orjson.loads(a) == orjson.loads(b))
    except orjson.JSONDecodeError:
        return False


@dataclass(frozen=True, slots=True)
class ToolCallDiff:
    index: int  # the call's place in its answer, from 0
    base: dict[str, Any] | None  # {"name", "arguments"}; None: the base answer has fewer calls
    new: dict[str, Any] | None
    differs: tuple[str, ...]  # "missing", "name", "arguments"

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "base": self.base,
            "new": self.new,
            "same": not self.differs,
            "differs": list(self.differs),
        }


def _call(p: dict[str, Any]) -> dict[str, Any]:
    return {"name": p.get("name"), "arguments": p.get("arguments")}


def tool_call_diffs(base: Turn | None, new: Turn | None) -> list[ToolCallDiff]:
    """The two answers' tool calls side by side, in order. Call ids are left out: they differ on
    every run."""
    a = [_call(p) for p in base.tool_calls] if base is not None else []
    b = [_call(p) for p in new.tool_calls] if new is not None else []
    out = []
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        differs: list[str] = []
        if x is None or y is None:
            differs.append("missing")
        else:
            if x["name"] != y["name"]:
                differs.append("name")
            if not _same_arguments(x["arguments"], y["arguments"]):
                differs.append("arguments")
        out.append(ToolCallDiff(i, x, y, tuple(differs)))
    return out


@dataclass(frozen=True, slots=True)
class Value:
    """One fact of a pair (or of the totals) on both sides."""

    base: Any
    new: Any

    @property
    def same(self) -> bool:
        return bool(self.base == self.new)

    def delta(self) -> float | None:
        a, b = self.base, self.new
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return None
        if isinstance(a, bool) or isinstance(b, bool):
            return None
        d = b - a
        return d if isinstance(d, int) else round(d, 12)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"base": self.base, "new": self.new, "same": self.same}
        if (d := self.delta()) is not None:
            out["delta"] = d
        return out


def _cost(t: Turn | None) -> float | None:
    if t is None or t.cost is None:
        return None
    amount = t.cost.get("amount")
    return float(amount) if isinstance(amount, (int, float)) and not isinstance(amount, bool) else None


# the facts compared on every pair, in the order they are shown: (key, reading of a turn)
FACTS: tuple[tuple[str, Callable[[Turn], Any]], ...] = (
    ("outcome", lambda t: t.verdict),
    ("stop_reason", lambda t: t.stop_reason),
    ("error", lambda t: None if t.error is None else t.error.get("kind")),
    ("model", lambda t: t.model or t.requested_model),
    ("text", answer_text),
    ("input_tokens", lambda t: t.usage.get("input_tokens")),
    ("output_tokens", lambda t: t.usage.get("output_tokens")),
    ("cache_read_tokens", lambda t: t.usage.get("cache_read_tokens")),
    ("cache_write_tokens", lambda t: t.usage.get("cache_write_tokens")),
    # the writes by lifetime (Anthropic's 5-minute and 1-hour writes, priced apart)
    ("cache_write_5m_tokens", lambda t: t.usage.get("cache_write_5m_tokens")),
    ("cache_write_1h_tokens", lambda t: t.usage.get("cache_write_1h_tokens")),
    ("cost", _cost),
    ("first_token_s", lambda t: t.ttft_s),
    ("duration_s", lambda t: t.total_s),
)
SECONDS = frozenset({"first_token_s", "duration_s"})  # timings: they differ on every run


@dataclass(slots=True)
class Pair:
    base: Turn | None
    new: Turn | None
    values: dict[str, Value]
    tool_calls: list[ToolCallDiff]
    divergences: list[str]  # ONLY_BASE, ONLY_NEW, OUTCOME, TOOL_CALLS

    @property
    def changed(self) -> list[str]:
        """The facts that differ (the tool calls as ``tool_calls``), in the order shown."""
        calls = any(c.differs for c in self.tool_calls)
        out = []
        for k, v in self.values.items():
            if k == "text" and calls:
                out.append("tool_calls")
            if not v.same:
                out.append(k)
        return out

    @property
    def state(self) -> str:
        """``diverged``, ``changed`` (another difference, timings aside) or ``same``."""
        if self.divergences:
            return "diverged"
        return "changed" if [k for k in self.changed if k not in SECONDS] else "same"

    def to_json(self) -> dict[str, Any]:
        return {
            "base_turn": None if self.base is None else self.base.index,
            "new_turn": None if self.new is None else self.new.index,
            "base_flow_id": None if self.base is None else self.base.flow_id,
            "new_flow_id": None if self.new is None else self.new.flow_id,
            "divergent": bool(self.divergences),
            "divergences": list(self.divergences),
            "changed": self.changed,
            "values": {k: v.to_json() for k, v in self.values.items()},
            "tool_calls": [c.to_json() for c in self.tool_calls],
        }


def pair_turns(base: Turn | None, new: Turn | None) -> Pair:
    values = {
        key: Value(None if base is None else read(base), None if new is None else read(new))
        for key, read in FACTS
    }
    calls = tool_call_diffs(base, new)
    divergences: list[str] = []
    if base is None:
        divergences.append(ONLY_NEW)
    elif new is None:
        divergences.append(ONLY_BASE)
    else:
        if not values["outcome"].same:
            divergences.append(OUTCOME)
        if any(c.differs for c in calls):
            divergences.append(TOOL_CALLS)
    return Pair(base, new, values, calls, divergences)


# -- pairing -----------------------------------------------------------------------------------


def _matches(a: Sequence[Step], b: Sequence[Step]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of ``a`` and ``b``, in order, found from the end
    (an equal last step is matched at once, so a repeated step pairs its last occurrence). Past
    ``MAX_CELLS`` none: the caller pairs in order."""
    n, m = len(a), len(b)
    if n * m > MAX_CELLS:
        return []
    table = [[0] * (m + 1) for _ in range(n + 1)]  # table[i][j]: the LCS length of a[:i], b[:j]
    for i in range(1, n + 1):
        row, above, x = table[i], table[i - 1], a[i - 1]
        for j in range(1, m + 1):
            row[j] = above[j - 1] + 1 if x == b[j - 1] else max(above[j], row[j - 1])
    out: list[tuple[int, int]] = []
    i, j = n, m
    while i and j:
        if a[i - 1] == b[j - 1]:
            out.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif table[i - 1][j] >= table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    out.reverse()
    return out


def pairing(base: Sequence[Turn], new: Sequence[Turn]) -> list[tuple[Turn | None, Turn | None]]:
    """The two runs' turns side by side: every turn once, each run's turns in their order."""
    anchors = _matches([step(t) for t in base], [step(t) for t in new])
    out: list[tuple[Turn | None, Turn | None]] = []
    i = j = 0
    for mi, mj in [*anchors, (len(base), len(new))]:
        gap_a, gap_b = base[i:mi], new[j:mj]
        k = min(len(gap_a), len(gap_b))
        out.extend(zip(gap_a[:k], gap_b[:k], strict=True))
        out.extend((t, None) for t in gap_a[k:])
        out.extend((None, t) for t in gap_b[k:])
        if mi < len(base):
            out.append((base[mi], new[mj]))
        i, j = mi + 1, mj + 1
    return out


# -- the diff ----------------------------------------------------------------------------------


@dataclass(slots=True)
class RunDiff:
    base: Run
    new: Run
    pairs: list[Pair]
    totals: dict[str, Value]
    notes: list[str] = field(default_factory=list)  # what the reader skipped, and why

    @property
    def divergent(self) -> list[Pair]:
        return [p for p in self.pairs if p.divergences]

    def to_json(self) -> dict[str, Any]:
        first = self.divergent[0] if self.divergent else None
        return {
            "schema": 1,
            "divergent": first is not None,
            "divergent_pairs": len(self.divergent),
            "first_divergence": None
            if first is None
            else {
                "pair": self.pairs.index(first) + 1,
                "base_turn": None if first.base is None else first.base.index,
                "new_turn": None if first.new is None else first.new.index,
                "divergences": list(first.divergences),
            },
            "pairs": [p.to_json() for p in self.pairs],
            "totals": {k: v.to_json() for k, v in self.totals.items()},
            "notes": list(self.notes),
        }


def _totals(run: Run) -> dict[str, Any]:
    tot = run.totals()
    return {
        "turns": tot["flows"],
        "outcomes": dict(sorted(tot["verdicts"].items())),
        "tool_calls": tot["tool_calls"],
        **{k: tot[k] for k in TOKENS},
        "cost": tot["cost"]["amount"],
        "unpriced_turns": tot["cost"]["unpriced_flows"],
        "duration_s": tot["duration_s"],
    }


def diff_runs(base: Run, new: Run, notes: Sequence[str] = ()) -> RunDiff:
    pairs = [pair_turns(a, b) for a, b in pairing(base.turns, new.turns)]
    a, b = _totals(base), _totals(new)
    totals = {k: Value(a[k], b[k]) for k in a}
    return RunDiff(base, new, pairs, totals, list(notes))


# -- showing values (the text lines here, the page in proxai.outputs.run_diff_html) -------------------------

LABELS = {
    "outcome": "outcome",
    "stop_reason": "stop reason",
    "error": "error",
    "model": "model",
    "text": "answer text",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "cache_read_tokens": "cache read tokens",
    "cache_write_tokens": "cache write tokens",
    "cache_write_5m_tokens": "5-minute cache write tokens",
    "cache_write_1h_tokens": "1-hour cache write tokens",
    "cost": "cost",
    "first_token_s": "first token",
    "duration_s": "duration",
    "tool_calls": "tool calls",
    "turns": "turns",
    "outcomes": "outcomes",
    "unpriced_turns": "turns without a price",
}
DIVERGENCE_LABELS = {
    ONLY_BASE: "only in base",
    ONLY_NEW: "only in new",
    OUTCOME: "outcome differs",
    TOOL_CALLS: "tool calls differ",
}


def show(key: str, value: Any) -> str:
    """A value as the text and the page show it."""
    if value is None:
        return "-"
    if key == "cost":
        return pricing.format_amount(float(value))
    if key in SECONDS:
        return f"{value:.2f}s"
    if key == "outcomes":
        return ", ".join(f"{n} {v}" for v, n in value.items()) or "none"
    return str(value)


def visible(key: str, v: Value) -> bool:
    """Whether the difference shows: the values differ as shown (timings to the hundredth of a
    second), not only in their last digits."""
    return not v.same and show(key, v.base) != show(key, v.new)


def show_delta(key: str, v: Value) -> str:
    """``+1``, ``+$0.000015 (+4.3%)``, ``-0.05s (-6.1%)``; empty when there is no number to show."""
    d = v.delta()
    if d is None or not visible(key, v):
        return ""
    if key == "cost":
        text = ("+" if d >= 0 else "-") + pricing.format_amount(abs(d))
    elif key in SECONDS:
        text = f"{d:+.2f}s"
    else:
        text = f"{d:+d}" if isinstance(d, int) else f"{d:+g}"
    if v.base:
        text += f" ({100 * d / v.base:+.1f}%)"
    return text


def _short(text: str, limit: int = 80) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _change(key: str, v: Value) -> str:
    if key == "text":
        a = "-" if v.base is None else repr(_short(v.base))
        b = "-" if v.new is None else repr(_short(v.new))
        return f"{LABELS[key]} {a} → {b}"
    delta = show_delta(key, v)
    return f"{LABELS[key]} {show(key, v.base)} → {show(key, v.new)}" + (f": {delta}" if delta else "")


def _count(n: int, noun: str = "turn") -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _side(t: Turn | None) -> str:
    return "-" if t is None else f"#{t.index}"


def _call_text(c: dict[str, Any] | None) -> str:
    if c is None:
        return "(none)"
    args = c["arguments"]
    return f"{c['name']} {'(arguments not kept)' if args is None else _short(args, 120)}"


def summary_lines(d: RunDiff, *, base_name: str, new_name: str) -> list[str]:
    """The diff as text: a head line, then per pair its outcome and what differs, the totals and the
    verdict (the notes are the caller's to print). Plain strings from the flows: the caller makes
    them terminal-safe."""
    lines = [f"base {base_name}: {_count(len(d.base.turns))} · new {new_name}: {_count(len(d.new.turns))}"]
    for n, p in enumerate(d.pairs, 1):
        state = (
            "DIVERGED (" + ", ".join(DIVERGENCE_LABELS[x] for x in p.divergences) + ")"
            if p.divergences
            else p.state
        )
        lines.append(f"pair {n}: base {_side(p.base)} · new {_side(p.new)}: {state}")
        o, s = p.values["outcome"], p.values["stop_reason"]
        alone = p.base or p.new
        if (p.base is None or p.new is None) and alone is not None:
            lines.append(f"  {alone.verdict} ({show('stop_reason', alone.stop_reason)})")
        elif o.same and s.same:
            lines.append(f"  {show('outcome', o.base)} ({show('stop_reason', s.base)})")
        for c in p.tool_calls:
            if c.differs:
                lines.append(f"  tool call {c.index + 1}: {_call_text(c.base)} → {_call_text(c.new)}")
            else:
                lines.append(f"  tool call {c.index + 1}: {_call_text(c.base)}")
        changed = [k for k in p.changed if k != "tool_calls" and visible(k, p.values[k])]
        if p.base is not None and p.new is not None:
            for k in changed:
                lines.append(f"  {_change(k, p.values[k])}")
        for name, t in (("base", p.base), ("new", p.new)):
            if t is not None and t.error is not None and (p.divergences or "error" in changed):
                lines.append(f"  {name} error: {_short(str(t.error.get('message') or ''), 240)}")
    tot = d.totals
    lines.append(
        "totals: "
        + " · ".join(_change(k, v) for k, v in tot.items() if k not in ("outcomes", "unpriced_turns"))
    )
    if not tot["outcomes"].same:
        lines.append(f"  {_change('outcomes', tot['outcomes'])}")
    lines.append(verdict_line(d))
    return lines


def verdict_line(d: RunDiff) -> str:
    """``no divergence in 2 pairs: ...`` or ``diverged: 1 of 2 pairs; the first: pair 1 (...): ...``."""
    div = d.divergent
    if not div:
        return f"no divergence in {_count(len(d.pairs), 'pair')}: the same outcomes and tool calls"
    first = div[0]
    why = ", ".join(DIVERGENCE_LABELS[x] for x in first.divergences)
    return (
        f"diverged: {len(div)} of {_count(len(d.pairs), 'pair')}; the first: pair {d.pairs.index(first) + 1} "
        f"(base {_side(first.base)}, new {_side(first.new)}): {why}"
    )
