"""Comparing two runs (``proxai.outputs.run_diff``, ``proxai.outputs.run_diff_html``): the pairing (a
retry, an extra
round trip, turns of other steps between two matches, a run too long for the table), what counts as
a divergence and what is only a change, the JSON and the text, and a hostile run on the page. The
runs are built from flow inputs the way the report builds them (``proxai.outputs.run.build_run``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest

from proxai.outputs import run_diff
from proxai.outputs.run import FlowInput, Run, build_run
from proxai.outputs.run_diff import diff_runs, pairing, summary_lines
from proxai.outputs.run_diff_html import render_diff_html

A = "anthropic_messages"
USER = {"role": "user", "content": "Run `ls` please"}


def _messages(depth: int, command: str = "ls") -> list[dict[str, Any]]:
    """A conversation of ``depth`` messages: the prompt, then tool round trips."""
    out: list[dict[str, Any]] = [USER]
    n = 0
    while len(out) < depth:
        call = {"type": "tool_use", "id": f"t{n}", "name": "bash", "input": {"command": command}}
        out.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": "a.txt"}
        out.append({"role": "user", "content": [result]})
        n += 1
    return out[:depth]


def _turn(
    index: int,
    depth: int,
    *,
    outcome: str = "completed",
    tool: str | None = None,  # a tool call's arguments, else a text answer
    text: str = "The tool returned: a.txt",
    out_tokens: int = 10,
    amount: float | None = 0.0003,
    ttft: float = 0.4,
    total: float = 0.9,
    protocol: str = A,
    name: str = "bash",
) -> FlowInput:
    meta: dict[str, Any] = {
        "schema": 1,
        "protocol": protocol,
        "outcome": outcome,
        "model": "claude-sonnet-4-6",
        "stop_reason": ("tool_use" if tool is not None else "end_turn") if outcome == "completed" else None,
        "usage": {"input_tokens": 25, "output_tokens": out_tokens},
        "timing": {"first_token_s": ttft, "total_s": total},
    }
    if amount is not None:
        meta["cost"] = {"amount": amount, "currency": "USD"}
    if outcome == "error":
        meta["error"] = {"kind": "rate_limited", "message": "slow down", "status": 429}
    if tool is not None:
        meta["tool_calls"] = [{"id": f"toolu_{index}", "name": name, "arguments_complete": True}]
    return FlowInput(
        index=index,
        flow_id=f"f{index}",
        method="POST",
        url="https://api.anthropic.com/v1/messages",
        status=200 if outcome != "error" else 429,
        start=1000.0 + index,
        meta=meta,
        request={"model": "claude-sonnet-4-6", "messages": _messages(depth)},
        answer_text=None if tool is not None or outcome == "error" else text,
        tool_arguments=() if tool is None else (tool,),
    )


def _run(*inputs: FlowInput) -> Run:
    return build_run(list(inputs))


LS = '{"command":"ls"}'


def _loop(**first: Any) -> Run:
    """One tool round trip: the model calls bash, then answers."""
    return _run(_turn(1, 1, tool=first.pop("tool", LS), **first), _turn(2, 3))


def _indexes(pairs: list[tuple[Any, Any]]) -> list[tuple[int | None, int | None]]:
    return [(None if a is None else a.index, None if b is None else b.index) for a, b in pairs]


def test_identical_runs_do_not_diverge_and_timing_is_only_a_change() -> None:
    base = _loop()
    again = _run(_turn(1, 1, tool='{ "command": "ls" }', ttft=0.5), _turn(2, 3))  # the same JSON, spaced
    d = diff_runs(base, again)
    assert d.divergent == []
    assert [p.divergences for p in d.pairs] == [[], []]
    assert [p.changed for p in d.pairs] == [["first_token_s"], []]
    doc = d.to_json()
    assert doc["divergent"] is False and doc["first_divergence"] is None
    assert doc["pairs"][0]["values"]["first_token_s"] == {
        "base": 0.4,
        "new": 0.5,
        "same": False,
        "delta": 0.1,
    }
    assert doc["pairs"][0]["tool_calls"] == [
        {
            "index": 0,
            "base": {"name": "bash", "arguments": LS},
            "new": {"name": "bash", "arguments": '{ "command": "ls" }'},
            "same": True,
            "differs": [],
        }
    ]
    assert summary_lines(d, base_name="a.flow", new_name="b.flow") == [
        "base a.flow: 2 turns · new b.flow: 2 turns",
        "pair 1: base #1 · new #1: same",
        "  completed (tool_use)",
        '  tool call 1: bash {"command":"ls"}',
        "  first token 0.40s → 0.50s: +0.10s (+25.0%)",
        "pair 2: base #2 · new #2: same",
        "  completed (end_turn)",
        "totals: turns 2 → 2 · tool calls 1 → 1 · input tokens 50 → 50 · output tokens 20 → 20 · "
        "cache read tokens 0 → 0 · cache write tokens 0 → 0 · cost $0.0006 → $0.0006 · "
        "duration 1.90s → 1.90s",
        "no divergence in 2 pairs: the same outcomes and tool calls",
    ]


def test_other_tool_arguments_diverge_and_cost_is_a_change() -> None:
    d = diff_runs(_loop(), _loop(tool='{"command":"ls -la"}', out_tokens=12, amount=0.00036))
    first, second = d.pairs
    assert first.divergences == ["tool_calls"] and second.divergences == []
    assert first.changed == ["tool_calls", "output_tokens", "cost"]  # in the order shown
    assert [c.differs for c in first.tool_calls] == [("arguments",)]
    doc = d.to_json()
    assert doc["divergent"] is True and doc["divergent_pairs"] == 1
    assert doc["first_divergence"] == {
        "pair": 1,
        "base_turn": 1,
        "new_turn": 1,
        "divergences": ["tool_calls"],
    }
    assert doc["pairs"][0]["values"]["cost"] == {
        "base": 0.0003,
        "new": 0.00036,
        "same": False,
        "delta": 6e-05,
    }
    assert doc["totals"]["cost"] == {"base": 0.0006, "new": 0.00066, "same": False, "delta": 6e-05}
    assert doc["totals"]["output_tokens"] == {"base": 20, "new": 22, "same": False, "delta": 2}
    lines = summary_lines(d, base_name="a", new_name="b")
    assert lines[1:6] == [
        "pair 1: base #1 · new #1: DIVERGED (tool calls differ)",
        "  completed (tool_use)",
        '  tool call 1: bash {"command":"ls"} → bash {"command":"ls -la"}',
        "  output tokens 10 → 12: +2 (+20.0%)",
        "  cost $0.0003 → $0.00036: +$0.00006 (+20.0%)",
    ]
    assert lines[-1] == "diverged: 1 of 2 pairs; the first: pair 1 (base #1, new #1): tool calls differ"


def test_another_tool_name_or_outcome_diverges() -> None:
    renamed = diff_runs(_loop(), _loop(name="sh"))
    assert renamed.pairs[0].divergences == ["tool_calls"]
    assert renamed.pairs[0].tool_calls[0].differs == ("name",)
    failed = diff_runs(_loop(), _run(_turn(1, 1, outcome="error", amount=None), _turn(2, 3)))
    assert failed.pairs[0].divergences == ["outcome", "tool_calls"]
    assert failed.pairs[0].tool_calls[0].differs == ("missing",)
    assert failed.to_json()["pairs"][0]["values"]["error"] == {
        "base": None,
        "new": "rate_limited",
        "same": False,
    }
    lines = summary_lines(failed, base_name="a", new_name="b")
    assert lines[1:6] == [
        "pair 1: base #1 · new #1: DIVERGED (outcome differs, tool calls differ)",
        '  tool call 1: bash {"command":"ls"} → (none)',
        "  outcome completed → error",
        "  stop reason tool_use → -",
        "  error - → rate_limited",
    ]
    assert "  new error: slow down" in lines
    page = render_diff_html(failed, base_name="a", new_name="b")
    assert '<div class="errorbox" data-side="new"><b>new: rate_limited</b>: slow down</div>' in page
    only_text = diff_runs(_loop(), _run(_turn(1, 1, tool=LS), _turn(2, 3, text="Done.")))
    assert only_text.divergent == [] and only_text.pairs[1].changed == ["text"]


def test_a_retry_pairs_its_last_attempt() -> None:
    base = _loop()
    new = _run(_turn(1, 1, tool=LS), _turn(2, 3, outcome="error", amount=None), _turn(3, 3))
    assert _indexes(pairing(base.turns, new.turns)) == [(1, 1), (None, 2), (2, 3)]
    d = diff_runs(base, new)
    assert [p.divergences for p in d.pairs] == [[], ["only_in_new"], []]
    assert d.to_json()["first_divergence"] == {
        "pair": 2,
        "base_turn": None,
        "new_turn": 2,
        "divergences": ["only_in_new"],
    }


def test_an_extra_round_trip_stands_alone_and_the_rest_pairs() -> None:
    base = _loop()
    new = _run(_turn(1, 1, tool=LS), _turn(2, 3, tool=LS), _turn(3, 5))
    assert _indexes(pairing(base.turns, new.turns)) == [(1, 1), (2, 2), (None, 3)]
    d = diff_runs(base, new)
    assert [p.divergences for p in d.pairs] == [[], ["tool_calls"], ["only_in_new"]]
    assert d.pairs[1].tool_calls[0].base is None and d.pairs[1].tool_calls[0].differs == ("missing",)
    # the other way round: a base turn without a counterpart
    assert _indexes(pairing(new.turns, base.turns)) == [(1, 1), (2, 2), (3, None)]


def test_turns_between_two_matches_pair_in_order() -> None:
    chat = "openai_chat"
    base = _run(_turn(1, 1, tool=LS), _turn(2, 1, protocol=chat), _turn(3, 3, protocol=chat), _turn(4, 3))
    new = _run(_turn(1, 1, tool=LS), _turn(2, 5), _turn(3, 3))
    # base #2 and #3 (Chat) have no step in common with new #2 (a deeper Anthropic turn): in order
    assert _indexes(pairing(base.turns, new.turns)) == [(1, 1), (2, 2), (3, None), (4, 3)]


def test_a_run_too_long_for_the_table_pairs_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    base = _loop()
    new = _run(_turn(1, 1, tool=LS), _turn(2, 3, outcome="error", amount=None), _turn(3, 3))
    monkeypatch.setattr(run_diff, "MAX_CELLS", 5)  # 2 x 3 turns
    assert _indexes(pairing(base.turns, new.turns)) == [(1, 1), (2, 2), (None, 3)]


HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="alert(1)">'


def test_the_page_escapes_everything_from_the_flows() -> None:
    base = _run(_turn(1, 1, tool=orjson.dumps({"command": HOSTILE}).decode(), name=HOSTILE), _turn(2, 3))
    new = _run(_turn(1, 1, tool=LS, name=HOSTILE), _turn(2, 3, text=HOSTILE))
    page = render_diff_html(diff_runs(base, new, [f"note {HOSTILE}"]), base_name=HOSTILE, new_name="n.flow")
    assert "<script" not in page and "<img" not in page and 'onerror="' not in page
    assert page.count("&lt;script&gt;") >= 5  # title, names, the diff line, the tool name, the text, the note
    assert '<span class="del">-   &quot;command&quot;: &quot;&lt;script&gt;' in page
    assert '<span class="ins">+   &quot;command&quot;: &quot;ls&quot;</span>' in page
    assert "http" not in page.split("<body>", 1)[1].replace("https://api.anthropic.com", "")


def test_cache_writes_moved_to_the_one_hour_cache_are_a_change() -> None:
    """The same writes, in the 1-hour cache instead of the 5-minute one: priced higher, shown apart."""

    def run(w5m: int, w1h: int, amount: float) -> Run:
        t = _turn(1, 1, amount=amount)
        usage = {**t.meta["usage"], "cache_write_tokens": 3000}
        usage |= {"cache_write_5m_tokens": w5m, "cache_write_1h_tokens": w1h}
        return _run(dataclasses.replace(t, meta={**t.meta, "usage": usage}))

    d = diff_runs(run(3000, 0, 0.01125), run(1000, 2000, 0.01575))
    (pair,) = d.pairs
    assert pair.divergences == [] and pair.changed == [
        "cache_write_5m_tokens",
        "cache_write_1h_tokens",
        "cost",
    ]
    assert summary_lines(d, base_name="a", new_name="b")[3:6] == [
        "  5-minute cache write tokens 3000 → 1000: -2000 (-66.7%)",
        "  1-hour cache write tokens 0 → 2000: +2000",
        "  cost $0.0112 → $0.0158: +$0.0045 (+40.0%)",
    ]
