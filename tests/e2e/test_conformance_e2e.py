"""Conformance findings through a real mitmdump: a Responses stream cut before its terminal event, on
which the real openai SDK raises, and a Chat stream cut before its finish_reason, which it returns
without one. The saved flow's summary names the rule and event, the comment says which SDK raises,
and the ProxAI view and proxai.report list the findings (docs/design/conformance.md)."""

from __future__ import annotations

from typing import Any

import pytest

from proxai.mitm.contentview import response_text
from proxai.mitm.flowrows import report_rows
from proxai.outputs.report import table_lines

from .harness import Mitmdump, openai_client, proxai_meta, tag

pytestmark = pytest.mark.e2e

MESSAGES: Any = [{"role": "user", "content": "hi"}]


def test_a_stream_the_python_sdk_raises_on(mitm_reverse: Mitmdump) -> None:
    md = mitm_reverse
    t = tag()
    with (
        pytest.raises(RuntimeError, match=r"^Didn't receive a `response\.completed` event\.$"),
        openai_client(md, t).responses.stream(model="truncated", input="hi") as s,
    ):
        s.get_final_response()
    f = md.wait_flow(t)
    m = proxai_meta(f)
    (found,) = m["extra"]["conformance"]
    assert found == {
        "rule": "openai_responses.no_terminal",
        "requires": "the stream ends with a terminal event (`response.completed`)",
        "event_index": m["counts"]["events"],
        "detail": "the stream ended before response.completed",
        "raises": True,
        "sdks": {
            "openai-python 3.57.0": "raises RuntimeError: Didn't receive a `response.completed` event.",
            "openai-node 6.49.0": "loses the end: returns the last snapshot, status in_progress",
        },
    }
    assert f.marked == ":warning:"  # closed: the verdict's own marker
    assert f.comment.startswith(
        "closed: no response.completed · "
        "SDK: openai-python raises RuntimeError (openai_responses.no_terminal) · "
    )
    assert f.response is not None
    view = response_text(f, f.response.get_content(strict=False) or b"")
    section = view.split("── official SDKs ──\n", 1)[1].split("── ", 1)[0]
    assert " ".join(section.split()) == (  # the view wraps at 100 columns
        f"openai_responses.no_terminal at event {found['event_index']}: the stream ended before "
        "response.completed requires the stream ends with a terminal event (`response.completed`) "
        "openai-node 6.49.0: loses the end: returns the last snapshot, status in_progress "
        "openai-python 3.57.0: raises RuntimeError: Didn't receive a "
        "`response.completed` event."
    )
    report = table_lines(report_rows([f], load_files=False))
    at = report.index("flow 1 (responses): 1 conformance finding, an official SDK raises on 1")
    assert report[at + 1 : at + 3] == [
        f"  openai_responses.no_terminal at event {found['event_index']}: the stream ended before "
        "response.completed",
        "    requires the stream ends with a terminal event (`response.completed`)",
    ]


def test_a_stream_the_python_sdk_returns_without_a_finish_reason(mitm_reverse: Mitmdump) -> None:
    md = mitm_reverse
    t = tag()
    with openai_client(md, t).chat.completions.stream(model="truncated", messages=MESSAGES) as s:
        final = s.get_final_completion()
    assert final.choices[0].finish_reason is None  # what the finding says the Python SDK loses
    f = md.wait_flow(t)
    m = proxai_meta(f)
    (found,) = m["extra"]["conformance"]
    assert found["rule"] == "openai_chat.no_finish_reason" and found["event_index"] == m["counts"]["events"]
    assert found["sdks"] == {
        "openai-python 3.57.0": "loses the finish_reason (None)",
        "openai-node 6.49.0": "raises OpenAIError: missing finish_reason for choice 0",
    }
    assert f.marked == ":warning:"
    assert "· SDK: openai-node raises OpenAIError (openai_chat.no_finish_reason) ·" in f.comment
