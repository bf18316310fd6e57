"""The routes file refuses header injection (a control character in any value) and a credential
anywhere in the upstream URL, with an error naming the line and never echoing the value."""

from __future__ import annotations

import pytest

from proxai.core.errors import ConfigError
from proxai.translate.routes import parse_routes

BASE = (
    '[[route]]\nname = "r"\nmatch = {{ path = "/v1/messages", host = "{host}", model = "{model}" }}\n'
    'upstream = "{upstream}"\nprotocol = "anthropic_messages"\nanthropic_version = "{version}"\n'
)
OK = {
    "host": "api.example.com",
    "model": "claude-*",
    "upstream": "https://h.example",
    "version": "2023-06-01",
}


def _routes(**over: str) -> str:
    return BASE.format(**{**OK, **over})


def test_the_base_file_is_valid() -> None:
    assert len(parse_routes(_routes())) == 1


@pytest.mark.parametrize(
    ("field", "line", "value"),
    [
        ("version", 6, "2023-06-01\\r\\nx-api-key: PLANTEDinjected"),
        ("version", 6, "2023-06-01\\nx-evil: 1"),
        ("model", 3, "claude-\\u001b]52;c;UExBTlRFRA==\\u0007"),
        ("host", 3, "api.example.com\\r\\nHost: evil"),
        ("version", 6, "\\u0085next-line"),
        ("version", 6, "tab\\there"),
    ],
)
def test_control_characters_refused(field: str, line: int, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_routes(_routes(**{field: value}))
    msg = str(info.value)
    assert f"line {line}," in msg and "control characters" in msg
    assert "PLANTED" not in msg and "evil" not in msg


def test_control_character_in_a_name_refused() -> None:
    with pytest.raises(ConfigError) as info:
        parse_routes('[[route]]\n"na\\u001bme" = 1\nupstream = "http://h/v1"\nprotocol = "openai_chat"\n')
    # the route's table line; the name is shown escaped, never as a raw escape sequence
    assert "line 1, field route[0].na\\x1bme: a name must not contain control characters" in str(info.value)


@pytest.mark.parametrize(
    "upstream",
    [
        "https://user:PLANTEDpass@h.example/v1",
        "https://h.example/v1?api-key=PLANTEDazurekey",
        "https://h.example/v1/sk-proj-PLANTEDinpath000/x",
        "https://h.example/v1/AIzaSyPLANTEDgooglekeyinpath0000",
        "https://h.example/v1;api_key=PLANTEDmatrix",
        "https://h.example/v1/key%3DPLANTEDencoded",
        "https://h.example/deployments/x/Bearer%20PLANTEDbearertoken000",
    ],
)
def test_credentials_in_the_upstream_url_refused(upstream: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_routes(_routes(upstream=upstream))
    msg = str(info.value)
    assert "line 4, field route[0].upstream" in msg and "PLANTED" not in msg


def test_ordinary_upstream_paths_accepted() -> None:
    for up in ("https://h.example/openai/deployments/gpt-4o", "http://127.0.0.1:9000/v1", "https://h/api/v2"):
        assert parse_routes(_routes(upstream=up)).routes[0].upstream == up
