"""ADWIN: against river's ADWIN on the same streams, bounded memory, snapshots."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import drift as river_drift

from ragstream.drift import Adwin
from tests.support import defaults

RIVER_ADWIN: Any = river_drift.ADWIN  # river has no type hints
RIVER_DELTA = 0.002  # river's default; ours is smaller (docs/drift.md)


def changing_stream(seed: int) -> np.ndarray:
    """Bernoulli, reciprocal-rank-like and continuous pieces with changes of mean."""
    rng = np.random.default_rng(seed)
    ranks = rng.geometric(0.5, 6000)
    return np.concatenate(
        [
            (rng.random(8000) < 0.6).astype(np.float64),
            (rng.random(6000) < 0.45).astype(np.float64),
            np.where(ranks > 10, 0.0, 1.0 / ranks),
            rng.beta(2.0, 1.0, 5000) * 0.7,
        ]
    )


def river_run(x: np.ndarray, **params: float) -> tuple[list[int], list[tuple[int, float, float]]]:
    det = RIVER_ADWIN(**params)
    alarms = []
    states = []
    for i, v in enumerate(x.tolist()):
        det.update(v)
        if det.drift_detected:
            alarms.append(i)
        states.append((int(det.width), float(det.total), float(det.variance)))
    return alarms, states


@pytest.mark.parametrize("seed", range(6))
def test_same_detections_as_river(seed: int) -> None:
    x = changing_stream(seed)
    expected, _ = river_run(x)
    ours = defaults.adwin(delta=0.002, direction="both", max_window=10**9)  # river's defaults
    assert ours.update(x).tolist() == expected
    assert len(expected) >= 2


@pytest.mark.parametrize(
    "params",
    [
        {"delta": 0.05, "clock": 1, "max_buckets": 3, "min_window_length": 2, "grace_period": 3},
        {"delta": 1e-4, "clock": 7, "max_buckets": 5, "min_window_length": 10, "grace_period": 50},
    ],
)
def test_same_state_as_river_after_every_update(params: dict[str, float]) -> None:
    """Width, sum and M2 of the window equal river's after each value, fed one at a time."""
    x = changing_stream(11)[:6000]
    expected, states = river_run(x, **params)
    ours = defaults.adwin(direction="both", max_window=10**9, **params)
    got = []
    for i, v in enumerate(x.tolist()):
        if ours.update(v).size:
            got.append(i)
            assert ours.width == 0  # reset at once; river resets on the next value
            continue
        width, total, variance = states[i]
        assert ours.width == width
        assert ours.snapshot()["total"] == total
        assert ours.snapshot()["variance"] == variance
    assert got == expected


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.1, 1 / 3, 0.5, 1.0]), min_size=0, max_size=400),
    st.lists(st.integers(1, 60), min_size=1, max_size=10),
    st.integers(1, 9),
)
def test_any_batching_same_as_one_at_a_time(
    values: list[float], sizes: list[int], clock: int
) -> None:
    whole = defaults.adwin(
        delta=0.1, clock=clock, min_window_length=2, grace_period=4, max_window=64
    )
    parts = Adwin.restore(whole.snapshot())
    expected = whole.update(np.asarray(values)).tolist()
    got: list[int] = []
    start = 0
    k = 0
    while start < len(values):
        stop = min(len(values), start + sizes[k % len(sizes)])
        got += [start + int(o) for o in parts.update(values[start:stop])]
        start = stop
        k += 1
    assert got == expected
    assert parts.snapshot() == whole.snapshot()


