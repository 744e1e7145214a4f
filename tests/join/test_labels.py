"""Late-label join: hand-worked cases, invariants, and snapshot round-trips."""

from __future__ import annotations

import json
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.events import DecodedRetrieval, RetrievedDoc, decode_event, dedupe_results
from ragstream.events.limits import DEFAULT_LIMITS
from ragstream.events.scanner import AVAILABLE, Scanned, bounds_of, scan_retrievals
from ragstream.join import LabelJoin, LabelOutcome, Openings, QueryView
from tests.support.defaults import label_join

LS = ("support",)


def _changed(join: LabelJoin) -> list[QueryView]:
    """The queries opened or relabelled since the last call, in arrival order."""
    return [join.table.read(row) for row in join.take_changed()]


def _advance(join: LabelJoin, t_now: float) -> list[QueryView]:
    """The queries final at `t_now`, read."""
    return [join.table.read(row) for row in join.advance(t_now)]


def _open(
    join: LabelJoin,
    qid: str,
    ts: float,
    docs: list[RetrievedDoc],
    qrels: list[RetrievedDoc] | None = None,
) -> int:
    """Open a query from its retrieval event's message, decoded; returns the duplicates."""
    event: dict[str, object] = {"type": "retrieval", "query_id": qid, "ts": ts, "results": docs}
    if qrels is not None:
        event["qrels"] = qrels
    raw = json.dumps(event).encode()
    decoded = decode_event(raw)
    assert isinstance(decoded, DecodedRetrieval)
    return join.open(Openings([decoded], [LS], [ts], [raw], None))


def test_dedupe_keeps_first_position_and_counts_repeats() -> None:
    docs = [
        RetrievedDoc(doc_id="a"),
        RetrievedDoc(doc_id="b"),
        RetrievedDoc(doc_id="a"),
        RetrievedDoc(doc_id="c"),
        RetrievedDoc(doc_id="b"),
    ]
    ranking = dedupe_results(docs)
    assert [d["doc_id"] for d in ranking.docs] == ["a", "b", "c"]
    assert ranking.repeats == 2


def test_open_merges_qrels_then_inline_labels_and_fixes_doc_times() -> None:
    join = label_join(label_ttl=100.0)
    results = [
        RetrievedDoc(doc_id="a", t_doc=50.0, rel=1),
        RetrievedDoc(doc_id="b", t_doc=500.0),
        RetrievedDoc(doc_id="c"),
    ]
    qrels = [
        RetrievedDoc(doc_id="a", rel=3),
        RetrievedDoc(doc_id="z", rel=2, t_doc=10.0),
        RetrievedDoc(doc_id="y", rel=1),
    ]
    _open(join, "q", 100.0, results, qrels=qrels)
    query = join.get("q")
    assert query is not None
    assert query.labels == {"a": 1, "z": 2, "y": 1}  # inline rel arrives after qrels, wins
    assert query.doc_times == (50.0, 100.0, 100.0)  # future t_doc clamped, missing -> ts
    assert query.label_times == {"a": 50.0, "z": 10.0, "y": 100.0}
    assert query.expires_at == 200.0
    assert [q.query_id for q in _changed(join)] == ["q"]
    assert _changed(join) == []


def test_labels_apply_in_arrival_order_and_mark_dirty_once() -> None:
    join = label_join(label_ttl=100.0)
    _open(join, "q", 0.0, [RetrievedDoc(doc_id="a"), RetrievedDoc(doc_id="b")])
    _changed(join)
    assert join.label("q", "a", 2, ts=10, t_now=10, source="click") is LabelOutcome.APPLIED
    assert (
        join.label("q", "a", 0, ts=5, t_now=11, source="click") is LabelOutcome.APPLIED
    )  # later arrival wins
    assert join.label("q", "b", 1, ts=12, t_now=12, source="click") is LabelOutcome.APPLIED
    dirty = _changed(join)
    assert [q.query_id for q in dirty] == ["q"]
    assert dirty[0].labels == {"a": 0, "b": 1}
    assert join.counters.labels_applied == 3


