"""Forward-decay sums as a read hands them out: valued at the read time, across landmarks.

The sums themselves are built by the windows (`tests/windows/test_sliding_window.py`
compares them with direct sums after every update, across forced landmark rebases)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.windows import WindowStore
from tests.support import defaults

T0 = 1_700_000_000.0
SPEC = defaults.window_spec(
    columns=("x",), decayed=("d",), half_lives=(10.0,), windows=(3600.0,), buckets=6
)


def test_halves_every_half_life() -> None:
    store = WindowStore(SPEC)
    store.add(0, ("a",), T0, [T0], [[0.5]], [[8.0]])  # 8 stamped at T0
    for exact in (True, False):
        assert store.read(T0 + 10, exact=exact).decayed_total[0, 0].tolist() == pytest.approx(
            [4.0], rel=1e-14
        )
        later = store.read(T0 + 30, exact=exact)
        assert later.decayed_total[0, 0].tolist() == pytest.approx([1.0], rel=1e-14)
        assert later.decayed_mean()[0, 0].reshape(-1).tolist() == pytest.approx([1.0], rel=1e-14)
    assert math.isnan(float(WindowStore(SPEC).read(T0, ("a",)).decayed_mean()[0, 0, 0, 0]))


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(-5.0, 5.0), min_size=1, max_size=3),
    st.lists(st.floats(-5.0, 5.0), min_size=1, max_size=3),
    st.floats(0.0, 900.0),
    st.floats(0.0, 60.0),
)
def test_partitions_with_different_landmarks_merge(
    left: list[float], right: list[float], gap: float, after: float
) -> None:
    """A partition moved in from a store whose landmark is later is brought to it."""
    spec = defaults.window_spec(
        columns=("x",), decayed=("d",), half_lives=(7.0,), windows=(3600.0,), max_exponent=1.0
    )
    a, b = WindowStore(spec), WindowStore(spec)
    a.add(0, ("a",), T0, [T0] * len(left), [[0.5]] * len(left), [[v] for v in left])
    t_b = T0 + gap
    b.add(1, ("a",), t_b, [t_b] * len(right), [[0.5]] * len(right), [[v] for v in right])
    t = t_b + after
    want = [a.read(t, exact=True).decayed_total + b.read(t, exact=True).decayed_total]
    scale = sum(abs(v) * math.exp(-math.log(2) / 7.0 * (t - T0)) for v in left) + sum(
        abs(v) * math.exp(-math.log(2) / 7.0 * (t - t_b)) for v in right
    )
    a.import_partition(json.loads(json.dumps(b.export_partition(1))))
    for exact in (True, False):
        got = a.read(t, exact=exact)
        assert got.decayed_count.tolist() == [[[len(left) + len(right)]]]
        assert np.all(np.abs(got.decayed_total - want[0]) <= 1e-12 * scale + 1e-300)
