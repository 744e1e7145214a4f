"""Forward-decay sums as windows hand them out: reads at any time, merges across landmarks.

The sums themselves are built by the windows (`tests/windows/test_sliding_window.py`
compares them with direct sums after every update, across forced landmark rebases)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.windows import ForwardDecay, decay_rates

T0 = 1_700_000_000.0
RATES = decay_rates((0.5, 7.0, 3600.0))


def test_halves_every_half_life() -> None:
    acc = ForwardDecay.from_arrays(
        decay_rates([10.0]), T0, np.array([1]), np.array([8.0])
    )  # 8 stamped at the landmark
    assert acc.value(T0 + 10).tolist() == pytest.approx([4.0], rel=1e-14)
    assert acc.value(T0 + 30).tolist() == pytest.approx([1.0], rel=1e-14)
    assert acc.mean(T0 + 30).tolist() == pytest.approx([1.0], rel=1e-14)
    empty = ForwardDecay(decay_rates([10.0]))
    assert math.isnan(float(empty.mean(T0)[0]))


sums_st = st.lists(st.floats(-5.0, 5.0), min_size=3, max_size=3)


@settings(max_examples=100, deadline=None)
@given(sums_st, sums_st, st.floats(0.0, 900.0), st.floats(0.0, 60.0))
def test_merge_with_different_landmarks(
    left: list[float], right: list[float], gap: float, after: float
) -> None:
    a = ForwardDecay.from_arrays(RATES, T0, np.array([1, 2, 0]), np.array(left))
    b = ForwardDecay.from_arrays(RATES, T0 + gap, np.array([3, 0, 1]), np.array(right))
    merged = a + b
    assert merged.landmark == T0 + gap
    assert merged.count.tolist() == [4, 2, 1]
    t = T0 + gap + after
    want = a.value(t) + b.value(t)
    scale = np.abs(a.value(t)) + np.abs(b.value(t))
    assert np.all(np.abs(merged.value(t) - want) <= 1e-12 * scale + 1e-300)


def test_rejects_bad_rates_and_merges_only_like_rates() -> None:
    with pytest.raises(ValueError, match="positive"):
        ForwardDecay([0.0])
    with pytest.raises(ValueError, match="max_exponent"):
        ForwardDecay([1.0], max_exponent=1000.0)
    with pytest.raises(ValueError, match="different rates"):
        ForwardDecay([1.0]).merge(ForwardDecay([2.0]))
