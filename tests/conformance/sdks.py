"""Feed SSE streams to the official SDKs' stream helpers and say what each did.

Python: the real ``anthropic`` / ``openai`` clients with an ``httpx2.MockTransport`` that answers
with the stream's bytes (the SDK's own HTTP, SSE and accumulator code runs). Node: the real
``@anthropic-ai/sdk`` / ``openai`` packages (``.ci/install-node-sdks``) driven by ``sdk_node.mjs``
with a ``fetch`` that answers with the same bytes, all streams in one node process. Each gives a
``Reaction``: the final object as plain data, or the class name and message of what was raised.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

HERE = Path(__file__).resolve().parent
NODE_SCRIPT = HERE / "sdk_node.mjs"
NODE_SDKS = HERE.parents[1] / ".ci" / "node-sdks"


@dataclass(frozen=True)
class Reaction:
    ok: bool
    final: Any = None  # the final object as plain data
    error: str | None = None  # the class name of what was raised
    message: str = ""


def python(kind: str, data: bytes) -> Reaction:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=data, headers={"content-type": "text/event-stream"})

    http = httpx2.Client(transport=httpx2.MockTransport(answer))
    try:
        if kind == "anthropic":
            import anthropic

            ac = anthropic.Anthropic(api_key="x", http_client=http, max_retries=0)
            with ac.messages.stream(
                model="m", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
            ) as s:
                return Reaction(True, s.get_final_message().model_dump(mode="json"))
        import openai

        oc = openai.OpenAI(api_key="x", http_client=http, max_retries=0)
        if kind == "chat":
            with oc.chat.completions.stream(model="m", messages=[{"role": "user", "content": "hi"}]) as cs:
                return Reaction(True, cs.get_final_completion().model_dump(mode="json"))
        with oc.responses.stream(model="m", input="hi") as rs:
            return Reaction(True, rs.get_final_response().model_dump(mode="json"))
    except Exception as exc:
        return Reaction(False, error=type(exc).__name__, message=str(exc))
    finally:
        http.close()


def node(cases: list[tuple[str, bytes]]) -> list[Reaction]:
    """Each ``(kind, stream)`` through the Node SDK of its protocol, in one node process."""
    exe = shutil.which("node")
    if exe is None or not (NODE_SDKS / "node_modules" / "openai").is_dir():
        raise AssertionError("node and the Node SDKs are needed: run .ci/install-node-sdks")
    with tempfile.TemporaryDirectory() as tmp:
        listed = []
        for i, (kind, data) in enumerate(cases):
            f = Path(tmp) / f"{i}.sse"
            f.write_bytes(data)
            listed.append([kind, str(f)])
        spec = Path(tmp) / "cases.json"
        spec.write_text(json.dumps(listed))
        out = subprocess.run(
            [exe, str(NODE_SCRIPT), str(spec)], capture_output=True, text=True, timeout=300, check=True
        )
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == len(cases), out.stdout + out.stderr
    return [
        Reaction(True, d["final"]) if d["ok"] else Reaction(False, error=d["error"], message=d["message"])
        for d in lines
    ]
