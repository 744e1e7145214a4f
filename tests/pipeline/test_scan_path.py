"""The engine with the compiled scanner against the engine with msgspec alone.

Both read the same batches; after every batch their whole state (windows, open queries
with their contributions, counters) and what the batch reported (invalid messages with
their reasons, answers, final queries) must be equal, whatever the traffic: several label
sets, probes with qrels, inline labels, late and early feedback, answers, duplicates,
repeated documents, RFC 3339 times, unknown fields and malformed messages.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.events import Message
from ragstream.events.limits import DEFAULT_LIMITS
from ragstream.events.scanner import AVAILABLE, bounds_of, scan_retrievals
from ragstream.join import QueryView
from ragstream.pipeline.engine import BatchReport, Engine, EngineConfig
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.support.defaults import engine_config

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="the compiled scanner is not built")

WALL = 1_900_000_000.0


def _config(scan: bool, **options: Any) -> EngineConfig:
    base: dict[str, Any] = {
        "cutoffs": (1, 3, 10),
        "half_lives": (3600.0,),
        "windows": (60.0, 600.0),
        "buckets": 12,
        "clock": "event",
        "label_ttl": 120.0,
    }
    return engine_config(**{**base, **options}, scan=scan)


def _twist(value: bytes, rng: random.Random) -> bytes:
    """Variants the scanner declines or must read right: repeats (some with inline labels of
    their own), inline labels, text times, unknown fields, spacing, truncation, a feedback
    type on a retrieval body."""
    event = json.loads(value)
    roll = rng.random()
    if event.get("type") != "retrieval" or roll > 0.5:
        return value
    results = event["results"]
    if roll < 0.025 and results:
        results.append(dict(results[0]))  # a repeated document
    elif roll < 0.05 and results:  # repeats whose inline labels count, in list order
        results.insert(1, {**results[-1], "rel": rng.choice([0, 1, 3])})
        results.append({**results[0], "rel": rng.choice([None, 0, 2]), "t_doc": 1.0})
    elif roll < 0.1 and results:
        results[min(2, len(results) - 1)]["rel"] = 2  # an inline label
        results[0]["rel"] = None
    elif roll < 0.15:
        event["ts"] = "2030-01-01T00:00:00.5+01:00"  # RFC 3339
    elif roll < 0.2:
        event["extra"] = {"nested": [1, 2.5, None]}  # tolerated, declined by the scanner
    elif roll < 0.25 and results:
        results[-1].pop("t_doc", None)
        results[0]["t_doc"] = None
    elif roll < 0.3:
        return json.dumps(event, indent=1).encode()  # other spacing
    elif roll < 0.35:
        return value[: len(value) // 2]  # truncated: invalid
    elif roll < 0.4:
        event["qrels"] = [{"doc_id": "unranked", "rel": 1}, *event.get("qrels", [])]
    elif roll < 0.45:
        event["query_id"] = ""  # invalid: too short
    else:
        event["labels"] = {"app": "x" * 300}  # invalid: label too long
    return json.dumps(event, separators=(",", ":")).encode()


def _stream(n: int, seed: int) -> list[Message]:
    rng = random.Random(seed)
    traffic = SyntheticTraffic(SyntheticConfig(seed=seed, rate=5.0, drift_at=60.0))
    out: list[Message] = []
    for i, event in enumerate(traffic.take(n)):
        value = _twist(event.value, rng)
        out.append(Message(value, partition=int(event.key[-1]) % 3, offset=i))
        if rng.random() < 0.02 and out:  # a duplicate delivery
            out.append(Message(value, partition=out[-1].partition, offset=i))
    return out


def _report(report: BatchReport, engine: Engine) -> Any:
    final = [
        (q.query_id, q.labelset, q.labels, q.label_times, _row(q.contribution))
        for q in report.final
    ]
    invalid = [(m.offset, e.reason, e.detail) for m, e in report.invalid]
    answers = [(p, a.query_id) for p, a in report.answers]
    return invalid, answers, final, engine.snapshot()


def _row(row: np.ndarray[Any, Any] | None) -> list[float | None] | None:
    return None if row is None else [None if v != v else v for v in row.tolist()]


def _run_both(messages: list[Message], batch: int, **options: Any) -> int:
    """Apply `messages` in batches to both engines; compare after each; the number of
    messages the scanner read."""
    engines = [Engine(_config(scan, **options), wall=lambda: WALL) for scan in (True, False)]
    scanned = 0
    bounds = bounds_of(DEFAULT_LIMITS)
    for start in range(0, len(messages), batch):
        part = messages[start : start + batch]
        scanned += sum(r is not None for r in scan_retrievals([m.value for m in part], bounds))
        with_scan, without = (_report(e.apply(part), e) for e in engines)
        assert with_scan == without
    finals = [_report(BatchReport(final=e.finish()), e) for e in engines]
    assert finals[0] == finals[1]
    return scanned


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"label_keys": ("app", "index")},
        {"clock": "wall", "future_tolerance": 30.0},
        {"max_open": 50, "label_ttl": 30.0},
        {"final_unlabeled": False, "label_keys": ("app", "index")},
        {"final_unlabeled": False, "max_open": 50, "label_ttl": 30.0},
        {"report_final": False, "label_keys": ("app", "index")},
        {"report_final": False, "max_open": 50, "label_ttl": 30.0},
    ],
    ids=[
        "plain",
        "label-keys",
        "wall-clock",
        "small-caps",
        "labeled-final",
        "labeled-final-caps",
        "no-final-report",
        "no-final-report-caps",
    ],
)
def test_scanner_and_msgspec_engines_agree(options: dict[str, Any]) -> None:
    messages = _stream(1_500, seed=11)
    scanned = _run_both(messages, 97, **options)
    retrievals = sum(b'"retrieval"' in m.value for m in messages)
    assert scanned > retrievals // 3  # the scanner did read most retrieval events


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), batch=st.integers(1, 300))
def test_any_stream_and_batching(seed: int, batch: int) -> None:
    _run_both(_stream(300, seed), batch)


def test_leaving_out_unlabeled_final_queries_changes_nothing_else() -> None:
    """`final_unlabeled=False` (the agent): the same state after every batch, and the final
    queries reported are the labeled ones of the full report, in the same order."""
    traffic = SyntheticTraffic(SyntheticConfig(seed=5, rate=5.0, click_share=0.2))
    messages = [  # untwisted: the event clock stays in the traffic's time
        Message(event.value, partition=int(event.key[-1]) % 3, offset=i)
        for i, event in enumerate(traffic.take(3_000))
    ]
    engines = [
        Engine(_config(True, label_keys=("app",), final_unlabeled=every), wall=lambda: WALL)
        for every in (True, False)
    ]
    unlabeled = kept = 0
    for start in range(0, len(messages), 97):
        part = messages[start : start + 97]
        full, labeled = (e.apply(part) for e in engines)
        assert [q.query_id for q in labeled.final] == [q.query_id for q in full.final if q.labels]
        assert engines[1].snapshot() == engines[0].snapshot()
        unlabeled += sum(not q.labels for q in full.final)
        kept += sum(join.kept_count for join in engines[1].joins.values())
    finals = [e.finish() for e in engines]
    assert [q.query_id for q in finals[1]] == [q.query_id for q in finals[0] if q.labels]
    assert engines[1].snapshot() == engines[0].snapshot()
    unlabeled += sum(not q.labels for q in finals[0])
    assert unlabeled > 100  # the full report had unlabeled final queries to leave out
    assert kept > 100  # and the agent's engine kept unlabeled queries in blocks


def test_late_labels_rebuild_a_released_scanned_query() -> None:
    """A label after the query was scored: its ranking is decoded again from the message."""
    retrieval = {
        "type": "retrieval",
        "query_id": "q1",
        "ts": 1_800_000_000.0,
        "results": [
            {"doc_id": "a", "t_doc": 1_799_000_000.0},
            {"doc_id": "b"},
            {"doc_id": "c", "t_doc": 1_900_000_000.0},
        ],
    }
    feedback = {
        "type": "feedback",
        "query_id": "q1",
        "ts": 1_800_000_010.0,
        "doc_id": "b",
        "rel": 1,
        "source": "click",
    }

    def message(event: dict[str, Any], offset: int) -> Message:
        return Message(json.dumps(event).encode(), partition=0, offset=offset)

    engine = Engine(_config(True), wall=lambda: WALL)
    engine.apply([message(retrieval, 0)])
    query = engine.find_query("q1")
    assert query is not None
    assert not query.labeled
    engine.apply([message(feedback, 1)])
    query = engine.find_query("q1")  # the lookup is a read: a copy of the query as it is now
    assert query is not None
    assert query.labels == {"b": 1.0}
    assert query.doc_ids == ("a", "b", "c")
    # b has no t_doc: it dates from ts; c is after ts: clamped to ts
    assert query.doc_times == (1_799_000_000.0, 1_800_000_000.0, 1_800_000_000.0)
    assert query.contribution is not None
    rr = engine.layout.unpack(query.contribution).plain[0]
    assert rr == 0.5  # the relevant document is second


def _ages(engine: Engine) -> Callable[[str], float]:
    def age(query_id: str) -> float:
        query = engine.find_query(query_id)
        assert query is not None
        assert query.contribution is not None
        return float(engine.layout.unpack(query.contribution).doc_age[0])

    return age


def test_document_age_from_the_scanned_times() -> None:
    """Mean age of the top document at ts, hand-computed: missing and future times count as
    ts (age 0)."""
    events = [
        {"query_id": "old", "results": [{"doc_id": "a", "t_doc": 1_799_999_000.0}]},
        {"query_id": "none", "results": [{"doc_id": "a"}]},
        {"query_id": "future", "results": [{"doc_id": "a", "t_doc": 1_800_000_500}]},
    ]
    messages = [
        Message(json.dumps({"type": "retrieval", "ts": 1_800_000_000, **e}).encode(), 0, offset=i)
        for i, e in enumerate(events)
    ]
    assert all(scan_retrievals([m.value for m in messages], bounds_of(DEFAULT_LIMITS)))
    engine = Engine(_config(True), wall=lambda: WALL)
    engine.apply(messages)
    age = _ages(engine)
    assert (age("old"), age("none"), age("future")) == (1000.0, 0.0, 0.0)


def test_a_label_on_a_repeat_scores_as_the_same_label_on_the_first_occurrence() -> None:
    """The scanner reads the event without repeats, msgspec the one with them (the scanner
    declines it): one answer, the contract's (rr 1 at position 1 with label 1)."""
    ts = 1_767_225_600.0
    plain = [{"doc_id": "a", "rel": 1, "t_doc": ts - 60}, {"doc_id": "b", "rel": 2}]
    repeated = [{"doc_id": "a", "t_doc": ts - 60}, {"doc_id": "b", "rel": 2}]
    repeated.append({"doc_id": "a", "rel": 1, "t_doc": ts})
    rows = []
    for results in (plain, repeated):
        event = {"type": "retrieval", "query_id": "q", "ts": ts, "results": results}
        value = json.dumps(event).encode()
        read = scan_retrievals([value], bounds_of(DEFAULT_LIMITS))[0]
        assert (read is None) == (results is repeated)
        engine = Engine(_config(True), wall=lambda: WALL)
        engine.apply([Message(value, partition=0, offset=0)])
        (query,) = engine.finish()
        assert query.labels == {"a": 1.0, "b": 2.0}
        rows.append((query.doc_ids, query.label_times, _row(query.contribution)))
        assert dict(zip(engine.columns, _row(query.contribution) or [], strict=False))["rr"] == 1
    assert rows[0] == rows[1]