def test_window_contents_against_raw_values() -> None:
    """The buckets summarise exactly the last ``width`` values, also when the cap drops
    the oldest ones: their sum and M2 equal the raw values'."""
    rng = np.random.default_rng(2)
    x = rng.random(20_000)
    det = defaults.adwin(
        max_window=3000, clock=10**9
    )  # never checks: only the cap shapes the window
    for start in range(0, x.size, 1500):
        det.update(x[start : start + 1500])
        seen = x[: start + 1500]
        w = det.width
        assert w <= 3000
        tail = seen[-w:]
        snap = det.snapshot()
        assert snap["total"] == pytest.approx(tail.sum(), rel=1e-9)
        assert snap["variance"] == pytest.approx(((tail - tail.mean()) ** 2).sum(), rel=1e-6)
        assert sum(sum(row[0]) for row in snap["rows"]) == pytest.approx(tail.sum(), rel=1e-9)
    assert det.width > 1500  # dropping whole buckets keeps most of the window


@pytest.mark.slow
def test_bounded_memory_on_a_million_values() -> None:
    rng = np.random.default_rng(3)
    x = (rng.random(1_000_000) < 0.55).astype(np.float64)
    det = defaults.adwin(max_window=100_000)
    most = 0
    for start in range(0, x.size, 50_000):
        det.update(x[start : start + 50_000])
        most = max(most, det.buckets)
        assert det.width <= 100_000
        assert det.buckets <= det.max_buckets_bound() == 5 * 15
    assert det.detections == 0
    size = len(json.dumps(det.snapshot()))
    assert size < 60 * det.max_buckets_bound()  # two floats a bucket, plus the settings
    assert most > 0.85 * det.max_buckets_bound()  # the bound is nearly reached, not loose


def test_one_sided() -> None:
    rng = np.random.default_rng(4)
    rise = np.r_[(rng.random(5000) < 0.4), (rng.random(5000) < 0.6)].astype(np.float64)
    assert defaults.adwin(delta=RIVER_DELTA).update(rise).size == 0
    assert defaults.adwin(delta=RIVER_DELTA, direction="up").update(rise).size >= 1
    assert defaults.adwin(delta=RIVER_DELTA, direction="both").update(rise).size >= 1
    assert defaults.adwin(delta=RIVER_DELTA).update(1.0 - rise).size >= 1


def test_hold_and_score() -> None:
    rng = np.random.default_rng(5)
    x = np.r_[(rng.random(3000) < 0.7), (rng.random(3000) < 0.3)].astype(np.float64)
    det = defaults.adwin(delta=RIVER_DELTA, hold=100)
    assert det.score == 0.0
    det.update(x[:3000])
    assert 0.0 < det.score < 1.0
    assert not det.alarm
    stop = 3000 + int(det.update(x[3000:4000])[0]) + 1  # the first detection
    replay = defaults.adwin(delta=RIVER_DELTA, hold=100)
    assert replay.update(x[:stop]).tolist() == [stop - 1]
    assert replay.alarm
    assert replay.score >= 1.0
    assert replay.width == 0
    replay.update(x[stop : stop + 99])  # 99 values after the detection: still held
    assert replay.alarm
    replay.update(x[stop + 99 : stop + 100])
    assert not replay.alarm
    assert replay.detections == 1


def test_snapshot_round_trip_continues_identically() -> None:
    x = changing_stream(7)
    a = defaults.adwin(delta=RIVER_DELTA, direction="both")
    a.update(x[:9000])
    b = Adwin.restore(json.loads(json.dumps(a.snapshot())))
    assert b.snapshot() == a.snapshot()
    assert a.update(x[9000:]).tolist() == b.update(x[9000:]).tolist()
    assert a.snapshot() == b.snapshot()
    snap = a.snapshot()
    with pytest.raises(ValueError, match="width"):
        Adwin.restore({**snap, "width": snap["width"] + 1})
    with pytest.raises(ValueError, match="version"):
        Adwin.restore({**snap, "version": 2})
    with pytest.raises(ValueError, match="malformed"):
        Adwin.restore({**snap, "rows": [[[1.0] * 9, [0.0] * 9]]})


def test_nan_skipped_and_infinity_refused() -> None:
    det = defaults.adwin()
    det.update([0.5, math.nan, 0.25])
    assert det.width == 2
    with pytest.raises(ValueError, match="infinit"):
        det.update([math.inf])
