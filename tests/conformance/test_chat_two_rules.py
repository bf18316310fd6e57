"""Chat streams on which the two SDKs raise for two different rules: the grammar finds both, at their
events, and each real SDK reacts as its own rule says (``test_sdk_reactions`` tests one rule's
reactions on both SDKs per stream). The Node SDK's view of a tool call's ``index`` and ``type``:
``proxai/protocols/chat_delta.py`` (``tool_conforms``, ``calls_end``, ``end_conforms``)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from proxai.protocols.conformance import RULES

from . import sdks
from .test_sdk_reactions import C_ROLE, C_TOOLS_END, Case, _c, _calls, _chunk, _found, _raw, _tool


@dataclass(frozen=True)
class Two:
    case: Case
    python_rule: str  # the finding whose Python reaction openai-python shows
    node_rule: str  # the finding whose Node reaction openai-node shows


_CALL = {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{"}}
TWOS = [
    Two(
        Case(
            "a call whose first delta has no index, then its fragment with index 0",
            "chat",
            _c({"role": "assistant", "tool_calls": [_CALL]})
            + _calls({"index": 0, "function": {"arguments": "}"}})
            + C_TOOLS_END,
            [("openai_chat.tool_call_no_index", 0), ("openai_chat.tool_call_type", 2)],
        ),
        "openai_chat.tool_call_no_index",  # TypeError: tool_calls[None]
        "openai_chat.tool_call_type",  # its call at index 0 has no type: the typed delta is under no index
    ),
    Two(
        Case(
            "a call without an index, then call 1",
            "chat",
            C_ROLE
            + _calls({**_CALL, "function": {"name": "f", "arguments": "{}"}})
            + _tool(1, "b", "g")
            + C_TOOLS_END,
            [
                ("openai_chat.tool_call_no_index", 1),
                ("openai_chat.tool_call_index", 2),
                ("openai_chat.tool_call_gap", 4),
            ],
        ),
        "openai_chat.tool_call_no_index",
        "openai_chat.tool_call_gap",  # its calls: a hole at 0, call 1
    ),
    Two(
        Case(
            "a call that starts in a choice without an index, its fragment in choice 0",
            "chat",
            C_ROLE
            + _raw(
                _chunk(
                    [{"index": None, "delta": {"tool_calls": [{"index": 0, **_CALL}]}, "finish_reason": None}]
                )
            )
            + _calls({"index": 0, "function": {"arguments": "}"}})
            + C_TOOLS_END,
            [("openai_chat.choice_no_index", 1), ("openai_chat.tool_call_type", 3)],
        ),
        "openai_chat.choice_no_index",  # TypeError: choices[None]
        "openai_chat.tool_call_type",  # the start's type is in the choice it keeps under no place
    ),
    Two(
        Case(
            "a function call whose later delta says type tool_use",
            "chat",
            C_ROLE
            + _tool(0, "a", "f")
            + _calls({"index": 0, "type": "tool_use", "function": {"arguments": ""}})
            + C_TOOLS_END,
            [("openai_chat.tool_call_delta", 2), ("openai_chat.tool_call_not_function", 4)],
        ),
        "openai_chat.tool_call_delta",  # AssertionError: a function call stays one
        "openai_chat.tool_call_not_function",
    ),
]
IDS = [t.case.name for t in TWOS]


@pytest.mark.parametrize("two", TWOS, ids=IDS)
def test_the_grammar_finds_both_rules(two: Two) -> None:
    assert _found(two.case, [two.case.stream]) == two.case.found
    assert {two.python_rule, two.node_rule} <= {r for r, _ in two.case.found}


@pytest.mark.parametrize("two", TWOS, ids=IDS)
def test_each_sdk_raises_as_its_rule_says(two: Two) -> None:
    got = {
        "python": sdks.python("chat", two.case.stream),
        "node": sdks.node([("chat", two.case.stream)])[0],
    }
    for side, rule in (("python", two.python_rule), ("node", two.node_rule)):
        reaction = getattr(RULES[rule], side)
        assert reaction.does == "raises"
        assert not got[side].ok, (side, got[side])
        assert got[side].error == reaction.error, (side, got[side])
        assert got[side].message.startswith(reaction.message), (side, got[side])