def test_batches_grouped_by_partition_as_getmany_gives_them() -> None:
    """A batch in which every message is a scanned retrieval event on time and each
    partition's messages come together (Kafka's usual batch): the same state as msgspec's
    engine after every batch."""
    traffic = SyntheticTraffic(SyntheticConfig(seed=9, rate=5.0, probe_share=0.3))
    retrievals = [e for e in traffic.take(6_000) if e.value.startswith(b'{"type":"retrieval"')]
    messages = [
        Message(e.value, partition=int(e.key[-1]) % 3, offset=i) for i, e in enumerate(retrievals)
    ]
    for options in ({}, {"label_keys": ("app", "index"), "report_final": False}):
        engines = [Engine(_config(scan, **options), wall=lambda: WALL) for scan in (True, False)]
        batches = 0
        for start in range(0, len(messages), 250):
            batches += 1
            part = sorted(messages[start : start + 250], key=lambda m: m.partition)
            with_scan, without = (_report(e.apply(part), e) for e in engines)
            assert with_scan == without
        assert batches >= 5
        finals = [_report(BatchReport(final=e.finish()), e) for e in engines]
        assert finals[0] == finals[1]


def _state(query: QueryView) -> tuple[object, ...]:
    """What a lookup reads of a query, as values."""
    contribution = None if query.contribution is None else query.contribution.tobytes()
    values = (query.labels, query.label_times, query.label_sources, query.expires_at)
    return (query.query_id, query.doc_ids, query.doc_times, *values, contribution)


