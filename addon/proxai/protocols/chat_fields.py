"""Chat Completions: the block keys a Chat stream's writer is driven with, and the delta shapes of
real providers read on the grammar's fast path (docs/design/protocol-grammars.md, "Chat Completions:
liberal where the SDK is liberal"; docs/performance.md, "The real corpus's Chat deltas on the fast
path").

Mid-stream, providers send more than one ``content`` field per delta: ``role`` repeated in every
chunk, ``reasoning_content`` or ``reasoning`` (with ``content: null`` or ``""``), fields no SDK
reads (``token_id``, ``channel``, ``name``), or an empty delta. ``ChatGrammar._delta`` reads the
same effect from them; ``fast_fields`` reads it without the general path's checks of the chunk,
which ``ChatGrammar._fast`` has already made; a delta holding a list or an object
(``annotations``, ``reasoning_details``: what the SDKs merge, ``chat_delta``) goes to the general
path.
Equivalence: tests/observe/test_payload_reuse.py (fast paths off, every fixture and every 3rd real
recording).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .chat_delta import NESTED

if TYPE_CHECKING:
    from .chat import ChatGrammar

TEXT_KEY = "text"
REFUSAL_KEY = "refusal"
REASONING_KEY = "reasoning"
AUDIO_KEY = "audio"


def fast_fields(g: ChatGrammar, delta: dict[str, Any]) -> bool:
    """``ChatGrammar._fast``'s delta of other fields than one ``content`` or argument fragment,
    as real providers send it mid-stream (``role`` repeated, ``reasoning_content`` or
    ``reasoning`` beside ``content``, nulls, fields no SDK reads, an empty delta): the text and
    reasoning ``ChatGrammar._delta`` reads, in its order. False (the general path) for a delta
    with anything else, for a list or an object (``annotations``, ``reasoning_details``: what
    openai-python merges into what it holds, ``chat_delta`` judges their repeats and the lists nested
    in them), and for a field whose list choice 0's message holds (``g._listed``: openai-node
    replaces it, ``chat_delta._replaced``)."""
    out = g.out
    role = delta.get("role")
    if (
        (role is not None and role != "assistant")
        or delta.get("tool_calls")
        or delta.get("refusal")
        or delta.get("audio")
        or delta.get("function_call") is not None
    ):
        return False
    for value in delta.values():
        if type(value) in NESTED:
            return False  # annotations, reasoning_details, an object: the SDKs merge them (chat_delta)
    if (listed := g._listed) is not None and (held := listed.get(0)) and not held.isdisjoint(delta):
        return False  # a field whose list choice 0 holds, again: openai-node replaces it (chat_delta)
    field = "reasoning_content"
    if not (reasoning := delta.get(field)):
        reasoning = delta.get(field := "reasoning")
    content = delta.get("content")
    if (reasoning and type(reasoning) is not str) or (content and type(content) is not str):
        return False
    if (reasoned := g._reasoned) is not None:
        if reasoned in delta:  # openai-node replaces the field's value: judged on the general path
            return False
    elif reasoning:
        g._reasoned = field
    g._valid = True  # its object is chat.completion.chunk
    if role:
        g._roles.add(0)
        if g._typed:  # an assistant role again after another (chat_delta ``no_assistant``)
            g._typed.pop("role", None)
    if reasoning:
        g.acc.reasoning(reasoning)
        if out is not None:
            g._think(out, reasoning, field)
    if content:
        g.acc.text(content)
        if out is not None:
            g._text(out, TEXT_KEY, "text", content)
    return True
