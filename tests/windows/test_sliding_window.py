"""Sliding windows: bucket boundaries, reference after every update, state, memory."""

from __future__ import annotations

import dataclasses
import math
from typing import cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.windows import SlidingWindow, WindowSet, WindowSpec
from tests.support import defaults

from .reference import RefWindow, Row, decayed, plain

T0 = 1_700_000_000.0

SPEC = defaults.window_spec(
    columns=("a", "b"),
    decayed=("d",),
    half_lives=(1.0, 30.0),
    windows=(10.0, 60.0),
    buckets=5,
    bins=4,
    horizon=5.0,
    max_exponent=20.0,
)


def one(values: float = 0.5) -> list[float]:
    return [values, values]


def ring_of(spec: WindowSpec, length: float) -> tuple[WindowSet, SlidingWindow]:
    """A set of the spec's windows and its ring of this length."""
    windows = WindowSet(spec)
    name = next(n for n, w in zip(spec.names, spec.windows, strict=True) if w == length)
    return windows, windows.windows[name]


@pytest.mark.parametrize(
    ("now", "t", "inside"),
    [
        # window 60 s in 60 buckets of 1 s: a row is inside while its bucket ends after now - 60
        (100.0, 40.0, True),  # bucket [40, 41) ends at 41 > 40
        (100.0, 39.999, False),  # bucket [39, 40) ends at 40, not after 40
        (100.5, 40.0, True),  # 41 > 40.5: older than the window, still in its bucket
        (100.999, 40.0, True),
        (101.0, 40.0, False),  # 41 is not after 41
        (101.0, 41.0, True),
        (100.0, 100.0, True),
        (100.0, 160.0, True),  # ahead, within the 60 s horizon
    ],
)
def test_bucket_boundaries(now: float, t: float, inside: bool) -> None:
    spec = defaults.window_spec(columns=("x",), windows=(60.0,), buckets=60, horizon=60.0)
    windows, ring = ring_of(spec, 60.0)
    assert ring.slots == 60 + 1 + 60
    landed = windows.add(now, [t], [[1.0]])
    assert bool(landed[0]) is inside
    assert ring.aggregate(now).rows == int(inside)


def test_window_rotates_as_time_advances() -> None:
    spec = defaults.window_spec(columns=("x",), windows=(60.0,), buckets=60)
    windows, ring = ring_of(spec, 60.0)
    windows.add(1000.0, [990.0, 995.5, 1000.0], [[0.1], [0.2], [0.3]])
    assert ring.aggregate(1000.0).count.tolist() == [3]
    assert ring.aggregate(1050.999).count.tolist() == [3]
    assert ring.aggregate(1051.0).count.tolist() == [2]  # bucket [990, 991) has rotated out
    assert ring.aggregate(1056.0).count.tolist() == [1]
    assert ring.aggregate(1061.0).count.tolist() == [0]
    assert ring.state()["keys"] == [990, 995, 1000]


def test_retract_after_rotation_is_a_counted_noop() -> None:
    spec = dataclasses.replace(SPEC, windows=(10.0,))  # 2 s buckets
    windows, ring = ring_of(spec, 10.0)
    windows.add(T0, [T0 - 1.0, T0], [one(), one()], [[1.0, 1.0], [1.0, 1.0]])
    windows.add(T0 + 11.0, [T0 + 11.0], [one()])
    done = windows.retract(T0 + 11.0, [T0 - 1.0, T0], [one(), one()], [[1.0, 1.0], [1.0, 1.0]])
    assert done.tolist() == [False, True]
    agg = ring.aggregate(T0 + 11.0)
    assert agg.rows == 1


def test_rows_beyond_the_horizon_move_the_ring() -> None:
    windows, ring = ring_of(SPEC, 10.0)
    windows.add(T0, [T0], [one()])
    assert windows.add(T0, [T0 + 100.0], [one()]).tolist() == [True]
    assert ring.aggregate(T0).rows == 1  # the old row was pushed out by the jump


def test_memory_is_fixed_whatever_the_number_of_events() -> None:
    windows = WindowSet(
        defaults.window_spec(columns=("a", "b", "c"), decayed=("d",), half_lives=(60.0,))
    )
    before = windows.nbytes
    slots = [ring.slots for ring in windows.windows.values()]
    rng = np.random.default_rng(7)
    now = T0
    for _ in range(100):  # 100 batches of 1000 rows spread over 10 days
        now += 8640.0
        times = now - rng.uniform(0, 86400.0, 1000)
        windows.add(now, times, rng.uniform(0, 1, (1000, 3)), rng.uniform(0, 1, (1000, 1)))
    assert windows.nbytes == before
    assert [ring.slots for ring in windows.windows.values()] == slots == [121, 73, 62, 62]
    state = windows.state()
    assert all(len(state[name]["keys"]) <= 61 for name in state)


ops_st = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.lists(
                st.tuples(
                    st.floats(-80.0, 4.0),  # stamp offset: old rows, on-time rows, slight future
                    st.tuples(
                        st.one_of(st.floats(-0.2, 1.2), st.just(math.nan)),
                        st.sampled_from([0.0, 0.25, 0.5, 1.0, math.nan]),
                    ),
                    st.tuples(
                        st.floats(0.0, 2.0), st.one_of(st.floats(0.0, 2.0), st.just(math.nan))
                    ),
                ),
                min_size=1,
                max_size=8,
            ),
        ),
        st.tuples(st.just("retract"), st.integers(0, 7)),
        st.tuples(st.just("advance"), st.sampled_from([0.5, 1.0, 2.0, 3.7, 12.0, 61.0, 500.0])),
    ),
    max_size=30,
)


