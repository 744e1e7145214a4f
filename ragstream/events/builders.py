"""Helpers for Python services that emit events: builders, encoding and the Kafka key.

Encoding is compact JSON with `ts` (and `t_doc`) as Unix seconds: numbers round-trip exactly
(shortest float repr) and are the cheapest form to parse. Absent optional fields are omitted.
`ragstream.producer.EventProducer` sends them to Kafka.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import datetime

import msgspec

from ragstream.events.models import (
    EVENT_ADAPTER,
    AnswerEvent,
    AnswerVerdict,
    Context,
    Event,
    FeedbackEvent,
    Qrel,
    RetrievalEvent,
    RetrievedDoc,
)
from ragstream.events.structs import DecodedEvent

__all__ = [
    "TimeLike",
    "answer_event",
    "encode_event",
    "feedback_event",
    "message_key",
    "retrieval_event",
    "verdict_event",
]

TimeLike = float | int | str | datetime
"""Unix seconds, an RFC 3339 string, or a timezone-aware datetime."""


def retrieval_event(
    query_id: str,
    results: Iterable[str | RetrievedDoc],
    *,
    ts: TimeLike | None = None,
    labels: Mapping[str, str] | None = None,
    query: str | None = None,
    qrels: Iterable[Qrel] | None = None,
) -> RetrievalEvent:
    """A validated retrieval event; `results` in rank order, a bare string is a doc_id.

    `ts=None` means now. Raises `pydantic.ValidationError` on invalid input.
    """
    docs = [RetrievedDoc(doc_id=doc) if isinstance(doc, str) else doc for doc in results]
    return RetrievalEvent(
        query_id=query_id,
        ts=_seconds(ts),
        labels=dict(labels or {}),
        results=docs,
        query=query,
        qrels=None if qrels is None else list(qrels),
    )


def answer_event(
    query_id: str,
    question: str,
    answer: str,
    contexts: Iterable[str | Context],
    *,
    ts: TimeLike | None = None,
    labels: Mapping[str, str] | None = None,
    model: str | None = None,
    cited_doc_ids: Iterable[str] | None = None,
) -> AnswerEvent:
    """A validated answer event; a bare string context is its text. `ts=None` means now."""
    chunks = [Context(text=ctx) if isinstance(ctx, str) else ctx for ctx in contexts]
    return AnswerEvent(
        query_id=query_id,
        ts=_seconds(ts),
        labels=dict(labels or {}),
        question=question,
        answer=answer,
        contexts=chunks,
        model=model,
        cited_doc_ids=None if cited_doc_ids is None else list(cited_doc_ids),
    )


def feedback_event(
    query_id: str,
    doc_id: str,
    rel: float,
    source: str,
    *,
    ts: TimeLike | None = None,
    labels: Mapping[str, str] | None = None,
) -> FeedbackEvent:
    """A validated feedback event: a late graded label for one document. `ts=None` means now."""
    return FeedbackEvent(
        query_id=query_id,
        ts=_seconds(ts),
        labels=dict(labels or {}),
        doc_id=doc_id,
        rel=rel,
        source=source,
    )


def verdict_event(
    query_id: str,
    hallucination: bool,
    source: str,
    *,
    ts: TimeLike | None = None,
    labels: Mapping[str, str] | None = None,
) -> FeedbackEvent:
    """A validated feedback event carrying a gold verdict on the query's answer (from people
    or a trusted reviewer), which the agent compares with its judge's. `ts=None` means now."""
    return FeedbackEvent(
        query_id=query_id,
        ts=_seconds(ts),
        labels=dict(labels or {}),
        answer=AnswerVerdict(hallucination=hallucination),
        source=source,
    )


def encode_event(event: Event | DecodedEvent) -> bytes:
    """Compact UTF-8 JSON of a model or a decoded event, absent (None) fields omitted.

    `decode_event(encode_event(e))` equals `e` for a decoded event and `to_decoded(e)` for a model.
    """
    if isinstance(event, msgspec.Struct):
        return _STRUCT_ENCODER.encode(event)
    return EVENT_ADAPTER.dump_json(event, exclude_none=True)


_STRUCT_ENCODER = msgspec.json.Encoder()


def message_key(event: Event | DecodedEvent) -> bytes:
    """The Kafka message key: `query_id` in UTF-8, so one query's events share a partition."""
    return event.query_id.encode("utf-8")


def _seconds(ts: TimeLike | None) -> float | str:
    """`ts` in a form the models accept: numbers and strings as given, datetimes as seconds."""
    if ts is None:
        return time.time()
    if isinstance(ts, datetime):
        if ts.tzinfo is None:
            raise ValueError("naive datetime: give a timezone (e.g. datetime.now(UTC))")
        return ts.timestamp()
    if isinstance(ts, bool):
        raise TypeError("ts must be a number, an RFC 3339 string or a datetime, not bool")
    return float(ts) if isinstance(ts, int) else ts
