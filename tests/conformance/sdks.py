"""Feed SSE streams to the official SDKs' stream helpers and say what each did.

Python: the real ``anthropic`` / ``openai`` clients with an ``httpx2.MockTransport`` that answers
with the stream's bytes (the SDK's own HTTP, SSE and accumulator code runs). Node: the real
``@anthropic-ai/sdk`` / ``openai`` packages (``.ci/install-node-sdks``) driven by ``sdk_node.mjs``
with a ``fetch`` that answers with the same bytes, all streams in one node process (``node``: a
list at once; ``NodeSession``: one stream at a time over stdin and stdout). Each gives a
``Reaction``: the final object as plain data, or the class name and message of what was raised.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx2
import pydantic

HERE = Path(__file__).resolve().parent
NODE_SCRIPT = HERE / "sdk_node.mjs"
NODE_SDKS = HERE.parents[1] / ".ci" / "node-sdks"


@dataclass(frozen=True)
class Reaction:
    ok: bool
    final: Any = None  # the final object as plain data
    error: str | None = None  # the class name of what was raised
    message: str = ""


class Answer(pydantic.BaseModel):
    """The structured answer a client parses with ``response_format=`` / ``text_format=``; on the wire
    it is ``ANSWER_FORMAT``."""

    a: int


ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}},
    "required": ["a"],
    "additionalProperties": False,
}


def python(kind: str, data: bytes | list[bytes], request: dict[str, Any] | None = None) -> Reaction:
    """``data``: the stream, or the pieces the body delivers it in. ``request``: the fields the
    client's request adds (as they go on the wire): ``tools`` are
    given to the helper as they are, a ``json_schema`` ``response_format`` (Chat), ``text.format``
    (Responses) or ``output_config`` (Anthropic) as the model class ``Answer`` (the parse helpers'
    input)."""
    extra: dict[str, Any] = {}
    if request and "tools" in request:
        extra["tools"] = request["tools"]

    def answer(request: httpx2.Request) -> httpx2.Response:
        content = data if isinstance(data, bytes) else iter(data)
        return httpx2.Response(200, content=content, headers={"content-type": "text/event-stream"})

    http = httpx2.Client(transport=httpx2.MockTransport(answer))
    try:
        if kind == "anthropic":
            import anthropic

            ac = anthropic.Anthropic(api_key="x", http_client=http, max_retries=0)
            if request and "output_config" in request:
                extra["output_format"] = Answer
            with ac.messages.stream(
                model="m", max_tokens=16, messages=[{"role": "user", "content": "hi"}], **extra
            ) as s:
                return Reaction(True, s.get_final_message().model_dump(mode="json"))
        import openai

        oc = openai.OpenAI(api_key="x", http_client=http, max_retries=0)
        if kind == "chat":
            if request and "response_format" in request:
                extra["response_format"] = Answer
            with oc.chat.completions.stream(
                model="m", messages=[{"role": "user", "content": "hi"}], **extra
            ) as cs:
                return Reaction(True, cs.get_final_completion().model_dump(mode="json"))
        if request and "text" in request:
            extra["text_format"] = Answer
        with oc.responses.stream(model="m", input="hi", **extra) as rs:
            return Reaction(True, rs.get_final_response().model_dump(mode="json"))
    except Exception as exc:
        return Reaction(False, error=type(exc).__name__, message=str(exc))
    finally:
        http.close()


def node(cases: list[tuple[str, bytes]] | list[tuple[str, bytes, dict[str, Any] | None]]) -> list[Reaction]:
    """Each ``(kind, stream)`` or ``(kind, stream, request)`` through the Node SDK of its protocol, in
    one node process; ``request``: fields added to the helper's params as they are (plain JSON)."""
    exe = _node()
    with tempfile.TemporaryDirectory() as tmp:
        listed = []
        for i, case in enumerate(cases):
            f = Path(tmp) / f"{i}.sse"
            f.write_bytes(case[1])
            listed.append([case[0], str(f), case[2] if len(case) > 2 else None])
        spec = Path(tmp) / "cases.json"
        spec.write_text(json.dumps(listed))
        out = subprocess.run(
            [exe, str(NODE_SCRIPT), str(spec)], capture_output=True, text=True, timeout=300, check=True
        )
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == len(cases), out.stdout + out.stderr
    return [_reaction(d) for d in lines]


def _node() -> str:
    exe = shutil.which("node")
    if exe is None or not (NODE_SDKS / "node_modules" / "openai").is_dir():
        raise AssertionError("node and the Node SDKs are needed: run .ci/install-node-sdks")
    return exe


def _reaction(d: dict[str, Any]) -> Reaction:
    return Reaction(True, d["final"]) if d["ok"] else Reaction(False, error=d["error"], message=d["message"])


class NodeSession:
    """One node process (``sdk_node.mjs --serve``) that reads stream after stream, for tests that make
    their streams as they go: ``react`` sends one and waits for the Node SDK's reaction (default
    request). ``close`` ends the process."""

    def __init__(self) -> None:
        self._errors: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close)
        self._proc = subprocess.Popen(
            [_node(), str(NODE_SCRIPT), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            text=True,
            encoding="utf-8",
        )

    def react(self, kind: str, chunks: list[bytes]) -> Reaction:
        """``chunks``: the stream in the pieces the body delivers."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        case = {"kind": kind, "chunks": [base64.b64encode(c).decode() for c in chunks]}
        try:
            self._proc.stdin.write(json.dumps(case) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            self._errors.seek(0)
            raise AssertionError("the node process ended: " + self._errors.read().decode(errors="replace"))
        return _reaction(json.loads(line))

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait(timeout=60)
        self._errors.close()
