"""Welch z-score: against a from-scratch computation on raw values after every update."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.drift import Moments, ZScore, welch_z
from ragstream.windows import Aggregate
from tests.support import defaults


def moments(values: list[float] | np.ndarray) -> Moments:
    x = np.asarray(values, dtype=np.float64)
    return Moments(x.size, float(x.sum()), float((x * x).sum()))


def raw_z(short: np.ndarray, reference: np.ndarray) -> float:
    """Welch's z from the raw values of the short window and of the reference."""
    se = math.sqrt(np.var(short, ddof=1) / short.size + np.var(reference, ddof=1) / reference.size)
    return float((short.mean() - reference.mean()) / se)


def test_hand_computed() -> None:
    short = [0.0, 0.5, 1.0, 0.5]  # mean 0.5, var 1/6
    reference = [1.0, 1.0, 0.5, 0.5, 1.0, 1.0]  # mean 5/6, var 1/15
    z = welch_z(moments(short), moments(short + reference))
    expected = (0.5 - 5 / 6) / math.sqrt((1 / 6) / 4 + (1 / 15) / 6)
    assert float(z) == pytest.approx(expected, rel=1e-12)


def test_reference_excludes_the_short_window() -> None:
    """Compared with the whole long window (short included), z would shrink toward 0."""
    rng = np.random.default_rng(1)
    reference = rng.random(2000)
    short = rng.random(300) * 0.8
    z = float(welch_z(moments(short), moments(np.concatenate([reference, short]))))
    assert z == pytest.approx(raw_z(short, reference), rel=1e-9)
    biased = raw_z(short, np.concatenate([reference, short]))
    assert abs(biased) < abs(z)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=200),
    st.lists(st.integers(0, 15), min_size=1, max_size=25),
    st.integers(2, 12),
)
def test_after_every_update_against_raw_values(
    stream: list[float], steps: list[int], short_len: int
) -> None:
    """Windows as arrays of raw values: at each evaluation the short window is the last
    ``short_len`` values and the long one everything so far."""
    det = defaults.zscore(threshold=2.0, min_count=3, min_reference=3, direction="both")
    seen = 0
    alarm = False
    for step in steps:
        seen = min(len(stream), seen + step)
        x = np.asarray(stream[:seen])
        s = x[max(0, seen - short_len) :]
        r = x[: max(0, seen - short_len)]
        det.update(moments(s), moments(x))
        if s.size < 3 or r.size < 3:
            assert math.isnan(det.score)
            assert not det.alarm
            alarm = False
            continue
        v_s, v_r = np.var(s, ddof=1), np.var(r, ddof=1)
        se = math.sqrt(v_s / s.size + v_r / r.size)
        if se < 1e-7:  # constant windows: the floor of the standard error decides
            continue
        expected = (s.mean() - r.mean()) / se
        assert det.score == pytest.approx(expected, rel=1e-6, abs=1e-6)
        severity = abs(expected) / 2.0
        if abs(severity - 1.0) > 1e-6 and abs(severity - 0.8) > 1e-6:
            alarm = severity >= 1.0 or (alarm and severity >= 0.8)
            assert det.alarm == alarm
        alarm = det.alarm


def test_volume_floors() -> None:
    rng = np.random.default_rng(2)
    ref = rng.random(1000)
    short = rng.random(199)
    assert math.isnan(float(welch_z(moments(short), moments(np.r_[ref, short]), min_count=200)))
    short = rng.random(200)
    assert math.isfinite(float(welch_z(moments(short), moments(np.r_[ref, short]), min_count=200)))
    assert math.isnan(
        float(welch_z(moments(short), moments(np.r_[ref, short]), min_reference=1001))
    )


def test_vectorised_over_label_sets_and_from_window_aggregates() -> None:
    """The windows' own aggregates feed it; arrays over series give the per-series z."""
    rng = np.random.default_rng(3)
    shorts = [rng.random(300) * a for a in (1.0, 0.9, 0.7)]
    refs = [rng.random(3000) for _ in range(3)]
    short_agg = [Aggregate(("ndcg",), bins=20) for _ in range(3)]
    long_agg = [Aggregate(("ndcg",), bins=20) for _ in range(3)]
    for s, r, sa, la in zip(shorts, refs, short_agg, long_agg, strict=True):
        sa.add(s[:, None])
        la.add(np.r_[r, s][:, None])
    z = welch_z(
        Moments(
            [a.count[0] for a in short_agg],
            [a.total[0] for a in short_agg],
            [a.total_sq[0] for a in short_agg],
        ),
        Moments(
            [a.count[0] for a in long_agg],
            [a.total[0] for a in long_agg],
            [a.total_sq[0] for a in long_agg],
        ),
    )
    assert z.shape == (3,)
    for i in range(3):
        assert z[i] == pytest.approx(raw_z(shorts[i], refs[i]), rel=1e-9)


