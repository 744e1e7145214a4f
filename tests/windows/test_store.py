"""The keyed store: per-partition state, merged reads, rebalances, pruning, snapshots."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.windows import WindowRead, WindowStore
from tests.support import defaults

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


def same(a: dict[str, WindowRead], b: dict[str, WindowRead]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        x, y = a[name], b[name]
        assert x.queries == y.queries
        assert x.aggregate.count.tolist() == y.aggregate.count.tolist()
        assert x.aggregate.histogram.tolist() == y.aggregate.histogram.tolist()
        np.testing.assert_allclose(x.aggregate.total, y.aggregate.total, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(
            x.decay.value(x.at), y.decay.value(y.at), rtol=1e-12, atol=1e-300
        )
        assert x.decay.count.tolist() == y.decay.count.tolist()


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
        same(store.read(T0 + 5.0, labels), single.read(T0 + 5.0, labels))
    assert store.read_all(T0).keys() == {LABELS[e[1]] for e in events}
    assert len(store) == len({(e[0], e[1]) for e in events})


def test_unseen_label_set_reads_empty() -> None:
    reads = WindowStore(SPEC).read(T0, ("nobody", "v0"))
    assert list(reads) == ["1m", "1h"]
    assert reads["1h"].queries == 0
    assert np.isnan(reads["1h"].mean()).all()
    assert np.isnan(reads["1h"].decayed_mean()).all()
    assert reads["1h"].decayed_mean().shape == (2, 1)


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
    before = store.read(T0, LABELS[1])
    exported = json.loads(json.dumps(store.export_partition(1)))
    assert store.drop_partition(1) == 3
    assert store.partitions() == [0]
    assert store.read(T0, LABELS[1])["1h"].queries == 1
    other = WindowStore(SPEC)
    assert other.import_partition(exported) == 3
    assert other.partitions() == [1]
    assert store.import_partition(exported) == 3  # moved back
    same(store.read(T0, LABELS[1]), before)
    assert store.import_partition(exported) == 3  # importing onto held state merges
    assert store.read(T0, LABELS[1])["1h"].queries == 3
    with pytest.raises(ValueError, match="different window spec"):
        WindowStore(defaults.window_spec(columns=("rr",))).import_partition(exported)


def test_a_spec_without_decayed_metrics_exports_and_imports() -> None:
    """Its decayed planes have size 0 (the judge's windows): their shape has to come from
    the number of keys, not be inferred from the data."""
    spec = defaults.window_spec(columns=("rr", "p@5"), windows=(3600.0,), buckets=4)
    store = WindowStore(spec)
    for i in range(3):
        store.add(0, ("a",), T0, [T0 - 600 * i], [[0.1 * i, 0.5]])
    before = store.read(T0, ("a",))
    moved = WindowStore(spec)
    assert moved.import_partition(json.loads(json.dumps(store.export_partition(0)))) == 1
    same(moved.read(T0, ("a",)), before)
    restored = WindowStore.restore(json.loads(json.dumps(store.snapshot())))
    same(restored.read(T0, ("a",)), before)
    assert restored.read(T0, ("a",))["1h"].queries == 3


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
    twin = WindowStore.restore(json.loads(json.dumps(store.snapshot())))
    assert twin.snapshot() == store.snapshot()
    for x in (store, twin):
        x.add(0, LABELS[0], T0 + 10.0, [T0 + 10.0], [[0.75, 0.75]], [[1.0, 1.0]])
    assert twin.snapshot() == store.snapshot()
    same(twin.read(T0 + 11.0, LABELS[0]), store.read(T0 + 11.0, LABELS[0]))
