"""What the addon imports (docs/design/footprint.md): a proxy that only observes (default options,
no routes, no fault rules, no replay, no export, no request view) imports neither pydantic nor
``proxai.translate``; a routes file or a fault rule brings them in, and the routed flow translates.

Each case runs in a fresh interpreter that loads ``addon/proxai.py`` as ``mitmdump -s`` does, runs
one streamed flow through ``mitmproxy.test.taddons`` and reports which of those modules it holds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "addon" / "proxai.py"

ROUTES = """
[[route]]
name = "claude-on-chat"
match = { path = "/v1/messages" }
upstream = "http://127.0.0.1:9000/v1"
protocol = "openai_chat"
"""

CHILD = r"""
import json, runpy, sys, threading
from mitmproxy import http
from mitmproxy.test import taddons, tflow, tutils

script, options, path, body = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
MODEL = "gpt-4o-2024-08-06"
addon = runpy.run_path(script)["addons"][0]  # what mitmdump -s loads
chunks = [
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hello"}, "finish_reason": None}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}},
]
wire = b"".join(
    b"data: "
    + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": MODEL, **c}).encode()
    + b"\n\n"
    for c in chunks
) + b"data: [DONE]\n\n"
with taddons.context(addon) as ctx:
    ctx.configure(addon, **options)
    addon.running()  # as mitmdump: the price table is read by a helper process, in a thread
    for thread in threading.enumerate():
        if thread.name == "proxai-prices":
            thread.join(300)
    flow = tflow.tflow(req=tutils.treq(method=b"POST", path=path.encode(), content=body.encode()))
    addon.request(flow)
    headers = http.Headers([(b"content-type", b"text/event-stream")])
    flow.response = tutils.tresp(status_code=200, headers=headers, content=None)
    addon.responseheaders(flow)
    got = b""
    for piece in [wire[i : i + 50] for i in range(0, len(wire), 50)] + [b""]:
        out = flow.response.stream(piece)  # bytes, or a list of them (the kept body's reads)
        got += out if isinstance(out, bytes) else b"".join(out)
    addon.response(flow)
meta = flow.metadata["proxai"]
names = ("pydantic", "proxai.translate", "proxai.faults.rules", "proxai.outputs.otel")
print(json.dumps({
    "outcome": meta.get("outcome"),
    "priced": bool(meta.get("cost")),
    "client_bytes": got.decode(),
    "imported": sorted(n for n in names if n in sys.modules),
}))
"""

CHAT_BODY = '{"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}'
ANTHROPIC_BODY = (
    '{"model": "m", "stream": true, "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}'
)


def _run(tmp_path: Path, options: dict[str, object], path: str, body: str) -> dict[str, object]:
    opts = {"proxai_diagnostics_dir": str(tmp_path / "diag"), **options}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(SCRIPT), json.dumps(opts), path, body],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_an_observe_only_proxy_imports_no_pydantic_and_no_translation(tmp_path: Path) -> None:
    got = _run(tmp_path, {}, "/v1/chat/completions", CHAT_BODY)
    assert got["outcome"] == "completed" and got["priced"]  # priced without genai-prices' pydantic
    assert "Hello" in str(got["client_bytes"]) and "[DONE]" in str(got["client_bytes"])
    assert got["imported"] == []


def test_a_routes_file_brings_the_translation_and_the_routed_flow_translates(tmp_path: Path) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    got = _run(tmp_path, {"proxai_routes": str(routes)}, "/v1/messages", ANTHROPIC_BODY)
    assert got["imported"] == ["proxai.translate", "pydantic"]
    assert got["outcome"] == "completed"
    client = str(got["client_bytes"])  # the Anthropic client got Anthropic events from the Chat stream
    assert "event: message_start" in client and "event: message_stop" in client and "Hello" in client
    assert "[DONE]" not in client


@pytest.mark.parametrize("form", ["inline", "file"])
def test_a_fault_rule_brings_the_rules_reader(tmp_path: Path, form: str) -> None:
    rule = "slow rate=1000 filter='~u /nothing'"
    if form == "file":
        path = tmp_path / "faults.toml"
        path.write_text('[[fault]]\nfault = "slow"\nrate = 1000\nfilter = "~u /nothing"\n')
        rule = str(path)
    got = _run(tmp_path, {"proxai_faults": rule}, "/v1/chat/completions", CHAT_BODY)
    assert "proxai.faults.rules" in got["imported"] and "pydantic" in got["imported"]
    assert "proxai.translate" not in got["imported"]  # a fault rule needs no translation
