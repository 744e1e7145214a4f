"""Sliding windows: bucket boundaries, reference after every update, state, memory."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.windows import SlidingWindow, WindowSpec, WindowStore
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


def ring_of(spec: WindowSpec, length: float) -> tuple[WindowStore, SlidingWindow]:
    """A store of the spec's windows and its ring of this length."""
    windows = WindowStore(spec)
    return windows, windows.rings[spec.windows.index(length)]


def add(store: WindowStore, *args: Any) -> npt.NDArray[np.bool_]:
    """Add rows to the store's one series (series id 0 of every ring)."""
    return store.add(0, (), *args)


def retract(store: WindowStore, *args: Any) -> npt.NDArray[np.bool_]:
    return store.retract(0, (), *args)


def sums(ring: SlidingWindow, now: float, name: str) -> Any:
    """One state of series 0 summed over its buckets live at ``now``."""
    return ring.bucket_sums(now, 0, (name,))[name]


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
    landed = add(windows, now, [t], [[1.0]])
    assert bool(landed[0]) is inside
    assert sums(ring, now, "rows") == int(inside)


def test_window_rotates_as_time_advances() -> None:
    spec = defaults.window_spec(columns=("x",), windows=(60.0,), buckets=60)
    windows, ring = ring_of(spec, 60.0)
    add(windows, 1000.0, [990.0, 995.5, 1000.0], [[0.1], [0.2], [0.3]])
    assert sums(ring, 1000.0, "count").tolist() == [3]
    assert sums(ring, 1050.999, "count").tolist() == [3]
    assert sums(ring, 1051.0, "count").tolist() == [2]  # bucket [990, 991) has rotated out
    assert sums(ring, 1056.0, "count").tolist() == [1]
    assert sums(ring, 1061.0, "count").tolist() == [0]
    assert ring.state()["keys"] == [990, 995, 1000]


def test_retract_after_rotation_is_a_counted_noop() -> None:
    spec = dataclasses.replace(SPEC, windows=(10.0,))  # 2 s buckets
    windows, ring = ring_of(spec, 10.0)
    add(windows, T0, [T0 - 1.0, T0], [one(), one()], [[1.0, 1.0], [1.0, 1.0]])
    add(windows, T0 + 11.0, [T0 + 11.0], [one()])
    done = retract(windows, T0 + 11.0, [T0 - 1.0, T0], [one(), one()], [[1.0, 1.0], [1.0, 1.0]])
    assert done.tolist() == [False, True]
    assert sums(ring, T0 + 11.0, "rows") == 1


def test_rows_beyond_the_horizon_move_the_ring() -> None:
    windows, ring = ring_of(SPEC, 10.0)
    add(windows, T0, [T0], [one()])
    assert add(windows, T0, [T0 + 100.0], [one()]).tolist() == [True]
    assert sums(ring, T0, "rows") == 1  # the old row was pushed out by the jump


def test_memory_is_fixed_whatever_the_number_of_events() -> None:
    windows = WindowStore(
        defaults.window_spec(columns=("a", "b", "c"), decayed=("d",), half_lives=(60.0,))
    )
    before = windows.nbytes
    slots = [ring.slots for ring in windows.rings]
    rng = np.random.default_rng(7)
    now = T0
    for _ in range(100):  # 100 batches of 1000 rows spread over 10 days
        now += 8640.0
        times = now - rng.uniform(0, 86400.0, 1000)
        add(windows, now, times, rng.uniform(0, 1, (1000, 3)), rng.uniform(0, 1, (1000, 1)))
    assert windows.nbytes == before
    assert [ring.slots for ring in windows.rings] == slots == [121, 73, 62, 62]
    state = windows.export_partition(0)["series"][0]["windows"]
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


