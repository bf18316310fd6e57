"""A stream the guard ended drops the upstream events that still arrive for it.

``injection.drop_server_events`` gives that one mitmproxy ``HttpStream`` its own ``_handle_event``
(instead of a wrapper around every stream's events). Real mitmproxy objects: a stream in
``state_done`` raises on a server event; after the call it yields nothing for every server-side
event type, and client-side events still reach mitmproxy's own method.
"""

from __future__ import annotations

import pytest
from mitmproxy import options
from mitmproxy.connection import Client
from mitmproxy.http import Headers
from mitmproxy.proxy.context import Context
from mitmproxy.proxy.layers.http import HttpStream
from mitmproxy.proxy.layers.http import _events as hev

from proxai.mitm import injection


def _done_stream() -> HttpStream:
    client = Client(peername=("127.0.0.1", 1), sockname=("127.0.0.1", 2), timestamp_start=0)
    stream = HttpStream(Context(client, options.Options()), 1)
    stream.server_state = stream.state_done
    stream.client_state = stream.state_done
    return stream


SERVER_EVENTS = [
    hev.ResponseData(1, b"data: late\n\n"),
    hev.ResponseEndOfMessage(1),
    hev.ResponseTrailers(1, Headers()),
]


@pytest.mark.parametrize("event", SERVER_EVENTS, ids=lambda e: type(e).__name__)
def test_an_ended_stream_drops_late_server_events(event: hev.HttpEvent) -> None:
    stream = _done_stream()
    with pytest.raises(AssertionError, match="state_done"):
        list(stream.handle_event(event))  # what the guard must prevent
    injection.drop_server_events(stream)
    assert list(stream.handle_event(event)) == []
    assert list(stream.handle_event(event)) == []  # and keeps dropping


def test_a_late_protocol_error_is_dropped_too() -> None:
    stream = _done_stream()
    injection.drop_server_events(stream)
    late = hev.ResponseProtocolError(1, "upstream reset", hev.ErrorCode.GENERIC_SERVER_ERROR)
    assert list(stream.handle_event(late)) == []


def test_client_events_still_reach_mitmproxy_and_other_streams_are_untouched() -> None:
    stream, other = _done_stream(), _done_stream()
    injection.drop_server_events(stream)
    with pytest.raises(AssertionError, match="state_done"):
        list(stream.handle_event(hev.RequestData(1, b"x")))  # delegated to mitmproxy's method
    assert "_handle_event" not in other.__dict__
    with pytest.raises(AssertionError, match="state_done"):
        list(other.handle_event(hev.ResponseData(1, b"x")))
