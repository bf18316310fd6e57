"""The export's settings (``proxai.outputs.otlp.export_settings``), pure: the options and the standard
``OTEL_*`` variables in, checked settings or a clear error out; the error never shows a header's
value, since a headers variable holds the receiver's key."""

from __future__ import annotations

import pytest

from proxai.outputs.otlp import ExportSettings, export_settings, parse_headers, traces_url

KEY = "sk-proj-" + "S" * 40


def test_no_option_no_export() -> None:
    assert export_settings("", "", "proxai", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}) is None
    assert export_settings("  ", "", "proxai", {}) is None


def test_url_mode() -> None:
    assert export_settings("http://127.0.0.1:4318", "x-team=blue", "p7", {}) == ExportSettings(
        "http://127.0.0.1:4318/v1/traces", {"x-team": "blue"}, "gzip", None, "p7", False
    )
    env = {"OTEL_EXPORTER_OTLP_COMPRESSION": "NONE", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2.5"}
    assert export_settings("https://h/api/otel/v1/traces", "", "", env) == ExportSettings(
        "https://h/api/otel/v1/traces", {}, "none", 2.5, "proxai", False
    )
    # A URL is OTLP/HTTP whatever the protocol variable says (it is for the otel mode).
    assert export_settings("http://h:4318", "", "p", {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}) is not None


def test_otel_mode_leaves_endpoint_and_headers_to_the_sdk_and_checks_the_rest() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
        "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{KEY}",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "deflate",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "4",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
    }
    assert export_settings("OTEL", "", "proxai", env) == ExportSettings(
        None, {}, "deflate", 4.0, "proxai", True
    )
    assert export_settings("otel", "", "proxai", {}) == ExportSettings(None, {}, "none", None, "proxai", True)
    # An empty variable counts as unset, as in the SDK.
    empty = {"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}
    assert export_settings("otel", "", "proxai", empty) == ExportSettings(
        None, {}, "gzip", None, "proxai", True
    )


@pytest.mark.parametrize(
    ("option", "headers", "env", "message"),
    [
        ("ftp://c:4318", "", {}, "proxai_otlp: OTLP over HTTP needs an http or https URL, not 'ftp'"),
        ("collector:4318", "", {}, "proxai_otlp: not an http(s) URL"),
        ("http:///v1/traces", "", {}, "proxai_otlp: a URL without a host"),
        (
            "otel",
            "",
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: proxai_otlp=otel exports OTLP over HTTP (http/protobuf) only",
        ),
        (
            "otel",
            "",
            {
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            },
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json: proxai_otlp=otel exports OTLP over HTTP "
            "(http/protobuf) only",
        ),
        (
            "otel",
            "",
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4318"},
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: not an http(s) URL",
        ),
        (
            "otel",
            "",
            {"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
            "OTEL_EXPORTER_OTLP_COMPRESSION: one of gzip, deflate, none, not 'zstd'",
        ),
        (
            "http://h:4318",
            "",
            {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "10s"},
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: a number of seconds above 0, not '10s'",
        ),
        (
            "otel",
            "",
            {"OTEL_EXPORTER_OTLP_TIMEOUT": "0"},
            "OTEL_EXPORTER_OTLP_TIMEOUT: a number of seconds above 0, not '0'",
        ),
        (
            "otel",
            "",
            {"OTEL_EXPORTER_OTLP_HEADERS": f"x-a=1,Authorization Bearer {KEY}"},
            "OTEL_EXPORTER_OTLP_HEADERS: item 2 is not key=value (values URL-encoded)",
        ),
        (
            "http://h:4318",
            f"Bearer {KEY}",
            {},
            "proxai_otlp_headers: item 1 is not key=value (values URL-encoded)",
        ),
    ],
)
def test_a_bad_setting_is_named_and_a_header_never_shown(
    option: str, headers: str, env: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError) as err:
        export_settings(option, headers, "proxai", env)
    assert str(err.value) == message
    assert KEY not in str(err.value)


def test_parse_headers() -> None:
    assert parse_headers("Authorization=Basic%20abc, x-project-name=team ,") == {
        "Authorization": "Basic abc",
        "x-project-name": "team",
    }
    assert parse_headers("k=a=b") == {"k": "a=b"}
    assert parse_headers("") == {}
    with pytest.raises(ValueError, match=r"^item 1 is not key=value"):
        parse_headers("=novalue")


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
        (
            "https://otel.example.com/api/public/otel/v1/traces",
            "https://otel.example.com/api/public/otel/v1/traces",
        ),
    ],
)
def test_traces_url(endpoint: str, url: str) -> None:
    assert traces_url(endpoint) == url
