"""`otlp_proto` messages to spans: the Collector's Kafka exporter's default encoding, one
`ExportTraceServiceRequest` in the protobuf binary format per message, parsed by protobuf
with the OpenTelemetry definitions (`opentelemetry-proto`, the `otlp` extra).

`read_proto` parses a message and walks it once: spans of the kinds the mapping reads
become `Span` records with their attributes as Python values; every other span is only
counted by kind (and its trace id kept when it is a root, `spans.local_root`). Nothing
here keeps state.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from ragstream.events import DecodeError
from ragstream.events.rejections import sized
from ragstream.traces.conventions import TraceMapping
from ragstream.traces.spans import READ_KINDS, IdNames, Span, SpanBatch, local_root

__all__ = ["read_proto", "value_of"]

_ID_NAMES: IdNames = ("trace_id", "span_id", "parent_span_id")


def read_proto(value: bytes, mapping: TraceMapping) -> SpanBatch:
    """The spans of an `otlp_proto` message the mapping reads, the others counted;
    `DecodeError` (`empty`, `too_large`, `bad_protobuf`, or `schema` for a request without
    resource spans: the exporter never sends one, so it is another message on the topic)."""
    sized(value, mapping.max_message_bytes)
    try:
        request: ExportTraceServiceRequest = ExportTraceServiceRequest.FromString(value)
    except (ProtobufDecodeError, RuntimeError, ValueError) as error:
        # upb raises DecodeError; RuntimeError on recursion limits
        raise DecodeError("bad_protobuf", f"not an ExportTraceServiceRequest: {error}") from None
    if not request.resource_spans:
        raise DecodeError("schema", "no resource spans: not an OTLP traces request")
    return walk(request, mapping)


def walk(request: ExportTraceServiceRequest, mapping: TraceMapping) -> SpanBatch:
    """The spans the mapping reads, the other spans counted (see the module docstring)."""
    out = SpanBatch()
    kind_key = mapping.span_kind
    for r, resource_spans in enumerate(request.resource_spans):
        resource: dict[str, Any] | None = None
        for s, scope_spans in enumerate(resource_spans.scope_spans):
            for i, span in enumerate(scope_spans.spans):
                attributes = span.attributes
                kind: str | None = None
                for kv in attributes:
                    if kv.key == kind_key:
                        raw = value_of(kv.value)
                        kind = raw.upper() if isinstance(raw, str) else "other"
                        break
                root = local_root(span.parent_span_id, span.flags, span.kind)
                if kind not in READ_KINDS:
                    out.skip(kind, span.trace_id.hex() if root else "")
                    continue
                where = f"resource_spans.{r}.scope_spans.{s}.spans.{i}"
                trace_id, span_id = span.trace_id.hex(), span.span_id.hex()
                parent_id = span.parent_span_id.hex()
                if not out.ids_valid(trace_id, span_id, parent_id, where, _ID_NAMES):
                    continue
                if resource is None:
                    resource = _attributes(resource_spans.resource.attributes)
                nanos = span.end_time_unix_nano or span.start_time_unix_nano
                out.spans.append(
                    Span(
                        trace_id=trace_id,
                        span_id=span_id,
                        parent_id=parent_id,
                        root=root,
                        kind=kind,
                        end=nanos / 1e9,
                        attributes=_attributes(attributes),
                        resource=resource,
                        where=where,
                    )
                )
    return out


def _attributes(attributes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    kv: KeyValue
    for kv in attributes:
        out[kv.key] = value_of(kv.value)  # a repeated key: the last wins
    return out


def value_of(value: AnyValue) -> Any:
    """An attribute value as Python: str, bool, int, float, bytes, list or dict (None when
    empty)."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which is None:
        return None
    if which == "int_value":
        return value.int_value
    if which == "double_value":
        return value.double_value
    if which == "bool_value":
        return value.bool_value
    if which == "array_value":
        return [value_of(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return value.bytes_value
    return None
