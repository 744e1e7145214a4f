"""The keyed store: per-partition state, merged reads, rebalances, pruning, snapshots."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.windows import WindowStore, WindowTotals
from tests.support import defaults

from .reference import exported, moved, same_reads

T0 = 1_700_000_000.0
SPEC = defaults.window_spec(
    columns=("rr", "ndcg@10"),
    decayed=("dcg_decayed@10",),
    half_lives=(3600.0, 86400.0),
    windows=(60.0, 3600.0),
    buckets=12,
    bins=10,
)
LABELS = (("support", "v7"), ("search", "v7"), ("support", "v8"))


def same(a: WindowTotals, b: WindowTotals) -> None:
    same_reads(a, b, tol=1e-12, datol=1e-300)


events_st = st.lists(
    st.tuples(
        st.integers(0, 3),  # partition
        st.integers(0, 2),  # label set
        st.floats(-4000.0, 0.0),  # age
        st.floats(0.0, 1.0),
        st.floats(0.0, 5.0),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None)
@given(events_st)
def test_reads_merge_partitions_like_one_series(
    events: list[tuple[int, int, float, float, float]],
) -> None:
    store, single = WindowStore(SPEC), WindowStore(SPEC)
    for p, label, age, v, d in events:
        row = ([T0 + age], [[v, 1 - v]], [[d, d]])
        store.add(p, LABELS[label], T0, *row)
        single.add(0, LABELS[label], T0, *row)
    assert store.labelsets() == single.labelsets()
    for labels in LABELS:
        at = T0 + 5.0
        same(store.read(at, labels, exact=True), single.read(at, labels, exact=True))
        same(store.read(at, labels), single.read(at, labels))
    assert set(store.read(T0).labelsets) == {LABELS[e[1]] for e in events}
    assert len(store) == len({(e[0], e[1]) for e in events})


def test_unseen_label_set_reads_empty() -> None:
    for exact in (True, False):
        reads = WindowStore(SPEC).read(T0, ("nobody", "v0"), exact=exact)
        assert reads.labelsets == [("nobody", "v0")]
        assert reads.queries.tolist() == [[0, 0]]
        assert np.isnan(reads.mean()).all()
        assert np.isnan(reads.decayed_mean()).all()
        assert reads.decayed_mean().shape == (1, 2, 2, 1)


def test_retract_of_expired_or_unknown_rows_is_counted() -> None:
    store = WindowStore(SPEC)
    # 1h window in 300 s buckets; T0 is 200 s into its bucket.
    assert T0 % 300 == 200.0
    rows = [T0 - 400.0, T0 + 150.0], [[1.0, 1.0], [0.5, 0.5]]
    store.add(1, LABELS[0], T0 + 150.0, *rows)
    # At T0 + 3750 the oldest live bucket starts at T0 + 100.
    done = store.retract(1, LABELS[0], T0 + 3750.0, *rows)
    assert done.tolist() == [False, True]
    assert store.retract(2, LABELS[0], T0, [T0], [[1.0, 1.0]]).tolist() == [False]
    assert store.expired_retracts == 2


def test_rebalance_export_drop_import() -> None:
    store = WindowStore(SPEC)
    for p in (0, 1):
        for i, labels in enumerate(LABELS):
            store.add(p, labels, T0, [T0 - i], [[0.1 * i, 0.2]], [[1.0, 2.0]])
    before = store.read(T0, LABELS[1], exact=True, histograms=True)
    exported = json.loads(json.dumps(store.export_partition(1)))
    assert store.drop_partition(1) == 3
    assert store.partitions() == [0]
    assert store.read(T0, LABELS[1]).queries[0, 1] == 1
    other = WindowStore(SPEC)
    assert other.import_partition(exported) == 3
    assert other.partitions() == [1]
    assert store.import_partition(exported) == 3  # moved back
    same(store.read(T0, LABELS[1], exact=True, histograms=True), before)
    assert store.import_partition(exported) == 3  # importing onto held state merges
    assert store.read(T0, LABELS[1], exact=True).queries[0, 1] == 3
    with pytest.raises(ValueError, match="different window spec"):
        WindowStore(defaults.window_spec(columns=("rr",))).import_partition(exported)


def test_a_spec_without_decayed_metrics_exports_and_imports() -> None:
    """Its decayed planes have size 0 (the judge's windows): their shape has to come from
    the number of keys, not be inferred from the data."""
    spec = defaults.window_spec(columns=("rr", "p@5"), windows=(3600.0,), buckets=4)
    store = WindowStore(spec)
    for i in range(3):
        store.add(0, ("a",), T0, [T0 - 600 * i], [[0.1 * i, 0.5]])
    before = store.read(T0, ("a",), exact=True, histograms=True)
    imported = WindowStore(spec)
    assert imported.import_partition(json.loads(json.dumps(store.export_partition(0)))) == 1
    same(imported.read(T0, ("a",), exact=True, histograms=True), before)
    restored = moved(store)
    same(restored.read(T0, ("a",), exact=True, histograms=True), before)
    assert restored.read(T0, ("a",)).queries[0, 0] == 3


def test_prune_drops_only_empty_series() -> None:
    store = WindowStore(SPEC)
    store.add(0, LABELS[0], T0, [T0], [[1.0, 1.0]])
    store.add(0, LABELS[1], T0, [T0 - 3000.0], [[1.0, 1.0]])
    store.add(1, LABELS[2], T0, [T0], [[1.0, 1.0]])
    store.retract(1, LABELS[2], T0, [T0], [[1.0, 1.0]])
    assert store.prune(T0) == 1  # the fully retracted series
    assert store.partitions() == [0]
    assert store.prune(T0 + 700.0) == 1  # T0 - 3000 has left the hour
    assert store.labelsets() == [LABELS[0]]
    assert store.prune(T0 + 4000.0) == 1
    assert len(store) == 0
    assert store.partitions() == []


def test_memory_is_series_times_windows_times_buckets() -> None:
    store = WindowStore(SPEC)
    rng = np.random.default_rng(3)
    now = T0
    for _ in range(100):
        now += 600.0
        for p in range(2):
            for labels in LABELS:
                times = now - rng.uniform(0, 3600.0, 500)
                store.add(
                    p, labels, now, times, rng.uniform(0, 1, (500, 2)), rng.uniform(0, 1, (500, 2))
                )
    assert len(store) == 6
    assert 6 <= store.capacity <= 16
    # every ring's bucket keys, plus per series (slots + 1 totals) x slot bytes
    keys = 8 * (12 + 1 + 12 + 12 + 1 + 1)
    per_slot = 8 + 24 * 2 + 4 * 10 * 2 + 16 * 2
    assert SPEC.slot_nbytes() == per_slot
    assert SPEC.series_nbytes() == (26 + 15) * per_slot + 2 * 4 * 10 * 2
    assert store.nbytes == keys + store.capacity * SPEC.series_nbytes()


def test_snapshot_round_trip_and_future_behaviour() -> None:
    store = WindowStore(SPEC)
    store.add(0, LABELS[0], T0, [T0 - 5.0, T0], [[0.5, 0.25], [1.0, 0.0]], [[1.0, 1.0], [2.0, 2.0]])
    store.add(3, LABELS[2], T0, [T0 - 1000.0], [[0.0, 1.0]], [[3.0, 3.0]])
    store.retract(3, LABELS[2], T0 + 9999.0, [T0 - 1000.0], [[0.0, 1.0]], [[3.0, 3.0]])
    twin = moved(store)
    assert exported(twin) == exported(store)
    for x in (store, twin):
        x.add(0, LABELS[0], T0 + 10.0, [T0 + 10.0], [[0.75, 0.75]], [[1.0, 1.0]])
    assert exported(twin) == exported(store)
    for exact in (True, False):
        same(twin.read(T0 + 11.0, exact=exact), store.read(T0 + 11.0, exact=exact))


def test_exact_reads_hold_after_a_restore_running_totals_keep_their_history() -> None:
    """Why a read has two summations: the running totals subtract a bucket that leaves the
    window, so their last bits keep what passed through them; an exact read adds up the
    live buckets, the same bits in a store that imported the partition (buckets only)."""
    spec = defaults.window_spec(columns=("x",), windows=(60.0,), buckets=6, horizon=0.0)
    store = WindowStore(spec)  # 10 s buckets; T0 starts one
    store.add(0, ("a",), T0, [T0 - 60.0, T0], [[0.1], [0.2]])
    # the ring moves on: the 0.1 bucket leaves, (0.1 + 0.2) - 0.1 != 0.2 in float64
    assert store.retract(0, ("a",), T0 + 10.0, [T0 - 60.0], [[0.1]]).tolist() == [False]
    twin = moved(store)
    at = T0 + 10.0
    for x in (store, twin):
        assert x.read(at, exact=True).total.tolist() == [[[0.2]]]
    running, restored = store.read(at).total, twin.read(at).total
    assert running.tolist() == [[[(0.1 + 0.2) - 0.1]]] != [[[0.2]]]
    assert restored.tolist() == [[[0.2]]]
    np.testing.assert_allclose(running, restored, rtol=1e-15)
