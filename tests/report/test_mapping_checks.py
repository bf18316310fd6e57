"""The verdict, the comment, the marker, mitmdump's line, the cost's readers and the conformance
findings of a summary read its parts with ``isinstance(v, (dict, Mapping))`` (a dict found by its
own type, without the ABC's ``__instancecheck__``) and tell None apart first: the same answers as
``isinstance(v, Mapping)`` alone, as they were written before, over generated summaries holding
dicts, other mappings, None and other values in every part those functions read, and over the
summaries of every recorded stream."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.outputs import cost, verdict
from proxai.protocols import conformance


class _Map(Mapping[str, Any]):
    """A mapping that is no dict (what a reader given a flow file's view of the metadata may see)."""

    def __init__(self, d: dict[str, Any]) -> None:
        self.d = d

    def __getitem__(self, k: str) -> Any:
        return self.d[k]

    def __iter__(self) -> Iterator[str]:
        return iter(self.d)

    def __len__(self) -> int:
        return len(self.d)


def _readers(meta: Mapping[str, Any]) -> list[Any]:
    out: list[Any] = []
    for fn in (
        verdict.comment_line,
        verdict.marker_for,
        verdict.dump_line,
        verdict.verdict_text,
        verdict.fault_label,
        verdict.replay_label,
        verdict.sdk_label,
        verdict.protocol_label,
        verdict.client_protocol,
        cost.amount,
        cost.note,
        cost.price_tokens,
        conformance.findings_of,
        conformance.raising,
    ):
        try:
            out.append(fn(meta))
        except Exception as exc:  # the same failure, if any
            out.append((type(exc), str(exc)))
    added = dict(meta)
    cost.add_cost(added, api_url="https://api.anthropic.com/v1/messages", at=1.7e9)
    out.append(added)
    return out


def _as_before(meta: Mapping[str, Any]) -> list[Any]:
    with pytest.MonkeyPatch.context() as m:
        for module in (verdict, cost, conformance):
            m.setattr(module, "_MAPPING", Mapping)  # isinstance(v, Mapping), as it was
        return _readers(meta)


def test_none_is_no_mapping() -> None:
    assert not isinstance(None, Mapping)  # so telling None apart first changes no answer


_TEXT = st.sampled_from(
    [
        "anthropic_messages",
        "openai_chat",
        "openai_responses",
        "completed",
        "closed",
        "error",
        "unfinished_tool",
        "max_tokens",
        "length",
        "stop",
        "end_turn",
        "tool_use",
        "content_filter",
        "refusal",
        "incomplete",
        "rate_limited",
        "idle_timeout",
        "tool_stall",
        "x",
        "",
    ]
)
_LEAF = st.one_of(st.none(), _TEXT, st.integers(-1, 500), st.booleans(), st.floats(0, 10))


def _maps(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    d = st.dictionaries(
        st.sampled_from(
            [
                "kind",
                "status",
                "name",
                "arguments_complete",
                "injected",
                "fault",
                "replayed",
                "flow_index",
                "miss",
                "client_protocol",
                "client",
                "amount",
                "notes",
                "conformance",
                "rule",
                "raises",
                "sdks",
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "first_token_s",
                "total_s",
                "openai-python 1",
                "openai-node 2",
            ]
        ),
        inner,
        max_size=5,
    )
    return st.one_of(d, d.map(_Map))


_PART = st.recursive(_LEAF, lambda inner: st.one_of(_maps(inner), st.lists(inner, max_size=3)), max_leaves=12)
_META = st.fixed_dictionaries(
    {"outcome": _TEXT, "protocol": _TEXT},
    optional={
        k: _PART
        for k in (
            "stop_reason",
            "stop_class",
            "error",
            "usage",
            "extra",
            "replay",
            "translation",
            "route",
            "client_protocol",
            "tool_calls",
            "cost",
            "model",
            "refusal_bytes",
            "timing",
        )
    },
)


@settings(max_examples=600, deadline=None)
@given(meta=st.one_of(_META, _META.map(_Map)))
def test_readers_as_before_on_generated_summaries(meta: Any) -> None:
    assert _readers(meta) == _as_before(meta)


def _recorded() -> list[dict[str, Any]]:
    """The summary of every real recording, as recorded (with its cost), and as a translated
    flow's (its client's protocol named)."""
    from pathlib import Path

    from proxai.core.model import Protocol
    from proxai.pipeline.observe import observe_body

    real = Path(__file__).resolve().parents[1] / "fixtures" / "real"
    dirs = {
        "anthropic": Protocol.ANTHROPIC_MESSAGES,
        "chat": Protocol.OPENAI_CHAT,
        "responses": Protocol.OPENAI_RESPONSES,
    }
    out = []
    for d, protocol in dirs.items():
        for path in sorted((real / d).glob("*.sse")):
            summary = observe_body(
                protocol,
                path.read_bytes(),
                status_code=200,
                start=1.0,
                headers_at=1.1,
                end=2.0,
                content_type="text/event-stream",
            )
            meta = summary.to_metadata()
            cost.add_cost(meta, api_url=None, at=1.7e9)
            out.append(meta)
            out.append(
                {**meta, "client_protocol": "anthropic_messages", "translation": {"client": "openai_chat"}}
            )
    return out


def test_readers_as_before_on_recorded_summaries() -> None:
    metas = _recorded()
    assert len(metas) > 400
    for meta in metas:
        assert _readers(meta) == _as_before(meta)
