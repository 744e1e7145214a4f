"""Why a message is not an event: its reason code and detail, named in one place.

`decode_event` decodes with msgspec into the Structs of `ragstream.events.structs` (the one
schema). msgspec stops at the first problem it meets, in message order; the reasons have a
precedence instead (`ragstream.events.reasons`), so a message that fails is parsed as plain
JSON (`parse`) and `rejection` names the highest-precedence reason that holds anywhere in
it: `not_object`, `unknown_type` (or `schema` for a missing `type`), `too_large` (a list,
string or map over its cap, `oversize`), `bad_timestamp` (a `ts` or `t_doc` that is not
Unix seconds or an RFC 3339 time in range) and otherwise `schema`, with msgspec's message
and the field's path. Details name the field and never echo its value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sized
from typing import Any, Final, cast

import msgspec
from pydantic_core import from_json

from ragstream.events.limits import DEFAULT_LIMITS, Limits
from ragstream.events.reasons import DecodeError
from ragstream.events.timestamps import (
    MAX_TS,
    MAX_TS_TEXT,
    MIN_DOC_TS,
    MIN_EVENT_TS,
    RFC3339_PATTERN,
    format_rfc3339,
    parse_rfc3339,
    rfc3339_seconds,
)

__all__ = ["oversize", "parse", "rejection", "sized", "times_to_seconds"]

_MAX_DETAIL_CHARS = 300
_PLAIN = msgspec.json.Decoder()
_MILLISECONDS = "(Unix seconds before 3000-01-01; milliseconds?)"
_EVENT_TYPES: Final = ("retrieval", "answer", "feedback")
_TIMED_LISTS: Final = ("results", "qrels")
_PATTERN = re.compile(RFC3339_PATTERN)
_WHERE = re.compile(r" - at `(?:key` in `)?\$([^`]*)`$")
_INDEX = re.compile(r"\[(\d+)\]")
_MISSING = re.compile(r"Object missing required field `([^`]*)`")


def sized(data: bytes | bytearray | None, max_bytes: int) -> bytes | bytearray:
    """`data` when it is neither empty nor over ``max_bytes`` (checked first, for events
    and trace messages alike)."""
    if not data:
        raise DecodeError("empty", "empty message (null or zero-length value)")
    if len(data) > max_bytes:
        raise DecodeError("too_large", f"message is {len(data)} bytes, limit {max_bytes}")
    return data


def parse(data: bytes | bytearray, readable: bool) -> Any:
    """The message as plain JSON values, or `bad_json`.

    jiter (pydantic-core's parser) decides: strict UTF-8 anywhere, unpaired surrogate
    escapes refused, at most `guard.MAX_DEPTH` levels of nesting, the last of repeated keys
    kept; NaN and Infinity literals are read as floats (the schema then refuses them where
    it reads a number) and integers of any size kept. A message the guard passed
    (`readable`: UTF-8, not too deep) is first given to msgspec's untyped decoder, which
    reads the same values (it refuses NaN literals and numbers beyond a double's range,
    which jiter then reads) in half the time.
    """
    if readable:
        try:
            return _PLAIN.decode(data)
        except (msgspec.DecodeError, RecursionError):
            pass
    try:
        return from_json(data, allow_inf_nan=True)
    except ValueError as exc:
        raise DecodeError("bad_json", f"Invalid JSON: {exc}"[:_MAX_DETAIL_CHARS]) from None


def times_to_seconds(message: dict[str, Any]) -> None:
    """Replace each RFC 3339 `ts` and `t_doc` string in range by its Unix seconds, in place,
    so that msgspec validates both forms with the same bounds; anything else is left for
    `rejection` to explain."""
    _to_seconds(message, "ts", MIN_EVENT_TS)
    for name in _TIMED_LISTS:
        items = message.get(name)
        if type(items) is list:
            for item in items:
                if type(item) is dict:
                    _to_seconds(item, "t_doc", MIN_DOC_TS)


def _to_seconds(mapping: dict[str, Any], key: str, low: float) -> None:
    text = mapping.get(key)
    if type(text) is str:
        seconds = rfc3339_seconds(text)
        if seconds is not None and low <= seconds < MAX_TS:
            mapping[key] = seconds


def rejection(message: Any, error: msgspec.ValidationError) -> DecodeError:
    """The reason a parsed message is not an event, given msgspec's first error on it.

    `message` is what `parse` returned (after `times_to_seconds`). The checks follow the
    reasons' precedence; `schema` takes msgspec's own message and path.
    """
    if type(message) is not dict:
        return DecodeError("not_object", "expected a JSON object")
    if "type" not in message:
        return DecodeError("schema", "missing field 'type' (retrieval, answer or feedback)")
    kind = message["type"]
    if kind not in _EVENT_TYPES:
        return DecodeError("unknown_type", _unknown_type(kind))
    problem = oversize(message, DEFAULT_LIMITS)
    if problem is not None:
        return DecodeError("too_large", problem)
    problem = _timestamp_problem(message)
    if problem is not None:
        return DecodeError("bad_timestamp", problem)
    return DecodeError("schema", _schema_detail(error))


def _unknown_type(kind: object) -> str:
    tag = kind if type(kind) is str else "None" if kind is None else type(kind).__name__
    expected = ", ".join(f"'{name}'" for name in _EVENT_TYPES)
    text = f"Input tag '{tag}' found using 'type' does not match any of the expected tags: "
    return (text + expected)[:_MAX_DETAIL_CHARS]


def _schema_detail(error: msgspec.ValidationError) -> str:
    """`path: message` from msgspec's `message - at `$.path``, e.g. `results.1.doc_id: ...`."""
    text, where = str(error), ""
    match = _WHERE.search(text)
    if match is not None:
        where = _INDEX.sub(r".\1", match.group(1)).lstrip(".")
        text = text[: match.start()]
    missing = _MISSING.fullmatch(text)
    if missing is not None:  # named as the other fields are: `results.0.doc_id: ...`
        where, text = ".".join(filter(None, (where, missing.group(1)))), "Field required"
    return (f"{where}: {text}" if where else text)[:_MAX_DETAIL_CHARS]


def oversize(message: dict[str, Any], limits: Limits) -> str | None:
    """The first list, string or map of the event `message` that exceeds `limits`, as a
    detail; None when all fit. Values of the wrong type are not measured (they are `schema`
    errors); fields the event's type does not have are not read."""
    ids, text = limits.max_id_chars, limits.max_text_chars
    get = message.get
    checks: list[tuple[str, Any, type, int]] = [("query_id", get("query_id"), str, ids)]
    labels = get("labels")
    checks.append(("labels", labels, dict, limits.max_labels))
    if type(labels) is dict:
        words = (*labels, *labels.values())
        checks += [("labels (key or value)", x, str, limits.max_label_chars) for x in words]
    kind = get("type")
    if kind == "retrieval":
        results, qrels = get("results"), get("qrels")
        checks.append(("results", results, list, limits.max_results))
        checks += [("doc_id", doc.get("doc_id"), str, ids) for doc in _objects(results)]
        checks.append(("query", get("query"), str, text))
        checks.append(("qrels", qrels, list, limits.max_qrels))
        checks += [("doc_id", qrel.get("doc_id"), str, ids) for qrel in _objects(qrels)]
    elif kind == "answer":
        contexts, cited = get("contexts"), get("cited_doc_ids")
        checks += [("question", get("question"), str, text), ("answer", get("answer"), str, text)]
        checks.append(("contexts", contexts, list, limits.max_contexts))
        for context in _objects(contexts):
            checks += [("doc_id", context.get("doc_id"), str, ids)]
            checks += [("text", context.get("text"), str, text)]
        checks.append(("model", get("model"), str, ids))
        checks.append(("cited_doc_ids", cited, list, limits.max_results))
        if type(cited) is list:
            checks += [("cited_doc_ids", doc_id, str, ids) for doc_id in cited]
    elif kind == "feedback":
        checks += [("doc_id", get("doc_id"), str, ids), ("source", get("source"), str, ids)]
    for name, value, kind_of, limit in checks:
        if type(value) is kind_of and len(cast("Sized", value)) > limit:
            return f"{name}: size {len(cast('Sized', value))} exceeds the limit {limit}"
    return None


def _objects(items: object) -> list[dict[str, Any]]:
    """The JSON objects among `items` when it is a list (the others are `schema` errors)."""
    if type(items) is not list:
        return []
    return [item for item in items if type(item) is dict]


def _timestamp_problem(message: dict[str, Any]) -> str | None:
    """The first `ts` or `t_doc` (in field order) that is not a valid time, as a detail."""
    if "ts" in message:
        problem = _time_problem(message["ts"], MIN_EVENT_TS, "event time")
        if problem is not None:
            return f"ts: {problem}"
    if message["type"] != "retrieval":
        return None
    for name in _TIMED_LISTS:
        items = message.get(name)
        for index, item in enumerate(items if type(items) is list else ()):
            if type(item) is dict and item.get("t_doc") is not None:
                problem = _time_problem(item["t_doc"], MIN_DOC_TS, "document time")
                if problem is not None:
                    return f"{name}.{index}.t_doc: {problem}"
    return None


def _time_problem(value: object, low: float, what: str) -> str | None:
    """What is wrong with a time: Unix seconds in [low, MAX_TS) or an RFC 3339 string."""
    if type(value) is int or type(value) is float:
        if type(value) is float and not math.isfinite(value):
            return "Input should be a finite number"
        if value < low:
            return f"Input should be greater than or equal to {low:g}"
        if value >= MAX_TS:
            return f"Input should be less than {MAX_TS:.0f} {_MILLISECONDS}"
        return None
    if type(value) is not str:
        return "expected Unix seconds (number) or an RFC 3339 date-time string"
    if len(value) > MAX_TS_TEXT:
        return f"String should have at most {MAX_TS_TEXT} characters"
    if _PATTERN.fullmatch(value) is None:
        return "not an RFC 3339 date-time with a UTC offset (e.g. 2024-05-01T12:00:00Z)"
    try:
        seconds = parse_rfc3339(value)
    except (ValueError, OverflowError) as exc:
        return str(exc)
    if not low <= seconds < MAX_TS:
        return f"{what} out of range [{format_rfc3339(low)}, 3000-01-01T00:00:00Z)"
    return None
