"""The routes file: schema, SDK-style upstream URLs, matching, and
``ConfigError`` messages that name the line and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxai.core.errors import ConfigError
from proxai.core.model import Protocol
from proxai.translate.routes import load_routes, parse_routes

MINIMAL = """
[[route]]
match = { path = "/v1/messages" }
upstream = "http://127.0.0.1:9000/v1"
protocol = "openai_chat"
"""


def test_minimal_form(tmp_path: Path) -> None:
    f = tmp_path / "routes.toml"
    f.write_text(MINIMAL)
    table = load_routes(f)
    route = table.match("127.0.0.1", "/v1/messages", "claude-sonnet-4-5")
    assert route is not None
    assert route.name == "route1"
    assert route.protocol is Protocol.OPENAI_CHAT
    assert route.auth_env is None  # pass the client's key through
    assert route.target_url() == "http://127.0.0.1:9000/v1/chat/completions"
    assert table.match("h", "/v1/chat/completions", None) is None


@pytest.mark.parametrize(
    ("upstream", "protocol", "url"),
    [
        ("http://127.0.0.1:9000/v1", "openai_chat", "http://127.0.0.1:9000/v1/chat/completions"),
        ("https://api.openai.com/v1/", "openai_responses", "https://api.openai.com/v1/responses"),
        ("https://api.anthropic.com", "anthropic_messages", "https://api.anthropic.com/v1/messages"),
        ("http://localhost:11434/v1", "openai_chat", "http://localhost:11434/v1/chat/completions"),
    ],
)
def test_upstream_read_like_the_sdk(upstream: str, protocol: str, url: str) -> None:
    table = parse_routes(f'[[route]]\nupstream = "{upstream}"\nprotocol = "{protocol}"\n')
    assert table.routes[0].target_url() == url


def test_match_globs_and_order() -> None:
    table = parse_routes(
        """
[[route]]
name = "claude-to-local"
match = { path = "/v1/messages", model = "claude-*", host = "*.anthropic.com" }
upstream = "http://127.0.0.1:8000/v1"
protocol = "openai_chat"
model = "qwen2.5-coder"

[[route]]
name = "gpt-to-claude"
match = { path = "/v1/chat/completions" }
upstream = "https://api.anthropic.com"
protocol = "anthropic_messages"
auth = { env = "ANTHROPIC_API_KEY" }
model = { "gpt-4o*" = "claude-sonnet-4-5", "*" = "claude-haiku-4-5" }
"""
    )
    r = table.match("api.anthropic.com", "/v1/messages?beta=true", "claude-opus-4")
    assert r is not None and r.name == "claude-to-local"
    assert r.map_model("claude-opus-4") == "qwen2.5-coder"
    assert table.match("api.openai.com", "/v1/messages", "claude-opus-4") is None  # host glob
    assert table.match("api.anthropic.com", "/v1/messages", "gpt-4o") is None  # model glob
    assert table.match("api.anthropic.com", "/v1/messagesX", "claude-x") is None  # path boundary
    r2 = table.match("x", "/openai/v1/chat/completions", None)
    assert r2 is None  # a prefix, not a substring
    r3 = table.match("x", "/v1/chat/completions", "gpt-4o-mini")
    assert r3 is not None and r3.auth_env == "ANTHROPIC_API_KEY"
    assert r3.map_model("gpt-4o-mini") == "claude-sonnet-4-5"
    assert r3.map_model("o3") == "claude-haiku-4-5"


LAZY = """
[[route]]
name = "by-model"
match = { path = "/v1/messages", model = "claude-*", host = "*.anthropic.com" }
upstream = "http://127.0.0.1:8000/v1"
protocol = "openai_chat"

[[route]]
name = "by-model-too"
match = { path = "/v1/messages", model = "gpt-*" }
upstream = "http://127.0.0.1:8000/v1"
protocol = "openai_chat"

