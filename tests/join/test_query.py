"""Open queries built lazily from decoded events equal a plain, eager reading of the event."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.events import DecodedRetrieval, decode_event
from ragstream.join import OpenQuery

TS = 1_000.0


def _event(results: list[dict[str, Any]], qrels: list[dict[str, Any]] | None = None) -> bytes:
    event: dict[str, Any] = {"type": "retrieval", "query_id": "q", "ts": TS, "results": results}
    if qrels is not None:
        event["qrels"] = qrels
    return json.dumps(event).encode()


def _open(raw: bytes, *, keep_raw: bool) -> OpenQuery:
    event = decode_event(raw)
    assert isinstance(event, DecodedRetrieval)
    return OpenQuery.from_retrieval(
        "q",
        partition=0,
        labelset=(),
        ts=event.ts,
        ttl=60.0,
        results=event.results,
        qrels=event.qrels or (),
        raw=raw if keep_raw else None,
    )


def _expected(
    results: list[dict[str, Any]], qrels: list[dict[str, Any]]
) -> tuple[list[str], list[float], dict[str, float], dict[str, float]]:
    """SPEC §2 read eagerly: first positions, effective times, qrels then every inline label
    in list order (a repeat's included, with its document's time in the ranking: the first
    occurrence's t_doc); a label without t_doc takes the document's time in the ranking
    (else ts), or keeps the time an earlier label gave it."""
    ids: list[str] = []
    times: list[float] = []
    first_t_doc: dict[str, float | None] = {}
    inline: list[dict[str, Any]] = []
    for doc in results:
        doc_id = doc["doc_id"]
        if doc_id not in ids:
            t = doc.get("t_doc")
            ids.append(doc_id)
            times.append(TS if t is None else min(t, TS))
            first_t_doc[doc_id] = t
        if doc.get("rel") is not None:
            inline.append({"doc_id": doc_id, "rel": doc["rel"], "t_doc": first_t_doc[doc_id]})
    labels: dict[str, float] = {}
    label_times: dict[str, float] = {}
    for item in [*qrels, *inline]:
        doc_id, t = item["doc_id"], item.get("t_doc")
        labels[doc_id] = item["rel"]
        if t is not None:
            label_times[doc_id] = min(t, TS)
        elif doc_id not in label_times:
            label_times[doc_id] = times[ids.index(doc_id)] if doc_id in ids else TS
    return ids, times, labels, label_times


_doc = st.fixed_dictionaries(
    {"doc_id": st.sampled_from("abcdef")},
    optional={
        "t_doc": st.none() | st.floats(0.0, 2 * TS),
        "rel": st.none() | st.integers(0, 3).map(float),
        "score": st.floats(-5, 5),
    },
)
_qrel = st.fixed_dictionaries(
    {"doc_id": st.sampled_from("aghx"), "rel": st.integers(0, 3).map(float)},
    optional={"t_doc": st.none() | st.floats(0.0, 2 * TS)},
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_doc, max_size=14), st.lists(_qrel, max_size=4), st.booleans())
def test_lazy_ranking_equals_an_eager_reading(
    results: list[dict[str, Any]], qrels: list[dict[str, Any]], release: bool
) -> None:
    raw = _event(results, qrels)
    query = _open(raw, keep_raw=True)
    ids, times, labels, label_times = _expected(results, qrels)
    width = 10
    effective = [TS if t is None or t != t or t > TS else t for t in query.top_doc_times(width)]
    assert effective == times[:width]
    if release:
        query.release()  # scored: decoded documents dropped, decoded again on demand
    assert query.repeats == len(results) - len(ids)
    assert query.labels == labels
    assert query.label_times == label_times
    raw_ids, raw_times = query.raw_ranking()
    assert list(raw_ids) == ids
    assert [TS if t is None or t != t or t > TS else t for t in raw_times] == times
    assert list(query.doc_ids) == ids
    assert list(query.doc_times) == times


def test_released_query_decodes_its_message_again_for_a_late_label() -> None:
    results: list[dict[str, Any]] = [
        {"doc_id": "a", "t_doc": 10.0},
        {"doc_id": "b"},
        {"doc_id": "a", "t_doc": 5.0},
    ]
    kept = _open(_event(results), keep_raw=True)
    eager = _open(_event(results), keep_raw=False)
    kept.release()
    for query in (kept, eager):
        query.set_label("a", 2.0)  # no t_doc with the label: its time in the ranking
        query.set_label("b", 1.0)
    assert kept.label_times == eager.label_times == {"a": 10.0, "b": TS}
    assert kept.snapshot() == eager.snapshot()
    assert OpenQuery.restore(kept.snapshot()).snapshot() == kept.snapshot()
    assert kept.doc_ids == ("a", "b")
    assert kept.repeats == 1


def test_a_labeled_query_keeps_its_ranking_when_released() -> None:
    """Released once scored, a labeled query keeps the ranking it built for its labels (its
    next label reads it: the message is not decoded again); an unlabeled one drops it and
    builds it again from the message, equal."""
    results: list[dict[str, Any]] = [{"doc_id": "a", "t_doc": 10.0}, {"doc_id": "b"}]
    labeled = _open(_event(results, [{"doc_id": "b", "rel": 1.0}]), keep_raw=True)
    unlabeled = _open(_event(results), keep_raw=True)
    ranked = [(query.doc_ids, query.doc_times) for query in (labeled, unlabeled)]
    for query in (labeled, unlabeled):
        query.release()
    assert labeled.doc_ids is ranked[0][0]
    assert labeled.doc_times is ranked[0][1]
    assert unlabeled.doc_ids is not ranked[1][0]
    assert (unlabeled.doc_ids, unlabeled.doc_times) == ranked[1] == ranked[0]
    labeled.set_label("a", 2.0)
    assert labeled.label_times == {"a": 10.0, "b": TS}


def test_release_without_the_message_keeps_the_documents() -> None:
    query = _open(_event([{"doc_id": "a", "t_doc": 1.0}]), keep_raw=False)
    query.release()
    assert list(query.top_doc_times(3)) == [1.0]
    assert query.doc_times == (1.0,)


def test_mappings_are_accepted_as_results() -> None:
    query = OpenQuery.from_retrieval(
        "q",
        partition=0,
        labelset=(),
        ts=TS,
        ttl=1.0,
        results=[{"doc_id": "a", "rel": 1.0}, {"doc_id": "b", "t_doc": 2 * TS}],
    )
    assert query.doc_ids == ("a", "b")
    assert query.doc_times == (TS, TS)
    assert query.labels == {"a": 1.0}


def test_a_message_only_the_reference_decoder_takes_is_decoded_again_the_same_way() -> None:
    raw = _event([{"doc_id": "a", "t_doc": 10.0}, {"doc_id": "b"}])[:-1] + b', "x": NaN}'
    query = _open(raw, keep_raw=True)  # msgspec rejects NaN; the pydantic reference accepts
    query.release()
    assert query.doc_ids == ("a", "b")
    assert query.doc_times == (10.0, TS)


_Docs = list[dict[str, Any]]


def _labels_of(results: _Docs, qrels: _Docs | None = None) -> Any:
    query = _open(_event(results, qrels), keep_raw=False)
    return query.doc_ids, query.repeats, query.labels, query.label_times


def test_an_inline_label_on_a_repeat_counts_at_the_first_position() -> None:
    # SPEC §2: the repeat's position does not count, its rel does
    results: list[dict[str, Any]] = [{"doc_id": "a"}, {"doc_id": "b", "rel": 2}]
    results.append({"doc_id": "a", "rel": 1})
    assert _labels_of(results) == (("a", "b"), 1, {"b": 2.0, "a": 1.0}, {"a": TS, "b": TS})


def test_inline_labels_of_repeats_apply_in_list_order() -> None:
    several: _Docs = [{"doc_id": "a", "rel": 1}, {"doc_id": "a", "rel": 3}, {"doc_id": "b"}]
    several.append({"doc_id": "a", "rel": 2})
    assert _labels_of(several)[2] == {"a": 2.0}  # the last in the list wins
    zero_last: _Docs = [{"doc_id": "a", "rel": 2}, {"doc_id": "a"}, {"doc_id": "a", "rel": 0}]
    assert _labels_of(zero_last)[:3] == (("a",), 2, {"a": 0.0})  # rel=0 after rel=2: judged 0
    no_rel_last: _Docs = [{"doc_id": "a", "rel": 2}, {"doc_id": "a", "rel": None}]
    assert _labels_of(no_rel_last)[2] == {"a": 2.0}  # a repeat without rel is no label
    # qrels first, then every inline rel in list order
    qrels: _Docs = [{"doc_id": "a", "rel": 3}, {"doc_id": "z", "rel": 1}]
    repeated: _Docs = [{"doc_id": "a"}, {"doc_id": "a", "rel": 0}]
    assert _labels_of(repeated, qrels)[2] == {"a": 0.0, "z": 1.0}


def test_a_repeat_label_has_its_documents_time_in_the_ranking() -> None:
    # the first occurrence's t_doc is the document's time; a repeat's t_doc is not read
    results: list[dict[str, Any]] = [{"doc_id": "a", "t_doc": 10.0}, {"doc_id": "b"}]
    results.append({"doc_id": "a", "t_doc": 500.0, "rel": 1})
    ids, _, labels, label_times = _labels_of(results)
    assert (ids, labels, label_times) == (("a", "b"), {"a": 1.0}, {"a": 10.0})
    # without a t_doc on the first occurrence, a qrel's time is kept, as for any inline label
    results = [{"doc_id": "a"}, {"doc_id": "a", "t_doc": 500.0, "rel": 1}]
    qrels = [{"doc_id": "a", "rel": 3, "t_doc": 20.0}]
    assert _labels_of(results, qrels)[2:] == ({"a": 1.0}, {"a": 20.0})
