"""docs/usage.md's regular-mode recipe works as written: only environment variables, no code changes.

A fresh Python process with ``HTTPS_PROXY`` and ``SSL_CERT_FILE`` (mitmproxy's CA) runs the stock
``openai`` and ``anthropic`` clients against the TLS upstream; mitmdump intercepts through CONNECT.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from .harness import TEST_HEADER, Mitmdump, proxai_meta, tag

pytestmark = pytest.mark.e2e

SCRIPT = textwrap.dedent(
    """
    import sys, anthropic, openai
    url, header, t1, t2 = sys.argv[1:5]
    msgs = [{"role": "user", "content": "hi"}]
    oc = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, default_headers={header: t1})
    with oc.chat.completions.stream(model="text", messages=msgs) as s:
        print(s.get_final_completion().choices[0].finish_reason)
    ac = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0, default_headers={header: t2})
    with ac.messages.stream(model="parallel_tools", max_tokens=64, messages=msgs) as s:
        print(s.get_final_message().stop_reason)
    """
)


def test_https_proxy_and_ssl_cert_file(mitm_regular: Mitmdump) -> None:
    md = mitm_regular
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "http_proxy", "all_proxy")}
    env["HTTPS_PROXY"] = md.proxy_url
    env["SSL_CERT_FILE"] = str(md.ca_path)
    t1, t2 = tag(), tag()
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, md.upstream_url, TEST_HEADER, t1, t2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["stop", "tool_use"]
    assert proxai_meta(md.wait_flow(t1))["outcome"] == "completed"
    m = proxai_meta(md.wait_flow(t2))
    assert m["outcome"] == "completed" and len(m["tool_calls"]) == 2
