"""OpenAI Responses usage as the writers count it (the neutral ``TokenUsage``), read from a
terminal snapshot's ``usage`` by the Responses grammar when it drives a writer; in normalize mode
the fields the neutral form does not name (a gateway's ``cost``) go with it as they came
(docs/design/protocol-grammars.md, "Events the grammars do not model")."""

from __future__ import annotations

from typing import Any

from proxai.stream.sink import TokenUsage

from .machine import as_dict, as_int

# the usage fields ``usage_in`` reads (any other is normalize mode's ``TokenUsage.extra``)
USAGE_FIELDS = frozenset(
    {"input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details", "total_tokens"}
)


def usage_in(u: dict[str, Any]) -> TokenUsage:
    """Responses usage -> the writers' neutral usage."""
    return TokenUsage(
        input=as_int(u.get("input_tokens")),
        output=as_int(u.get("output_tokens")),
        cache_read=as_int(as_dict(u.get("input_tokens_details")).get("cached_tokens")),
        cache_write=as_int(as_dict(u.get("input_tokens_details")).get("cache_write_tokens")),
        reasoning=as_int(as_dict(u.get("output_tokens_details")).get("reasoning_tokens")),
    )
