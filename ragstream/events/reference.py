"""The pydantic reference decoder: the contract's own validation, and the reason it names.

Every rejected message ends here, whichever path read it first, so reason codes and
details are the reference's (`ragstream.events.reasons`). It also checks limits tighter
than the schema's caps (`check_limits`), which the models do not know.
"""

from __future__ import annotations

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from ragstream.events.limits import Limits
from ragstream.events.models import EVENT_ADAPTER, AnswerEvent, Event, RetrievalEvent
from ragstream.events.reasons import DecodeError
from ragstream.events.structs import DecodedAnswer, DecodedEvent, DecodedRetrieval

__all__ = ["check_limits", "sized", "validate"]

_MAX_DETAIL_CHARS = 300
_TS_BRANCHES = ("unix_seconds", "rfc3339")
_TOO_LONG = frozenset({"too_long", "string_too_long"})


def sized(data: bytes | bytearray | None, limits: Limits) -> bytes | bytearray:
    """`data` when it is neither empty nor over the message size limit (checked first)."""
    if not data:
        raise DecodeError("empty", "empty message (null or zero-length value)")
    if len(data) > limits.max_message_bytes:
        raise DecodeError(
            "too_large", f"message is {len(data)} bytes, limit {limits.max_message_bytes}"
        )
    return data


def validate(data: bytes | bytearray) -> Event:
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


def check_limits(event: Event | DecodedEvent, limits: Limits) -> None:
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
        given = len(event.doc_id or ""), len(event.source)
        checks.append(("doc_id or source", max(given), limits.max_id_chars))
    for name, size, limit in checks:
        if size > limit:
            raise DecodeError("too_large", f"{name}: size {size} exceeds the limit {limit}")