def test_label_past_ttl_or_after_final_is_late() -> None:
    join = label_join(label_ttl=100.0)
    _open(join, "q", 0.0, [RetrievedDoc(doc_id="a")])
    assert join.label("q", "a", 1, ts=100.5, t_now=50, source="click") is LabelOutcome.LATE
    assert _advance(join, 100.0) == []  # expires_at == 100 is still open at t_now = 100
    final = _advance(join, 100.1)
    assert [q.query_id for q in final] == ["q"]
    assert join.label("q", "a", 1, ts=90, t_now=101, source="click") is LabelOutcome.LATE
    assert join.counters.labels_late == 2
    assert join.open_count == 0
    assert join.pending_count == 0


def test_feedback_before_retrieval_waits_then_applies() -> None:
    join = label_join(label_ttl=100.0, pending_ttl=60.0)
    assert join.label("q", "b", 2, ts=5, t_now=5, source="click") is LabelOutcome.PENDING
    assert join.pending_count == 1
    _open(join, "q", 4.0, [RetrievedDoc(doc_id="a"), RetrievedDoc(doc_id="b", rel=0)])
    query = join.get("q")
    assert query is not None
    assert query.labels == {"b": 2}  # the buffered feedback refers to this retrieval: it wins
    assert join.pending_count == 0
    assert join.counters.labels_pending == 1
    assert join.counters.labels_applied == 1


def test_waiting_labels_expire_after_pending_ttl() -> None:
    join = label_join(pending_ttl=60.0)
    join.label("lost", "a", 1, ts=0, t_now=0, source="click")
    join.label("lost", "b", 1, ts=1, t_now=1, source="click")
    _advance(join, 60.0)
    assert join.pending_count == 2
    _advance(join, 60.5)
    assert join.pending_count == 0
    assert join.counters.pending_expired == 2
    _open(join, "lost", 2.0, [RetrievedDoc(doc_id="a")])
    query = join.get("lost")
    assert query is not None
    assert not query.labeled


def test_caps_evict_oldest_and_count() -> None:
    join = label_join(label_ttl=100.0, max_open=2, max_pending=2)
    for i in range(3):
        _open(join, f"q{i}", float(i), [RetrievedDoc(doc_id="a")])
    assert join.open_count == 2
    assert join.counters.open_evicted == 1
    final = _advance(join, 0.0)
    assert [q.query_id for q in final] == ["q0"]
    for i in range(3):
        join.label(f"w{i}", "a", 1, ts=0, t_now=0, source="click")
    assert join.pending_count == 2
    assert join.counters.pending_evicted == 1


def test_duplicate_retrieval_is_counted_and_ignored() -> None:
    join = label_join()
    _open(join, "q", 0.0, [RetrievedDoc(doc_id="a", rel=1)])
    assert _open(join, "q", 1.0, [RetrievedDoc(doc_id="b")]) == 1
    assert join.counters.duplicate_retrievals == 1
    query = join.get("q")
    assert query is not None
    assert query.doc_ids == ("a",)


_event = st.one_of(
    st.tuples(st.just("open"), st.integers(0, 5), st.floats(0, 500)),
    st.tuples(st.just("label"), st.integers(0, 5), st.floats(0, 500)),
    st.tuples(st.just("advance"), st.integers(0, 0), st.floats(0, 500)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_event, max_size=60))
def test_every_label_is_accounted_for_and_state_is_bounded(
    events: list[tuple[str, int, float]],
) -> None:
    join = label_join(label_ttl=100.0, pending_ttl=30.0, max_open=3, max_pending=4)
    t_now = 0.0
    labels = 0
    for kind, n, t in events:
        t_now = max(t_now, t)
        if kind == "open":
            _open(join, f"q{n}", t, [RetrievedDoc(doc_id="a"), RetrievedDoc(doc_id="b")])
        elif kind == "label":
            labels += 1
            join.label(f"q{n}", "a", 1.0, ts=t, t_now=t_now, source="click")
        else:
            _advance(join, t_now)
        assert join.open_count <= 3
        assert join.pending_count <= 4
        c = join.counters
        direct_or_drained = c.labels_applied + c.labels_late + c.pending_expired
        assert direct_or_drained + c.pending_evicted + join.pending_count == labels
        snap = join.snapshot()
        assert LabelJoin.restore(json.loads(json.dumps(snap))).snapshot() == snap


