"""The engine end to end on synthetic traffic: windows equal a from-scratch computation."""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.events import Message
from ragstream.pipeline.engine import Engine
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.support.defaults import engine_config

WINDOWS = (60.0, 300.0, 3600.0)
WALL = 1_900_000_000.0  # a fixed wall clock after all synthetic event times


def _stream(n: int, seed: int = 3) -> list[Message]:
    traffic = SyntheticTraffic(SyntheticConfig(seed=seed, rate=5.0, drift_at=120.0))
    return [
        Message(e.value, partition=int(e.key[-1]) % 3, offset=i)
        for i, e in enumerate(traffic.take(n))
    ]


def _with_repeats(messages: list[Message], seed: int) -> list[Message]:
    """The messages with repeated documents added to a third of the retrieval events, with
    inline labels on first occurrences and repeats (some 0, some null, some differing)."""
    rng = random.Random(seed)
    out: list[Message] = []
    for m in messages:
        event = json.loads(m.value)
        if event["type"] == "retrieval" and rng.random() < 0.35:
            results = event["results"]
            for _ in range(rng.randint(1, 4)):
                doc = dict(rng.choice(results[:6]))
                doc["rel"] = rng.choice([None, 0, 1, 2, 3])
                doc["t_doc"] = doc.get("t_doc", event["ts"]) - rng.uniform(0, 1e6)
                results.insert(rng.randint(1, len(results)), doc)
            if rng.random() < 0.3:
                results[0]["rel"] = rng.choice([0, 2])
            value = json.dumps(event, separators=(",", ":")).encode()
            m = Message(value, partition=m.partition, offset=m.offset)
        out.append(m)
    return out


def _engine(label_ttl: float = 900.0, *, scan: bool = True, max_open: int = 200_000) -> Engine:
    config = engine_config(
        cutoffs=(1, 5, 10),
        half_lives=(3600.0,),
        windows=WINDOWS,
        clock="event",
        label_keys=("app",),
        label_ttl=label_ttl,
        scan=scan,
        max_open=max_open,
    )
    return Engine(config, wall=lambda: WALL)


