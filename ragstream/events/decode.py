"""Bytes to events: msgspec on the hot path, and a typed error with a fixed reason code.

`decode_event` returns the msgspec Structs of `ragstream.events.decoded`. A message msgspec
rejects goes to the pydantic reference (`EVENT_ADAPTER`), which names the reason: rejected
messages are rare, and the reason codes and details stay exactly the reference's. (Should
the reference accept a message msgspec rejected, its event is returned: the two are meant
to agree on every input, which the differential tests check.)

Reasons (usable as a Prometheus label, in order of precedence):
`empty` (null or zero-length value), `too_large` (message bytes or a size limit),
`bad_json` (not UTF-8 JSON, or a value nested in more than 200 arrays or objects;
anywhere in the message, unknown fields included), `not_object` (JSON, but not an
object), `unknown_type` (`type` is not retrieval/answer/feedback), `bad_timestamp`
(`ts`/`t_doc` malformed or out of range) and `schema` (anything else: missing or mistyped
fields, out-of-range values).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from ragstream.events.decoded import DecodedAnswer, DecodedEvent, DecodedRetrieval, to_decoded
from ragstream.events.fast import fast_decode
from ragstream.events.limits import DEFAULT_LIMITS, Limits
from ragstream.events.models import EVENT_ADAPTER, AnswerEvent, Event, RetrievalEvent

__all__ = [
    "DECODE_REASONS",
    "DecodeError",
    "DecodeReason",
    "IndexedDecodeError",
    "decode_batch",
    "decode_event",
    "decode_reference",
    "decode_rejected",
]

DecodeReason = Literal[
    "empty", "too_large", "bad_json", "not_object", "unknown_type", "bad_timestamp", "schema"
]
DECODE_REASONS: tuple[DecodeReason, ...] = get_args(DecodeReason)
"""Every reason code, e.g. to pre-create metric series."""

_MAX_DETAIL_CHARS = 300
_TS_BRANCHES = ("unix_seconds", "rfc3339")
_TOO_LONG = frozenset({"too_long", "string_too_long"})


class DecodeError(ValueError):
    """A message that is not a valid event: a machine-friendly `reason` and a human `detail`."""

    def __init__(self, reason: DecodeReason, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason: DecodeReason = reason
        self.detail: str = detail

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.detail))


@dataclass(frozen=True, slots=True)
class IndexedDecodeError:
    """A decode error and the position of its message in the batch."""

    index: int
    """Position of the message in the batch."""
    error: DecodeError
    """Why it is not an event."""


def decode_event(data: bytes | bytearray | None, limits: Limits = DEFAULT_LIMITS) -> DecodedEvent:
    """Validate one message (UTF-8 JSON object) into an event; raise `DecodeError` otherwise."""
    data = _sized(data, limits)
    event = fast_decode(data)
    if event is None:  # invalid (or, should they ever disagree, valid for the reference)
        event = to_decoded(_validate(data))
    if limits is not DEFAULT_LIMITS and not limits.is_default:
        _check_limits(event, limits)
    return event


def decode_rejected(
    data: bytes | bytearray | None, limits: Limits = DEFAULT_LIMITS
) -> DecodedEvent:
    """`decode_event` for a message the msgspec path has already rejected (`fast_decode`
    gave None), with limits whose caps are the schema's (`Limits.is_default`): the reference
    names the reason, or, should the two ever disagree, accepts the message. Saves decoding
    it with msgspec a second time."""
    return to_decoded(_validate(_sized(data, limits)))


def decode_reference(data: bytes | bytearray | None, limits: Limits = DEFAULT_LIMITS) -> Event:
    """The pydantic reference decoder: the same checks and reasons, pydantic models out.

    Several times slower than `decode_event`; the differential tests and the benchmark
    compare the two.
    """
    data = _sized(data, limits)
    event = _validate(data)
    if limits is not DEFAULT_LIMITS and not limits.is_default:
        _check_limits(event, limits)
    return event


def decode_batch(
    messages: Sequence[bytes | bytearray | None], limits: Limits = DEFAULT_LIMITS
) -> tuple[list[DecodedEvent], list[IndexedDecodeError]]:
    """Decode many messages; never raises on bad input.

    Events come back in input order; message `i` is an event unless `i` is among the errors.
    """
    events: list[DecodedEvent] = []
    errors: list[IndexedDecodeError] = []
    for index, data in enumerate(messages):
        try:
            events.append(decode_event(data, limits))
        except DecodeError as exc:
            errors.append(IndexedDecodeError(index=index, error=exc))
    return events, errors


def _sized(data: bytes | bytearray | None, limits: Limits) -> bytes | bytearray:
    """`data` when it is neither empty nor over the message size limit (checked first)."""
    if not data:
        raise DecodeError("empty", "empty message (null or zero-length value)")
    if len(data) > limits.max_message_bytes:
        raise DecodeError(
            "too_large", f"message is {len(data)} bytes, limit {limits.max_message_bytes}"
        )
    return data


def _validate(data: bytes | bytearray) -> Event:
    """The pydantic model of a message, or its reason (the reference names every reason)."""
    try:
        return EVENT_ADAPTER.validate_json(data)
    except ValidationError as exc:
        raise _classify(exc) from None


def _classify(exc: ValidationError) -> DecodeError:
    """The highest-precedence reason among pydantic's errors, with the most telling detail."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    kinds = {err["type"] for err in errors}
    if "json_invalid" in kinds:
        return DecodeError("bad_json", _detail(errors, "json_invalid"))
    if any(err["type"] in ("dict_type", "model_type") and not err["loc"] for err in errors):
        return DecodeError("not_object", "expected a JSON object")
    if "union_tag_invalid" in kinds:
        return DecodeError("unknown_type", _detail(errors, "union_tag_invalid"))
    if "union_tag_not_found" in kinds:
        return DecodeError("schema", "missing field 'type' (retrieval, answer or feedback)")
    stamp = [err for err in errors if err["loc"] and err["loc"][-1] in _TS_BRANCHES]
    if any(err["type"] in _TOO_LONG for err in errors if err not in stamp):
        return DecodeError("too_large", _detail(errors, *_TOO_LONG))
    if stamp:
        return DecodeError("bad_timestamp", _timestamp_detail(stamp))
    return DecodeError("schema", _detail(errors))