def test_final_ids_are_remembered_for_label_ttl_after_their_query_closed() -> None:
    join = label_join(label_ttl=100.0, pending_ttl=60.0)
    _open(join, "q", 0.0, [RetrievedDoc(doc_id="a")])  # closes at 0 + 100
    assert [q.query_id for q in _advance(join, 100.1)] == ["q"]
    _advance(join, 200.0)  # 100 + 100 = 200 is not before t_now: just inside the horizon
    assert join.snapshot()["final"] == [("q", 100.0)]
    assert join.label("q", "a", 1, ts=150, t_now=200, source="click") is LabelOutcome.LATE
    assert _open(join, "q", 150.0, []) == 1  # duplicate
    _advance(join, 200.5)  # just outside: forgotten
    assert join.snapshot()["final"] == []
    assert join.label("q", "a", 1, ts=150, t_now=200.5, source="click") is LabelOutcome.PENDING
    assert join.counters.labels_late == 1
    assert join.counters.duplicate_retrievals == 1
    _advance(join, 260.6)  # the label waited pending_ttl = 60 s, then expired
    assert join.counters.pending_expired == 1


def test_the_count_cap_still_bounds_the_final_ids_within_the_horizon() -> None:
    join = label_join(label_ttl=100.0, recent_final=2)
    for i in range(3):
        _open(join, f"q{i}", float(i), [RetrievedDoc(doc_id="a")])
    _advance(join, 103.0)  # all three close (100, 101, 102), all within the horizon
    assert join.snapshot()["final"] == [("q1", 101.0), ("q2", 102.0)]
    assert join.label("q0", "a", 1, ts=50, t_now=103, source="click") is LabelOutcome.PENDING


def test_a_query_closing_out_of_time_order_is_remembered_until_the_later_close() -> None:
    join = label_join(label_ttl=10.0)
    _open(join, "late-event", 20.0, [RetrievedDoc(doc_id="a")])  # closes at 30
    _advance(join, 30.5)
    _open(join, "older", 5.0, [RetrievedDoc(doc_id="a")])  # closes at 15, already past
    _advance(join, 31.0)
    assert join.snapshot()["final"] == [("late-event", 30.0), ("older", 30.0)]
    _advance(join, 40.0)
    assert len(join.snapshot()["final"]) == 2
    _advance(join, 40.1)
    assert join.snapshot()["final"] == []


def test_grades_keep_their_source_through_a_snapshot_and_an_older_one_restores() -> None:
    join = label_join(label_ttl=100.0)
    _open(join, "q", 0.0, [RetrievedDoc(doc_id="a", rel=1), RetrievedDoc(doc_id="b")])
    _open(join, "r", 1.0, [RetrievedDoc(doc_id="a")], qrels=[RetrievedDoc(doc_id="z", rel=2)])
    join.label("q", "b", 2, ts=5, t_now=5, source="thumb")
    join.label("q", "a", 0, ts=6, t_now=6, source="click")  # the latest grade's source
    join.label("later", "c", 1, ts=7, t_now=7, source="annotator")  # waits
    _changed(join)
    snap = json.loads(json.dumps(join.snapshot()))
    restored = LabelJoin.restore(snap)
    assert restored.snapshot() == snap
    q, r = restored.get("q"), restored.get("r")
    assert q is not None
    assert r is not None
    assert (q.labels, q.label_sources) == ({"a": 0, "b": 2}, {"click": 1, "thumb": 1})
    assert r.label_sources == {"qrels": 1}
    _open(restored, "later", 8.0, [RetrievedDoc(doc_id="c")])
    assert restored.get("later").label_sources == {"annotator": 1}  # type: ignore[union-attr]
    # a snapshot of the previous version: no sources, and each open query's partition and
    # repeats; its grades and waiting labels restore with the source `unknown`
    older = json.loads(json.dumps(snap))
    for item in older["open"]:
        del item["sources"]
        item |= {"partition": 0, "repeats": 0}
    older["pending"] = {q: [label[:5] for label in w] for q, w in older["pending"].items()}
    old = LabelJoin.restore(older)
    q = old.get("q")
    assert q is not None
    assert (q.labels, q.label_times, q.doc_ids) == (
        {"a": 0, "b": 2},
        {"a": 0.0, "b": 0.0},
        ("a", "b"),
    )
    assert q.label_sources == {"unknown": 2}
    _open(old, "later", 8.0, [RetrievedDoc(doc_id="c")])
    assert old.get("later").label_sources == {"unknown": 1}  # type: ignore[union-attr]


