"""Spans -> an OTLP ``ExportTraceServiceRequest`` in protobuf, the body of an OTLP/HTTP export
(docs/design/otlp.md).

Pure: ``proxai.otel.Span`` objects and the resource's attributes in, bytes out. The message
classes are OpenTelemetry's own (``opentelemetry-proto``), imported on first use so a proxy that
exports nothing never loads them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from proxai.otel import AttrValue, Span

SCOPE_NAME = "proxai"
CONTENT_TYPE = "application/x-protobuf"
TRACES_PATH = "/v1/traces"


def traces_url(endpoint: str) -> str:
    """The traces URL of an OTLP/HTTP endpoint: a bare ``http://host:4318`` gets ``/v1/traces``
    (like ``OTEL_EXPORTER_OTLP_ENDPOINT``); a URL with a path is used as it is."""
    scheme, sep, rest = endpoint.partition("://")
    if not sep:
        raise ValueError(f"not an http(s) URL: {endpoint!r}")
    if scheme.lower() not in ("http", "https"):
        raise ValueError(f"OTLP over HTTP needs an http or https URL, not {scheme!r}")
    host, slash, path = rest.partition("/")
    if not host:
        raise ValueError(f"no host in {endpoint!r}")
    if not slash or not path.strip("/"):
        return f"{scheme}://{host}{TRACES_PATH}"
    return endpoint


def _any_value(value: AttrValue, pb: Any) -> Any:
    common = pb.common
    if isinstance(value, bool):
        return common.AnyValue(bool_value=value)
    if isinstance(value, int):
        return common.AnyValue(int_value=value)
    if isinstance(value, float):
        return common.AnyValue(double_value=value)
    if isinstance(value, list):
        return common.AnyValue(
            array_value=common.ArrayValue(values=[common.AnyValue(string_value=v) for v in value])
        )
    return common.AnyValue(string_value=str(value))


def _attributes(attrs: Mapping[str, AttrValue], pb: Any) -> list[Any]:
    return [pb.common.KeyValue(key=k, value=_any_value(v, pb)) for k, v in attrs.items()]


class _Modules:
    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
        from opentelemetry.proto.common.v1 import common_pb2
        from opentelemetry.proto.resource.v1 import resource_pb2
        from opentelemetry.proto.trace.v1 import trace_pb2

        self.collector = trace_service_pb2
        self.common = common_pb2
        self.resource = resource_pb2
        self.trace = trace_pb2


_pb: _Modules | None = None


def _modules() -> _Modules:
    global _pb
    if _pb is None:
        _pb = _Modules()
    return _pb


def encode_request(
    spans: Sequence[Span], resource: Mapping[str, AttrValue], scope_version: str | None = None
) -> bytes:
    """One ``ExportTraceServiceRequest`` holding ``spans`` under one resource and scope."""
    pb = _modules()
    trace = pb.trace
    out = []
    for s in spans:
        status = trace.Status(
            code=trace.Status.STATUS_CODE_ERROR if s.error else trace.Status.STATUS_CODE_UNSET,
            message=s.status_message if s.error else "",
        )
        out.append(
            trace.Span(
                trace_id=s.trace_id,
                span_id=s.span_id,
                parent_span_id=s.parent_span_id or b"",
                name=s.name,
                kind=trace.Span.SPAN_KIND_CLIENT,
                start_time_unix_nano=s.start_ns,
                end_time_unix_nano=s.end_ns,
                attributes=_attributes(s.attributes, pb),
                status=status,
            )
        )
    request = pb.collector.ExportTraceServiceRequest(
        resource_spans=[
            trace.ResourceSpans(
                resource=pb.resource.Resource(attributes=_attributes(resource, pb)),
                scope_spans=[
                    trace.ScopeSpans(
                        scope=pb.common.InstrumentationScope(name=SCOPE_NAME, version=scope_version or ""),
                        spans=out,
                    )
                ],
            )
        ]
    )
    data: bytes = request.SerializeToString()
    return data
