"""``anthropic_index.lax_int`` is pydantic's lax ``int`` (what anthropic-python's ``construct_type``
makes of a block index, the event validating), over the forms an index arrives in; and
``node_place`` is the place anthropic-node's ``content[index] = ...`` writes to (measured with the
real SDKs in test_sdk_reactions.py: ``index_form``, ``index_type``, ``index_type_python``)."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from proxai.core.model import Protocol
from proxai.pipeline.observe import StreamObserver
from proxai.protocols.anthropic_index import lax_int, node_place, python_index
from proxai.protocols.conformance import RULES

from . import sdks
from .test_sdk_reactions import _A_E, _A_S, _a

FORMS: list[Any] = [
    0, 1, -1, 2**70, True, False, None, [], [1], {}, 0.0, -0.0, 1.0, 1.5, -1.0, 1e20, 9.2e18, 9.3e18,
    -9.2e18, 2.0**63, float("inf"), 1e-300,
    "0", "1", "01", "00", "-0", "+1", "-1", " 1", "1 ", "\t1\n", "\u30001", "\u20031", "\xa01", "\x851",
    "\u200b1", "\x1c1", "\u180e1", "1_0", "1__0", "_1", "1_", "1.0", "1.00", "1.", ".0", "1.5", "1.0_0",
    "1_0.0", "1e0", "0x1", "\u0661", "\uff11", "", " ", "+", "-", "--1", "1 0", "abc", "9" * 30,
]  # fmt: skip


@pytest.mark.parametrize("v", FORMS, ids=repr)
def test_lax_int_is_pydantics(v: Any) -> None:
    try:
        want: int | None = pydantic.TypeAdapter(int).validate_python(v)
    except pydantic.ValidationError:
        want = None
    assert lax_int(v) == want


@pytest.mark.parametrize(
    ("v", "place"),
    [
        (0, 0), (1, 1), ("1", 1), ("0", 0), (1.0, 1), (-0.0, 0), ([1], 1), (["1"], 1), ([[2]], 2),
        (-1, None), ("01", None), (" 1", None), ("1.0", None), (1.5, None), (True, None), (None, None),
        ([], None), ([1, 2], None), ({}, None), ("abc", None), (2**32 - 1, None), (1e21, None),
    ],
    ids=repr,
)  # fmt: skip
def test_node_place(v: Any, place: int | None) -> None:
    assert node_place(v) == place


def test_a_delta_without_an_index_before_any_block_names_what_each_sdk_raises() -> None:
    """anthropic-python raises TypeError on the index (``index_type``), anthropic-node before it reads
    one, at the last block's type (``no_block``): both rules, at the delta."""
    body = _A_S + _a("content_block_delta", {"delta": {"type": "text_delta", "text": "Hi"}}) + _A_E
    obs = StreamObserver(Protocol.ANTHROPIC_MESSAGES, start=0.0)
    obs.headers(200, 0.0)
    obs.observe(body, 0.0)
    found = [(f["rule"], f["event_index"]) for f in obs.finish(0.0).extra["conformance"]]
    assert found == [("anthropic_messages.index_type", 1), ("anthropic_messages.no_block", 1)]
    py, node = sdks.python("anthropic", body), sdks.node([("anthropic", body)])[0]
    want_py, want_node = RULES[found[0][0]].python, RULES[found[1][0]].node
    assert (py.ok, py.error) == (False, want_py.error) and py.message.startswith(want_py.message)
    assert (node.ok, node.error) == (False, want_node.error) and node.message.startswith(want_node.message)


_CITE = {"cited_text": "a", "document_index": 0, "start_char_index": 0, "end_char_index": 1}
CITATIONS: list[Any] = [
    {"type": "char_location", **_CITE},
    {"type": "char_location", **_CITE, "document_title": None, "file_id": "f"},
    {"type": "char_location", **_CITE, "document_title": 1},
    {"type": "char_location", **_CITE, "document_index": "01"},
    {"type": "char_location", **_CITE, "document_index": True},
    {"type": "char_location", **_CITE, "document_index": 1.5},
    {"type": "char_location", **_CITE, "cited_text": 1},
    {"type": "char_location", "cited_text": "a"},
    {"type": "page_location", **_CITE, "start_page_number": 1, "end_page_number": "2"},
    {"type": "page_location", **_CITE},
    {"type": "content_block_location", **_CITE, "start_block_index": 0, "end_block_index": 1},
    {"type": "web_search_result_location", "cited_text": "a", "encrypted_index": "e", "url": "u"},
    {"type": "web_search_result_location", "cited_text": "a", "encrypted_index": "e", "url": "u", "title": 2},
    {"type": "web_search_result_location", "cited_text": "a", "encrypted_index": "e"},
    {"type": "search_result_location", "cited_text": "a", "search_result_index": 0, "source": "s",
     "start_block_index": 0, "end_block_index": 1, "title": None},
    {"type": "search_result_location", "cited_text": "a", "search_result_index": 0, "source": 1,
     "start_block_index": 0, "end_block_index": 1},
    {"type": "foo_location"}, {}, {**_CITE}, None, "x",
]  # fmt: skip
DELTAS: list[Any] = [
    {"type": "text_delta", "text": "a"}, {"type": "text_delta"}, {"type": "text_delta", "text": 1},
    {"type": "text_delta", "text": "a", "x": 1}, {"type": "input_json_delta", "partial_json": "a"},
    {"type": "input_json_delta"}, {"type": "thinking_delta", "thinking": "a"},
    {"type": "signature_delta", "signature": "s"}, {"type": "signature_delta", "signature": None},
    {"type": "foo_delta"}, None, "x", [],
    *({"type": "citations_delta", "citation": c} for c in CITATIONS),
]  # fmt: skip
INDEXES: list[Any] = [0, 1, "0", "1", "01", " 1", "1.0", 1.0, 1.5, True, False, None, "x", [1], -1, "-1"]


@pytest.mark.parametrize("delta", DELTAS, ids=repr)
def test_python_index_is_the_sdks_own_event(delta: Any) -> None:
    """``python_index`` is the place anthropic-python's ``accumulate_event`` reads the delta at: the
    event built by the SDK's own ``construct_type`` (pydantic's lax validation of the whole event;
    the event as it came when any of it fails, the citation included), its ``index`` an integer
    (a boolean is one) or a TypeError in ``content[index]``."""
    from anthropic._models import construct_type
    from anthropic.types import RawMessageStreamEvent

    for raw in INDEXES:
        event = {"type": "content_block_delta", "index": raw, "delta": delta}
        got = construct_type(type_=RawMessageStreamEvent, value=event).index  # type: ignore[union-attr]
        assert python_index(raw, delta) == (int(got) if isinstance(got, int) else None), raw