[[route]]
name = "by-path"
match = { path = "/v1/chat/completions" }
upstream = "https://api.anthropic.com"
protocol = "anthropic_messages"
"""


@pytest.mark.parametrize(
    ("host", "path", "model", "name", "asked"),
    [
        # no route's path matches: neither the host nor the model is asked for
        ("api.anthropic.com", "/v1/responses", "claude-x", None, []),
        ("api.anthropic.com", "/v1/messagesX", "claude-x", None, []),
        # a route that names no host or model: matched on its path alone
        ("api.anthropic.com", "/v1/chat/completions?x=1", "claude-x", "by-path", []),
        # the host first, then the model: each asked for once over the routes
        ("api.anthropic.com", "/v1/messages", "claude-x", "by-model", ["host", "model"]),
        ("api.anthropic.com", "/v1/messages", "gpt-4o", "by-model-too", ["host", "model"]),
        ("api.openai.com", "/v1/messages", "gpt-4o", "by-model-too", ["host", "model"]),
        ("api.openai.com", "/v1/messages", "claude-x", None, ["host", "model"]),
        ("api.anthropic.com", "/v1/messages", None, None, ["host", "model"]),
        (None, "/v1/messages", "gpt-4o", "by-model-too", ["host", "model"]),
    ],
)
def test_match_lazy_asks_only_what_a_route_names(
    host: str | None, path: str, model: str | None, name: str | None, asked: list[str]
) -> None:
    table = parse_routes(LAZY)
    seen: list[str] = []

    def host_of() -> str | None:
        seen.append("host")
        return host

    def model_of() -> str | None:
        seen.append("model")
        return model

    route = table.match_lazy(path, host_of, model_of)
    assert (route.name if route is not None else None) == name
    assert seen == asked
    plain = table.match(host, path, model)  # the same route as with every value at hand
    assert (plain.name if plain is not None else None) == name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            MINIMAL + '\n[[route]]\nupstream = "http://x/v1"\nprotocol = "openai_chatx"\n',
            "line 9, field route[1].protocol: Input should be",
        ),
        (
            MINIMAL + 'api_key = "sk-123456"\n',
            "line 6, field route[0].api_key: a key is never stored in the routes file",
        ),
        (MINIMAL + 'auth = "sk-123456"\n', 'line 6, field route[0].auth: only "pass"'),
        (MINIMAL + 'auth = { key = "sk-1" }\n', "line 6, field route[0].auth.key: only { env"),
        (
            '[[route]]\nupstream = "http://127.0.0.1:9000/v1"\nprotocol = "openai_chat"\n'
            '[route.match]\npath = "v1"\n',
            "line 5, field route[0].match.path: a path prefix starts with '/'",
        ),
        ('[[route]]\nupstream = "ftp://x"\nprotocol = "openai_chat"\n', "line 2, field route[0].upstream"),
        ('[[route]]\nupstream = "http://u:p@x/v1"\nprotocol = "openai_chat"\n', "must not carry credentials"),
        ('[[route]]\nprotocol = "openai_chat"\n', "line 1, field route[0].upstream: Field required"),
        (MINIMAL + "colour = 1\n", "line 6, field route[0].colour: Extra inputs are not permitted"),
        (
            MINIMAL + "normalize = true\n",
            "line 6, field route[0].normalize: normalize = true needs the same protocol on both sides",
        ),
        ("[[route]\n", "invalid TOML"),
        ('routes = "x"\n', "line 1, field routes: Extra inputs"),
    ],
)
def test_bad_files_name_line_and_field(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_routes(text, "routes.toml")
    assert expected in str(info.value)
    assert "sk-1" not in str(info.value)  # a key written into the file is never echoed


def test_normalize_same_protocol_is_accepted() -> None:
    table = parse_routes(MINIMAL.replace("openai_chat", "anthropic_messages") + "normalize = true\n")
    assert table.routes[0].normalize


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="cannot read it"):
        load_routes("/nonexistent/routes.toml")
