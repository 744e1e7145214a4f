"""Exemplars of the final-query histograms against a from-scratch reference: captured in any
batches and any order, split over partitions and merged, kept in snapshots; and an engine's
exemplars are those of its final queries, across a snapshot and a resume."""

from __future__ import annotations

import json
import math
import random
import zlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.events import Message
from ragstream.events.trace_ids import is_trace_id
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.exemplars import (
    Exemplar,
    Exemplars,
    capture,
    merge_exemplars,
)
from ragstream.pipeline.partition_tally import PartitionTally, merge_exemplars_of
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.pipeline.test_partition_state import PARTITIONS, START, WALL, _config, hand_over

BINS = 4
EDGES = np.arange(1, BINS + 1, dtype=np.float64) / BINS
COLUMNS = [0, 2]  # column 1 has no histogram

Query = tuple[float, str, list[float]]


def _reference(queries: list[Query]) -> Exemplars:
    """The newest query of each bucket, by (time, id, value), by a plain loop."""
    out: Exemplars = {}
    for ts, query_id, values in queries:
        if not is_trace_id(query_id):
            continue
        for column in COLUMNS:
            value = values[column]
            if math.isnan(value):
                continue
            clipped = min(max(value, 0.0), 1.0)
            bucket = next(j for j, edge in enumerate(EDGES) if clipped <= edge)
            candidate = Exemplar(ts, query_id, value)
            if (column, bucket) not in out or candidate > out[(column, bucket)]:
                out[(column, bucket)] = candidate
    return out


def _queries(seed: int, n: int) -> list[Query]:
    rng = random.Random(seed)
    values = [0.0, 0.25, 0.3, 0.5, 0.75, 1.0, 1.5, -0.2, math.nan]  # edges, beyond [0, 1]
    out = []
    for _ in range(n):
        ts = float(rng.randrange(6))  # many ties on the time
        query_id = rng.choice(
            [f"{rng.randrange(1, 40):032x}", "0" * 32, "Q" * 32, "short", "4bf92f3577b34da6" * 2]
        )
        out.append((ts, query_id, [rng.choice(values) for _ in range(3)]))
    return out


def _capture(held: Exemplars, queries: list[Query]) -> None:
    if queries:
        block = np.array([values for _, _, values in queries], dtype=np.float64)
        capture([(held, block, [q[0] for q in queries], [q[1] for q in queries])], COLUMNS, EDGES)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(0, 80), parts=st.integers(1, 4))
def test_capture_in_any_batches_and_merge_over_partitions_equals_the_reference(
    seed: int, n: int, parts: int
) -> None:
    queries = _queries(seed, n)
    rng = random.Random(seed)
    partitions: list[Exemplars] = [{} for _ in range(parts)]
    shuffled = queries[:]
    rng.shuffle(shuffled)
    start = 0
    while start < len(shuffled):  # a batch: a few queries for each of a few partitions
        found = []
        for _ in range(rng.randrange(1, 4)):
            size = rng.randrange(1, 10)
            chosen = shuffled[start : start + size]
            if chosen:
                block = np.array([values for _, _, values in chosen], dtype=np.float64)
                times, ids = [q[0] for q in chosen], [q[1] for q in chosen]
                found.append((partitions[rng.randrange(parts)], block, times, ids))
            start += size
        capture(found, COLUMNS, EDGES)
    order = list(range(parts))
    rng.shuffle(order)
    merged = merge_exemplars(partitions[i] for i in order)
    assert merged == _reference(queries)
    assert len(merged) <= len(COLUMNS) * BINS


def test_a_trace_id_is_32_lowercase_hex_digits_not_all_zero() -> None:
    assert is_trace_id("4bf92f3577b34da6a3ce929d0e0e4736")
    for other in ("0" * 32, "4BF92F3577B34DA6A3CE929D0E0E4736", "4bf92f35", "g" * 32, ""):
        assert not is_trace_id(other)
    assert not is_trace_id("4bf92f3577b34da6a3ce929d0e0e4736\n")