def test_a_lookup_changes_no_state() -> None:
    """`find_query` (the judge's lookup) reads a query kept in a block without taking it
    out: the engine's state, its blocks and what the next batch does stay the same."""
    traffic = SyntheticTraffic(SyntheticConfig(seed=5, rate=50.0, start=WALL - 600.0))
    messages = [Message(e.value, offset=i) for i, e in enumerate(traffic.take(3000))]
    looked, plain = (
        Engine(_config(True), wall=lambda: WALL),
        Engine(_config(True), wall=lambda: WALL),
    )
    for e in (looked, plain):
        e.apply(messages[:2000])
    kept = looked.joins[0].kept_count
    assert kept > 100  # queries kept in blocks, the ones a lookup used to take out
    before = looked.snapshot()
    ids = [json.loads(m.value)["query_id"] for m in messages[:2000]]
    found = [q for q in map(looked.find_query, ids) if q is not None]
    assert len(found) > kept // 2
    assert all(q.contribution is not None for q in found)
    assert looked.joins[0].kept_count == kept
    assert looked.snapshot() == before
    again = [looked.find_query(q.query_id) for q in found[:50]]
    assert [_state(q) for q in again if q is not None] == [_state(q) for q in found[:50]]
    for e in (looked, plain):
        e.apply(messages[2000:])
    assert looked.snapshot() == plain.snapshot()


def test_the_tables_cut_their_closed_rows_and_stay_equal() -> None:
    """Long enough for the join's tables to cut their closed rows off the front (a short
    label TTL: most rows close soon): every batch still equal to the msgspec engine's, and
    the rows kept bounded by the open queries, not by the events."""
    traffic = SyntheticTraffic(SyntheticConfig(seed=3, rate=5.0, click_share=0.2))
    messages = [
        Message(event.value, partition=int(event.key[-1]) % 3, offset=i)
        for i, event in enumerate(traffic.take(40_000))
    ]
    options: dict[str, Any] = {"label_ttl": 20.0, "report_final": False}
    _run_both(messages, 499, **options)
    engine = Engine(_config(True, **options), wall=lambda: WALL)
    for start in range(0, len(messages), 499):
        engine.apply(messages[start : start + 499])
    assert all(join.table.base > 2 * 1024 for join in engine.joins.values())  # cut, and again
    for join in engine.joins.values():
        assert join.counters.opened > 2 * len(join.table)
        assert len(join.table) <= 2 * join.open_count + 2 * 1024 + 499
        assert len(join.table.values) <= 2 * len(join.table)  # matrices cut with their rows
