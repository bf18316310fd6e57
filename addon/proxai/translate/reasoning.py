"""Reasoning settings between OpenAI's effort scale and Anthropic's thinking budget.

The levels and budgets are listed in docs/translation.md, "Requests".

Both sides have a reasoning knob, with different units: OpenAI ``reasoning_effort`` /
``reasoning.effort`` (minimal, low, medium, high) and Anthropic ``thinking.budget_tokens``
(>= 1024, below ``max_tokens``). One table maps both ways, so a round trip keeps the level.
"""

from __future__ import annotations

from typing import Final

from proxai.core.errors import TranslationError

MIN_BUDGET: Final = 1024

_BUDGET: Final[dict[str, int]] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
}


def effort_to_budget(effort: str | None, max_tokens: int | None, at: str) -> int:
    """The Anthropic budget for an OpenAI effort, kept below the client's ``max_tokens`` as
    Anthropic requires (``None``: the client set no limit, the renderer adds the budget to
    its default)."""
    if effort is None:
        effort = "medium"
    if effort not in _BUDGET:
        raise TranslationError(f"reasoning effort {effort!r} has no Anthropic thinking budget", at)
    if max_tokens is None:
        return _BUDGET[effort]
    budget = min(_BUDGET[effort], max_tokens - 1)
    if budget < MIN_BUDGET:
        raise TranslationError(
            f"Anthropic thinking needs max tokens above {MIN_BUDGET} (got {max_tokens})", at
        )
    return budget


def budget_to_effort(budget: int | None) -> str:
    """The OpenAI effort closest to an Anthropic budget (no budget: medium)."""
    if budget is None:
        return "medium"
    if budget < 4096:
        return "low"  # not "minimal": most reasoning models do not accept it
    if budget < 16384:
        return "medium"
    return "high"
