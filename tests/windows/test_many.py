"""Many series at once: batch updates across series and whole-store reads."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.windows import WindowStore, WindowTotals
from ragstream.windows.store import SeriesKey
from tests.support import defaults

from .reference import exported, merged, moved, same_reads

T0 = 1_700_000_000.0
SPEC = defaults.window_spec(
    columns=("rr", "ndcg@10", "age"),
    decayed=("dcg_decayed@10",),
    half_lives=(5.0, 600.0),
    windows=(10.0, 60.0),
    buckets=5,
    bins=4,
    horizon=5.0,
    max_exponent=20.0,
    hist_columns=("rr", "ndcg@10"),
)
SERIES: list[SeriesKey] = [(p, (label,)) for p in (0, 1, 2) for label in ("a", "b", "c")]


def close(x: float, y: float) -> bool:
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9) or (math.isnan(x) and math.isnan(y))


def same_state(a: Any, b: Any) -> None:
    """Snapshots equal: ints and strings exactly, floats to rounding. The decay landmark
    (and the landmark-relative decayed sums) may differ: reads are compared elsewhere."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a.keys() - {"landmark", "decayed_sum"}:
            same_state(a[key], b[key])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same_state(x, y)
    elif isinstance(a, float):
        assert close(a, b), (a, b)
    else:
        assert a == b