def _where(err: ErrorDetails) -> str:
    """A dotted path without the union tags, e.g. `results.3.doc_id`."""
    loc = list(err["loc"])
    if loc and loc[0] in ("retrieval", "answer", "feedback"):
        loc = loc[1:]
    if loc and loc[-1] in _TS_BRANCHES:
        loc = loc[:-1]
    return ".".join(str(part) for part in loc)


def _detail(errors: list[ErrorDetails], *kinds: str) -> str:
    """`path: message` of the first error of the given kinds (or the first), bounded in length."""
    chosen = next((err for err in errors if err["type"] in kinds), errors[0])
    where = _where(chosen)
    text = f"{where}: {chosen['msg']}" if where else chosen["msg"]
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more)"
    return text[:_MAX_DETAIL_CHARS]


def _timestamp_detail(errors: list[ErrorDetails]) -> str:
    """The error of the branch that matches the input's JSON type, or a summary of both forms."""
    path = _where(errors[0])
    telling = [err for err in errors if err["type"] not in ("float_type", "string_type")]
    if not telling:
        return f"{path}: expected Unix seconds (number) or an RFC 3339 date-time string"
    err = telling[0]
    if err["type"] == "string_pattern_mismatch":
        return f"{path}: not an RFC 3339 date-time with a UTC offset (e.g. 2024-05-01T12:00:00Z)"
    if err["type"] == "less_than":
        return f"{path}: {err['msg']} (Unix seconds before 3000-01-01; milliseconds?)"
    return _detail(telling)


def _check_limits(event: Event | DecodedEvent, limits: Limits) -> None:
    """Raise `too_large` for the first limit tighter than the schema caps that is exceeded."""
    checks: list[tuple[str, int, int]] = [
        ("query_id", len(event.query_id), limits.max_id_chars),
        ("labels", len(event.labels), limits.max_labels),
    ]
    longest_label = max((max(len(k), len(v)) for k, v in event.labels.items()), default=0)
    checks.append(("labels (key or value)", longest_label, limits.max_label_chars))
    if isinstance(event, RetrievalEvent | DecodedRetrieval):
        qrels = event.qrels or []
        ids = [doc["doc_id"] for doc in event.results] + [qrel["doc_id"] for qrel in qrels]
        checks += [
            ("results", len(event.results), limits.max_results),
            ("qrels", len(qrels), limits.max_qrels),
            ("query", len(event.query or ""), limits.max_text_chars),
            ("doc_id", max(map(len, ids), default=0), limits.max_id_chars),
        ]
    elif isinstance(event, AnswerEvent | DecodedAnswer):
        cited = event.cited_doc_ids or []
        ids = [ctx.get("doc_id") or "" for ctx in event.contexts] + cited + [event.model or ""]
        texts = [event.question, event.answer] + [ctx["text"] for ctx in event.contexts]
        checks += [
            ("contexts", len(event.contexts), limits.max_contexts),
            ("cited_doc_ids", len(cited), limits.max_results),
            ("text", max(map(len, texts)), limits.max_text_chars),
            ("doc_id or model", max(map(len, ids), default=0), limits.max_id_chars),
        ]
    else:
        checks.append(
            ("doc_id or source", max(len(event.doc_id), len(event.source)), limits.max_id_chars)
        )
    for name, size, limit in checks:
        if size > limit:
            raise DecodeError("too_large", f"{name}: size {size} exceeds the limit {limit}")
