"""Conformance findings where a user looks: the marker and the comment (an official SDK raises), the
ProxAI view's section (every finding) and proxai.report's lines, from summaries of real observed
streams (the catalogue's cases)."""

from __future__ import annotations

from typing import Any

from proxai.outputs import report, verdict, view_text
from proxai.pipeline.observe import StreamObserver

from .test_sdk_reactions import CASES, KINDS


def meta_of(name: str) -> dict[str, Any]:
    case = next(c for c in CASES if c.name == name)
    obs = StreamObserver(KINDS[case.kind], start=0.0)
    obs.headers(200, 0.0)
    obs.observe(case.stream, 0.0)
    return obs.finish(0.0).to_metadata()


def test_a_completed_stream_an_sdk_raises_on_is_marked_and_named() -> None:
    meta = meta_of("chat first choice index 1")
    assert meta["outcome"] == "completed"
    assert verdict.marker_for(meta) == verdict.SDK_MARKER == ":boom:"
    assert verdict.comment_line(meta) == (
        "completed (stop) · SDK: openai-python raises IndexError, openai-node raises OpenAIError "
        "(openai_chat.choice_index) · chat m"
    )
    assert "· SDK: openai-python raises IndexError, openai-node raises OpenAIError" in verdict.dump_line(meta)


def test_a_stream_an_sdk_only_loses_content_of_is_not_marked_but_shown() -> None:
    meta = meta_of("anthropic one delta without its event line")
    assert verdict.marker_for(meta) == ""
    assert verdict.comment_line(meta) == "completed (end_turn) · anthropic m · 3 in/2 out"
    lines = view_text.response_lines(meta, None)
    at = lines.index("── official SDKs ──")
    assert lines[at + 1 : at + 5] == [
        "anthropic_messages.unnamed_event at event 3: content_block_delta has no event: line",
        "  requires every event has an `event:` line (the SDKs skip events without one)",
        "  anthropic-node 1.14.0: loses the unnamed events (their text, tool input, stop reason, usage)",
        "  anthropic-python 2.14.0: loses the unnamed events (their text, tool input, stop reason, usage)",
    ]
    # said once, in its section: neither the metadata nor the finding's note in the details
    assert not any(line.startswith(("extra.conformance", "extra.notes")) for line in lines)


def test_a_verdict_marker_wins_and_more_findings_are_counted() -> None:
    meta = meta_of("anthropic no event lines")
    assert [f["rule"] for f in meta["extra"]["conformance"]] == [
        "anthropic_messages.unnamed_start",
        "anthropic_messages.unnamed_event",
        # both SDKs skip the unnamed block start, so its delta finds no block (both raise), and
        # Node never sees the unnamed message_stop (it raises)
        "anthropic_messages.no_block",
        "anthropic_messages.no_message_stop",
    ]
    assert verdict.marker_for(meta) == ":boom:"
    assert verdict.sdk_label(meta) == (
        "SDK: anthropic-python raises AssertionError, anthropic-node raises AnthropicError "
        "(anthropic_messages.unnamed_start) +2 more"
    )
    closed = meta_of("responses no terminal event")
    assert verdict.marker_for(closed) == ":warning:"  # closed keeps its own marker
    label = "SDK: openai-python raises RuntimeError (openai_responses.no_terminal)"
    assert verdict.sdk_label(closed) == label


def test_the_report_lists_each_flows_findings() -> None:
    rows = [
        report.make_row(meta_of(name), index=i, flow_id=f"f{i}", method="POST", url="http://x/v1", status=200)
        for i, name in enumerate(["chat clean", "chat id line alone", "anthropic no event lines"], 1)
    ]
    assert [r.to_json()["conformance"] == [] for r in rows] == [True, False, False]
    lines = report.table_lines(rows)
    at = lines.index("flow 2 (chat): 1 conformance finding, an official SDK raises on 1")
    assert lines[at + 1 : at + 5] == [
        "  openai_chat.dataless_block at event 1: an SSE block without data that the OpenAI Python SDK reads",
        "    requires no block of only `id:` / `retry:` lines, nor a blank line once an `id:` came (the "
        "Python SDK parses it as JSON)",
        "    openai-node 6.49.0: tolerates it",
        "    openai-python 3.57.0: raises JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
    ]
    assert "flow 3 (anthropic): 4 conformance findings, an official SDK raises on 3" in lines
    assert not any(line.startswith("flow 1 ") for line in lines)
