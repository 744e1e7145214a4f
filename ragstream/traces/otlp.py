"""OTLP trace messages to spans: the Collector's Kafka formats, read with the OpenTelemetry
protobuf definitions (`opentelemetry-proto`, the `otlp` extra).

- `otlp_proto` (the exporter's default `encoding`): one `ExportTraceServiceRequest` in the
  protobuf binary format per message, parsed by protobuf itself.
- `otlp_json`: the same request in OTLP/JSON (the OTLP specification's JSON encoding:
  lowerCamelCase keys, trace and span ids as hex strings, 64-bit integers as decimal
  strings or numbers, enums as integers). It is parsed as strict JSON, its hex ids are
  turned into the bytes protobuf's JSON mapping expects, and protobuf's `json_format`
  reads it into the same message (unknown fields ignored, as the specification requires).

Either way the request is then walked once (`read_spans`): spans of the kinds the mapping
reads (and root spans) become `Span` records with their attributes as Python values;
every other span is only counted by kind. Nothing here keeps state.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

import msgspec
from google.protobuf import json_format
from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from ragstream.events import DecodeError
from ragstream.events.guard import readable
from ragstream.traces.conventions import ANSWER_KINDS, SPAN_KINDS, TraceMapping
from ragstream.traces.spans import Span, SpanBatch

__all__ = ["decode_json", "decode_proto", "decoder_for", "read_spans", "value_of"]

_READ_KINDS = ANSWER_KINDS | {"RETRIEVER"}
_KNOWN_KINDS = frozenset(SPAN_KINDS)


def decode_proto(value: bytes, max_bytes: int) -> ExportTraceServiceRequest:
    """An `otlp_proto` message; `DecodeError` (`empty`, `too_large`, `bad_protobuf`)."""
    _check_size(value, max_bytes)
    try:
        request: ExportTraceServiceRequest = ExportTraceServiceRequest.FromString(value)
    except (ProtobufDecodeError, RuntimeError, ValueError) as error:
        # upb raises DecodeError; RuntimeError on recursion limits
        raise DecodeError("bad_protobuf", f"not an ExportTraceServiceRequest: {error}") from None
    return _with_spans(request)


def _with_spans(request: ExportTraceServiceRequest) -> ExportTraceServiceRequest:
    """A request without resource spans is some other message (the exporter never sends
    an empty one): a ragstream event or metrics on a traces topic, say."""
    if not request.resource_spans:
        raise DecodeError("schema", "no resource spans: not an OTLP traces request")
    return request


def decode_json(value: bytes, max_bytes: int) -> ExportTraceServiceRequest:
    """An `otlp_json` message; `DecodeError` (`empty`, `too_large`, `bad_json`,
    `not_object`, `schema`)."""
    _check_size(value, max_bytes)
    if not readable(value):
        raise DecodeError("bad_json", "invalid UTF-8, or nested more than 200 levels deep")
    try:
        data = msgspec.json.decode(value)
    except (msgspec.DecodeError, RecursionError) as error:
        raise DecodeError("bad_json", str(error)) from None
    if not isinstance(data, dict):
        raise DecodeError("not_object", "an OTLP/JSON request is a JSON object")
    try:
        _hex_ids_to_base64(data)
        request = ExportTraceServiceRequest()
        json_format.ParseDict(data, request, ignore_unknown_fields=True)
    except _BadIdError as error:
        raise DecodeError("schema", str(error)) from None
    except (json_format.ParseError, TypeError, ValueError, AttributeError) as error:
        detail = f"not an OTLP/JSON ExportTraceServiceRequest: {error}"
        raise DecodeError("schema", detail) from None
    return _with_spans(request)


def decoder_for(fmt: str) -> Callable[[bytes, int], ExportTraceServiceRequest]:
    """The decoder of an OTLP format (`otlp_proto`, `otlp_json`)."""
    if fmt == "otlp_proto":
        return decode_proto
    if fmt == "otlp_json":
        return decode_json
    raise ValueError(f"not an OTLP format: {fmt!r}")


def _check_size(value: bytes, max_bytes: int) -> None:
    if not value:
        raise DecodeError("empty", "the message has no value (a tombstone or zero bytes)")
    if len(value) > max_bytes:
        raise DecodeError("too_large", f"message of {len(value)} bytes exceeds {max_bytes}")


class _BadIdError(ValueError):
    pass


_ID_FIELDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


def _hex_ids_to_base64(data: dict[str, Any]) -> None:
    """OTLP/JSON writes ids as hex; protobuf's JSON mapping reads bytes as base64."""
    for r, resource_spans in enumerate(_items(data, "resourceSpans", "resource_spans")):
        for s, scope_spans in enumerate(_items(resource_spans, "scopeSpans", "scope_spans")):
            for i, span in enumerate(_items(scope_spans, "spans")):
                where = f"resourceSpans.{r}.scopeSpans.{s}.spans.{i}"
                _convert_ids(span, where)
                for j, link in enumerate(_items(span, "links")):
                    _convert_ids(link, f"{where}.links.{j}")


def _items(parent: Any, *names: str) -> list[Any]:
    if not isinstance(parent, dict):
        return []
    for name in names:
        value = parent.get(name)
        if isinstance(value, list):
            return value
    return []


def _convert_ids(item: Any, where: str) -> None:
    if not isinstance(item, dict):
        return
    for name in _ID_FIELDS:
        value = item.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise _BadIdError(f"{where}.{name}: a hex string is expected")
        try:
            item[name] = base64.b64encode(binascii.a2b_hex(value)).decode("ascii")
        except (binascii.Error, ValueError):
            raise _BadIdError(f"{where}.{name}: not a hex string") from None


# -- the walk ---------------------------------------------------------------------------------


def read_spans(request: ExportTraceServiceRequest, mapping: TraceMapping) -> SpanBatch:
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
                root = not span.parent_span_id
                if kind not in _READ_KINDS:
                    if kind is None:
                        out.skipped["none"] += 1
                    else:
                        out.skipped[kind if kind in _KNOWN_KINDS else "other"] += 1
                    if root and len(span.trace_id) == 16:
                        out.roots.append(span.trace_id.hex())
                    continue
                where = f"resource_spans.{r}.scope_spans.{s}.spans.{i}"
                if len(span.trace_id) != 16 or not any(span.trace_id):
                    out.errors.append(DecodeError("schema", f"{where}: trace_id is not 16 bytes"))
                    continue
                if len(span.span_id) != 8 or len(span.parent_span_id) not in (0, 8):
                    out.errors.append(
                        DecodeError("schema", f"{where}: span_id or parent_span_id not 8 bytes")
                    )
                    continue
                if resource is None:
                    resource = _attributes(resource_spans.resource.attributes)
                nanos = span.end_time_unix_nano or span.start_time_unix_nano
                out.spans.append(
                    Span(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
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
