"""The guard for responses that are not streamed (docs/guard.md, "Non-streamed requests"): a real
mitmdump, the fake upstream's ``idle_stall`` scenario played as one JSON body after a 40 s silence
(no response headers) and ``body_stall`` (headers and half the body, then silence), and the REAL
SDKs' non-streamed calls. With ``proxai_idle_timeout`` at 1.5 s
the client gets a whole error response in its own protocol's shape at once (504 ``timeout_error``),
the upstream request is cancelled, and the flow is recorded ``error`` / ``idle_timeout``. Claude Code
falls back to such a request after a guarded stream stall, so it must not wait the stall out.
"""

from __future__ import annotations

import re
from typing import Any

import anthropic
import openai
import pytest

from tests.e2e.harness import Mitmdump, proxai_meta, tag

from .conftest import IDLE_TIMEOUT, anthropic_client, openai_client
from .test_guard_e2e import AT_ONCE, no_tracebacks, wait_closed_early

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

WAIT_RE = re.compile(
    r"ProxAI guard: upstream sent no response headers for (?P<s>\d+\.\d)s \(limit 1\.5s, "
    r"proxai_idle_timeout\); the upstream request was cancelled"
)
BODY_RE = re.compile(
    r"ProxAI guard: upstream sent no complete response body for (?P<s>\d+\.\d)s \(limit 1\.5s, "
    r"proxai_idle_timeout\); the upstream request was cancelled"
)
MESSAGES: Any = [{"role": "user", "content": "hi"}]


def _call(protocol: str, md: Mitmdump, t: str, model: str = "idle_stall") -> Exception:
    """Played ``AT_ONCE``: the upstream's only pause is the stall, so the phase the guard names
    (``headers`` or ``body``) does not depend on the machine's load."""
    try:
        if protocol == "anthropic":
            anthropic_client(md, t, **AT_ONCE).messages.create(model=model, max_tokens=50, messages=MESSAGES)
        elif protocol == "chat":
            openai_client(md, t, **AT_ONCE).chat.completions.create(model=model, messages=MESSAGES)
        else:
            openai_client(md, t, **AT_ONCE).responses.create(model=model, input="hi")
    except (anthropic.APIError, openai.APIError) as exc:
        return exc
    raise AssertionError("the non-streamed call succeeded: the guard did not answer")


def _message(protocol: str, exc: Exception) -> str:
    if protocol == "anthropic":
        assert isinstance(exc, anthropic.InternalServerError), type(exc)
        assert exc.status_code == 504
        body: Any = exc.body
        assert body["type"] == "error" and body["error"]["type"] == "timeout_error"
        return str(body["error"]["message"])
    assert isinstance(exc, openai.InternalServerError), type(exc)
    assert exc.status_code == 504
    assert exc.body["type"] == "timeout_error"  # type: ignore[index]
    return str(exc.body["message"])  # type: ignore[index]


@pytest.mark.parametrize("protocol", ["anthropic", "chat", "responses"])
@pytest.mark.parametrize(
    "silence",
    [("idle_stall", WAIT_RE, "headers"), ("body_stall", BODY_RE, "body")],
    ids=["no-headers", "headers-then-half-a-body"],
)
def test_a_silent_upstream_gets_an_error_response(
    protocol: str, silence: tuple[str, re.Pattern[str], str], g_reverse: Mitmdump, g_upstream: Any
) -> None:
    """``idle_stall``: no response headers within the limit. ``body_stall``: the headers and half
    the JSON body, then silence; the whole body is not there within the limit, counted from the
    headers."""
    model, said, phase = silence
    t = tag()
    before = g_upstream.closed_early
    message = _message(protocol, _call(protocol, g_reverse, t, model))
    m = said.fullmatch(message)
    assert m is not None, message
    assert IDLE_TIMEOUT <= float(m["s"]) < 30
    meta = proxai_meta(g_reverse.wait_flow(t))
    assert meta["outcome"] == "error"
    assert meta["error"] == {"kind": "idle_timeout", "message": message, "source": "proxy"}
    guard = meta["extra"]["guard"]
    assert guard == {
        "kind": "idle_timeout",
        "message": message,
        "phase": phase,
        "idle_s": guard["idle_s"],
        "threshold_s": IDLE_TIMEOUT,
        "injected": True,
        "path": "timer",
        "streamed": False,
    }
    assert IDLE_TIMEOUT <= guard["idle_s"] < 30
    wait_closed_early(g_upstream, before)
    no_tracebacks(g_reverse)


def test_translated_request_gets_the_error_in_the_clients_shape(g_translating: Mitmdump) -> None:
    """An Anthropic client served by a Chat upstream: the guard answers in the upstream's shape,
    which the route translates back like any upstream error."""
    t = tag()
    message = _message("anthropic", _call("anthropic", g_translating, t))
    assert WAIT_RE.fullmatch(message), message
    meta = proxai_meta(g_translating.wait_flow(t))
    assert meta["error"]["kind"] == "idle_timeout"
    assert (
        meta["client_protocol"] == "anthropic_messages"
        and meta["route"]["upstream_protocol"] == "openai_chat"
    )
    no_tracebacks(g_translating)
