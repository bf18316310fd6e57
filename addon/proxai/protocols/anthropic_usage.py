"""Anthropic usage as the summary and the writers count it: cumulative values (each one present
overwrites the earlier one), input without the cache, the cache writes split by lifetime. Used by
the Anthropic grammar (docs/design/protocol-grammars.md, "Anthropic Messages": usage values are
cumulative; the total is input + output + cache read + cache write)."""

from __future__ import annotations

from typing import Any

from proxai.core.model import Usage
from proxai.stream.sink import TokenUsage

from .machine import as_int

# Anthropic's usage keys -> the summary's usage fields (``usage_summary``).
_USAGE_FIELDS = (
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cache_read_input_tokens", "cache_read_tokens"),
    ("cache_creation_input_tokens", "cache_write_tokens"),
)


def _overwrite(usage: Usage, u: dict[str, Any], fields: tuple[tuple[str, str], ...]) -> None:
    """Each of ``fields`` that ``u`` holds as an integer overwrites the usage's value."""
    for key, name in fields:
        v = as_int(u.get(key))
        if v is not None:
            setattr(usage, name, v)


def lifetimes(u: dict[str, Any]) -> tuple[int | None, int | None]:
    """The cache writes of an Anthropic usage by lifetime (5-minute, 1-hour), inside
    ``cache_creation_input_tokens``: its ``cache_creation`` object."""
    split = u.get("cache_creation")
    if type(split) is not dict:
        return None, None
    return as_int(split.get("ephemeral_5m_input_tokens")), as_int(split.get("ephemeral_1h_input_tokens"))


def usage_into(u: dict[str, Any], into: TokenUsage) -> None:
    """Anthropic usage (cumulative; input excludes cache) -> the writers' neutral usage
    (input includes cache), overwriting the fields given."""
    inp = as_int(u.get("input_tokens"))
    cr = as_int(u.get("cache_read_input_tokens"))
    cw = as_int(u.get("cache_creation_input_tokens"))
    out = as_int(u.get("output_tokens"))
    if cr is not None:
        into.cache_read = cr
    if cw is not None:
        into.cache_write = cw
    if inp is not None:
        into.input = inp + (into.cache_read or 0) + (into.cache_write or 0)
    if out is not None:
        into.output = out
    w5m, w1h = lifetimes(u)
    if w5m is not None:
        into.cache_write_5m = w5m
    if w1h is not None:
        into.cache_write_1h = w1h


def usage_summary(usage: Usage, u: dict[str, Any]) -> None:
    """The summary's usage from an Anthropic usage object: every value present overwrites the
    earlier one (cumulative); the total is recomputed."""
    if not u:
        return
    _overwrite(usage, u, _USAGE_FIELDS)
    w5m, w1h = lifetimes(u)
    if w5m is not None:
        usage.cache_write_5m_tokens = w5m
    if w1h is not None:
        usage.cache_write_1h_tokens = w1h
    parts = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
    usage.total_tokens = sum(p for p in parts if p is not None)
