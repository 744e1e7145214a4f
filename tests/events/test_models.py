"""Models: strict types, frozen events, builders, and the deduplicated ranking."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ragstream.events import (
    AnswerEvent,
    FeedbackEvent,
    RetrievalEvent,
    RetrievedDoc,
    answer_event,
    dedupe_results,
    feedback_event,
    retrieval_event,
)


def test_dedupe_keeps_first_positions_and_counts_repeats() -> None:
    event = retrieval_event(
        "q",
        [
            RetrievedDoc(doc_id="a", score=3.0),
            RetrievedDoc(doc_id="b", score=2.0),
            RetrievedDoc(doc_id="a", score=1.0),
            RetrievedDoc(doc_id="c"),
            RetrievedDoc(doc_id="b"),
            RetrievedDoc(doc_id="a"),
        ],
        ts=0,
    )
    ranking = event.ranking()
    assert [doc["doc_id"] for doc in ranking.docs] == ["a", "b", "c"]
    assert ranking.docs[0].get("score") == 3.0  # the first occurrence is kept
    assert ranking.repeats == 3
    assert len(event.results) == 6  # the event itself keeps every entry
    assert dedupe_results([]) == ((), 0, ())


def test_every_inline_rel_is_a_label_a_repeats_included() -> None:
    # SPEC §2: a repeat counts once, at its first position; its rel is a label all the same
    results = [
        RetrievedDoc(doc_id="a", t_doc=10.0),
        RetrievedDoc(doc_id="b", rel=2),
        RetrievedDoc(doc_id="a", rel=1, t_doc=99.0),  # the document's time stays 10
        RetrievedDoc(doc_id="b", rel=0),
        RetrievedDoc(doc_id="c", rel=None),
    ]
    ranking = dedupe_results(results)
    assert [doc["doc_id"] for doc in ranking.docs] == ["a", "b", "c"]
    assert ranking.repeats == 2
    assert ranking.labels == (("b", 2, None), ("a", 1, 10.0), ("b", 0, None))  # list order


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from("abcd"),
            st.none() | st.integers(0, 3).map(float),
            st.none() | st.floats(0, 10),
        ),
        max_size=12,
    )
)
def test_labels_applied_in_order_give_the_last_rel_of_each_document(
    docs: list[tuple[str, float | None, float | None]],
) -> None:
    results = [RetrievedDoc(doc_id=i, rel=rel, t_doc=t) for i, rel, t in docs]
    applied = {doc_id: rel for doc_id, rel, _ in dedupe_results(results).labels}
    last = {doc_id: rel for doc_id, rel, _ in docs if rel is not None}
    assert applied == last
    first_time = {doc_id: t for doc_id, _, t in reversed(docs)}
    assert all(t == first_time[i] for i, _, t in dedupe_results(results).labels)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("abcdefg"), max_size=30))
def test_dedupe_matches_a_first_seen_reference(ids: list[str]) -> None:
    ranking = dedupe_results([RetrievedDoc(doc_id=i) for i in ids])
    reference = list(dict.fromkeys(ids))  # dicts keep first insertion order
    assert [doc["doc_id"] for doc in ranking.docs] == reference
    assert ranking.repeats == len(ids) - len(set(ids))


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        (FeedbackEvent, {"query_id": 5}),
        (FeedbackEvent, {"rel": "2"}),
        (FeedbackEvent, {"rel": True}),
        (FeedbackEvent, {"doc_id": 3}),
        (FeedbackEvent, {"ts": b"2024-05-01T12:00:00Z"}),
        (FeedbackEvent, {"labels": {"app": 1}}),
        (FeedbackEvent, {"type": "answer"}),
        (RetrievalEvent, {"results": [{"doc_id": "a", "score": "0.5"}]}),
        (RetrievalEvent, {"results": ("a",)}),
        (AnswerEvent, {"contexts": ["a chunk"]}),
    ],
)
def test_no_silent_coercion_in_python_either(model: type[Any], fields: dict[str, Any]) -> None:
    base: dict[str, Any] = {
        "query_id": "q",
        "ts": 1.0,
        "doc_id": "d",
        "rel": 1,
        "source": "click",
        "results": [],
        "question": "?",
        "answer": "!",
        "contexts": [],
    }
    with pytest.raises(ValidationError):
        model(**(base | fields))


def test_integers_are_numbers() -> None:
    event = feedback_event("q", "d", 2, "annotator", ts=1714564800)
    assert event.rel == 2.0
    assert type(event.rel) is float
    assert type(event.ts) is float


def test_events_are_frozen() -> None:
    event = feedback_event("q", "d", 1, "click", ts=0)
    with pytest.raises(ValidationError):
        event.rel = 2


def test_builders_fill_defaults_and_accept_shorthands() -> None:
    before = datetime.now(UTC).timestamp()
    event = retrieval_event("q", ["a", {"doc_id": "b", "score": 0.5}], labels={"app": "x"})
    assert before <= event.ts <= datetime.now(UTC).timestamp()
    assert event.results == [{"doc_id": "a"}, {"doc_id": "b", "score": 0.5}]
    assert event.labels == {"app": "x"}
    assert event.type == "retrieval"

    answer = answer_event(
        "q", "why?", "because", ["chunk one", {"doc_id": "d", "text": "two"}], ts=0
    )
    assert answer.contexts == [{"text": "chunk one"}, {"doc_id": "d", "text": "two"}]


@pytest.mark.parametrize(
    "ts",
    [
        1714564800.0,
        1714564800,
        "2024-05-01T12:00:00Z",
        datetime(2024, 5, 1, 12, tzinfo=UTC),
        datetime(2024, 5, 1, 14, tzinfo=timezone(timedelta(hours=2))),
    ],
)
def test_builders_take_every_time_form(ts: Any) -> None:
    assert feedback_event("q", "d", 1, "click", ts=ts).ts == 1714564800.0


def test_builders_reject_naive_datetimes_and_bools() -> None:
    with pytest.raises(ValueError, match="naive"):
        feedback_event("q", "d", 1, "click", ts=datetime(2024, 5, 1))
    with pytest.raises(TypeError):
        feedback_event("q", "d", 1, "click", ts=True)


def test_graded_feedback_may_be_fractional() -> None:
    assert feedback_event("q", "d", 0.5, "thumb", ts=0).rel == 0.5
    with pytest.raises(ValidationError):
        feedback_event("q", "d", 101, "thumb", ts=0)
