"""`otlp_json` messages to spans: the Collector's Kafka exporter with `encoding: otlp_json`
writes each `ExportTraceServiceRequest` in OTLP/JSON, the JSON encoding of the OTLP
specification -- protobuf's JSON mapping of the same messages with lowerCamelCase keys,
trace and span ids as hex strings (not base64), enums as integers, 64-bit integers as
decimal strings (numbers are read too, as protobuf's mapping reads them).

The message is parsed as strict JSON (msgspec, after the same UTF-8 and depth guard as
events) and walked once, as `otlp_proto.walk` walks the protobuf message, into the same
`SpanBatch`. Fields the mapping reads are checked (a wrong type or a malformed id is
`schema`, naming the field); unknown fields are ignored, as the specification requires.
Pure: no protobuf, so this format needs no extra.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Mapping
from typing import Any

import msgspec

from ragstream.events import DecodeError
from ragstream.events.guard import readable
from ragstream.events.rejections import sized
from ragstream.traces.conventions import TraceMapping
from ragstream.traces.spans import READ_KINDS, IdNames, Span, SpanBatch, local_root

__all__ = ["read_json"]

_decode = msgspec.json.Decoder().decode
_ID_NAMES: IdNames = ("traceId", "spanId", "parentSpanId")


class _SchemaError(ValueError):
    pass


def read_json(value: bytes, mapping: TraceMapping) -> SpanBatch:
    """The spans of an `otlp_json` message the mapping reads, the others counted;
    `DecodeError` (`empty`, `too_large`, `bad_json`, `not_object`, `schema`)."""
    sized(value, mapping.max_message_bytes)
    if not readable(value):
        raise DecodeError("bad_json", "invalid UTF-8, or nested more than 200 levels deep")
    try:
        data = _decode(value)
    except (msgspec.DecodeError, RecursionError) as error:
        raise DecodeError("bad_json", str(error)) from None
    if not isinstance(data, dict):
        raise DecodeError("not_object", "an OTLP/JSON request is a JSON object")
    try:
        return _walk(data, mapping)
    except _SchemaError as error:
        raise DecodeError("schema", str(error)) from None


def _walk(data: Mapping[str, Any], mapping: TraceMapping) -> SpanBatch:
    resource_spans_list = _list(data, "resourceSpans", "")
    if not resource_spans_list:
        raise _SchemaError("no resourceSpans: not an OTLP traces request")
    out = SpanBatch()
    kind_key = mapping.span_kind
    for r, resource_spans in enumerate(resource_spans_list):
        where_r = f"resourceSpans.{r}"
        _object(resource_spans, where_r)
        resource: dict[str, Any] | None = None
        for s, scope_spans in enumerate(_list(resource_spans, "scopeSpans", where_r)):
            where_s = f"{where_r}.scopeSpans.{s}"
            _object(scope_spans, where_s)
            for i, span in enumerate(_list(scope_spans, "spans", where_s)):
                where = f"{where_s}.spans.{i}"
                _object(span, where)
                raw_attributes = _list(span, "attributes", where)
                kind: str | None = None
                for kv in raw_attributes:
                    if isinstance(kv, dict) and kv.get("key") == kind_key:
                        raw = _any(kv.get("value"), f"{where}.attributes")
                        kind = raw.upper() if isinstance(raw, str) else "other"
                        break
                parent = _hex(span.get("parentSpanId"), f"{where}.parentSpanId")
                trace_id = _hex(span.get("traceId"), f"{where}.traceId")
                root = not parent or local_root(
                    parent, _flags(span.get("flags"), where), _kind(span.get("kind"))
                )
                if kind not in READ_KINDS:
                    out.skip(kind, trace_id if root else "")
                    continue
                span_id = _hex(span.get("spanId"), f"{where}.spanId")
                if not out.ids_valid(trace_id, span_id, parent, where, _ID_NAMES):
                    continue
                if resource is None:
                    holder = resource_spans.get("resource") or {}
                    _object(holder, f"{where_r}.resource")
                    resource = _attributes(
                        _list(holder, "attributes", f"{where_r}.resource"), f"{where_r}.resource"
                    )
                nanos = _nanos(span.get("endTimeUnixNano"), f"{where}.endTimeUnixNano") or (
                    _nanos(span.get("startTimeUnixNano"), f"{where}.startTimeUnixNano")
                )
                out.spans.append(
                    Span(
                        trace_id=trace_id,
                        span_id=span_id,
                        parent_id=parent,
                        root=root,
                        kind=kind,
                        end=nanos / 1e9,
                        attributes=_attributes(raw_attributes, f"{where}.attributes"),
                        resource=resource,
                        where=where,
                    )
                )
    return out


def _object(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise _SchemaError(f"{where}: an object is expected")


def _list(parent: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _SchemaError(f"{where + '.' if where else ''}{key}: an array is expected")
    return value


def _hex(value: Any, where: str) -> str:
    """A trace or span id: hex digits, lowercased; empty when absent."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise _SchemaError(f"{where}: a hex string is expected")
    try:
        return binascii.a2b_hex(value).hex()
    except (binascii.Error, ValueError):
        raise _SchemaError(f"{where}: not a hex string") from None


