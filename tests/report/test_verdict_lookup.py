"""``verdict.verdict`` and ``verdict._stop_class`` read the outcome and stop class from a dict of
the members by value; here against the enum calls they replace (``Outcome(str(x))``,
``StopClass(str(x))`` with the ``ValueError`` caught), on every member's value, values of the
other enums, near misses and values that are not strings."""

from __future__ import annotations

import itertools
from typing import Any

from proxai.core.model import Outcome, Protocol, StopClass
from proxai.outputs import verdict as vmod
from proxai.outputs.verdict import Verdict

VALUES: list[Any] = [
    *list(Outcome),
    *[str(o) for o in Outcome],
    *list(StopClass),
    *[str(c) for c in StopClass],
    *[str(p) for p in Protocol],
    "truncated",
    "Completed",
    "completed ",
    "",
    None,
    0,
    1.5,
    True,
    ["completed"],
    {"a": 1},
    b"completed",
]
STOP_REASONS: list[Any] = [None, "max_tokens", "length", "end_turn", "stop", "content_filter", "x"]


def _old_verdict(meta: dict[str, Any]) -> Verdict | None:
    try:
        outcome = Outcome(str(meta.get("outcome")))
    except ValueError:
        return None
    if outcome is Outcome.COMPLETED and vmod._upstream_cut(meta):
        return Verdict.TRUNCATED
    return Verdict(str(outcome))


def _old_stop_class(meta: dict[str, Any]) -> StopClass | None:
    try:
        return StopClass(str(meta.get("stop_class")))
    except ValueError:
        return None


def test_the_same_as_the_enum_calls() -> None:
    n = 0
    for outcome, stop_class, raw, protocol in itertools.product(
        [*VALUES, "missing"], [*VALUES, "missing"], STOP_REASONS, ["anthropic_messages", "openai_chat"]
    ):
        meta: dict[str, Any] = {"protocol": protocol, "stop_reason": raw}
        if outcome != "missing":
            meta["outcome"] = outcome
        if stop_class != "missing":
            meta["stop_class"] = stop_class
        assert vmod._stop_class(meta) is _old_stop_class(meta)
        assert vmod.verdict(meta) is _old_verdict(meta)
        n += vmod.verdict(meta) is Verdict.TRUNCATED
    assert n > 0  # the cut is judged too