def matrix_equals_reads(store: WindowStore, at: float) -> None:
    matrix = store.read(at)
    assert matrix.histograms is None
    with_hist = store.read(at, histograms=True)
    assert with_hist.histograms is not None
    assert with_hist.count.tolist() == matrix.count.tolist()
    # `until` at or past every bucket held changes nothing; before every bucket, all leave
    later = store.read(at, until=at + 1000.0, histograms=True)
    assert later.queries.tolist() == matrix.queries.tolist()
    assert later.histograms is not None
    assert later.histograms.tolist() == with_hist.histograms.tolist()
    assert store.read(at, until=at - 1000.0).queries.sum() == 0
    # a read of some windows: those equal the full read's, the others are empty
    for j in range(len(store.spec.windows)):
        some = store.read(at, histograms=True, windows={j})
        assert some.histograms is not None
        for name in (
            "queries",
            "count",
            "total",
            "total_sq",
            "decayed_count",
            "decayed_total",
            "histograms",
        ):
            full, part = getattr(with_hist, name), getattr(some, name)
            assert part[:, j].tolist() == full[:, j].tolist(), name
            assert not np.delete(part, j, axis=1).any(), name
    assert matrix.labelsets == store.labelsets()
    mean, dmean = matrix.mean(), matrix.decayed_mean()
    for i, labels in enumerate(matrix.labelsets):
        read = store.read(at, labels, exact=True, histograms=True)
        assert read.histograms is not None
        assert matrix.queries[i].tolist() == read.queries[0].tolist()
        assert matrix.count[i].tolist() == read.count[0].tolist()
        assert with_hist.histograms[i].tolist() == read.histograms[0].tolist()
        assert matrix.decayed_count[i].tolist() == read.decayed_count[0].tolist()
        np.testing.assert_allclose(mean[i], read.mean()[0], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(matrix.total[i], read.total[0], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(dmean[i], read.decayed_mean()[0], rtol=1e-9, atol=1e-12)


values_st = st.tuples(
    st.one_of(st.floats(0.0, 1.0), st.just(math.nan)),
    st.sampled_from([0.0, 0.5, 1.0, math.nan]),
    st.floats(-5.0, 5.0),
)
batch_st = st.lists(
    st.tuples(
        st.integers(0, len(SERIES) - 1),
        st.floats(-70.0, 4.0),  # stamp offset from now
        values_st,
        st.tuples(st.floats(0.0, 2.0), st.one_of(st.floats(0.0, 2.0), st.just(math.nan))),
    ),
    min_size=0,
    max_size=12,
)
ops_st = st.lists(
    st.one_of(
        st.tuples(st.just("add"), batch_st),
        st.tuples(st.just("retract"), st.lists(st.integers(0, 50), max_size=6)),
        st.tuples(st.just("advance"), st.sampled_from([0.5, 2.0, 3.7, 12.0, 61.0, 300.0])),
        st.tuples(st.just("prune"), st.just(0)),
    ),
    max_size=16,
)

Row = tuple[int, float, tuple[float, float, float], tuple[float, float]]


def rows_arrays(rows: list[Row]) -> tuple[Any, ...]:
    index = np.array([r[0] for r in rows], dtype=np.int64)
    times = np.array([r[1] for r in rows], dtype=np.float64)
    values = np.array([r[2] for r in rows], dtype=np.float64).reshape(-1, 3)
    decayed = np.array([r[3] for r in rows], dtype=np.float64).reshape(-1, 2)
    return index, times, values, decayed


@settings(max_examples=40, deadline=None)
@given(ops_st, st.floats(0.0, 20.0))
def test_many_series_equal_series_by_series(ops: list[tuple[Any, Any]], ahead: float) -> None:
    many, single = WindowStore(SPEC), WindowStore(SPEC)
    ref = {key: WindowStore(SPEC) for key in SERIES}  # one independent store per series
    alive: list[Row] = []
    now = T0
    for kind, arg in ops:
        if kind == "advance":
            now += arg
        elif kind == "prune":
            assert many.prune(now) == single.prune(now)
        else:
            if kind == "add":
                rows = [(s, now + off, v, d) for s, off, v, d in arg]
                alive.extend(rows)
            else:
                picked = {i % len(alive) for i in arg} if alive else set()
                rows = [alive[i] for i in sorted(picked)]
                alive = [r for i, r in enumerate(alive) if i not in picked]
            index, times, values, decayed = rows_arrays(rows)
            sign = 1 if kind == "add" else -1
            method = many.add_many if sign > 0 else many.retract_many
            landed = method(now, SERIES, index, times, values, decayed)
            assert landed.shape == (len(rows),)
            for s, key in enumerate(SERIES):
                mine = index == s
                if not mine.any():
                    continue
                args = (now, times[mine], values[mine], decayed[mine])
                if sign > 0:
                    got = single.add(*key, *args)
                    want = ref[key].add(0, ("s",), *args)
                else:
                    got = single.retract(*key, *args)
                    want = ref[key].retract(0, ("s",), *args)
                assert landed[mine].tolist() == got.tolist()
                assert got.tolist() == want.tolist()
        assert many.expired_retracts == single.expired_retracts
        assert many.labelsets() == single.labelsets()
        assert len(many) == len(single)
        for at in (now, now + ahead):
            for labels in many.labelsets():
                reads = many.read(at, labels, exact=True, histograms=True)
                same_reads(reads, single.read(at, labels, exact=True, histograms=True))
                parts = [
                    ref[key].read(at, ("s",), exact=True, histograms=True)
                    for key in SERIES
                    if key[1] == labels
                ]
                same_reads(reads, dataclasses.replace(merged(parts), labelsets=[labels]))
            matrix_equals_reads(many, at)
        same_state(exported(many), exported(single))


def test_one_batch_of_many_series_is_one_pass() -> None:
    rng = np.random.default_rng(5)
    n = 3000
    keys: list[SeriesKey] = [(p, (f"app{i}",)) for p in range(3) for i in range(100)]
    index = rng.integers(0, len(keys), n)
    times = T0 - rng.uniform(0.0, 50.0, n)
    values = rng.uniform(0.0, 1.0, (n, 3))
    decayed = rng.uniform(0.0, 2.0, (n, 2))
    many, single = WindowStore(SPEC), WindowStore(SPEC)
    many.add_many(T0, keys, index, times, values, decayed)
    assert len(many) == np.unique(index).size  # only series that got rows exist
    for s, (p, labels) in enumerate(keys):
        mine = index == s
        single.add(p, labels, T0, times[mine], values[mine], decayed[mine])
    for labels in single.labelsets()[::7]:
        same_reads(
            many.read(T0, labels, exact=True, histograms=True),
            single.read(T0, labels, exact=True, histograms=True),
        )
    matrix_equals_reads(many, T0 + 3.0)
    many.retract_many(T0, keys, index, times, values, decayed)
    matrix = many.read(T0)
    assert matrix.queries.sum() == 0
    assert matrix.total.tolist() == np.zeros_like(matrix.total).tolist()
    assert np.isnan(matrix.mean()).all()
    assert many.prune(T0) == np.unique(index).size
    assert len(many) == 0


def test_retract_many_of_unknown_series_is_counted() -> None:
    store = WindowStore(SPEC)
    store.add(0, ("a",), T0, [T0], [[0.5, 0.5, 1.0]])
    done = store.retract_many(
        T0, [(0, ("a",)), (5, ("zz",))], [1, 0, 1], [T0, T0, T0], [[0.5, 0.5, 1.0]] * 3
    )
    assert done.tolist() == [False, True, False]
    assert store.expired_retracts == 2
    assert store.read(T0, ("a",), exact=True).queries[0, 0] == 0
    assert store.labelsets() == [("a",)]  # a retract never creates a series


def test_matrix_reads_ahead_without_moving_the_ring() -> None:
    store = WindowStore(SPEC)  # 10 s window in 2 s buckets
    store.add(0, ("a",), T0, [T0 - 9.0, T0 - 1.0], [[1.0, 1.0, 1.0], [0.0, 0.0, 3.0]])
    store.add(1, ("a",), T0, [T0 - 1.0], [[0.5, 0.5, 2.0]])
    ahead = store.read(T0 + 6.0)
    assert ahead.queries[0].tolist() == [2, 3]  # the T0 - 9 row left the 10 s window
    np.testing.assert_allclose(ahead.mean()[0, 0], [0.25, 0.25, 2.5])
    now = store.read(T0)
    assert now.queries[0].tolist() == [3, 3]
    np.testing.assert_allclose(now.mean()[0, 0], [0.5, 0.5, 2.0])
    assert store.read(T0 + 1000.0).queries.tolist() == [[0, 0]]


def test_empty_store_reads_an_empty_matrix() -> None:
    matrix = WindowStore(SPEC).read(T0)
    assert isinstance(matrix, WindowTotals)
    assert matrix.labelsets == []
    assert matrix.count.shape == (0, 2, 3)
    assert matrix.decayed_mean().shape == (0, 2, 2, 1)


def test_dropped_series_ids_are_reused_empty() -> None:
    store = WindowStore(SPEC)
    for p in range(3):
        store.add(p, ("a",), T0, [T0], [[1.0, 1.0, 1.0]], [[1.0, 1.0]])
    capacity = store.capacity
    assert store.drop_partition(1) == 1
    store.add(7, ("b",), T0, [T0], [[0.0, 0.0, 0.0]])
    assert store.capacity == capacity
    assert store.read(T0, ("b",), exact=True).queries[0, 1] == 1
    assert store.read(T0, ("b",), exact=True).decayed_count[0, 1].tolist() == [0, 0]
    assert store.read(T0, ("a",), exact=True).queries[0, 1] == 2


def test_snapshots_keep_their_format_and_restore_merged() -> None:
    store = WindowStore(SPEC)
    store.add_many(
        T0,
        SERIES[:3],
        [0, 1, 2, 0],
        [T0, T0 - 3.0, T0, T0 - 30.0],
        [[0.5, 0.25, 1.0], [1.0, 0.0, 2.0], [0.0, 1.0, 3.0], [0.2, 0.2, 0.2]],
        [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]],
    )
    snap = exported(store)[0]
    assert snap["version"] == 1
    state = snap["series"][0]["windows"]["1m"]
    assert set(state) == {
        "length",
        "top",
        "landmark",
        "keys",
        "rows",
        "count",
        "sum",
        "sum_sq",
        "hist",
        "decayed_count",
        "decayed_sum",
    }
    assert np.asarray(state["hist"]).shape[1:] == (2, 4)  # histograms of 2 columns only
    twin = moved(store)
    assert exported(twin) == exported(store)
    matrix_equals_reads(twin, T0 + 1.0)
    with pytest.raises(ValueError, match="version 2"):
        WindowStore(SPEC).import_partition(dict(snap, version=2))