def _assert_same_windows(one: Engine, other: Engine) -> None:
    """Both engines at the same clock, every window of every label set alike."""
    now = one.now()
    assert other.now() == now
    a, b = one.store.read(now, exact=True), other.store.read(now, exact=True)
    assert a.labelsets == b.labelsets
    assert a.queries.tolist() == b.queries.tolist()
    np.testing.assert_allclose(a.mean(), b.mean(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.decayed_mean(), b.decayed_mean(), rtol=1e-9, atol=1e-12)


def _reference(messages: list[Message]) -> dict[str, dict[str, Any]]:
    """Per query: ts, app, ranking, and labels applied as the contract says (no TTL hit)."""
    queries: dict[str, dict[str, Any]] = {}
    early: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for m in messages:
        e = json.loads(m.value)
        if e["type"] == "retrieval":
            labels = {q["doc_id"]: q["rel"] for q in e.get("qrels", [])}
            ranking: list[str] = []
            for doc in e["results"]:  # a repeat counts at its first position; its rel counts
                if doc["doc_id"] not in ranking:
                    ranking.append(doc["doc_id"])
                if doc.get("rel") is not None:
                    labels[doc["doc_id"]] = doc["rel"]
            for doc_id, rel in early.pop(e["query_id"], []):
                labels[doc_id] = rel
            queries[e["query_id"]] = {
                "ts": e["ts"],
                "app": e["labels"]["app"],
                "ranking": ranking,
                "labels": labels,
            }
        elif e["type"] == "feedback":
            if e["query_id"] in queries:
                queries[e["query_id"]]["labels"][e["doc_id"]] = e["rel"]
            else:
                early[e["query_id"]].append((e["doc_id"], e["rel"]))
    return queries


def _rr(q: dict[str, Any]) -> float:
    for rank, doc in enumerate(q["ranking"], start=1):
        if q["labels"].get(doc, 0) >= 1:
            return 1.0 / rank
    return 0.0


def _ndcg10(q: dict[str, Any]) -> float:
    gains = [q["labels"].get(d, 0.0) for d in q["ranking"][:10]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted((g for g in q["labels"].values()), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal) if g > 0)
    return dcg / idcg if idcg > 0 else 0.0


def _in_window(ts: float, now: float, window: float) -> bool:
    width = window / 60
    return math.floor(ts / width) >= math.floor(now / width) - 60


def _check_windows(engine: Engine, reference: dict[str, dict[str, Any]]) -> int:
    now = engine.now()
    checked = 0
    for (app,) in engine.store.labelsets():
        reads = engine.store.read(now, (app,), exact=True)
        for j, window in enumerate(WINDOWS):
            members = [
                q
                for q in reference.values()
                if q["app"] == app and _in_window(q["ts"], now, window)
            ]
            labeled = [q for q in members if q["labels"]]
            assert reads.queries[0, j] == len(members)
            mean = dict(zip(engine.columns, reads.mean()[0, j], strict=True))
            if labeled:
                assert mean["rr"] == pytest.approx(np.mean([_rr(q) for q in labeled]), abs=1e-9)
                assert mean["ndcg@10"] == pytest.approx(
                    np.mean([_ndcg10(q) for q in labeled]), abs=1e-9
                )
                checked += 1
            else:
                assert math.isnan(mean["rr"])
    return checked


def test_windows_equal_a_from_scratch_computation_after_every_batch() -> None:
    messages = _stream(3000)
    engine = _engine()
    for start in range(0, len(messages), 250):
        engine.apply(messages[start : start + 250])
        checked = _check_windows(engine, _reference(messages[: start + 250]))
        assert checked > 0
    assert engine.events[("retrieval", "processed")] == sum(
        1 for m in messages if b'"type":"retrieval"' in m.value
    )
    assert engine.invalid == {}


@pytest.mark.parametrize("scan", [True, False], ids=["scanner", "msgspec"])
def test_repeated_documents_with_inline_labels_equal_a_from_scratch_computation(
    scan: bool,
) -> None:
    messages = _with_repeats(_stream(1500, seed=5), seed=5)
    engine = _engine(scan=scan)
    for start in range(0, len(messages), 200):
        engine.apply(messages[start : start + 200])
        assert _check_windows(engine, _reference(messages[: start + 200])) > 0
    repeats = 0
    for m in messages:
        event = json.loads(m.value)
        if event["type"] == "retrieval":
            ids = [doc["doc_id"] for doc in event["results"]]
            repeats += len(ids) - len(set(ids))
    assert repeats > 300
    assert sum(join.counters.repeated_docs for join in engine.joins.values()) == repeats


@settings(max_examples=8, deadline=None)
@given(st.lists(st.integers(1, 400), min_size=1, max_size=12))
def test_batch_boundaries_do_not_change_the_numbers(sizes: list[int]) -> None:
    messages = _stream(1200, seed=9)
    one = _engine()
    one.apply(messages)
    many = _engine()
    start = 0
    while start < len(messages):
        size = sizes[start % len(sizes)]
        many.apply(messages[start : start + size])
        start += size
    _assert_same_windows(one, many)


def test_malformed_messages_are_counted_and_change_nothing_else() -> None:
    messages = _stream(800)
    junk = [
        Message(b"{not json", partition=0),
        Message(b'{"type": "retrieval"}', partition=1),
        Message(b'{"type": "teleport", "query_id": "x", "ts": 1}', partition=2),
        Message(b"[1, 2]", partition=0),
        Message(b"", partition=0),
    ]
    mixed: list[Message] = []
    for i, m in enumerate(messages):
        mixed.append(m)
        if i % 160 == 0:
            mixed.append(junk[(i // 160) % len(junk)])
    clean, dirty = _engine(), _engine()
    for start in range(0, len(messages), 100):
        clean.apply(messages[start : start + 100])
    reports = [dirty.apply(mixed[start : start + 100]) for start in range(0, len(mixed), 100)]
    assert sum(dirty.invalid.values()) == 5
    assert sum(len(r.invalid) for r in reports) == 5
    assert dirty.events[("unknown", "invalid")] == 5
    now = clean.now()
    a, b = clean.store.read(now, exact=True), dirty.store.read(now, exact=True)
    assert a.labelsets == b.labelsets
    np.testing.assert_allclose(a.mean(), b.mean(), rtol=1e-12)


def _window(engine: Engine, labels: tuple[str, ...], window: str) -> tuple[int, Any]:
    """Queries and means of one label set's window at the engine's t_now."""
    read = engine.store.read(engine.now(), labels, exact=True)
    j = engine.spec.names.index(window)
    return int(read.queries[0, j]), read.mean()[0, j]


def test_late_feedback_replaces_the_contribution() -> None:
    engine = _engine()
    ts = 1_767_225_600.0
    retrieval = {
        "type": "retrieval",
        "query_id": "q1",
        "ts": ts,
        "labels": {"app": "a"},
        "results": [{"doc_id": "x"}, {"doc_id": "y"}, {"doc_id": "z"}],
    }
    engine.apply([Message(json.dumps(retrieval).encode())])
    queries, mean = _window(engine, ("a",), "1m")
    assert queries == 1
    assert math.isnan(mean[engine.columns.index("rr")])  # unlabeled: volume only

    def feedback(doc: str, rel: int, dt: float) -> Message:
        event = {
            "type": "feedback",
            "query_id": "q1",
            "ts": ts + dt,
            "doc_id": doc,
            "rel": rel,
            "source": "click",
        }
        return Message(json.dumps(event).encode())

    rr = engine.columns.index("rr")
    engine.apply([feedback("z", 1, 5.0)])
    assert _window(engine, ("a",), "1m")[1][rr] == pytest.approx(1 / 3)
    engine.apply([feedback("y", 2, 6.0)])
    assert _window(engine, ("a",), "1m")[1][rr] == pytest.approx(1 / 2)
    engine.apply([feedback("y", 0, 7.0)])  # the latest label wins
    queries, mean = _window(engine, ("a",), "1m")
    assert mean[rr] == pytest.approx(1 / 3)
    assert queries == 1
    engine.apply([feedback("x", 1, 901.0)])  # past the TTL: late, not applied
    assert engine.events[("feedback", "late")] == 1
    assert _window(engine, ("a",), "1h")[1][rr] == pytest.approx(1 / 3)


def test_a_snapshot_holds_each_partition_as_its_state_topic_record() -> None:
    """The whole-engine snapshot is the shared parts and each held partition's record,
    the one `export_partitions` writes; another version is refused."""
    engine = _engine()
    engine.apply(_stream(900, seed=5))
    snapshot = engine.snapshot()
    records = engine.export_partitions(set(engine.partitions))
    assert records
    assert snapshot["partitions"] == {str(p): r for p, r in records.items()}
    with pytest.raises(ValueError, match="the snapshot is of version 1; this version"):
        Engine.restore(engine.config, {**snapshot, "version": 1})


def test_snapshot_restore_continues_exactly_where_it_stopped() -> None:
    messages = _stream(2400, seed=21)
    straight = _engine()
    for start in range(0, len(messages), 300):
        straight.apply(messages[start : start + 300])
    first = _engine()
    for start in range(0, 1200, 300):
        first.apply(messages[start : start + 300])
    snapshot = json.loads(json.dumps(first.snapshot(), allow_nan=False))
    resumed = Engine.restore(first.config, snapshot, wall=lambda: WALL)
    assert resumed.snapshot() == snapshot
    for start in range(1200, len(messages), 300):
        resumed.apply(messages[start : start + 300])
    now = straight.now()
    assert resumed.now() == now
    assert resumed.events == straight.events
    assert resumed.open_queries == straight.open_queries
    a, b = straight.store.read(now, exact=True), resumed.store.read(now, exact=True)
    assert a.labelsets == b.labelsets
    assert a.queries.tolist() == b.queries.tolist()
    np.testing.assert_allclose(a.mean(), b.mean(), rtol=1e-12)
    for labelset, aggregate in straight.final.items():
        np.testing.assert_array_equal(aggregate.histogram, resumed.final[labelset].histogram)


_LOG3 = math.log2(3)
_TS = 1_767_225_600.0


@pytest.mark.parametrize("scan", [True, False], ids=["scanner", "msgspec"])
@pytest.mark.parametrize(
    ("results", "qrels", "expected"),
    [
        # SPEC §2: a repeat counts once, at its first position; its inline rel is a label
        (
            [{"doc_id": "a"}, {"doc_id": "b", "rel": 2}, {"doc_id": "a", "rel": 1}],
            None,
            {"rr": 1.0, "precision@1": 1.0, "ndcg@10": (1 + 2 / _LOG3) / (2 + 1 / _LOG3)},
        ),
        # several repeats with differing rel: the last in the list wins
        (
            [{"doc_id": "a", "rel": 3}, {"doc_id": "b"}, {"doc_id": "a", "rel": 1}],
            None,
            {"rr": 1.0, "dcg@1": 1.0, "ndcg@10": 1.0},
        ),
        # rel=0 on a repeat after rel=2: judged non-relevant (still a labeled query)
        (
            [{"doc_id": "a", "rel": 2}, {"doc_id": "b", "rel": 1}, {"doc_id": "a", "rel": 0}],
            None,
            {"rr": 0.5, "precision@1": 0.0, "dcg@1": 0.0, "recall@5": 1.0},
        ),
        # qrels first, then every inline rel in list order
        (
            [{"doc_id": "a"}, {"doc_id": "c"}, {"doc_id": "a", "rel": 1}],
            [{"doc_id": "a", "rel": 0}, {"doc_id": "c", "rel": 2}],
            {"rr": 1.0, "recall@1": 0.5, "ndcg@10": (1 + 2 / _LOG3) / (2 + 1 / _LOG3)},
        ),
        # a repeat's label takes its document's time in the ranking (the first occurrence's
        # t_doc, one half-life old here), not the repeat's own t_doc
        (
            [
                {"doc_id": "a", "t_doc": _TS - 3600.0},
                {"doc_id": "b", "rel": 1, "t_doc": _TS},
                {"doc_id": "a", "rel": 1, "t_doc": _TS},
            ],
            None,
            {
                "rr": 1.0,
                "ndcg@10": 1.0,
                "ndcg_decayed@10|3600": (0.5 + 1 / _LOG3) / (1 + 0.5 / _LOG3),
                "doc_age_seconds@1": 3600.0,
            },
        ),
    ],
    ids=["issue", "several-repeats", "zero-after-two", "qrels-then-inline", "repeat-time"],
)
def test_inline_labels_of_repeated_documents_by_hand(
    scan: bool,
    results: list[dict[str, Any]],
    qrels: list[dict[str, Any]] | None,
    expected: dict[str, float],
) -> None:
    config = engine_config(
        cutoffs=(1, 5, 10),
        half_lives=(3600.0,),
        windows=WINDOWS,
        clock="event",
        scan=scan,
    )
    engine = Engine(config, wall=lambda: WALL)
    event: dict[str, Any] = {"type": "retrieval", "query_id": "q", "ts": _TS, "results": results}
    if qrels is not None:
        event["qrels"] = qrels
    engine.apply([Message(json.dumps(event).encode())])
    assert engine.joins[0].counters.repeated_docs == 1
    (query,) = engine.finish()
    assert query.contribution is not None
    values = dict(zip(engine.columns, query.contribution.tolist(), strict=False))
    assert {name: values[name] for name in expected} == pytest.approx(expected, abs=1e-12)
    _, mean = _window(engine, (), "1h")  # the window holds the same row
    assert mean[engine.columns.index("rr")] == pytest.approx(expected["rr"], abs=1e-12)


def test_runs_of_scanned_events_open_as_one_message_at_a_time_would() -> None:
    """Scanned retrieval events open in one call per run and partition: with feedback that
    comes before and after its retrieval in the same batch, duplicates inside a batch and
    the open-query cap reached inside a run, every count and window equals the engine fed
    one message at a time."""
    messages = _stream(2000, seed=21)
    retrievals = [m for m in messages if b'"type":"retrieval"' in m.value]
    feedback = [m for m in messages if b'"type":"feedback"' in m.value]
    assert len(retrievals) > 300
    assert len(feedback) > 100
    mixed = list(messages)
    for i, m in enumerate(retrievals[:150:3]):  # duplicates, some in the same batch
        mixed.insert(mixed.index(m) + 1 + i % 7, Message(m.value, m.partition, -1 - i))
    for m in feedback[:60]:  # feedback moved before the retrieval of its query
        mixed.remove(m)
        query = json.loads(m.value)["query_id"]
        at = next(i for i, r in enumerate(mixed) if json.loads(r.value)["query_id"] == query)
        mixed.insert(max(0, at - 3), m)

    whole, single = _engine(max_open=120), _engine(max_open=120)  # the cap reached in runs
    for start in range(0, len(mixed), 500):
        whole.apply(mixed[start : start + 500])
    for m in mixed:
        single.apply([m])
    assert whole.events == single.events
    assert whole.events[("retrieval", "duplicate")] == 50
    counters = whole.join_counters()
    assert counters == single.join_counters()
    assert counters["open_evicted"] > 0
    assert counters["labels_pending"] > 0
    _assert_same_windows(whole, single)
    finals = [q.query_id for q in whole.finish()], [q.query_id for q in single.finish()]
    assert sorted(finals[0]) == sorted(finals[1])
