"""Chat: a field openai-node does not model whose list a choice's message holds, given again in any
form (``proxai/protocols/chat_delta.py``, ``_replaced``; docs/design/conformance.md, "Lists in a Chat
delta"). The findings with their events and details exactly, the summary's text, with the grammar's
fast paths on and off (a delta that carries such a field with no list in it is one the fast path
took before). A choice's reasoning field given again, in a stream of two choices (``_reasoned_again``:
each choice its own field)."""

from __future__ import annotations

import pytest

from proxai.core.model import Protocol
from proxai.pipeline.observe import StreamObserver
from proxai.protocols.chat import ChatGrammar
from proxai.protocols.common import GrammarBase

from .test_sdk_reactions import _CITE_A, C_DONE, C_ROLE, C_STOP, _c


def _read(data: bytes) -> tuple[str, str, list[tuple[str, int, str]]]:
    obs = StreamObserver(Protocol.OPENAI_CHAT, start=0.0, capture=True)
    obs.headers(200, 0.0)
    for i in range(0, len(data), 5):
        obs.observe(data[i : i + 5], 0.0)
    s = obs.finish(0.0)
    found = [(f["rule"], f["event_index"], f["detail"]) for f in s.extra.get("conformance", [])]
    return str(s.outcome), s.text or "", found


_REPLACED = "openai_chat.node_replaced_field"
_KEPT = "(openai-node keeps it, openai-python the list)"

CASES = [
    (
        "annotations, then null beside the content",
        C_ROLE
        + _c({"content": "Hi", "annotations": [_CITE_A]})
        + _c({"content": " there", "annotations": None})
        + C_STOP
        + C_DONE,
        [(_REPLACED, 2, f"choice 0: delta.annotations null after its list {_KEPT}")],
    ),
    (
        "a list of strings, then a string alone in the delta",
        C_ROLE + _c({"content": "Hi there", "x_parts": ["a", "b"]}) + _c({"x_parts": "c"}) + C_STOP + C_DONE,
        [
            (
                _REPLACED,
                2,
                f"choice 0: delta.x_parts c after its list {_KEPT}",
            )
        ],
    ),
    (
        "annotations, then an empty list",
        C_ROLE
        + _c({"content": "Hi", "annotations": [_CITE_A]})
        + _c({"content": " there", "annotations": []})
        + C_STOP
        + C_DONE,
        [(_REPLACED, 2, "choice 0: delta.annotations again a list (openai-node keeps the last one)")],
    ),
    (
        "null, then a list, then no more (nothing lost)",
        C_ROLE
        + _c({"content": "Hi", "annotations": None})
        + _c({"content": " there", "annotations": [_CITE_A]})
        + _c({"content": "", "reasoning": None})
        + C_STOP
        + C_DONE,
        [],
    ),
    (
        "an object, again with the list nested in it without indexes",
        C_ROLE
        + _c({"content": "Hi", "x_meta": {"items": [{"a": 1}]}})
        + _c({"content": " there", "x_meta": {"items": [{"a": 2}]}})
        + C_STOP
        + C_DONE,
        [
            (
                "openai_chat.delta_list_index",
                2,
                "choice 0: delta.x_meta again an object with a list whose objects have no index",
            )
        ],
    ),
    (
        "an object with a list, again without it",
        C_ROLE
        + _c({"content": "Hi", "x_meta": {"items": [{"index": 0}], "n": 1}})
        + _c({"content": " there", "x_meta": {"n": 2}})
        + C_STOP
        + C_DONE,
        [
            (
                _REPLACED,
                2,
                "choice 0: delta.x_meta again an object with a list (openai-node keeps the last one)",
            )
        ],
    ),
    (
        "an object with a list, then a number alone in the delta",
        C_ROLE
        + _c({"content": "Hi there", "x_meta": {"items": ["a"]}})
        + _c({"x_meta": 0})
        + C_STOP
        + C_DONE,
        [(_REPLACED, 2, f"choice 0: delta.x_meta 0 after its list {_KEPT}")],
    ),
    (
        "an object without a list, twice (its strings: not judged)",
        C_ROLE
        + _c({"content": "Hi", "x_meta": {"t": "a", "items": []}})
        + _c({"content": " there", "x_meta": {"t": "b", "items": []}})
        + C_STOP
        + C_DONE,
        [],
    ),
    (
        "a first object whose list has an index on one entry only (taken as it came)",
        C_ROLE + _c({"content": "Hi there", "x_meta": {"items": [{"index": 0}, {}]}}) + C_STOP + C_DONE,
        [],
    ),
    (
        "annotations without indexes again, then again and null: the raise alone",
        C_ROLE
        + _c({"content": "Hi", "annotations": [_CITE_A]})
        + _c({"content": " there", "annotations": [_CITE_A]})
        + _c({"annotations": [_CITE_A]})
        + _c({"annotations": None})
        + C_STOP
        + C_DONE,
        [
            (
                "openai_chat.delta_list_index",
                2,
                "choice 0: delta.annotations again a list whose objects have no index",
            )
        ],
    ),
    (
        "an empty list, then null (nothing lost)",
        C_ROLE
        + _c({"content": "Hi", "annotations": []})
        + _c({"content": " there", "annotations": None})
        + C_STOP
        + C_DONE,
        [],
    ),
]


