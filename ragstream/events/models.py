"""Event models, schema v1: `retrieval`, `answer` and `feedback`, a union discriminated by `type`.

Strict types (no coercion: `"query_id": 5` or `"rel": "2"` is an error), unknown fields
ignored (forward compatibility), size caps from `limits`, timestamps normalised to float
Unix seconds. The published contract: the JSON Schema (`ragstream schema`) is generated from
these models and the producer helpers build them; the agent decodes with the msgspec Structs
of `ragstream.events.structs`, which carry the same fields and constraints. Events are
frozen models; the items of their lists (`RetrievedDoc`, `Qrel`, `Context`) are plain typed
dicts. Optional item keys may be absent or null: read them with `.get()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal, NamedTuple, NotRequired

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    model_validator,
    with_config,
)
from typing_extensions import TypedDict

from ragstream.events.limits import (
    MAX_CONTEXTS,
    MAX_ID_CHARS,
    MAX_LABEL_CHARS,
    MAX_LABELS,
    MAX_QRELS,
    MAX_RESULTS,
    MAX_TEXT_CHARS,
)
from ragstream.events.timestamps import DocTime, EventTime

__all__ = [
    "EVENT_ADAPTER",
    "FEEDBACK_KINDS",
    "MAX_ABS_REL",
    "AnswerEvent",
    "AnswerVerdict",
    "Context",
    "Event",
    "EventType",
    "FeedbackEvent",
    "InlineLabel",
    "Qrel",
    "Ranking",
    "RetrievalEvent",
    "RetrievedDoc",
    "dedupe_results",
    "feedback_kind_ok",
    "inline_labels",
]

MAX_ABS_REL = 100.0
"""Relevance grades lie in [-100, 100] (so that the exponential gain 2^rel - 1 stays finite)."""

EventType = Literal["retrieval", "answer", "feedback"]

_Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
_Text = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)]
_LabelKey = Annotated[str, StringConstraints(min_length=1, max_length=MAX_LABEL_CHARS)]
_LabelValue = Annotated[str, StringConstraints(max_length=MAX_LABEL_CHARS)]
_Rel = Annotated[float, Field(ge=-MAX_ABS_REL, le=MAX_ABS_REL)]

# cache_strings="keys": keys repeat, so they are worth caching; doc ids are mostly unique.
_CONFIG = ConfigDict(
    strict=True, extra="ignore", frozen=True, allow_inf_nan=False, cache_strings="keys"
)
_ITEM_CONFIG = ConfigDict(strict=True, extra="ignore", allow_inf_nan=False, cache_strings="keys")


def _require_type(schema: dict[str, Any]) -> None:
    """In the JSON Schema, `type` is required (the decoder needs it to pick the event kind)."""
    required = [name for name in schema.get("required", []) if name != "type"]
    schema["required"] = ["type", *required]


@with_config(_ITEM_CONFIG)
class RetrievedDoc(TypedDict):
    """One retrieved document, in rank order within `results` (a plain dict: cheap to build)."""

    doc_id: Annotated[_Id, Field(description="Document identifier.")]
    score: NotRequired[
        Annotated[float | None, Field(description="Retriever score (any finite number).")]
    ]
    t_doc: NotRequired[
        Annotated[
            DocTime | None,
            Field(description="The document's own time, for recency; absent = the event's ts."),
        ]
    ]
    rel: NotRequired[Annotated[_Rel | None, Field(description="Inline graded relevance label.")]]


@with_config(_ITEM_CONFIG)
class Qrel(TypedDict):
    """One graded ground-truth judgment (golden or probe queries)."""

    doc_id: Annotated[_Id, Field(description="Document identifier.")]
    rel: Annotated[_Rel, Field(description="Graded relevance; relevant means rel >= 1 by default.")]
    t_doc: NotRequired[
        Annotated[DocTime | None, Field(description="The document's own time, for recency.")]
    ]


@with_config(_ITEM_CONFIG)
class Context(TypedDict):
    """One chunk given to the model when answering."""

    doc_id: NotRequired[Annotated[_Id | None, Field(description="Document the chunk comes from.")]]
    text: Annotated[_Text, Field(description="The chunk's text.")]


class _EventBase(BaseModel):
    """Fields common to every event."""

    model_config = ConfigDict(**_CONFIG, json_schema_extra=_require_type)

    type: EventType = Field(description="Event kind; selects the schema.")
    query_id: _Id = Field(description="Joins the events of one request; also the Kafka key.")
    ts: EventTime = Field(description="Event time: Unix seconds or an RFC 3339 date-time.")
    labels: dict[_LabelKey, _LabelValue] = Field(
        default_factory=dict,
        max_length=MAX_LABELS,
        description="Service labels, e.g. {'app': 'support'}; only configured keys are exported.",
    )


class RetrievalEvent(_EventBase):
    """The ranked list a retriever returned for one query."""

    type: Literal["retrieval"] = Field("retrieval", description="Always `retrieval`.")
    results: list[RetrievedDoc] = Field(
        max_length=MAX_RESULTS,
        description=(
            "Retrieved documents in rank order; a repeated doc_id counts once, first;"
            " every inline rel, a repeat's included, is a label, applied in list order."
        ),
    )
    query: _Text | None = Field(None, description="The query text.")
    qrels: list[Qrel] | None = Field(
        None,
        max_length=MAX_QRELS,
        description="Complete graded ground truth for this query (golden or probe queries).",
    )

    def ranking(self) -> Ranking:
        """The deduplicated ranking, the number of repeats and the inline labels (see
        `dedupe_results`)."""
        return dedupe_results(self.results)


class AnswerEvent(_EventBase):
    """A generated answer and the contexts it was given."""

    type: Literal["answer"] = Field("answer", description="Always `answer`.")
    question: _Text = Field(description="The user's question.")
    answer: _Text = Field(description="The generated answer.")
    contexts: list[Context] = Field(
        max_length=MAX_CONTEXTS, description="Chunks given to the model, in prompt order."
    )
    model: _Id | None = Field(None, description="Generator model name.")
    cited_doc_ids: list[_Id] | None = Field(
        None, max_length=MAX_RESULTS, description="Documents the answer cites."
    )


@with_config(_ITEM_CONFIG)
class AnswerVerdict(TypedDict):
    """A gold verdict on a query's answer, from people or a trusted reviewer."""

    hallucination: Annotated[
        bool, Field(description="True when the answer makes a claim its contexts do not support.")
    ]