def _nanos(value: Any, where: str) -> int:
    """A fixed64 time: a decimal string or an integer (0 when absent)."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit() and value.isascii():
        return int(value)
    raise _SchemaError(f"{where}: an unsigned integer (or its decimal string) is expected")


def _flags(value: Any, where: str) -> int:
    """A span's fixed32 `flags`: a number (or its decimal string); 0 when absent."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**32:
        return value
    if isinstance(value, str) and value.isdigit() and value.isascii() and int(value) < 2**32:
        return int(value)
    raise _SchemaError(f"{where}.flags: an unsigned 32-bit integer is expected")


_KINDS = {"SPAN_KIND_SERVER": 2}


def _kind(value: Any) -> int:
    """A span's OTLP kind, an integer or its enum name (0 for the names `local_root` does
    not look at)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return _KINDS.get(value, 0) if isinstance(value, str) else 0


def _attributes(items: list[Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n, kv in enumerate(items):
        if not isinstance(kv, dict) or not isinstance(kv.get("key", ""), str):
            raise _SchemaError(f"{where}.{n}: a key-value object is expected")
        try:
            out[kv.get("key", "")] = _any(kv.get("value"), "")
        except _SchemaError as error:  # its place, written out only when it is needed
            raise _SchemaError(f"{where}.{n}.value{error}") from None
    return out


def _any(value: Any, where: str) -> Any:
    """An AnyValue as Python, as `otlp_proto.value_of` gives it; every error's detail
    starts with `where` (so a caller may pass "" and put the place in front)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _SchemaError(f"{where}: an AnyValue object is expected")
    if "stringValue" in value:
        text = value["stringValue"]
        if not isinstance(text, str):
            raise _SchemaError(f"{where}.stringValue: a string is expected")
        return text
    if "intValue" in value:
        number = value["intValue"]
        if isinstance(number, str):
            try:
                number = int(number)
            except ValueError:
                raise _SchemaError(f"{where}.intValue: an integer is expected") from None
        if not isinstance(number, int) or isinstance(number, bool):
            raise _SchemaError(f"{where}.intValue: an integer is expected")
        if not -(2**63) <= number < 2**63:
            raise _SchemaError(f"{where}.intValue: out of the int64 range")
        return number
    if "doubleValue" in value:
        return _double(value["doubleValue"], f"{where}.doubleValue")
    if "boolValue" in value:
        flag = value["boolValue"]
        if not isinstance(flag, bool):
            raise _SchemaError(f"{where}.boolValue: true or false is expected")
        return flag
    if "arrayValue" in value:
        array = value["arrayValue"] or {}
        _object(array, f"{where}.arrayValue")
        values = _list(array, "values", f"{where}.arrayValue")
        return [_any(v, f"{where}.arrayValue.values.{n}") for n, v in enumerate(values)]
    if "kvlistValue" in value:
        kvlist = value["kvlistValue"] or {}
        _object(kvlist, f"{where}.kvlistValue")
        return _attributes(_list(kvlist, "values", f"{where}.kvlistValue"), f"{where}.kvlist")
    if "bytesValue" in value:
        data = value["bytesValue"]
        try:
            return base64.b64decode(data, validate=True) if isinstance(data, str) else None
        except (binascii.Error, ValueError):
            raise _SchemaError(f"{where}.bytesValue: base64 is expected") from None
    return None


_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _double(value: Any, where: str) -> float:
    """A double: a number, or protobuf's JSON strings (`"1.5"`, `"NaN"`, `"Infinity"`)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        if value in _SPECIAL:
            return _SPECIAL[value]
        try:
            return float(value)
        except ValueError:
            pass
    raise _SchemaError(f"{where}: a number is expected")