@pytest.mark.parametrize("fast", [True, False], ids=["fast paths", "general path"])
@pytest.mark.parametrize(("name", "data", "found"), CASES, ids=[c[0] for c in CASES])
def test_a_field_whose_list_is_held_given_again(
    name: str, data: bytes, found: list[tuple[str, int, str]], fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not fast:
        monkeypatch.setattr(ChatGrammar, "_fast", GrammarBase._fast)
    outcome, text, got = _read(data)
    assert (outcome, text, got) == ("completed", "Hi there", found)


def _two(first: dict[str, object], second: dict[str, object]) -> bytes:
    """Choice 0 and choice 1 (n = 2): each its role and ``first``, then ``second`` with its text."""
    return (
        _c({"role": "assistant", **first})
        + _c({"role": "assistant", **first}, index=1)
        + _c({"content": "Hi", **second})
        + _c({"content": " there", **second}, index=1)
        + C_STOP
        + _c({}, "stop", index=1)
        + C_DONE
    )


@pytest.mark.parametrize(
    ("first", "second", "found"),
    [
        ({"reasoning_content": "Let me"}, {}, []),  # each choice's reasoning in one chunk
        ({"reasoning": "Let me"}, {"reasoning_content": None}, []),  # another field
        (
            {"reasoning": "Let me"},
            {"reasoning": None},  # DeepSeek's shape, in both choices: named at choice 0's
            [
                (
                    _REPLACED,
                    2,
                    "choice 0: delta.reasoning again after its text (openai-node keeps the last value)",
                )
            ],
        ),
    ],
)
def test_each_choice_has_its_own_reasoning_field(
    first: dict[str, object], second: dict[str, object], found: list[tuple[str, int, str]]
) -> None:
    outcome, text, got = _read(_two(first, second))
    assert (outcome, text, got) == ("completed", "Hi there", found)  # (the text of both)


def test_another_choice_s_reasoning_again() -> None:
    data = (
        C_ROLE
        + _c({"role": "assistant", "reasoning_content": "Let"}, index=1)
        + _c({"content": "Hi there"})
        + _c({"content": "Yo", "reasoning_content": None}, index=1)
        + C_STOP
        + _c({}, "stop", index=1)
        + C_DONE
    )
    detail = "choice 1: delta.reasoning_content again after its text (openai-node keeps the last value)"
    assert _read(data) == ("completed", "Hi thereYo", [(_REPLACED, 3, detail)])
