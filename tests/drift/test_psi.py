"""PSI: against a from-scratch computation on raw values, and on the windows' histograms."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.drift import Psi, psi
from ragstream.windows import Aggregate
from tests.support import defaults

BINS = 20


def raw_psi(short: np.ndarray, reference: np.ndarray, bins: int = BINS, eps: float = 1e-4) -> float:
    """PSI from raw values, binned right-closed as the windows do (0 in the first bin),
    with one loop over the bins."""

    def shares(x: np.ndarray) -> list[float]:
        idx = [max(math.ceil(min(max(v, 0.0), 1.0) * bins) - 1, 0) for v in x.tolist()]
        return [max(idx.count(j) / len(idx), eps) for j in range(bins)]

    total = 0.0
    for p, q in zip(shares(short), shares(reference), strict=True):
        total += (p - q) * math.log(p / q)
    return total


def hist(values: np.ndarray) -> np.ndarray:
    agg = Aggregate(("x",), bins=BINS)
    agg.add(np.asarray(values, dtype=np.float64)[:, None])
    out: np.ndarray = agg.histogram[0]
    return out


def test_hand_computed() -> None:
    short = np.array([3, 1, 0, 0])
    long = np.array([3, 1, 0, 0]) + np.array([1, 1, 1, 1])
    p = np.array([0.75, 0.25, 1e-4, 1e-4])
    q = np.array([0.25, 0.25, 0.25, 0.25])
    assert float(psi(short, long)) == pytest.approx(float(((p - q) * np.log(p / q)).sum()))
    assert float(psi(short, short * 2)) == 0.0  # same shares


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=150),
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=150),
)
def test_against_raw_values_through_window_histograms(short: list[float], ref: list[float]) -> None:
    s, r = np.asarray(short), np.asarray(ref)
    value = float(psi(hist(s), hist(np.r_[r, s])))
    assert value == pytest.approx(raw_psi(s, r), rel=1e-9, abs=1e-12)
    assert value >= 0.0


def test_after_every_update_series() -> None:
    """A series of evaluations as (T, bins) equals evaluating one at a time."""
    rng = np.random.default_rng(1)
    stream = np.r_[rng.beta(2, 1, 6000), rng.beta(1, 2, 3000)]
    shorts, longs, expected = [], [], []
    for end in range(1000, stream.size + 1, 500):
        s = stream[end - 500 : end]
        r = stream[: end - 500]
        shorts.append(hist(s))
        longs.append(hist(stream[:end]))
        expected.append(raw_psi(s, r))
    det = defaults.psi(threshold=0.25, min_count=100, min_reference=100)
    values = psi(np.array(shorts), np.array(longs))
    np.testing.assert_allclose(values, expected, rtol=1e-9)
    onsets = det.update(np.array(shorts), np.array(longs))
    first = int(np.argmax(np.asarray(expected) >= 0.25))
    assert onsets.tolist()[0] == first
    assert det.score == pytest.approx(expected[-1], rel=1e-9)
    one = defaults.psi(threshold=0.25, min_count=100, min_reference=100)
    got = [one.update(a, b).size for a, b in zip(shorts, longs, strict=True)]
    assert sum(got) == det.detections


def test_floors_and_epsilon() -> None:
    assert math.isnan(float(psi([5, 0], [10, 10], min_count=6)))
    assert math.isnan(float(psi([5, 0], [10, 10], min_reference=16)))
    # empty on both sides adds nothing; empty on one side costs (p - eps) ln(p / eps)
    a = float(psi([10, 0, 0], [20, 0, 0]))
    assert a == 0.0
    b = float(psi([5, 5, 0], [15, 5, 0], eps=1e-3))
    p, q = np.array([0.5, 0.5]), np.array([1.0, 1e-3])
    assert b == pytest.approx(float(((p - q) * np.log(p / q)).sum()))


def test_merged_partitions_equal_one_stream() -> None:
    rng = np.random.default_rng(2)
    parts = [(rng.random(300), rng.random(2000) ** 2) for _ in range(3)]
    short = sum(hist(s) for s, _ in parts)
    long = sum(hist(np.r_[r, s]) for s, r in parts)
    all_s = np.concatenate([s for s, _ in parts])
    all_r = np.concatenate([r for _, r in parts])
    assert float(psi(short, long)) == pytest.approx(raw_psi(all_s, all_r), rel=1e-9)


def test_snapshot_round_trip_and_errors() -> None:
    det = defaults.psi(threshold=0.05, min_count=10, min_reference=10)
    det.update(np.array([50, 0, 0, 50]), np.array([60, 40, 40, 60]))
    assert det.alarm
    snap = json.loads(json.dumps(det.snapshot()))
    back = Psi.restore(snap)
    assert back.snapshot() == det.snapshot()
    det.update(np.array([0, 0, 0, 0]), np.array([1, 1, 1, 1]))  # no signal: alarm off
    assert not det.alarm
    assert math.isnan(det.score)
    assert math.isnan(Psi.restore(json.loads(json.dumps(det.snapshot()))).score)
    with pytest.raises(ValueError, match="fewer values"):
        psi([3, 1], [2, 5])
    with pytest.raises(ValueError, match="same shape"):
        psi([3, 1], [3, 1, 0])
    with pytest.raises(ValueError, match="version"):
        Psi.restore({**snap, "version": 0})
