"""End to end: the real SDKs stream through a real ``mitmdump -s addon/proxai.py`` whose routes
send each client protocol to an upstream of another protocol (and to the same one with
``normalize = true``); the fake upstream plays the scenario. The SDK's final object must carry
the upstream's text, tool calls, stop class and usage; failures must raise in the SDK."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from proxai.core.model import Protocol, StopClass
from tests.e2e.harness import Mitmdump, anthropic_client, openai_client, proxai_meta, running_mitmdump, tag

from .harness import A, C, Neutral, R, render, sdk_neutral, stop_bucket, truth

pytestmark = pytest.mark.e2e

ROUTES = [(A, C), (A, R), (C, A), (C, R), (R, A), (R, C), (A, A), (C, C), (R, R)]
PATHS = {A: "/v1/messages", C: "/v1/chat/completions", R: "/v1/responses"}
SUCCESS = ["text", "parallel_tools", "thinking", "max_tokens", "refusal", "empty_tool_delta"]
FAILURE = ["error_midstream", "truncated"]


def routes_toml(upstream_url: str) -> str:
    out = []
    for up, client in ROUTES:
        normalize = "true" if up is client else "false"
        # Normalize routes map the model: a same-protocol route without a model map keeps the
        # client's body bytes but loses Content-Length (mitm/routing.py, reported to the lead).
        model_map = f'model = "normalized-{up.value}"\n' if up is client else ""
        out.append(
            f'[[route]]\nname = "{client.value}-via-{up.value}"\n'
            f'match = {{ path = "{PATHS[client]}", model = "via-{up.value}" }}\n'
            f'upstream = "{upstream_url}"\nprotocol = "{up.value}"\nnormalize = {normalize}\n{model_map}'
        )
    return "\n".join(out)


@pytest.fixture(scope="module")
def routed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    from proxai.upstream import FakeUpstream

    with FakeUpstream(time_scale=0.01) as up:
        work = tmp_path_factory.mktemp("stream-e2e")
        routes = Path(work) / "routes.toml"
        routes.write_text(routes_toml(up.url))
        with running_mitmdump(
            up.url, mode="reverse", workdir=work, options={"proxai_routes": str(routes)}
        ) as md:
            yield md


def stream_once(md: Mitmdump, up: Protocol, client: Protocol, scenario: str, test_tag: str) -> Any:
    model = f"via-{up.value}"
    headers = {"x-proxai-scenario": scenario}
    if client is A:
        ac = anthropic_client(md, test_tag)
        with ac.messages.stream(
            model=model, max_tokens=200, messages=[{"role": "user", "content": "hi"}], extra_headers=headers
        ) as s:
            return s.get_final_message()
    oc = openai_client(md, test_tag)
    if client is C:
        try:
            with oc.chat.completions.stream(
                model=model,
                messages=[{"role": "user", "content": "hi"}],
                stream_options={"include_usage": True},
                extra_headers=headers,
            ) as s:
                return s.get_final_completion()
        except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as exc:
            return exc
    try:
        with oc.responses.stream(model=model, input="hi", extra_headers=headers) as s:
            return s.get_final_response()
    except RuntimeError as exc:
        if "response.completed" in str(exc):
            return exc
        raise


def without_ids(n: Neutral) -> tuple[Any, ...]:
    return (n.text, [(name, args) for _, name, args in n.tools], stop_bucket(n.stop), n.usage)


@pytest.mark.parametrize("scenario", SUCCESS)
@pytest.mark.parametrize(("up", "client"), ROUTES, ids=[f"{u.value}->{c.value}" for u, c in ROUTES])
def test_sdk_through_mitmdump(routed: Mitmdump, up: Protocol, client: Protocol, scenario: str) -> None:
    t = tag()
    final = stream_once(routed, up, client, scenario, t)
    expect = truth(up, render(up, scenario)[0])
    got = sdk_neutral(client, final)
    if got is None:
        assert client is R and stop_bucket(expect.stop) in (StopClass.MAX_TOKENS, StopClass.REFUSAL)
    else:
        e, g = without_ids(expect), without_ids(got)
        assert g[:3] == e[:3]
        if got.usage != (None, None, None, None):
            assert g[3] == e[3]
    flow = routed.wait_flow(t)
    meta = proxai_meta(flow)
    assert meta["route"]["upstream_protocol"] == up.value
    assert meta["carrier"]["translated"] is True
    assert meta["client_protocol"] == client.value


@pytest.mark.parametrize("scenario", FAILURE)
@pytest.mark.parametrize(("up", "client"), ROUTES, ids=[f"{u.value}->{c.value}" for u, c in ROUTES])
def test_sdk_raises_through_mitmdump(routed: Mitmdump, up: Protocol, client: Protocol, scenario: str) -> None:
    with pytest.raises((anthropic.APIError, openai.APIError)) as info:
        stream_once(routed, up, client, scenario, tag())
    if scenario == "error_midstream":
        assert "verloaded" in str(info.value)
