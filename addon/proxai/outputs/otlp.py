"""How the OpenTelemetry export is configured (docs/design/otlp.md, rule 9): the proxy's options and
the standard ``OTEL_*`` variables in, one checked ``ExportSettings`` out, or a ``ValueError`` that
names the option or variable at fault and never its value (a headers variable can hold a key).

Pure: the environment is a mapping handed in. ``proxai.mitm.otel_sdk`` builds the OpenTelemetry
SDK's exporter from the settings; where a field is ``None`` the SDK reads the variable itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

OTEL = "otel"  # proxai_otlp=otel: the receiver and its settings come from the standard variables
TRACES_PATH = "/v1/traces"
COMPRESSIONS = ("gzip", "deflate", "none")  # what the SDK's OTLP/HTTP exporter can send
PROTOCOL = "http/protobuf"  # the only OTLP protocol ProxAI exports with
URL_COMPRESSION = "gzip"  # proxai_otlp=URL without a compression variable


@dataclass(frozen=True, slots=True)
class ExportSettings:
    """What the exporter is built from."""

    # The traces URL. None: the SDK takes OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
    # OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces, else http://localhost:4318/v1/traces.
    endpoint: str | None
    # proxai_otlp_headers; the SDK adds them over the headers variable's (it reads that itself).
    headers: dict[str, str]
    compression: str  # one of COMPRESSIONS
    timeout_s: float | None  # one export's deadline, retries included; None: the SDK's (10 s)
    service_name: str  # proxai_otlp_service
    # otel: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over ProxAI's resource attributes;
    # a URL: proxai_otlp_service wins (the variables' other attributes are kept in both).
    resource_from_env: bool


def traces_url(endpoint: str) -> str:
    """The traces URL of an OTLP/HTTP endpoint: a bare ``http://host:4318`` gets ``/v1/traces``
    (like ``OTEL_EXPORTER_OTLP_ENDPOINT``); a URL with a path is used as it is."""
    scheme, sep, rest = endpoint.partition("://")
    if not sep:
        raise ValueError("not an http(s) URL")
    if scheme.lower() not in ("http", "https"):
        raise ValueError(f"OTLP over HTTP needs an http or https URL, not {scheme!r}")
    host, slash, path = rest.partition("/")
    if not host:
        raise ValueError("a URL without a host")
    if not slash or not path.strip("/"):
        return f"{scheme}://{host}{TRACES_PATH}"
    return endpoint


def parse_headers(text: str) -> dict[str, str]:
    """``key=value,key2=value2`` (the ``OTEL_EXPORTER_OTLP_HEADERS`` form, values URL-encoded). A bad
    item is named by its place, never shown: it may be a key."""
    out: dict[str, str] = {}
    for n, item in enumerate(text.split(","), 1):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"item {n} is not key=value (values URL-encoded)")
        out[unquote(key.strip())] = unquote(value.strip())
    return out


def standard(env: Mapping[str, str], name: str) -> tuple[str, str] | None:
    """(variable, value) of ``OTEL_EXPORTER_OTLP_TRACES_{name}``, else of ``OTEL_EXPORTER_OTLP_{name}``
    (the order every OpenTelemetry SDK reads them in); an empty variable counts as unset."""
    for var in (f"OTEL_EXPORTER_OTLP_TRACES_{name}", f"OTEL_EXPORTER_OTLP_{name}"):
        value = env.get(var, "").strip()
        if value:
            return var, value
    return None


def _timeout(env: Mapping[str, str]) -> float | None:
    found = standard(env, "TIMEOUT")
    if found is None:
        return None
    var, value = found
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise ValueError(f"{var}: a number of seconds above 0, not {value!r}")
    return seconds


def _compression(env: Mapping[str, str], default: str) -> str:
    found = standard(env, "COMPRESSION")
    if found is None:
        return default
    var, value = found
    if value.lower() not in COMPRESSIONS:
        raise ValueError(f"{var}: one of {', '.join(COMPRESSIONS)}, not {value!r}")
    return value.lower()


def export_settings(option: str, headers: str, service: str, env: Mapping[str, str]) -> ExportSettings | None:
    """The settings of ``proxai_otlp=option`` (``proxai_otlp_headers=headers``,
    ``proxai_otlp_service=service``) in the environment ``env``; None: no export."""
    option = option.strip()
    if not option:
        return None
    try:
        extra = parse_headers(headers)
    except ValueError as exc:
        raise ValueError(f"proxai_otlp_headers: {exc}") from None
    found = standard(env, "HEADERS")
    if found is not None:  # the SDK reads it; checked here so a bad item is an error, not a drop
        try:
            parse_headers(found[1])
        except ValueError as exc:
            raise ValueError(f"{found[0]}: {exc}") from None
    if option.lower() != OTEL:
        try:
            url = traces_url(option)
        except ValueError as exc:
            raise ValueError(f"proxai_otlp: {exc}") from None
        return ExportSettings(
            url, extra, _compression(env, URL_COMPRESSION), _timeout(env), service or "proxai", False
        )
    protocol = standard(env, "PROTOCOL")
    if protocol is not None and protocol[1].lower() != PROTOCOL:
        raise ValueError(
            f"{protocol[0]}={protocol[1]}: proxai_otlp=otel exports OTLP over HTTP ({PROTOCOL}) only"
        )
    for var in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        value = env.get(var, "").strip()
        if value:
            try:
                traces_url(value)
            except ValueError as exc:
                raise ValueError(f"{var}: {exc}") from None
            break
    return ExportSettings(None, extra, _compression(env, "none"), _timeout(env), service or "proxai", True)