def test_a_tally_keeps_its_exemplars_in_its_snapshot_and_an_old_snapshot_restores() -> None:
    tally = PartitionTally()
    _capture(tally.exemplars.setdefault(("a",), {}), _queries(5, 50))
    data = json.loads(json.dumps(tally.snapshot(), allow_nan=False))
    restored = PartitionTally.restore(data)
    assert restored.exemplars == tally.exemplars
    assert restored.snapshot() == tally.snapshot()
    del data["exemplars"]  # a snapshot from before exemplars
    assert PartitionTally.restore(data).exemplars == {}


def test_merging_tallies_picks_the_newest_of_each_bucket_per_label_set() -> None:
    a, b = PartitionTally(), PartitionTally()
    old, new = Exemplar(1.0, "1" * 32, 0.1), Exemplar(2.0, "2" * 32, 0.2)
    a.exemplars = {("x",): {(0, 0): old, (0, 1): new}, ("y",): {(0, 0): new}}
    b.exemplars = {("x",): {(0, 0): new}}
    assert merge_exemplars_of([a, b]) == {
        ("x",): {(0, 0): new, (0, 1): new},
        ("y",): {(0, 0): new},
    }
    assert a.exemplars[("x",)][(0, 0)] == old  # the partitions' own are unchanged


def _traced(n: int) -> list[Message]:
    """Synthetic traffic whose query ids are trace ids, one quality drop after 30 s."""
    config = SyntheticConfig(seed=4, rate=5.0, start=START, trace_ids=True, drift_at=30.0)
    return [
        Message(e.value, zlib.crc32(e.key) % PARTITIONS, i, "t", e.key)
        for i, e in enumerate(SyntheticTraffic(config).take(n))
    ]


def _engine() -> Engine:
    config = _config(report_final=True, final_unlabeled=False, label_ttl=20.0)
    return Engine(config, wall=lambda: WALL)  # queries final 20 s after they opened


def test_an_engine_keeps_the_newest_final_query_of_each_bucket_across_a_resume() -> None:
    messages = _traced(900)
    straight = _engine()
    final = []
    for start in range(0, len(messages), 100):
        final += straight.apply(messages[start : start + 100]).final
    final += straight.finish()
    layout = straight.layout
    columns = [i for i, c in enumerate(layout.plain) if c in layout.hist_columns]
    edges = straight.spec.edges()
    expected: dict[tuple[str, ...], Exemplars] = {}
    for query in final:  # from scratch: every final query with labels, one at a time
        assert query.contribution is not None
        row = query.contribution[None, : len(layout.plain)]
        held = expected.setdefault(query.labelset, {})
        capture([(held, row, [query.ts], [query.query_id])], columns, edges)
    assert straight.exemplars == expected
    assert sum(map(len, expected.values())) > 3 * len(columns)  # several label sets, buckets

    first = _engine()
    for start in range(0, 500, 100):
        first.apply(messages[start : start + 100])
    assert first.exemplars  # the snapshot holds some
    snapshot = json.loads(json.dumps(first.snapshot(), allow_nan=False))
    resumed = Engine.restore(first.config, snapshot, wall=lambda: WALL)
    for start in range(500, len(messages), 100):
        resumed.apply(messages[start : start + 100])
    resumed.finish()
    assert resumed.exemplars == straight.exemplars
    assert json.dumps(resumed.snapshot()) == json.dumps(straight.snapshot())


def test_exemplars_move_with_their_partitions() -> None:
    messages = _traced(900)
    reference = _engine()
    first, second = _engine(), _engine()
    for start in range(0, len(messages), 100):
        reference.apply(messages[start : start + 100])
        first.apply(messages[start : start + 100] if start < 500 else [])
    hand_over(first, second, messages, 500)
    assert second.exemplars  # what moved is exposed by its new owner
    assert first.partitions[2].tally.exemplars
    by_replica = merge_exemplars_of([first.partitions[2].tally, *second._tallies()])
    assert by_replica == reference.exemplars


def test_queries_without_values_capture_nothing() -> None:
    held: Exemplars = {}
    nan = [math.nan] * 3
    _capture(held, [(1.0, "4bf92f3577b34da6a3ce929d0e0e4736", nan), (2.0, "1" * 32, nan)])
    assert held == {}
    _capture(held, [(1.0, "4bf92f3577b34da6a3ce929d0e0e4736", [0.5, math.nan, math.nan])])
    assert held == {(0, 1): Exemplar(1.0, "4bf92f3577b34da6a3ce929d0e0e4736", 0.5)}