def check_windows(windows: WindowSet, refs: list[RefWindow], at: float) -> None:
    reads = windows.read(at)
    rates = SPEC.rates
    for ref in refs:
        name = read_name(ref.length)
        read = reads[name]
        rows = ref.visible(at)
        want = plain(rows, 2, SPEC.bins)
        assert read.queries == want.rows
        assert read.aggregate.count.tolist() == want.count.tolist()
        assert read.aggregate.histogram.tolist() == want.hist.tolist()
        np.testing.assert_allclose(read.aggregate.total, want.total, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(read.aggregate.total_sq, want.total_sq, rtol=1e-9, atol=1e-9)
        count, total, _ = decayed(rows, rates, at)
        _, _, scale = decayed(ref.ever, rates, at)
        assert read.decay.count.tolist() == count.tolist()
        got = read.decay.value(at)
        assert np.all(np.abs(got - total) <= 1e-12 * scale + 1e-300), (got, total)
        assert read.decayed_mean().shape == (2, 1)
        ring = windows.windows[name]
        for until in (at - 1.3, at - 7.0, at - ref.length / 2, at + 2.0):
            # the window less the buckets that start after `until`
            cut = math.floor(until / ref.width)
            kept = plain([r for r in rows if ref.key(r.t) <= cut], 2, SPEC.bins)
            t = ring.totals(at, until=until)
            assert int(t["rows"][0]) == kept.rows
            assert t["count"][0].tolist() == kept.count.tolist()
            assert t["hist"][0].tolist() == kept.hist.tolist()
            np.testing.assert_allclose(t["sum"][0], kept.total, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(t["sum_sq"][0], kept.total_sq, rtol=1e-9, atol=1e-9)


def read_name(length: float) -> str:
    return next(n for n, w in zip(SPEC.names, SPEC.windows, strict=True) if w == length)


@settings(max_examples=80, deadline=None)
@given(ops_st, st.floats(0.0, 30.0))
def test_matches_reference_after_every_update(
    ops: list[tuple[object, ...]], read_ahead: float
) -> None:
    windows = WindowSet(SPEC)
    refs = [RefWindow(SPEC, w) for w in SPEC.windows]
    alive: list[Row] = []
    now = T0
    for op in ops:
        if op[0] == "advance":
            now += float(op[1])  # type: ignore[arg-type]
        elif op[0] == "add":
            spec_rows = cast(list[tuple[float, tuple[float, ...], tuple[float, ...]]], op[1])
            batch = [Row(now + off, v, d) for off, v, d in spec_rows]
            landed = windows.add(
                now, [r.t for r in batch], [r.values for r in batch], [r.decayed for r in batch]
            )
            for ref in refs:
                ref.top = ref.position(now)
            assert landed.tolist() == [refs[-1].live(r, now) for r in batch]
            alive.extend(batch)
            for ref in refs:
                ref.rows.extend(r for r in batch if ref.live(r, now))
                ref.ever.extend(batch)
        elif alive:
            row = alive.pop(int(op[1]) % len(alive))  # type: ignore[call-overload]
            done = windows.retract(now, [row.t], [row.values], [row.decayed])
            for ref in refs:
                ref.top = ref.position(now)
            assert bool(done[0]) == refs[-1].live(row, now)
            for ref in refs:
                if row in ref.rows:
                    ref.rows.remove(row)
        check_windows(windows, refs, now)
        check_windows(windows, refs, now + read_ahead)


def test_large_batch_equals_rows_one_by_one() -> None:
    rng = np.random.default_rng(11)
    n = 1000
    times = T0 - rng.uniform(0.0, 70.0, n)
    values = rng.uniform(-0.1, 1.1, (n, 2))
    values[rng.uniform(size=values.shape) < 0.2] = np.nan
    dvalues = rng.uniform(0.0, 2.0, (n, 2))
    batched, single = WindowSet(SPEC), WindowSet(SPEC)
    landed = batched.add(T0, times, values, dvalues)
    for i in range(0, n, 7):
        single.add(T0, times[i : i + 7], values[i : i + 7], dvalues[i : i + 7])
    rows = [
        Row(float(t), tuple(v), tuple(d)) for t, v, d in zip(times, values, dvalues, strict=True)
    ]
    refs = [RefWindow(SPEC, w, top=math.floor(T0 / (w / SPEC.buckets))) for w in SPEC.windows]
    for ref in refs:
        ref.rows = [r for r in rows if ref.live(r, T0)]
        ref.ever = rows
    assert landed.tolist() == [refs[-1].live(r, T0) for r in rows]
    check_windows(batched, refs, T0)
    check_windows(single, refs, T0 + 3.0)
    batched.retract(T0, times, values, dvalues)
    for read in batched.read(T0).values():
        assert read.queries == 0
        assert read.aggregate.total.tolist() == [0.0, 0.0]
        assert read.decay.total.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("n", [1, 5, 200, 2000])
def test_batches_of_any_size_in_one_bucket(n: int) -> None:
    rng = np.random.default_rng(n)
    values = rng.uniform(-0.1, 1.1, (n, 2))
    values[rng.uniform(size=values.shape) < 0.2] = np.nan
    dvalues = rng.uniform(0.0, 2.0, (n, 2))
    windows = WindowSet(SPEC)
    windows.add(T0, T0, values, dvalues)  # one time: one bucket per window
    rows = [Row(T0, tuple(v), tuple(d)) for v, d in zip(values, dvalues, strict=True)]
    refs = [RefWindow(SPEC, w, top=math.floor(T0 / (w / SPEC.buckets))) for w in SPEC.windows]
    for ref in refs:
        ref.rows = ref.ever = rows
    check_windows(windows, refs, T0 + 1.0)
    windows.retract(T0, T0, values, dvalues)
    assert windows.empty_series(T0).tolist() == [True]
