"""Aggregate: hand-computed values, reference after every update, merge, snapshot."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.windows import Aggregate

from .reference import Row, plain

COLUMNS = ("a", "b", "c")
BINS = 5

values_st = st.one_of(
    st.floats(-0.5, 1.5, allow_nan=False),
    st.sampled_from([0.0, 0.2, 0.4, 0.5, 0.6, 1.0]),
    st.just(math.nan),
)
row_st = st.tuples(values_st, values_st, values_st)


def check(agg: Aggregate, rows: list[Row]) -> None:
    ref = plain(rows, len(COLUMNS), BINS)
    assert agg.rows == ref.rows
    np.testing.assert_array_equal(agg.count, ref.count)
    np.testing.assert_array_equal(agg.histogram, ref.hist)
    np.testing.assert_allclose(agg.total, ref.total, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(agg.total_sq, ref.total_sq, rtol=1e-12, atol=1e-12)
    for c in range(len(COLUMNS)):
        vals = [r.values[c] for r in rows if not math.isnan(r.values[c])]
        if vals:
            assert agg.mean()[c] == pytest.approx(sum(vals) / len(vals), rel=1e-9, abs=1e-12)
        else:
            assert math.isnan(agg.mean()[c])


def test_hand_computed() -> None:
    agg = Aggregate(("x",), bins=4)
    agg.add([[0.0], [0.25], [0.3], [1.0], [1.7], [-2.0], [math.nan]])
    assert agg.rows == 7
    assert agg.count.tolist() == [6]
    assert agg.total.tolist() == pytest.approx([0.0 + 0.25 + 0.3 + 1.0 + 1.7 - 2.0])
    # Right-closed bins (0, .25], (.25, .5], (.5, .75], (.75, 1]; 0 and clipped negatives in
    # bin 0; 1.7 is clipped to 1.
    assert agg.histogram.tolist() == [[3, 1, 0, 2]]


def test_cumulative_histogram_is_prometheus_le() -> None:
    agg = Aggregate(("x",), bins=20)
    values = np.array([0.0, 0.05, 0.1, 0.15, 0.4, 0.5, 0.55, 0.95, 1.0])
    agg.add(values[:, None])
    edges = np.arange(1, 21) / 20
    cumulative = np.cumsum(agg.histogram[0])
    expected = [int((values <= e).sum()) for e in edges]
    assert cumulative.tolist() == expected


def test_rejects_wrong_width_and_infinity() -> None:
    agg = Aggregate(("x", "y"), bins=20)
    with pytest.raises(ValueError, match="rows of 2"):
        agg.add([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="infinite"):
        agg.add([math.inf, 0.0])
    with pytest.raises(ValueError, match="different"):
        _ = agg + Aggregate(("x",), bins=20)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(row_st, min_size=1, max_size=6), max_size=25))
def test_matches_reference_after_every_update(ops: list[list[tuple[float, ...]]]) -> None:
    agg = Aggregate(COLUMNS, bins=BINS)
    alive: list[Row] = []
    for batch in ops:
        agg.add(batch)
        alive.extend(Row(0.0, v) for v in batch)
        check(agg, alive)


@settings(max_examples=50, deadline=None)
@given(st.lists(row_st, max_size=30), st.lists(row_st, max_size=30))
def test_merge_equals_one_aggregate_of_both(
    left: list[tuple[float, ...]], right: list[tuple[float, ...]]
) -> None:
    a, b, both = (Aggregate(COLUMNS, bins=BINS) for _ in range(3))
    for agg, rows in ((a, left), (b, right), (both, left + right)):
        if rows:
            agg.add(rows)
    merged = a + b
    check(merged, [Row(0.0, v) for v in left + right])
    np.testing.assert_array_equal(merged.histogram, both.histogram)
    np.testing.assert_allclose(merged.total, both.total, rtol=1e-12, atol=1e-12)
    assert a.rows == len(left)  # merging leaves its operands alone


@settings(max_examples=60, deadline=None)
@given(st.lists(row_st, min_size=1, max_size=20), st.lists(row_st, min_size=1, max_size=10))
def test_snapshot_round_trip(rows: list[tuple[float, ...]], later: list[tuple[float, ...]]) -> None:
    agg = Aggregate(COLUMNS, bins=BINS)
    agg.add(rows)
    twin = Aggregate.restore(json.loads(json.dumps(agg.snapshot())))
    assert twin.snapshot() == agg.snapshot()
    for x in (agg, twin):
        x.add(later)
    assert twin.snapshot() == agg.snapshot()


def test_histograms_of_some_columns_and_legacy_snapshots() -> None:
    agg = Aggregate(COLUMNS, BINS, hist_columns=("c", "a"))  # kept in column order
    assert agg.hist_columns == ("a", "c")
    agg.add([[0.1, 0.5, 0.9], [math.nan, 0.2, 1.0]])
    assert agg.histogram.tolist() == [[1, 0, 0, 0, 0], [0, 0, 0, 0, 2]]
    assert Aggregate.restore(json.loads(json.dumps(agg.snapshot()))).snapshot() == agg.snapshot()
    full = Aggregate(COLUMNS, BINS)
    full.add([[0.1, 0.5, 0.9]])
    legacy = full.snapshot()
    del legacy["hist_columns"]  # written before the option existed
    assert Aggregate.restore(legacy).snapshot() == full.snapshot()
    with pytest.raises(ValueError, match="different columns"):
        _ = agg + full
    with pytest.raises(ValueError, match="among the columns"):
        Aggregate(COLUMNS, BINS, hist_columns=("z",))
