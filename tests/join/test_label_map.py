"""Entries of the label map read from decoded events equal a plain, eager reading of the
event; a row without one gets it from its message when a label comes."""

from __future__ import annotations

import json
from array import array
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.events import DecodedRetrieval, decode_event
from ragstream.join import QueryTable, RowLabels
from ragstream.join.label_map import labels_of

TS = 1_000.0


def _event(results: list[dict[str, Any]], qrels: list[dict[str, Any]] | None = None) -> bytes:
    event: dict[str, Any] = {"type": "retrieval", "query_id": "q", "ts": TS, "results": results}
    if qrels is not None:
        event["qrels"] = qrels
    return json.dumps(event).encode()


def _open(raw: bytes) -> tuple[RowLabels, int, bytes]:
    event = decode_event(raw)
    assert isinstance(event, DecodedRetrieval)
    return labels_of(event, event.ts, event.ts + 60.0)


def _table_row(raw: bytes) -> tuple[QueryTable, int]:
    """A table with the event's row, without an entry (as an unlabeled event opens)."""
    table = QueryTable(partition=0, ttl=60.0)
    top = _open(raw)[2]
    return table, table.extend(["q"], [()], [TS], [raw], [top], None)


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
@given(st.lists(_doc, max_size=14), st.lists(_qrel, max_size=4))
def test_an_entry_equals_an_eager_reading(
    results: list[dict[str, Any]], qrels: list[dict[str, Any]]
) -> None:
    entry, repeats, top = _open(_event(results, qrels))
    ids, times, labels, label_times = _expected(results, qrels)
    effective = [TS if t != t or t > TS else t for t in array("d", top)]
    assert effective == times
    assert repeats == len(results) - len(ids)
    assert {d: g[0] for d, g in entry.grades.items()} == labels
    assert {d: g[1] for d, g in entry.grades.items()} == label_times
    assert list(entry.doc_ids) == ids
    assert list(entry.doc_times) == times
    inline = {d["doc_id"] for d in results if d.get("rel") is not None}
    last = {q["doc_id"]: "qrels" for q in qrels} | dict.fromkeys(inline, "inline")
    assert {d: g[2] for d, g in entry.grades.items()} == last  # the latest grade's source


def test_a_row_without_an_entry_reads_its_message_again_for_a_late_label() -> None:
    results: list[dict[str, Any]] = [
        {"doc_id": "a", "t_doc": 10.0},
        {"doc_id": "b"},
        {"doc_id": "a", "t_doc": 5.0},
    ]
    table, row = _table_row(_event(results))
    eager = _open(_event(results))[0]
    assert not table.labels
    kept = table.entry(row)  # given to the row: read from its message
    assert table.labels == {row: kept}
    for entry in (kept, eager):
        entry.grade("a", 2.0, None, "click")  # no t_doc with the label: its time in the ranking
        entry.grade("b", 1.0, None, "thumb")
    assert kept.grades == eager.grades == {"a": (2.0, 10.0, "click"), "b": (1.0, TS, "thumb")}
    assert kept.doc_ids == ("a", "b")
    assert table.read(row).label_sources == {"click": 1, "thumb": 1}


def test_a_labeled_row_keeps_its_entry() -> None:
    """A row's entry holds its ranking: its next label reads it, the message is not decoded
    again; the row read without an entry builds the same ranking from its message."""
    results: list[dict[str, Any]] = [{"doc_id": "a", "t_doc": 10.0}, {"doc_id": "b"}]
    table, row = _table_row(_event(results))
    unlabeled = table.read(row)
    entry = table.entry(row)
    assert table.entry(row) is entry
    assert (unlabeled.doc_ids, unlabeled.doc_times) == (entry.doc_ids, tuple(entry.doc_times))
    entry.grade("b", 1.0, None, "click")
    entry.grade("a", 2.0, None, "click")
    assert {d: g[1] for d, g in entry.grades.items()} == {"b": TS, "a": 10.0}
    assert table.read(row).labels == {"b": 1.0, "a": 2.0}
    assert unlabeled.labels == {}  # a read is a copy


def test_a_message_only_the_reference_decoder_takes_is_decoded_again_the_same_way() -> None:
    raw = _event([{"doc_id": "a", "t_doc": 10.0}, {"doc_id": "b"}])[:-1] + b', "x": NaN}'
    table = QueryTable(partition=0, ttl=60.0)
    row = table.extend(["q"], [()], [TS], [raw], [b""], None)
    query = table.read(row)  # msgspec rejects NaN; the pydantic reference accepts
    assert query.doc_ids == ("a", "b")
    assert query.doc_times == (10.0, TS)


_Docs = list[dict[str, Any]]


def _labels_of(results: _Docs, qrels: _Docs | None = None) -> Any:
    entry, repeats, _ = _open(_event(results, qrels))
    labels = {d: g[0] for d, g in entry.grades.items()}
    return entry.doc_ids, repeats, labels, {d: g[1] for d, g in entry.grades.items()}


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
