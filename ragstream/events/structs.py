"""Decoded events: the schema v1 the agent decodes with, and the types `decode_event` returns.

msgspec Structs with every constraint of the schema as msgspec `Meta` (lengths, ranges,
strict types, finite numbers), so msgspec validates while it parses. The pydantic models in
`ragstream.events.models` have the same fields and constraints: they give the published
JSON Schema and are what the producer helpers build. Numbers only: `ts` and `t_doc` are
float Unix seconds here; RFC 3339 strings are normalised before validation (see
`ragstream.events.decode`).

Events, documents and judgments are frozen and untracked by the cyclic garbage collector
(`gc=False`: they hold only strings, floats and lists/dicts of them). `DecodedDoc` and
`DecodedQrel` read like the models' dicts (`doc["doc_id"]`, `doc.get("t_doc")`, None for an
absent optional key); contexts (`DecodedContext`) are plain dicts, like the model's `Context`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, NotRequired, TypedDict

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
    FEEDBACK_KINDS,
    MAX_ABS_REL,
    AnswerEvent,
    Event,
    EventType,
    FeedbackEvent,
    Qrel,
    Ranking,
    RetrievalEvent,
    RetrievedDoc,
    dedupe_results,
    feedback_kind_ok,
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
    "DecodedVerdict",
    "to_decoded",
]

_Id = Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS)]
_Text = Annotated[str, Meta(max_length=MAX_TEXT_CHARS)]
_Rel = Annotated[float, Meta(ge=-MAX_ABS_REL, le=MAX_ABS_REL)]
_Finite = Annotated[float, Meta(ge=-sys.float_info.max, le=sys.float_info.max)]
"""Any finite number (JSON has no NaN or infinity, but a number may round to infinity)."""
_EventTime = Annotated[float, Meta(ge=MIN_EVENT_TS, lt=MAX_TS)]
_DocTime = Annotated[float, Meta(ge=MIN_DOC_TS, lt=MAX_TS)]
_Labels = Annotated[
    dict[
        Annotated[str, Meta(min_length=1, max_length=MAX_LABEL_CHARS)],
        Annotated[str, Meta(max_length=MAX_LABEL_CHARS)],
    ],
    Meta(max_length=MAX_LABELS),
]


class _Item(Struct, frozen=True, gc=False):
    """A list item read like the model's typed dicts: `item["doc_id"]`, `item.get("t_doc")`."""

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        """The field's value (None when the message left it out), `default` if no such field."""
        return getattr(self, key, default)

    def as_dict(self) -> dict[str, Any]:
        """The model's dict form: the fields the message set (None-valued ones left out)."""
        return {k: v for k, v in msgspec.structs.asdict(self).items() if v is not None}


class DecodedDoc(_Item, frozen=True, gc=False):
    """One retrieved document (the same fields and types as `RetrievedDoc`)."""

    doc_id: _Id
    score: _Finite | None = None
    t_doc: _DocTime | None = None
    rel: _Rel | None = None

    @classmethod
    def of(cls, doc: Mapping[str, Any] | _Item) -> DecodedDoc:
        """The document of a validated mapping (a model's `RetrievedDoc`) or item; no
        validation."""
        return cls(
            doc_id=doc["doc_id"], score=doc.get("score"), t_doc=doc.get("t_doc"), rel=doc.get("rel")
        )


class DecodedQrel(_Item, frozen=True, gc=False):
    """One graded judgment (the same fields and types as `Qrel`)."""

    doc_id: _Id
    rel: _Rel
    t_doc: _DocTime | None = None


class DecodedContext(TypedDict):
    """One chunk given to the model (the same keys and types as `Context`)."""

    doc_id: NotRequired[_Id | None]
    text: _Text


class DecodedVerdict(TypedDict):
    """A gold verdict on an answer (the same keys and types as `AnswerVerdict`)."""

    hallucination: bool


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
        """The deduplicated ranking, the number of repeats and the inline labels (see
        `dedupe_results`)."""
        docs: list[RetrievedDoc] = [doc.as_dict() for doc in self.results]  # type: ignore[misc]
        return dedupe_results(docs)


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
    source: _Id
    doc_id: _Id | None = None
    rel: _Rel | None = None
    answer: DecodedVerdict | None = None

    def __post_init__(self) -> None:
        # msgspec turns this into a validation error (reason `schema`)
        if not feedback_kind_ok(self.doc_id, self.rel, self.answer):
            raise ValueError(FEEDBACK_KINDS)


DecodedEvent = DecodedRetrieval | DecodedAnswer | DecodedFeedback
"""Any decoded event; `type` (or `isinstance`) tells the kind."""


def to_decoded(event: Event) -> DecodedEvent:
    """The runtime form of a validated model (e.g. one built with the producer helpers).

    No validation: the model has been validated. Results and qrels become Structs; the
    other lists are the model's own (shared).
    """
    if isinstance(event, RetrievalEvent):
        return DecodedRetrieval(
            query_id=event.query_id,
            ts=event.ts,
            labels=event.labels,
            results=[DecodedDoc.of(doc) for doc in event.results],
            query=event.query,
            qrels=None if event.qrels is None else [_qrel(qrel) for qrel in event.qrels],
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
        answer=None if event.answer is None else DecodedVerdict(**event.answer),
        source=event.source,
    )


def _qrel(qrel: Qrel) -> DecodedQrel:
    return DecodedQrel(doc_id=qrel["doc_id"], rel=qrel["rel"], t_doc=qrel.get("t_doc"))