def test_restore_keeps_the_close_times_nondecreasing() -> None:
    snap = label_join(label_ttl=10.0).snapshot()
    snap["final"] = [["a", 5.0], ["b", 3.0], ["c", 7.0]]  # e.g. written by an older version
    join = LabelJoin.restore(snap)
    assert join.snapshot()["final"] == [("a", 5.0), ("b", 5.0), ("c", 7.0)]
    _advance(join, 15.5)
    assert join.snapshot()["final"] == [("c", 7.0)]


@settings(max_examples=150, deadline=None)
@given(st.lists(_event, max_size=60))
def test_final_ids_stay_within_the_horizon_and_the_cap(
    events: list[tuple[str, int, float]],
) -> None:
    join = label_join(label_ttl=50.0, pending_ttl=30.0, max_open=3, recent_final=4)
    t_now = 0.0
    finalized: dict[str, float] = {}  # from scratch: query id -> its latest close time
    for kind, n, t in events:
        t_now = max(t_now, t)
        if kind == "open":
            _open(join, f"q{n}", t, [RetrievedDoc(doc_id="a")])
        elif kind == "label":
            join.label(f"q{n}", "a", 1.0, ts=t, t_now=t_now, source="click")
        else:
            for q in _advance(join, t_now):
                finalized[q.query_id] = q.expires_at
            final = join.snapshot()["final"]
            times = [closed for _, closed in final]
            assert len(final) <= 4
            assert times == sorted(times)
            assert all(closed >= t_now - 50.0 for closed in times)
            for qid, closed in final:  # never earlier than the query really closed
                assert closed >= finalized[qid]


@pytest.mark.skipif(not AVAILABLE, reason="the compiled scanner is not built")
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 3)), min_size=1, max_size=30))
def test_a_run_of_scanned_and_decoded_events_opens_as_each_alone(
    picks: list[tuple[int, int]],
) -> None:
    # repeats (declined by the scanner, decoded), labels, duplicate ids, past the cap
    picks = [(7, 1), *picks]  # one repeat at least
    raws = []
    for n, shape in picks:
        results: list[RetrievedDoc] = [{"doc_id": "a", "t_doc": 5.0}, {"doc_id": "b"}]
        if shape == 1:
            results.append({"doc_id": "a"})
        elif shape == 2:
            results[1]["rel"] = 2.0
        message = {"type": "retrieval", "query_id": f"q{n}", "ts": 10.0 + n, "results": results}
        raws.append(json.dumps(message).encode())
    scanned = scan_retrievals(raws, bounds_of(DEFAULT_LIMITS))
    events = [
        decode_event(raw) if got is None else got for raw, got in zip(raws, scanned, strict=True)
    ]
    assert any(type(e) is DecodedRetrieval for e in events)
    times = [10.0 + n for n, _ in picks]
    opening = cast("list[Scanned | DecodedRetrieval]", events)
    batch = Openings(opening, [()] * len(events), times, raws, None)
    together, alone = label_join(max_open=8), label_join(max_open=8)
    duplicates = together.open(batch)
    for i in range(len(batch)):
        duplicates -= alone.open(batch.slice(i, i + 1))
    assert duplicates == 0
    assert together.take_changed() == alone.take_changed()
    assert together.snapshot() == alone.snapshot()
    # with trace ids (none for shape 3): each open query keeps its own, alone or together,
    # through a snapshot; a label that waited for its query (q0) changes nothing
    traces = [None if shape == 3 else f"{n + 1:032x}" for n, shape in picks]
    traced, traced_alone = label_join(max_open=8), label_join(max_open=8)
    for join in (traced, traced_alone):
        join.label("q0", "a", 1.0, ts=10.0, t_now=10.0, source="click")
    traced_batch = Openings(opening, [()] * len(events), times, raws, traces)
    traced.open(traced_batch)
    for i in range(len(traced_batch)):
        traced_alone.open(traced_batch.slice(i, i + 1))
    snapshot = traced.snapshot()
    assert snapshot == traced_alone.snapshot()
    first: dict[str, str | None] = {}  # the trace id of each query id's first (opening) event
    for (n, _), trace in zip(picks, traces, strict=True):
        first.setdefault(f"q{n}", trace)
    expected = {q: first[q] for q in [o["query_id"] for o in snapshot["open"]] if first[q]}
    assert snapshot.get("traces", {}) == expected
    restored = LabelJoin.restore(json.loads(json.dumps(snapshot)))
    assert restored.snapshot() == snapshot
    for qid, trace in expected.items():
        assert restored.table.trace(restored._open[qid]) == trace
