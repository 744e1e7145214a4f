"""Forward decay: direct sums at arbitrary read times, across forced landmark rebases."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.windows import ForwardDecay, decay_rates

from .reference import Row, decayed

T0 = 1_700_000_000.0
HALF_LIVES = (0.5, 7.0, 3600.0)
RATES = decay_rates(HALF_LIVES)


def test_halves_every_half_life() -> None:
    acc = ForwardDecay(decay_rates([10.0]))
    acc.add(T0, [8.0])
    assert acc.value(T0).tolist() == pytest.approx([8.0], rel=1e-15)
    assert acc.value(T0 + 10).tolist() == pytest.approx([4.0], rel=1e-14)
    assert acc.value(T0 + 30).tolist() == pytest.approx([1.0], rel=1e-14)
    assert acc.mean(T0 + 30).tolist() == pytest.approx([1.0], rel=1e-14)
    assert acc.count.tolist() == [1]


def test_rebases_before_overflow_and_stays_exact() -> None:
    acc = ForwardDecay(decay_rates([1.0]), max_exponent=300.0)
    rows: list[Row] = []
    t = T0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for step in range(200):
            t += 50.0 + step  # λ·Δt grows past 300 within a handful of steps
            acc.add(t, [1.0 + step])
            rows.append(Row(t, (), (1.0 + step,)))
            assert float(acc.rates[0]) * (t - acc.landmark) <= 300.0
            _, want, _ = decayed(rows, acc.rates, t + 0.3)
            assert acc.value(t + 0.3) == pytest.approx(want, rel=1e-12)
    assert acc.landmark > T0
    # Reads far past the landmark underflow to zero without warnings.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert acc.value(t + 1e6).tolist() == [0.0]


def test_retract_across_rebase_removes_exactly() -> None:
    acc = ForwardDecay(decay_rates([2.0]), max_exponent=20.0)
    acc.add(T0, [3.0])
    acc.add(T0 + 1000.0, [5.0])  # forces a rebase far past the first value
    assert acc.landmark == T0 + 1000.0
    acc.retract(T0 + 1000.0, [5.0])
    acc.retract(T0, [3.0])
    assert acc.count.tolist() == [0]
    assert acc.total.tolist() == [0.0]


def test_vectorised_over_half_lives_and_nan_is_missing() -> None:
    acc = ForwardDecay(RATES)
    acc.add([T0, T0 + 1.0], [[1.0, math.nan, 2.0], [1.0, 1.0, math.nan]])
    assert acc.count.tolist() == [2, 1, 1]
    t = T0 + 5.0
    want = [
        math.exp(-RATES[0] * 5.0) + math.exp(-RATES[0] * 4.0),
        math.exp(-RATES[1] * 4.0),
        2.0 * math.exp(-RATES[2] * 5.0),
    ]
    np.testing.assert_allclose(acc.value(t), want, rtol=1e-13)


times_st = st.lists(
    st.tuples(
        st.floats(0.0, 2000.0),  # time step (large ones force rebases)
        st.floats(-3.0, 3.0),  # stamp offset from the clock (old or slightly ahead)
        st.lists(st.one_of(st.floats(-5.0, 5.0), st.just(math.nan)), min_size=3, max_size=3),
        st.booleans(),  # retract an earlier row instead
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(times_st, st.floats(0.0, 50.0), st.sampled_from([5.0, 50.0, 300.0]))
def test_matches_direct_sum_after_every_update(
    ops: list[tuple[float, float, list[float], bool]], read_ahead: float, max_exponent: float
) -> None:
    acc = ForwardDecay(RATES, max_exponent=max_exponent)
    alive: list[Row] = []
    ever: list[Row] = []
    now = T0
    for step, offset, values, retract in ops:
        now += step
        if retract and alive:
            row = alive.pop(len(alive) // 2)
            acc.retract(row.t, row.decayed)
        else:
            row = Row(now + offset, (), tuple(values))
            acc.add(row.t, row.decayed)
            alive.append(row)
            ever.append(row)
        t = now + read_ahead
        count, want, _ = decayed(alive, RATES, t)
        _, _, scale = decayed(ever, RATES, t)
        assert acc.count.tolist() == count.tolist()
        got = acc.value(t)
        assert np.all(np.abs(got - want) <= 1e-12 * scale + 1e-300), (got, want, scale)


@settings(max_examples=100, deadline=None)
@given(times_st, times_st)
def test_merge_with_different_landmarks(
    left: list[tuple[float, float, list[float], bool]],
    right: list[tuple[float, float, list[float], bool]],
) -> None:
    accs = [ForwardDecay(RATES, max_exponent=30.0) for _ in range(3)]
    rows: list[Row] = []
    for acc, ops, start in ((accs[0], left, T0), (accs[1], right, T0 + 777.0)):
        now = start
        for step, offset, values, _ in ops:
            now += step
            acc.add(now + offset, values)
            accs[2].add(now + offset, values)
            rows.append(Row(now + offset, (), tuple(values)))
    merged = accs[0] + accs[1]
    assert merged.landmark == max(accs[0].landmark, accs[1].landmark)
    t = max([r.t for r in rows], default=T0) + 1.0
    count, want, scale = decayed(rows, RATES, t)
    assert merged.count.tolist() == count.tolist() == accs[2].count.tolist()
    assert np.all(np.abs(merged.value(t) - want) <= 1e-12 * scale + 1e-300)
    assert np.all(np.abs(merged.value(t) - accs[2].value(t)) <= 1e-12 * scale + 1e-300)


def test_snapshot_round_trip_and_future_behaviour() -> None:
    acc = ForwardDecay(RATES, max_exponent=25.0)
    acc.add([T0, T0 + 40.0], [[1.0, 2.0, 3.0], [0.5, 0.25, math.nan]])
    twin = ForwardDecay.restore(json.loads(json.dumps(acc.snapshot())))
    assert twin.snapshot() == acc.snapshot()
    for x in (acc, twin):
        x.add(T0 + 900.0, [1.0, 1.0, 1.0])  # rebases both the same way
        x.retract(T0, [1.0, 2.0, 3.0])
    assert twin.snapshot() == acc.snapshot()
    assert twin.value(T0 + 901.0).tolist() == acc.value(T0 + 901.0).tolist()


def test_rejects_bad_rates_and_backward_rebase() -> None:
    with pytest.raises(ValueError, match="positive"):
        ForwardDecay([0.0])
    acc = ForwardDecay([1.0], landmark=10.0)
    with pytest.raises(ValueError, match="forward"):
        acc.rebase(5.0)
    with pytest.raises(ValueError, match="different rates"):
        acc.merge(ForwardDecay([2.0]))
