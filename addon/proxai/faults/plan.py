"""Fault rules in force: which flow gets which rule (docs/design/faults.md).

``FaultPlan`` holds the rules (``proxai.faults.rules.FaultRule``, read and validated there) and
their counters; ``choose`` picks the rule for one flow (the first rule that matches, still has
flows left and wins its draw). The kinds of fault are named here, so the shell and the stage
read them without importing the rules' reader (pydantic; docs/design/footprint.md). Sans-IO: no
clock, no mitmproxy.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from proxai.faults.rules import FaultRule

FaultKind = Literal["http_error", "error_event", "truncate", "stall", "reset", "slow"]
FaultError = Literal["overloaded", "rate_limited", "server"]
Where = Literal["start", "first_token", "tool_args"]

STREAM_FAULTS = frozenset({"error_event", "truncate", "stall", "reset", "slow"})
TIMED_FAULTS = frozenset({"stall", "slow"})


@dataclass(slots=True)
class _Armed:
    rule: FaultRule
    left: int | None
    rng: random.Random
    chosen: int = 0


@dataclass(slots=True)
class FaultPlan:
    """The rules in force and what each has left. ``choose`` is called once per LLM flow."""

    armed: list[_Armed] = field(default_factory=list)

    @classmethod
    def of(cls, rules: Sequence[FaultRule]) -> FaultPlan:
        return cls([_Armed(r, r.count, random.Random(r.seed)) for r in rules])

    @property
    def rules(self) -> list[FaultRule]:
        return [a.rule for a in self.armed]

    def add_first(self, rule: FaultRule) -> None:
        """A rule armed by the command: it is tried before the others."""
        self.armed.insert(0, _Armed(rule, rule.count, random.Random(rule.seed)))

    def choose(self, matches: Callable[[int, FaultRule], bool]) -> tuple[int, FaultRule] | None:
        """The rule for this flow: the first whose filter ``matches`` (asked in rule order), that
        has flows left and wins its draw; its counter moves. A rule with a probability below 1
        draws once for every flow its filter matches (while it has flows left), so the same
        flows in the same order get the same faults."""
        for i, a in enumerate(self.armed):
            if a.left == 0 or not matches(i, a.rule):
                continue
            if a.rule.probability < 1.0 and a.rng.random() >= a.rule.probability:
                continue
            if a.left is not None:
                a.left -= 1
            a.chosen += 1
            return i, a.rule
        return None

    def status(self) -> list[dict[str, Any]]:
        return [{"rule": a.rule.describe(), "left": a.left, "chosen": a.chosen} for a in self.armed]
