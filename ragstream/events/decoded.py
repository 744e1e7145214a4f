"""Decoded events: the runtime types `decode_event` returns (msgspec Structs, schema v1).

The pydantic models in `ragstream.events.models` are the published contract (JSON Schema,
producer helpers) and the reference; these Structs carry the same constraints as msgspec
`Meta` so that msgspec validates while it parses, and they have the same attribute names.
Numbers only: `ts` and `t_doc` are float Unix seconds here; RFC 3339 strings are
normalised before validation (see `ragstream.events.fast`).

Events are frozen and not tracked by the cyclic garbage collector (`gc=False`): they hold
only strings, floats and lists/dicts of them, so they cannot form reference cycles unless
a caller puts an event inside its own lists. The items of the lists (`DecodedDoc`,
`DecodedQrel`, `DecodedContext`) are plain dicts, structurally the same typed dicts as the
models' `RetrievedDoc`, `Qrel` and `Context`: read optional keys with `.get()`.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, NotRequired, TypedDict

import msgspec
from msgspec import Meta, Struct

from ragstream.events.limits import (
    MAX_CONTEXTS,
    MAX_ID_CHARS,
    MAX_LABEL_CHARS,
    MAX_LABELS,
    MAX_QRELS,
    MAX_RESULTS,
    MAX_TEXT_CHARS,
)
from ragstream.events.models import (
    MAX_ABS_REL,
    AnswerEvent,
    Event,
    EventType,
    FeedbackEvent,
    Ranking,
    RetrievalEvent,
    dedupe_results,
)
from ragstream.events.timestamps import MAX_TS, MIN_DOC_TS, MIN_EVENT_TS

__all__ = [
    "DecodedAnswer",
    "DecodedContext",
    "DecodedDoc",
    "DecodedEvent",
    "DecodedFeedback",
    "DecodedQrel",
    "DecodedRetrieval",
    "to_decoded",
]

_Id = Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS)]
_Text = Annotated[str, Meta(max_length=MAX_TEXT_CHARS)]
_Rel = Annotated[float, Meta(ge=-MAX_ABS_REL, le=MAX_ABS_REL)]
_EventTime = Annotated[float, Meta(ge=MIN_EVENT_TS, lt=MAX_TS)]
_DocTime = Annotated[float, Meta(ge=MIN_DOC_TS, lt=MAX_TS)]
_Labels = Annotated[
    dict[
        Annotated[str, Meta(min_length=1, max_length=MAX_LABEL_CHARS)],
        Annotated[str, Meta(max_length=MAX_LABEL_CHARS)],
    ],
    Meta(max_length=MAX_LABELS),
]


class DecodedDoc(TypedDict):
    """One retrieved document (the same keys and types as `RetrievedDoc`)."""

    doc_id: _Id
    score: NotRequired[float | None]
    t_doc: NotRequired[_DocTime | None]
    rel: NotRequired[_Rel | None]


class DecodedQrel(TypedDict):
    """One graded judgment (the same keys and types as `Qrel`)."""

    doc_id: _Id
    rel: _Rel
    t_doc: NotRequired[_DocTime | None]


class DecodedContext(TypedDict):
    """One chunk given to the model (the same keys and types as `Context`)."""

    doc_id: NotRequired[_Id | None]
    text: _Text


class _Decoded(Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True, tag_field="type"):
    """Fields common to every event; `type` is the tag (a class attribute, not a field)."""

    type: ClassVar[EventType]
    query_id: _Id
    ts: _EventTime
    labels: _Labels = msgspec.field(default_factory=dict)


class DecodedRetrieval(_Decoded, frozen=True, gc=False, kw_only=True, tag="retrieval"):
    """A decoded `retrieval` event (see `RetrievalEvent`)."""

    type: ClassVar[Literal["retrieval"]] = "retrieval"
    results: Annotated[list[DecodedDoc], Meta(max_length=MAX_RESULTS)]
    query: _Text | None = None
    qrels: Annotated[list[DecodedQrel], Meta(max_length=MAX_QRELS)] | None = None

    def ranking(self) -> Ranking:
        """The deduplicated ranking and the number of repeats (see `dedupe_results`)."""
        return dedupe_results(self.results)


class DecodedAnswer(_Decoded, frozen=True, gc=False, kw_only=True, tag="answer"):
    """A decoded `answer` event (see `AnswerEvent`)."""

    type: ClassVar[Literal["answer"]] = "answer"
    question: _Text
    answer: _Text
    contexts: Annotated[list[DecodedContext], Meta(max_length=MAX_CONTEXTS)]
    model: _Id | None = None
    cited_doc_ids: Annotated[list[_Id], Meta(max_length=MAX_RESULTS)] | None = None


class DecodedFeedback(_Decoded, frozen=True, gc=False, kw_only=True, tag="feedback"):
    """A decoded `feedback` event (see `FeedbackEvent`)."""

    type: ClassVar[Literal["feedback"]] = "feedback"
    doc_id: _Id
    rel: _Rel
    source: _Id


DecodedEvent = DecodedRetrieval | DecodedAnswer | DecodedFeedback
"""Any decoded event; `type` (or `isinstance`) tells the kind."""


def to_decoded(event: Event) -> DecodedEvent:
    """The runtime form of a validated model (e.g. one built with the producer helpers).

    No validation: the model has been validated. The lists are the model's own (shared).
    """
    if isinstance(event, RetrievalEvent):
        return DecodedRetrieval(
            query_id=event.query_id,
            ts=event.ts,
            labels=event.labels,
            results=event.results,
            query=event.query,
            qrels=event.qrels,
        )
    if isinstance(event, AnswerEvent):
        return DecodedAnswer(
            query_id=event.query_id,
            ts=event.ts,
            labels=event.labels,
            question=event.question,
            answer=event.answer,
            contexts=event.contexts,
            model=event.model,
            cited_doc_ids=event.cited_doc_ids,
        )
    assert isinstance(event, FeedbackEvent)
    return DecodedFeedback(
        query_id=event.query_id,
        ts=event.ts,
        labels=event.labels,
        doc_id=event.doc_id,
        rel=event.rel,
        source=event.source,
    )
