"""``proxai_replay``: a run recorded through a real mitmdump is answered again from its ``.flow``
file by a second real mitmdump, with the upstream stopped, to the real ``anthropic`` and
``openai`` SDKs (docs/replay.md).

Timing is asserted from the flows' own summaries (the proxy's clock), never by sleeping: at speed 1
the replayed time to first token and total duration are within 20% of the recorded ones, and at
speed 0 the player schedules no wait at all (``replay.waits_s`` is 0).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from mitmproxy import http

from proxai.upstream import FakeUpstream
from proxai.upstream.scenarios import ARGS_PARIS

from .harness import (
    ADDON_SCRIPT,
    MITMDUMP,
    Mitmdump,
    anthropic_client,
    openai_client,
    proxai_meta,
    running_mitmdump,
    tag,
)

pytestmark = pytest.mark.e2e

ASK: Any = [{"role": "user", "content": "What's the weather in Paris and Tokyo?"}]
OTHER: Any = [{"role": "user", "content": "What's the weather in Rome?"}]
SLOW = {"x-proxai-time-scale": "1"}  # the upstream's realistic timing: 0.4 s to the first token


@pytest.fixture
def live() -> Iterator[FakeUpstream]:
    with FakeUpstream(time_scale=0.02) as up:
        yield up


def _flows(md: Mitmdump, t: str, n: int) -> list[http.HTTPFlow]:
    return md.wait_flows(t, n)


def _record(
    up: FakeUpstream, tmp: Path, run: Any, n: int, **kw: Any
) -> tuple[Path, list[dict[str, Any]], Any]:
    """Run ``run(md, tag)`` through a recording mitmdump; (flow file, summaries, what run returned)."""
    t = tag()
    with running_mitmdump(up.url, workdir=tmp / "record", **kw) as md:
        out = run(md, t)
        metas = [proxai_meta(f) for f in _flows(md, t, n)]
    return md.flow_path, metas, out


def _replay(
    url: str, tmp: Path, flows: Path, options: dict[str, Any] | None = None, name: str = "replay"
) -> Any:
    return running_mitmdump(url, workdir=tmp / name, options={"proxai_replay": str(flows), **(options or {})})


def _all(md: Mitmdump, t: str) -> list[Any]:
    a = anthropic_client(md, t)
    o = openai_client(md, t)
    with a.messages.stream(model="parallel_tools", max_tokens=256, messages=ASK) as s:
        tools = s.get_final_message()
    chat = o.chat.completions.create(model="text", messages=ASK)
    stream = list(o.responses.create(model="text", input="hi", stream=True))
    try:
        a.messages.create(model="rate_limit", max_tokens=16, messages=ASK)
        limited: Any = None
    except anthropic.RateLimitError as exc:
        limited = (exc.status_code, exc.body, exc.response.headers.get("retry-after"))
    return tools, chat, [e.model_dump() for e in stream], limited


def test_a_recorded_run_answers_with_the_upstream_stopped(live: FakeUpstream, tmp_path: Path) -> None:
    flows, recorded, (tools, chat, events, limited) = _record(live, tmp_path, _all, 4)
    url = live.url
    live.stop()
    seen = len(live.requests)
    with _replay(url, tmp_path, flows) as md:
        t = tag()
        tools2, chat2, events2, limited2 = _all(md, t)
        replayed = [proxai_meta(f) for f in _flows(md, t, 4)]
        comments = [f.comment for f in md.read_flows()]
    assert tools2.model_dump() == tools.model_dump()
    assert chat2.model_dump() == chat.model_dump()
    assert events2 == events
    assert limited2 == limited and limited is not None and limited[0] == 429
    assert len(live.requests) == seen
    assert [m["replay"]["flow_index"] for m in replayed] == [1, 2, 3, 4]
    assert all(m["replay"]["replayed"] is True and m["replay"]["file"] == str(flows) for m in replayed)
    assert [m["replay"]["flow_id"] for m in replayed] == [f.id for f in _saved(flows)]
    assert [m["replay"]["timed_by"] for m in replayed] == ["reads", "summary", "reads", "summary"]
    for m, r in zip(replayed, recorded, strict=True):
        assert (m["outcome"], m["usage"], m["tool_calls"], m["id"]) == (
            r["outcome"],
            r["usage"],
            r["tool_calls"],
            r["id"],
        )
    assert all("replayed from flow" in c for c in comments)


def _saved(path: Path) -> list[http.HTTPFlow]:
    from proxai.mitm.flowrows import read_flows

    return [f for f in read_flows(str(path)) if isinstance(f, http.HTTPFlow)]


def _slow(md: Mitmdump, t: str) -> str:
    client = anthropic_client(md, t, default_headers=SLOW)
    with client.messages.stream(model="text", max_tokens=256, messages=ASK) as s:
        return "".join(s.text_stream)


def test_speed_one_keeps_the_recorded_timing(live: FakeUpstream, tmp_path: Path) -> None:
    flows, [recorded], text = _record(live, tmp_path, _slow, 1)
    with _replay(live.url, tmp_path, flows) as md:
        t = tag()
        assert _slow(md, t) == text
        [m] = [proxai_meta(f) for f in _flows(md, t, 1)]
    assert m["replay"]["timed_by"] == "reads" and m["replay"]["speed"] == 1.0
    before, after = recorded["timing"], m["timing"]
    assert before["first_token_s"] > 0.3  # the scenario's 0.4 s: a gap worth measuring
    for key in ("first_token_s", "total_s"):
        assert 0.8 <= after[key] / before[key] <= 1.2, (key, before, after)
    assert m["counts"]["events"] == recorded["counts"]["events"]


def _big(md: Mitmdump, t: str) -> Any:
    client = openai_client(md, t, default_headers={"x-proxai-events": "2000"})
    return [
        c.model_dump() for c in client.chat.completions.create(model="big_stream", messages=ASK, stream=True)
    ]


def test_speed_zero_schedules_no_wait(live: FakeUpstream, tmp_path: Path) -> None:
    flows, [recorded], chunks = _record(live, tmp_path, _big, 1)
    assert recorded["counts"]["events"] > 2000
    with _replay(live.url, tmp_path, flows, {"proxai_replay_speed": "0"}) as md:
        t = tag()
        assert _big(md, t) == chunks
        [m] = [proxai_meta(f) for f in _flows(md, t, 1)]
    assert m["replay"]["speed"] == 0.0 and m["replay"]["waits_s"] == 0.0
    assert m["counts"]["events"] == recorded["counts"]["events"] and m["outcome"] == "completed"


def _ask(md: Mitmdump, t: str, messages: Any = ASK) -> Any:
    return anthropic_client(md, t).messages.create(model="text", max_tokens=64, messages=messages)


def test_a_changed_prompt_gets_the_divergence_error(live: FakeUpstream, tmp_path: Path) -> None:
    flows, _, _ = _record(live, tmp_path, _ask, 1)
    seen = len(live.requests)
    with _replay(live.url, tmp_path, flows) as md:
        t = tag()
        with pytest.raises(anthropic.BadRequestError) as err:
            _ask(md, t, OTHER)
        [f] = _flows(md, t, 1)
    message = (
        "proxai replay: no recorded request matches: messages[0].content (user text) differs from the "
        f'closest recording ({flows}, flow 1): recorded "…at\'s the weather in Paris and Tokyo?", got '
        '"…at\'s the weather in Rome?"'
    )
    assert err.value.body == {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    m = proxai_meta(f)
    assert m["replay"] == {
        "replayed": False,
        "miss": "error",
        "message": message,
        "closest": {"file": str(flows), "flow_index": 1, "flow_id": _saved(flows)[0].id},
    }
    assert m["outcome"] == "error" and f.marked and "replay miss" in f.comment
    assert len(live.requests) == seen  # nothing went upstream


def test_miss_upstream_reaches_the_upstream(live: FakeUpstream, tmp_path: Path) -> None:
    flows, _, _ = _record(live, tmp_path, _ask, 1)
    seen = len(live.requests)
    with _replay(live.url, tmp_path, flows, {"proxai_replay_miss": "upstream"}) as md:
        t = tag()
        answer = _ask(md, t, OTHER)
        again = _ask(md, t)  # the recorded one is still answered from the recording
        first, second = _flows(md, t, 2)
    assert answer.content[0].text and answer.stop_reason == "end_turn"
    assert len(live.requests) == seen + 1 and live.requests[-1].body["messages"] == OTHER
    assert proxai_meta(first)["replay"]["miss"] == "upstream" and proxai_meta(first)["outcome"] == "completed"
    assert proxai_meta(second)["replay"]["replayed"] is True and again.content[0].text


# far past the SDK's timeout: the timeout fires; only Anthropic requests are faulted
FAULT = "stall at=tool_args seconds=60 filter='~u /v1/messages'"
TIMEOUT = 3.0


def _warm(md: Mitmdump, t: str) -> None:
    """A first flow that is not faulted: the fresh mitmdump's first-flow costs are paid before
    the SDK's timeout runs (and every run's upstream numbers the faulted answer 2)."""
    openai_client(md, t).chat.completions.create(model="text", messages=ASK)


def _stalled(md: Mitmdump, t: str) -> list[Any]:
    _warm(md, t)
    client = anthropic_client(md, t).with_options(timeout=TIMEOUT)
    seen: list[Any] = []
    with (
        pytest.raises(httpx2.ReadTimeout),
        client.messages.stream(model="parallel_tools", max_tokens=256, messages=ASK) as s,
    ):
        seen.extend(s)
    return [e.model_dump() for e in seen]


def _warm_then_tools(md: Mitmdump, t: str) -> Any:
    _warm(md, t)
    return _ask_tools(md, t)


def test_a_fault_rule_on_replay_behaves_as_on_live(live: FakeUpstream, tmp_path: Path) -> None:
    t = tag()
    with (
        FakeUpstream(time_scale=0.02) as fresh,  # numbers its answers as live does
        running_mitmdump(fresh.url, workdir=tmp_path / "live", options={"proxai_faults": FAULT}) as md,
    ):
        on_live = _stalled(md, t)
        live_flow = _flows(md, t, 2)[1]
    flows, _, _ = _record(live, tmp_path, _warm_then_tools, 2)
    with _replay(live.url, tmp_path, flows, {"proxai_faults": FAULT}) as md:
        t = tag()
        on_replay = _stalled(md, t)
        replayed = _flows(md, t, 2)[1]
    assert on_replay == on_live
    last = [e for e in on_replay if e["type"] == "content_block_delta"][-1]  # the wire's, not derived
    assert last["delta"] == {"type": "input_json_delta", "partial_json": ARGS_PARIS[:6]}
    a, b = proxai_meta(live_flow), proxai_meta(replayed)
    assert (b["replay"]["replayed"], b["replay"]["flow_index"]) == (True, 2)
    assert b["extra"]["fault"] == a["extra"]["fault"]
    assert a["extra"]["fault"]["client_outcome"] == "unfinished_tool" and a["extra"]["fault"]["injected"]
    assert (b["outcome"], b["tool_calls"]) == (a["outcome"], a["tool_calls"])


def _ask_tools(md: Mitmdump, t: str) -> Any:
    with anthropic_client(md, t).messages.stream(model="parallel_tools", max_tokens=256, messages=ASK) as s:
        return s.get_final_message()


def test_a_flow_without_a_body_is_skipped_with_a_note(live: FakeUpstream, tmp_path: Path) -> None:
    def both(md: Mitmdump, t: str) -> None:
        _ask_tools(md, t)
        openai_client(md, t).chat.completions.create(model="text", messages=ASK)

    flows, _, _ = _record(live, tmp_path, both, 2, options={"proxai_keep_body": False})
    with _replay(live.url, tmp_path, flows) as md:
        t = tag()
        with pytest.raises(anthropic.BadRequestError):
            _ask_tools(md, t)
        chat = openai_client(md, t).chat.completions.create(model="text", messages=ASK)
        _flows(md, t, 2)
        log = md.log_tail(20000)
    assert chat.choices[0].message.content
    assert (
        f"proxai replay: {flows}, flow 1 (POST /v1/messages) skipped: the response body was not recorded\n"
        in log
    )
    assert "proxai replay: 1 recorded answers from" in log


def test_bad_replay_files_stop_mitmdump_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "notes.flow"
    bad.write_text("not a flow\n")
    args = [str(MITMDUMP), "-s", str(ADDON_SCRIPT), "--listen-port", "0", "--set", f"proxai_replay={bad}"]
    args += ["--set", f"confdir={tmp_path / 'conf'}"]
    proc = subprocess.run(args, capture_output=True, timeout=60, check=False, cwd=tmp_path)
    out = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 1, out
    lines = [line for line in out.splitlines() if "proxai" in line and "Loading script" not in line]
    assert len(lines) == 1 and lines[0].endswith(
        f"proxai: invalid option: proxai_replay: cannot read {bad}: not a mitmproxy flow file "
        "(Invalid data format.)"
    ), out
    assert "Traceback" not in out


def test_an_answer_a_fault_gave_first_does_not_use_up_the_recording(
    live: FakeUpstream, tmp_path: Path
) -> None:
    flows, [recorded], first = _record(live, tmp_path, _ask, 1)
    options = {"proxai_faults": "http_error error=overloaded count=1"}
    with _replay(live.url, tmp_path, flows, options) as md:
        t = tag()
        with pytest.raises(anthropic.InternalServerError) as err:  # 529
            _ask(md, t)
        retried = _ask(md, t)
        faulted, replayed = _flows(md, t, 2)
    assert err.value.status_code == 529
    assert retried.model_dump() == first.model_dump()
    assert proxai_meta(faulted)["replay"] == {
        "replayed": False,
        "reason": "the request was answered before it reached the replay (a fault rule)",
    }
    m = proxai_meta(replayed)["replay"]
    assert (m["replayed"], m["flow_index"], "again" in m) == (True, 1, False)
    assert proxai_meta(replayed)["usage"] == recorded["usage"]


def test_regular_mode_replays_https_with_the_upstream_stopped(tmp_path: Path) -> None:
    """Through CONNECT with mitmproxy's CA: the client asks the upstream's https URL, the replay
    answers without connecting to it."""
    with FakeUpstream(tls=True, time_scale=0.02) as up:
        t = tag()
        with running_mitmdump(up.url, mode="regular", workdir=tmp_path / "record") as md:
            first = _ask_tools(md, t)
            [recorded] = _flows(md, t, 1)
        url = up.url
    seen = len(up.requests)
    with running_mitmdump(
        url, mode="regular", workdir=tmp_path / "replay", options={"proxai_replay": str(md.flow_path)}
    ) as rp:
        t = tag()
        again = _ask_tools(rp, t)
        [f] = _flows(rp, t, 1)
    assert again.model_dump() == first.model_dump()
    assert len(up.requests) == seen
    assert f.request.pretty_url == recorded.request.pretty_url  # the client's URL, as it asked
    assert proxai_meta(f)["replay"]["replayed"] is True and proxai_meta(f)["outcome"] == "completed"


def _reset(md: Mitmdump, t: str) -> tuple[str, str]:
    seen: list[str] = []
    with (
        pytest.raises(Exception) as err,
        anthropic_client(md, t).messages.stream(model="reset", max_tokens=64, messages=ASK) as s,
    ):
        seen.extend(s.text_stream)
    return type(err.value).__name__, "".join(seen)


def test_a_recorded_connection_reset_is_reset_again(live: FakeUpstream, tmp_path: Path) -> None:
    flows, [recorded], (kind, text) = _record(live, tmp_path, _reset, 1)
    assert recorded["outcome"] == "error" and recorded["error"]["kind"] == "connection"
    with _replay(live.url, tmp_path, flows) as md:
        t = tag()
        assert _reset(md, t) == (kind, text)
        [f] = _flows(md, t, 1)
    m = proxai_meta(f)
    assert m["replay"]["replayed"] is True
    assert (m["outcome"], m["error"]["kind"], m["text_bytes"]) == ("error", "connection", len(text.encode()))
