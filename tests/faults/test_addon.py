"""The fault shell under ``mitmproxy.test.taddons``: the option, the command, an answered HTTP error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import exceptions, http
from mitmproxy.test import taddons, tflow, tutils

from proxai.mitm.addon import ProxAI


@pytest.fixture
def tctx() -> Iterator[Any]:
    a = ProxAI()
    with taddons.context(a) as ctx:
        ctx.addon = a
        yield ctx


def _flow(path: str = "/v1/messages", header: str | None = None) -> http.HTTPFlow:
    req = tutils.treq(method=b"POST", path=path.encode(), content=b'{"model":"m","stream":true}')
    if header:
        req.headers["x-fault"] = header
    f = tflow.tflow(req=req)
    f.response = None
    return f


def _run(a: ProxAI, f: http.HTTPFlow) -> None:
    a.request(f)  # the fault rules' part too
    if f.response is not None:
        a.responseheaders(f)
        a.response(f)


def test_a_bad_option_is_refused(tctx: Any, tmp_path: Path) -> None:
    with pytest.raises(exceptions.OptionsError, match="proxai_faults: fault rule 'stall': a stall fault"):
        tctx.configure(tctx.addon, proxai_faults="stall")
    with pytest.raises(exceptions.OptionsError, match="filter '~nonsense'"):
        tctx.configure(tctx.addon, proxai_faults="reset filter=~nonsense")
    bad = tmp_path / "f.toml"
    bad.write_text('[[fault]]\nfault = "slow"\n')
    with pytest.raises(exceptions.OptionsError, match="a slow fault needs rate=R"):
        tctx.configure(tctx.addon, proxai_faults=str(bad))


def test_http_error_answers_in_the_clients_protocol(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    tctx.configure(a, proxai_faults='http_error error=rate_limited count=1 filter="~hq x-fault:.go"')
    plain = _flow()
    _run(a, plain)
    assert plain.response is None and "extra" not in plain.metadata["proxai"]  # the filter did not match
    f = _flow(header="go")
    _run(a, f)
    assert f.response is not None and f.response.status_code == 429
    assert f.response.headers["retry-after"] == "2"
    assert orjson.loads(f.response.content or b"")["error"]["type"] == "rate_limit_error"
    meta = f.metadata["proxai"]
    assert meta["error"]["kind"] == "rate_limited" and meta["error"]["source"] == "injected"
    assert meta["extra"]["fault"]["injected"] is True
    assert f.comment.startswith("error: rate_limited (HTTP 429) · injected fault http_error · anthropic")
    again = _flow(header="go")
    _run(a, again)
    assert again.response is None  # count=1: the next matching flow is left alone


def test_openai_http_error_and_status_override(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    tctx.configure(a, proxai_faults="http_error error=server status=502 retry_after=1.5")
    f = _flow("/v1/chat/completions")
    _run(a, f)
    assert f.response is not None and f.response.status_code == 502
    assert f.response.headers["retry-after"] == "1.5"
    body = orjson.loads(f.response.content or b"")
    assert body == {
        "error": {
            "message": "The server had an error while processing your request. Sorry about that!",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    }


def test_command_arms_lists_and_clears(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    assert tctx.command(a.faults.fault, "list") == "proxai: no fault rules"
    assert tctx.command(a.faults.fault, "http_error count=1") == "proxai: armed http_error count=1"
    assert tctx.command(a.faults.fault, "list") == "http_error count=1 (left 1, chosen 0)"
    f = _flow()
    _run(a, f)
    assert f.response is not None and f.response.status_code == 529
    assert tctx.command(a.faults.fault, "list") == "http_error count=1 (left 0, chosen 1)"
    with pytest.raises(exceptions.CommandError, match="a slow fault needs rate=R"):
        tctx.command(a.faults.fault, "slow")
    assert tctx.command(a.faults.fault, "clear") == "proxai: command fault rules cleared"
    assert tctx.command(a.faults.fault, "list") == "proxai: no fault rules"


def test_a_stream_fault_on_a_buffered_response_says_it_did_not_apply(tctx: Any) -> None:
    a: ProxAI = tctx.addon
    tctx.configure(a, proxai_faults="truncate after_events=2")
    f = _flow()
    a.request(f)
    f.response = tutils.tresp(content=b'{"type":"message"}')
    f.response.headers["content-type"] = "application/json"
    a.responseheaders(f)
    a.response(f)
    fault = f.metadata["proxai"]["extra"]["fault"]
    assert fault == {
        "fault": "truncate",
        "rule": "truncate after_events=2",
        "injected": False,
        "reason": "the response is not a stream ProxAI carries",
    }