def check_windows(windows: WindowStore, refs: list[RefWindow], at: float) -> None:
    rates = SPEC.rates
    for exact in (True, False):
        read = windows.read(at, (), exact=exact, histograms=True)
        assert read.histograms is not None
        assert read.decayed_mean().shape == (1, 2, 2, 1)
        for ref in refs:
            j = SPEC.windows.index(ref.length)
            rows = ref.visible(at)
            want = plain(rows, 2, SPEC.bins)
            assert read.queries[0, j] == want.rows
            assert read.count[0, j].tolist() == want.count.tolist()
            assert read.histograms[0, j].tolist() == want.hist.tolist()
            np.testing.assert_allclose(read.total[0, j], want.total, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(read.total_sq[0, j], want.total_sq, rtol=1e-9, atol=1e-9)
            count, total, _ = decayed(rows, rates, at)
            _, _, scale = decayed(ref.ever, rates, at)
            assert read.decayed_count[0, j].tolist() == count.tolist()
            got = read.decayed_total[0, j]
            assert np.all(np.abs(got - total) <= 1e-12 * scale + 1e-300), (got, total)
    for ref in refs:
        rows = ref.visible(at)
        for until in (at - 1.3, at - 7.0, at - ref.length / 2, at + 2.0):
            # the window less the buckets that start after `until`
            cut = math.floor(until / ref.width)
            kept = plain([r for r in rows if ref.key(r.t) <= cut], 2, SPEC.bins)
            for exact in (True, False):
                t = windows.read(at, (), exact=exact, until=until, histograms=True)
                j = SPEC.windows.index(ref.length)
                assert t.histograms is not None
                assert int(t.queries[0, j]) == kept.rows
                assert t.count[0, j].tolist() == kept.count.tolist()
                assert t.histograms[0, j].tolist() == kept.hist.tolist()
                np.testing.assert_allclose(t.total[0, j], kept.total, rtol=1e-9, atol=1e-9)
                np.testing.assert_allclose(t.total_sq[0, j], kept.total_sq, rtol=1e-9, atol=1e-9)


@settings(max_examples=80, deadline=None)
@given(ops_st, st.floats(0.0, 30.0))
def test_matches_reference_after_every_update(
    ops: list[tuple[object, ...]], read_ahead: float
) -> None:
    windows = WindowStore(SPEC)
    refs = [RefWindow(SPEC, w) for w in SPEC.windows]
    alive: list[Row] = []
    now = T0
    for op in ops:
        if op[0] == "advance":
            now += float(op[1])  # type: ignore[arg-type]
        elif op[0] == "add":
            spec_rows = cast(list[tuple[float, tuple[float, ...], tuple[float, ...]]], op[1])
            batch = [Row(now + off, v, d) for off, v, d in spec_rows]
            landed = add(
                windows,
                now,
                [r.t for r in batch],
                [r.values for r in batch],
                [r.decayed for r in batch],
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
            done = retract(windows, now, [row.t], [row.values], [row.decayed])
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
    batched, single = WindowStore(SPEC), WindowStore(SPEC)
    landed = add(batched, T0, times, values, dvalues)
    for i in range(0, n, 7):
        add(single, T0, times[i : i + 7], values[i : i + 7], dvalues[i : i + 7])
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
    retract(batched, T0, times, values, dvalues)
    read = batched.read(T0, (), exact=True)
    assert read.queries.tolist() == [[0, 0]]
    assert read.total.tolist() == [[[0.0, 0.0]] * 2]
    assert read.decayed_total.tolist() == [[[0.0, 0.0]] * 2]


@pytest.mark.parametrize("n", [1, 5, 200, 2000])
def test_batches_of_any_size_in_one_bucket(n: int) -> None:
    rng = np.random.default_rng(n)
    values = rng.uniform(-0.1, 1.1, (n, 2))
    values[rng.uniform(size=values.shape) < 0.2] = np.nan
    dvalues = rng.uniform(0.0, 2.0, (n, 2))
    windows = WindowStore(SPEC)
    add(windows, T0, T0, values, dvalues)  # one time: one bucket per window
    rows = [Row(T0, tuple(v), tuple(d)) for v, d in zip(values, dvalues, strict=True)]
    refs = [RefWindow(SPEC, w, top=math.floor(T0 / (w / SPEC.buckets))) for w in SPEC.windows]
    for ref in refs:
        ref.rows = ref.ever = rows
    check_windows(windows, refs, T0 + 1.0)
    retract(windows, T0, T0, values, dvalues)
    assert [ring.empty_series(T0).tolist() for ring in windows.rings] == [[True], [True]]
