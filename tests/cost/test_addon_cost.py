"""The addon writes each flow's ``cost`` into ``flow.metadata["proxai"]`` (under ``taddons``)."""

from __future__ import annotations

from pathlib import Path

import genai_prices
import orjson
import pytest
from mitmproxy import http
from mitmproxy.test import taddons, tflow, tutils

from proxai.mitm.addon import ProxAI


def _json_flow(model: str, usage: dict[str, int]) -> http.HTTPFlow:
    req = tutils.treq(method=b"POST", path=b"/v1/chat/completions", content=b'{"stream":false}')
    f = tflow.tflow(req=req)
    body = {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
        "usage": usage,
    }
    f.response = tutils.tresp(
        status_code=200, headers=http.Headers(content_type="application/json"), content=orjson.dumps(body)
    )
    return f


@pytest.mark.parametrize("host", ["api.openai.com", "127.0.0.1"])
def test_known_model_gets_a_cost(tmp_path: Path, host: str) -> None:
    a = ProxAI()
    with taddons.context(a) as ctx:
        ctx.configure(a, proxai_diagnostics_dir=str(tmp_path))
        f = _json_flow(
            "gpt-4o-2024-08-06", {"prompt_tokens": 4000, "completion_tokens": 100, "total_tokens": 4100}
        )
        f.request.host = host
        f.request.scheme, f.request.port = ("https", 443) if host == "api.openai.com" else ("http", 9000)
        a.request(f)
        a.responseheaders(f)
        a.response(f)
    c = f.metadata["proxai"]["cost"]
    assert c["amount"] == pytest.approx((4000 * 2.5 + 100 * 10) / 1e6, abs=1e-12)
    assert (c["currency"], c["provider"], c["model"]) == ("USD", "openai", "gpt-4o")
    assert c["matched_by"] == ("api_url" if host == "api.openai.com" else "model")
    assert c["version"] == genai_prices.__version__


def test_unknown_model_gets_null_and_a_note(tmp_path: Path) -> None:
    a = ProxAI()
    with taddons.context(a) as ctx:
        ctx.configure(a, proxai_diagnostics_dir=str(tmp_path))
        f = _json_flow("house-model-7", {"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5})
        a.request(f)
        a.responseheaders(f)
        a.response(f)
    meta = f.metadata["proxai"]
    assert meta["cost"] is None
    assert meta["extra"]["notes"] == [
        f"cost: genai-prices {genai_prices.__version__} has no price for model 'house-model-7'"
    ]
