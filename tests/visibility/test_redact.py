"""proxai.safety.redact: names, values, URLs, JSON / SSE / form bodies, metadata, cookies, bounds."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxai.safety.redact import (
    REDACTED,
    is_secret_name,
    redact_body,
    redact_cookie_header,
    redact_headers,
    redact_metadata,
    redact_set_cookie,
    redact_text,
    redact_url,
    truncate_body,
)


@pytest.mark.parametrize(
    "name",
    [
        "authorization",
        "Proxy-Authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "api_key",
        "apiKey",
        "client_secret",
        "accessToken",
        "refresh_token",
        "password",
        "X-Auth-Token",
        "key",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "max_tokens",
        "input_tokens",
        "cache_read_tokens",
        "content-type",
        "anthropic-version",
        "model",
        "monkey",
    ],
)
def test_ordinary_names(name: str) -> None:
    assert not is_secret_name(name)


def test_text_tokens() -> None:
    text = (
        "keys: sk-ant-api03-AbCdEf123456, sk-proj-ZZZ999yyy888, AIzaSyA-abcdefghijklmnopqrstuv, "
        "ghp_abcdefghijklmnopqrstuvwx, Bearer abcdefghijklmnop12345, OPENAI_API_KEY=plainvalue7"
    )
    assert redact_text(text) == (
        f"keys: {REDACTED}, {REDACTED}, {REDACTED}, {REDACTED}, Bearer {REDACTED}, OPENAI_API_KEY={REDACTED}"
    )


def test_text_leaves_prose_alone() -> None:
    text = "The basic idea: a key insight is that max_tokens=100 is fine; the bearer of news."
    assert redact_text(text) == text


def test_url() -> None:
    url = "https://user:pw@api.example.com/v1beta/models/m:stream?alt=sse&key=AIzaSyPLNT&Signature=abc#frag"
    assert redact_url(url) == (
        "https://[REDACTED]@api.example.com/v1beta/models/m:stream?alt=sse&key=[REDACTED]&Signature=[REDACTED]#frag"
    )
    assert redact_url("/v1/messages") == "/v1/messages"
    assert redact_url("/v1/chat/completions?api-version=2024-10-21&api-key=zzz") == (
        "/v1/chat/completions?api-version=2024-10-21&api-key=[REDACTED]"
    )


def test_headers() -> None:
    fields = [
        (b"Authorization", b"Bearer sk-PLNTabcdef"),
        (b"x-api-key", b"PLNTkey"),
        (b"Cookie", b"sid=PLNTsid; theme=dark"),
        (b"content-type", b"application/json"),
        (b"x-trace", b"sk-ant-PLNTtrace123"),
    ]
    assert redact_headers(fields) == [
        (b"Authorization", b"[REDACTED]"),
        (b"x-api-key", b"[REDACTED]"),
        (b"Cookie", b"sid=[REDACTED]; theme=[REDACTED]"),
        (b"content-type", b"application/json"),
        (b"x-trace", b"[REDACTED]"),
    ]


def test_cookies() -> None:
    assert redact_cookie_header("a=1; b=2") == "a=[REDACTED]; b=[REDACTED]"
    assert redact_set_cookie("sid=abc; Path=/; HttpOnly") == "sid=[REDACTED]; Path=/; HttpOnly"


def test_json_body() -> None:
    body = orjson.dumps(
        {
            "model": "m",
            "max_tokens": 5,
            "api_key": "PLNT1",
            "metadata": {"user_token": "PLNT2", "n": 1},
            "messages": [{"role": "user", "content": "my key is sk-ant-PLNT3xyz"}],
        }
    )
    res = redact_body(body, "application/json")
    assert res.changed
    assert orjson.loads(res.data) == {
        "model": "m",
        "max_tokens": 5,
        "api_key": REDACTED,
        "metadata": {"user_token": REDACTED, "n": 1},
        "messages": [{"role": "user", "content": f"my key is {REDACTED}"}],
    }


def test_json_body_unchanged_is_identical() -> None:
    body = b'{"model": "m",   "max_tokens": 5}'
    res = redact_body(body, "application/json")
    assert res == type(res)(body, False)


def test_sse_body_keeps_framing() -> None:
    body = (
        b'event: content_block_delta\r\ndata: {"type":"x","delta":{"text":"sk-ant-PLNT4abc"}}\r\n\r\n'
        b'data: {"secret":"PLNT5"}\n\n'
        b"data: [DONE]\n\n"
    )
    res = redact_body(body, "text/event-stream; charset=utf-8")
    assert res.data == (
        b'event: content_block_delta\r\ndata: {"type":"x","delta":{"text":"[REDACTED]"}}\r\n\r\n'
        b'data: {"secret":"[REDACTED]"}\n\n'
        b"data: [DONE]\n\n"
    )


def test_form_body() -> None:
    res = redact_body(b"grant_type=x&client_secret=PLNT6&scope=a", "application/x-www-form-urlencoded")
    assert res.data == b"grant_type=x&client_secret=[REDACTED]&scope=a"


def test_binary_body() -> None:
    res = redact_body(b"\xff\xfe sk-ant-PLNT7abcdef \x00", "application/octet-stream")
    assert res.data == b"\xff\xfe [REDACTED] \x00"


def test_metadata() -> None:
    meta = {
        "proxai": {
            "original_url": "https://h/v1/messages?key=PLNT8",
            "usage": {"input_tokens": 3},
            "auth_token": "PLNT9",
            "tail": b"data: sk-PLNT10abc",
            "nested": [{"password": "PLNT11"}],
        }
    }
    assert redact_metadata(meta) == {
        "proxai": {
            "original_url": "https://h/v1/messages?key=[REDACTED]",
            "usage": {"input_tokens": 3},
            "auth_token": REDACTED,
            "tail": b"data: [REDACTED]",
            "nested": [{"password": REDACTED}],
        }
    }
    assert "PLNT" not in repr(redact_metadata(meta))


def test_deep_nesting_is_bounded() -> None:
    deep: object = "sk-PLNTdeep123"
    for _ in range(200):
        deep = [deep]
    out = redact_metadata({"x": deep})
    assert "PLNT" not in repr(out)


def test_truncate() -> None:
    assert truncate_body(b"abcdef", 0) == (b"abcdef", 0)
    assert truncate_body(b"abcdef", 10) == (b"abcdef", 0)
    assert truncate_body(b"abcdef", 4) == (b"abcd\n[... 2 bytes truncated by proxai export]\n", 2)


def test_large_inputs_are_linear_enough() -> None:
    # A megabyte-scale base64-like run and many short words: must finish (regex stays linear).
    big = "A" * 2_000_000 + " " + "ab=c " * 200_000
    assert redact_text(big) == big


CONTENT_TYPES = [
    "application/json",
    "text/event-stream",
    "application/x-www-form-urlencoded",
    "text/plain",
    None,
]


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=2000), ct=st.sampled_from(CONTENT_TYPES))
def test_arbitrary_bodies_never_raise(data: bytes, ct: str | None) -> None:
    assert isinstance(redact_body(data, ct).data, bytes)


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.text(max_size=200),
    suffix=st.text(max_size=200),
    ct=st.sampled_from(CONTENT_TYPES),
)
def test_a_key_anywhere_in_text_is_removed(prefix: str, suffix: str, ct: str | None) -> None:
    secret = "sk-ant-api03-PLNTprop0123456789"
    # The key as a JSON string value, and as raw text between arbitrary characters.
    body = orjson.dumps({"messages": [{"role": "user", "content": prefix + " " + secret + " " + suffix}]})
    assert b"PLNTprop" not in redact_body(body, ct).data
    raw = (prefix + " " + secret + " " + suffix).encode()
    assert b"PLNTprop" not in redact_body(raw, ct).data
