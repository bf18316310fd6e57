"""The waiting guard's protocol (``guard_addon._upstream_protocol``): a route's upstream protocol,
else the detected one, Chat when neither names a protocol, exactly as ``Protocol(name)`` with Chat
for a ``ValueError`` reads the name."""

from __future__ import annotations

from typing import Any

import pytest
from mitmproxy.test import tflow

from proxai.core.model import Protocol
from proxai.mitm import guard_addon


def _by_the_enum(meta: dict[str, Any]) -> Protocol:
    route = meta["route"] if isinstance(meta.get("route"), dict) else {}
    try:
        return Protocol(str(route.get("upstream_protocol") or meta.get("protocol")))
    except ValueError:
        return Protocol.OPENAI_CHAT


@pytest.mark.parametrize(
    ("meta", "want"),
    [
        ({"protocol": "anthropic_messages"}, Protocol.ANTHROPIC_MESSAGES),
        ({"protocol": "openai_responses"}, Protocol.OPENAI_RESPONSES),
        (
            {"protocol": "anthropic_messages", "route": {"upstream_protocol": "openai_chat"}},
            Protocol.OPENAI_CHAT,
        ),
        (
            {"protocol": "openai_chat", "route": {"upstream_protocol": "openai_responses"}},
            Protocol.OPENAI_RESPONSES,
        ),
        ({"protocol": "openai_responses", "route": {"upstream_protocol": ""}}, Protocol.OPENAI_RESPONSES),
        ({"protocol": "openai_responses", "route": "not a dict"}, Protocol.OPENAI_RESPONSES),
        ({"protocol": Protocol.ANTHROPIC_MESSAGES}, Protocol.ANTHROPIC_MESSAGES),
        ({"protocol": "Anthropic_Messages"}, Protocol.OPENAI_CHAT),
        ({"protocol": "nothing"}, Protocol.OPENAI_CHAT),
        ({}, Protocol.OPENAI_CHAT),
    ],
)
def test_the_protocol_is_the_enums_reading(meta: dict[str, Any], want: Protocol) -> None:
    flow = tflow.tflow()
    flow.metadata["proxai"] = meta
    got = guard_addon._upstream_protocol(flow)
    assert got is want is _by_the_enum(meta)


def test_no_metadata_is_chat() -> None:
    assert guard_addon._upstream_protocol(tflow.tflow()) is Protocol.OPENAI_CHAT