FEEDBACK_KINDS = (
    "feedback carries either doc_id and rel (a label for one document) or answer"
    " (a gold verdict on the query's answer), not both and not neither"
)


def _one_kind(schema: dict[str, Any]) -> None:
    """In the JSON Schema: `type` required, and exactly one kind of feedback (`FEEDBACK_KINDS`);
    an absent field and a null one are the same, as everywhere in the schema."""
    _require_type(schema)
    given = {"not": {"type": "null"}}
    absent = {"type": "null"}
    schema["oneOf"] = [
        {
            "required": ["doc_id", "rel"],
            "properties": {"doc_id": given, "rel": given, "answer": absent},
        },
        {"required": ["answer"], "properties": {"answer": given, "doc_id": absent, "rel": absent}},
    ]


class FeedbackEvent(_EventBase):
    """A late relevance label for one document of one query (`doc_id`, `rel`), or a gold
    verdict on the query's answer (`answer`): exactly one of the two."""

    model_config = ConfigDict(**_CONFIG, json_schema_extra=_one_kind)

    type: Literal["feedback"] = Field("feedback", description="Always `feedback`.")
    doc_id: _Id | None = Field(None, description="The judged document (with `rel`).")
    rel: _Rel | None = Field(
        None,
        description="Graded relevance (with `doc_id`); the latest label for (query_id, doc_id)"
        " wins.",
    )
    answer: AnswerVerdict | None = Field(
        None,
        title="Answer",
        description="A gold verdict on the query's answer, instead of doc_id and rel; the agent"
        " compares it with its judge's verdict.",
    )
    source: _Id = Field(description="Label source, e.g. click, thumb, annotator, judge.")

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> FeedbackEvent:
        if not feedback_kind_ok(self.doc_id, self.rel, self.answer):
            raise ValueError(FEEDBACK_KINDS)
        return self


def feedback_kind_ok(doc_id: object, rel: object, answer: object) -> bool:
    """Whether a feedback event is exactly one kind: a document label (doc_id and rel, no
    answer) or a gold verdict (answer, no doc_id and no rel)."""
    if answer is None:
        return doc_id is not None and rel is not None
    return doc_id is None and rel is None


Event = Annotated[RetrievalEvent | AnswerEvent | FeedbackEvent, Field(discriminator="type")]
"""Any event; `type` selects the model."""

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event, config=ConfigDict(cache_strings="keys"))
"""Validates and serialises the event union (the producer helpers, the JSON Schema)."""


InlineLabel = tuple[str, float, float | None]
"""An inline label of a retrieval event: `(doc_id, rel, t_doc)`, where `t_doc` is the
document's time in the ranking (its first occurrence's `t_doc`), None when not given."""


class Ranking(NamedTuple):
    """A ranking with repeated documents removed, and the event's inline labels."""

    docs: tuple[RetrievedDoc, ...]
    """Each doc_id once, at its first position, in rank order (first occurrence kept)."""
    repeats: int
    """How many entries were dropped as repeats: len(results) - len(docs)."""
    labels: tuple[InlineLabel, ...]
    """Every inline `rel` of the results, a repeat's included, in list order (see
    `inline_labels`): applied in that order, the last one of a document wins."""


def dedupe_results(results: Sequence[RetrievedDoc]) -> Ranking:
    """Keep the first occurrence of each doc_id (trec_eval-style rank), counting the repeats,
    and read every inline label (see `inline_labels`)."""
    first: dict[str, RetrievedDoc] = {}
    for doc in results:
        first.setdefault(doc["doc_id"], doc)
    labels = inline_labels((doc["doc_id"], doc.get("rel"), doc.get("t_doc")) for doc in results)
    return Ranking(tuple(first.values()), len(results) - len(first), tuple(labels))


def inline_labels(docs: Iterable[tuple[str, float | None, float | None]]) -> list[InlineLabel]:
    """The inline labels of a result list given as `(doc_id, rel, t_doc)` in list order.

    SPEC §2: every inline `rel`, a repeat's included, is a label for its document, applied
    in list order (so the last one wins). A repeat counts once, at its first position, and
    so has one time: each label carries its document's time in the ranking, the first
    occurrence's `t_doc`, whatever `t_doc` a repeat gives.
    """
    times: dict[str, float | None] = {}
    labels: list[InlineLabel] = []
    for doc_id, rel, t_doc in docs:
        t_doc = times.setdefault(doc_id, t_doc)
        if rel is not None:
            labels.append((doc_id, rel, t_doc))
    return labels
