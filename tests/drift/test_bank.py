"""Detector banks: every element behaves as its own ZScore or Psi fed the same windows."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.drift import Moments, PsiBank, ZScore, ZScoreBank
from ragstream.drift._alarm import latch_step
from tests.support import defaults


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.one_of(st.floats(-0.5, 2.5, allow_nan=False), st.just(float("nan"))),
        min_size=1,
        max_size=40,
    ),
    st.floats(0.1, 1.0),
)
def test_latch_step_is_latch_feed_one_value_at_a_time(
    severity: list[float], release: float
) -> None:
    latch = defaults.zscore(release=release)
    alarm = np.zeros(1, dtype=np.bool_)
    for s in severity:
        onsets = latch.feed(np.asarray([s]))
        alarm, onset = latch_step(alarm, np.asarray([s]), release)
        assert bool(alarm[0]) == latch.alarm
        assert bool(onset[0]) == (onsets.size == 1)


def _random_windows(
    rng: np.random.Generator, keys: int, cells: tuple[int, ...]
) -> tuple[Moments, Moments]:
    """Short and long windows' moments of random [0, 1] values; the short window is the
    newest part of the long one (some elements under the floors)."""
    shape = (keys, *cells)
    n_s = rng.integers(0, 400, size=shape)
    n_r = rng.integers(0, 3000, size=shape)
    mean_s = rng.uniform(0.2, 0.8, size=shape)
    mean_r = rng.uniform(0.4, 0.6, size=shape)
    var = rng.uniform(0.01, 0.1, size=shape)
    s_s = n_s * mean_s
    s_r = n_r * mean_r
    q_s = n_s * (var + mean_s**2)
    q_r = n_r * (var + mean_r**2)
    return Moments(n_s, s_s, q_s), Moments(n_s + n_r, s_s + s_r, q_s + q_r)


def test_zscore_bank_equals_one_zscore_per_element_over_evaluations() -> None:
    rng = np.random.default_rng(3)
    cells = (2, 3)
    bank = defaults.zscore_bank(cells, threshold=3.0, min_count=50, min_reference=300, release=0.7)
    singles: dict[tuple[object, int, int], ZScore] = {}
    keys_over_time = [["a", "b", "c"], ["a", "b", "c"], ["b", "c", "d"], ["d", "a"], ["d", "a"]]
    previous: list[str] = []
    for step in range(12):
        keys = keys_over_time[step % len(keys_over_time)]
        short, long = _random_windows(rng, len(keys), cells)
        onsets = bank.update(keys, short, long)
        for i, key in enumerate(keys):
            for p in range(cells[0]):
                for m in range(cells[1]):
                    if key not in previous:  # new, or back after an absence: a fresh one
                        singles[(key, p, m)] = defaults.zscore(
                            threshold=3.0, min_count=50, min_reference=300, release=0.7
                        )
                    det = singles[(key, p, m)]
                    pick = (i, p, m)
                    hits = det.update(
                        Moments(*(np.asarray(a)[pick] for a in short)),
                        Moments(*(np.asarray(a)[pick] for a in long)),
                    )
                    assert bank.alarm[pick] == det.alarm
                    assert bool(onsets[pick]) == (hits.size == 1)
                    assert bank.detections[pick] == det.detections
                    np.testing.assert_equal(bank.score[pick], det.score)
        previous = keys
    assert bank.detections.sum() > 0  # the sequence raised alarms
    assert (~bank.alarm).any()


def test_psi_bank_equals_one_psi_per_element() -> None:
    rng = np.random.default_rng(5)
    bank = defaults.psi_bank((2,), threshold=0.1, min_count=100, min_reference=100)
    singles = [
        [defaults.psi(threshold=0.1, min_count=100, min_reference=100) for _ in range(2)]
        for _ in range(3)
    ]
    for _ in range(8):
        short = rng.integers(0, 30, size=(3, 2, 20))
        long = short + rng.integers(0, 120, size=(3, 2, 20))
        bank.update(["x", "y", "z"], short, long)
        for i in range(3):
            for p in range(2):
                singles[i][p].update(short[i, p], long[i, p])
                assert bank.alarm[i, p] == singles[i][p].alarm
                assert bank.detections[i, p] == singles[i][p].detections
                np.testing.assert_equal(bank.score[i, p], singles[i][p].score)
    assert bank.detections.sum() > 0


def test_a_key_that_leaves_is_forgotten_and_a_new_one_starts_with_its_alarm_off() -> None:
    bank = defaults.zscore_bank((), threshold=2.0, min_count=2, min_reference=2, direction="both")
    low = Moments(np.array([100, 100]), np.array([10.0, 10.0]), np.array([2.0, 2.0]))
    long = Moments(np.array([400, 400]), np.array([200.0, 200.0]), np.array([110.0, 110.0]))
    bank.update([("a",), ("b",)], low, long)
    assert bank.alarm.tolist() == [True, True]
    keep = Moments(np.array([100]), np.array([10.0]), np.array([2.0]))
    keep_long = Moments(np.array([400]), np.array([200.0]), np.array([110.0]))
    bank.update([("b",)], keep, keep_long)
    assert bank.keys == [("b",)]
    assert bank.detections.tolist() == [1]  # still on: no new onset
    bank.update([("a",), ("b",)], low, long)
    assert bank.detections.tolist() == [1, 1]  # "a" is new again: it turned on again


def test_snapshots_round_trip_through_json() -> None:
    rng = np.random.default_rng(9)
    z = defaults.zscore_bank((2,), threshold=2.0, min_count=10, min_reference=10)
    p = defaults.psi_bank((2,), threshold=0.05, min_count=10, min_reference=10)
    for _ in range(3):
        short, long = _random_windows(rng, 2, (2,))
        z.update([("a", "v1"), ("b", "v2")], short, long)
        hs = rng.integers(0, 30, size=(2, 2, 20))
        p.update([("a", "v1"), ("b", "v2")], hs, hs + rng.integers(0, 50, size=(2, 2, 20)))
    for bank, cls in ((z, ZScoreBank), (p, PsiBank)):
        back = cls.restore(json.loads(json.dumps(bank.snapshot())))
        assert back.snapshot() == bank.snapshot()
        assert back.config() == bank.config()
        assert back.keys == bank.keys
    with pytest.raises(ValueError, match="not a zscore_bank snapshot"):
        ZScoreBank.restore(p.snapshot())


def test_shapes_that_do_not_fit_are_refused() -> None:
    bank = defaults.zscore_bank((2,))
    one = Moments(np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="shape"):
        bank.update(["a"], one, one)
