"""Chat Completions usage as the writers count it (the neutral ``TokenUsage``). Used by the Chat
grammar when it drives a writer; in normalize mode the usage fields the neutral form does not
name (a gateway's ``cost``, ``cost_details``, ``is_byok``) go with it as they came
(docs/design/protocol-grammars.md, "Events the grammars do not model")."""

from __future__ import annotations

from typing import Any

from proxai.stream.sink import TokenUsage

from .machine import as_dict, as_int

# the usage fields ``usage_in`` reads or the Chat writer rebuilds (any other is ``TokenUsage.extra``)
_NAMED = frozenset(
    {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "prompt_tokens_details",
        "completion_tokens_details",
    }
)


def usage_in(u: dict[str, Any], extra: bool = False) -> TokenUsage:
    """Chat usage -> the writers' neutral usage; ``extra``: keep the fields it does not name."""
    prompt = as_dict(u.get("prompt_tokens_details"))
    completion = as_dict(u.get("completion_tokens_details"))
    return TokenUsage(
        input=as_int(u.get("prompt_tokens")),
        output=as_int(u.get("completion_tokens")),
        cache_read=as_int(prompt.get("cached_tokens")),
        cache_write=as_int(prompt.get("cache_write_tokens")),
        reasoning=as_int(completion.get("reasoning_tokens")),
        extra={k: v for k, v in u.items() if k not in _NAMED} or None if extra else None,
    )