def test_merged_partitions_equal_one_stream() -> None:
    """Moments merge by addition: two partitions' windows give the z of all their values."""
    rng = np.random.default_rng(4)
    parts = [(rng.random(200), rng.random(1500)) for _ in range(2)]
    short = Moments(*(sum(x) for x in zip(*(moments(s) for s, _ in parts), strict=True)))
    long = Moments(*(sum(x) for x in zip(*(moments(np.r_[r, s]) for s, r in parts), strict=True)))
    all_short = np.concatenate([s for s, _ in parts])
    all_ref = np.concatenate([r for _, r in parts])
    assert float(welch_z(short, long)) == pytest.approx(raw_z(all_short, all_ref), rel=1e-9)


def test_direction_and_hysteresis() -> None:
    det = defaults.zscore(threshold=5.0, min_count=2, min_reference=2, release=0.8)
    rng = np.random.default_rng(5)
    ref = rng.random(5000)
    ups = rng.random(500) * 0.5 + 0.5
    assert det.update(moments(ups), moments(np.r_[ref, ups])).size == 0  # a rise: not watched
    assert not det.alarm
    assert det.score > 5
    drops = rng.random(500) * 0.5
    onsets = det.update(moments(drops), moments(np.r_[ref, drops]))
    assert onsets.tolist() == [0]
    assert det.alarm
    assert det.detections == 1
    # falling back between release and threshold keeps the alarm without a new onset
    det.update(Moments(1000, 0.0, 0.0), Moments(2000, 0.0, 0.0))  # constant, equal: z = 0
    assert not det.alarm


def window(mean: float, var: float, n: int) -> tuple[float, float, float]:
    """Moments of ``n`` values with this mean and sample variance."""
    return float(n), mean * n, var * (n - 1) + mean * mean * n


def test_series_of_evaluations_counts_onsets() -> None:
    det = defaults.zscore(threshold=3.0, min_count=2, min_reference=2, release=0.5)
    n, var = 10_000, 0.04
    se = math.sqrt(2 * var / n)
    rows = []
    for target in [0.0, -3.5, -2.0, -1.0, -3.2]:  # z of each evaluation
        short = window(0.5 + target * se, var, n)
        reference = window(0.5, var, n)
        rows.append((*short, *(a + b for a, b in zip(short, reference, strict=True))))
    rows.append((1.0, 0.5, 0.25, float(n + 1), n * 0.5 + 0.5, n * 0.26))  # under the floor
    cols = np.asarray(rows).T
    onsets = det.update(Moments(*cols[:3]), Moments(*cols[3:]))
    assert onsets.tolist() == [1, 4]  # on at -3.5, held at -2, off at -1, on again at -3.2
    assert det.detections == 2
    assert not det.alarm  # the last evaluation had no signal
    assert math.isnan(det.score)


def test_snapshot_round_trip() -> None:
    det = defaults.zscore(
        threshold=4.0, min_count=10, min_reference=20, direction="up", release=0.9
    )
    rng = np.random.default_rng(6)
    ref, short = rng.random(100), rng.random(30) + 0.5
    det.update(moments(short), moments(np.r_[ref, short]))
    snap = json.loads(json.dumps(det.snapshot()))
    back = ZScore.restore(snap)
    assert back.snapshot() == det.snapshot()
    assert back.alarm
    assert back.detections == 1
    empty = ZScore.restore(json.loads(json.dumps(defaults.zscore().snapshot())))
    assert math.isnan(empty.score)
    with pytest.raises(ValueError, match="version"):
        ZScore.restore({**snap, "version": 2})
    with pytest.raises(ValueError, match="kind"):
        ZScore.restore({**snap, "kind": "psi"})


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="fewer values"):
        welch_z(Moments(10, 5.0, 3.0), Moments(9, 5.0, 3.0))
    with pytest.raises(ValueError, match="threshold"):
        defaults.zscore(threshold=0)
    with pytest.raises(ValueError, match="release"):
        defaults.zscore(release=1.5)
    with pytest.raises(ValueError, match="sideways"):
        defaults.zscore(direction="sideways")
