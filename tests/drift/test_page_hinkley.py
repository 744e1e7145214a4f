"""Page-Hinkley: the batch implementation against a direct loop after every update."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.drift import PageHinkley
from tests.support import defaults


@dataclass
class LoopPH:
    """The test written as a loop over values, with Welford's running mean and variance."""

    delta: float
    threshold: float
    min_instances: int
    direction: str
    min_std: float = 1e-6
    n: int = 0
    mean: float = 0.0
    m2: float = 0.0
    g_down: float = 0.0
    g_up: float = 0.0
    seen: int = 0

    def update(self, values: list[float]) -> list[int]:
        alarms = []
        for i, x in enumerate(values):
            self.seen += 1
            if self.n >= self.min_instances:
                std = math.sqrt(self.m2 / (self.n - 1))
                z = (x - self.mean) / max(std, self.min_std)
                self.g_down = max(0.0, self.g_down - z - self.delta)
                self.g_up = max(0.0, self.g_up + z - self.delta)
                hit = (self.direction != "up" and self.g_down > self.threshold) or (
                    self.direction != "down" and self.g_up > self.threshold
                )
                if hit:
                    alarms.append(i)
                    self.n, self.mean, self.m2, self.g_down, self.g_up = 0, 0.0, 0.0, 0.0, 0.0
                    continue
            self.n += 1
            d = x - self.mean
            self.mean += d / self.n
            self.m2 += d * (x - self.mean)
        return alarms


def stream(seed: int, n: int = 6000, drop_at: int = 3000, drop: float = 0.2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.random(n)
    x[drop_at:] = np.clip(x[drop_at:] - drop, 0, 1)
    return x


def check_state(det: PageHinkley, ref: LoopPH) -> None:
    assert det.count == ref.n
    snap = det.snapshot()
    assert snap["mean"] == pytest.approx(ref.mean, rel=1e-9, abs=1e-12)
    assert snap["m2"] == pytest.approx(ref.m2, rel=1e-8, abs=1e-9)
    if det.direction != "up":
        assert snap["g_down"] == pytest.approx(ref.g_down, rel=1e-7, abs=1e-7)
    if det.direction != "down":
        assert snap["g_up"] == pytest.approx(ref.g_up, rel=1e-7, abs=1e-7)


@pytest.mark.parametrize("direction", ["down", "up", "both"])
def test_against_loop_in_batches(direction: str) -> None:
    for seed in range(4):
        x = stream(seed)
        if direction == "up":
            x = 1.0 - x
        det = defaults.page_hinkley(
            delta=0.05, threshold=100.0, min_instances=50, direction=direction
        )
        ref = LoopPH(0.05, 100.0, 50, direction)
        rng = np.random.default_rng(seed + 100)
        cuts = np.sort(rng.choice(np.arange(1, x.size), 30, replace=False))
        got: list[int] = []
        expected: list[int] = []
        start = 0
        for stop in [*cuts.tolist(), x.size]:
            got += [start + int(o) for o in det.update(x[start:stop])]
            expected += [start + o for o in ref.update(x[start:stop].tolist())]
            check_state(det, ref)
            start = stop
        assert got == expected
        assert got, "the drop must be detected"
        assert all(g >= 3000 for g in got), (seed, got)
        assert det.detections == len(got)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.5, 1.0])), max_size=300),
    st.lists(st.integers(1, 40), min_size=1, max_size=20),
    st.sampled_from(["down", "up", "both"]),
)
def test_property_any_batching(values: list[float], sizes: list[int], direction: str) -> None:
    det = defaults.page_hinkley(
        delta=0.1, threshold=3.0, min_instances=5, direction=direction, hold=7
    )
    ref = LoopPH(0.1, 3.0, 5, direction)
    start = 0
    got: list[int] = []
    expected: list[int] = []
    while start < len(values):
        for size in sizes:
            stop = min(len(values), start + size)
            got += [start + int(o) for o in det.update(np.asarray(values[start:stop]))]
            expected += [start + o for o in ref.update(values[start:stop])]
            start = stop
        if not sizes:
            break
    assert got == expected
    if expected:
        assert det.alarm == (len(values) - 1 - expected[-1] < 7)
    else:
        assert not det.alarm


def test_one_sided_ignores_the_other_side() -> None:
    x = stream(7, drop=-0.2)  # a rise
    x = np.clip(x, 0, 1)
    assert defaults.page_hinkley(threshold=30.0, min_instances=100).update(x).size == 0
    assert (
        defaults.page_hinkley(threshold=30.0, min_instances=100, direction="up").update(x).size >= 1
    )


def test_constant_streams_and_nan() -> None:
    det = defaults.page_hinkley(min_instances=10, threshold=5.0)
    assert det.update(np.full(1000, 0.7)).size == 0
    assert det.statistic == 0.0
    assert det.update([math.nan, math.nan]).size == 0
    assert det.count == 1000
    assert det.update(np.full(10, 0.6)).tolist() == [0]  # any drop from a constant is a change
    with pytest.raises(ValueError, match="infinit"):
        det.update([math.inf])


def test_snapshot_round_trip_continues_identically() -> None:
    x = stream(3)
    a = defaults.page_hinkley(threshold=20.0, min_instances=50)
    a.update(x[:2500])
    b = PageHinkley.restore(json.loads(json.dumps(a.snapshot())))
    assert b.snapshot() == a.snapshot()
    assert a.update(x[2500:]).tolist() == b.update(x[2500:]).tolist()
    assert a.snapshot() == b.snapshot()
    with pytest.raises(ValueError, match="version"):
        PageHinkley.restore({**a.snapshot(), "version": 9})
    with pytest.raises(ValueError, match="non-finite"):
        PageHinkley.restore({**a.snapshot(), "mean": math.nan})


def test_long_batch_in_chunks_equals_loop() -> None:
    """A batch longer than one internal chunk (2**20 values)."""
    rng = np.random.default_rng(11)
    x = (rng.random((1 << 20) + 5000) < 0.6).astype(np.float64)
    x[-3000:] = (rng.random(3000) < 0.3).astype(np.float64)
    det = defaults.page_hinkley(delta=0.05, threshold=40.0, min_instances=100)
    ref = LoopPH(0.05, 40.0, 100, "down")
    assert det.update(x).tolist() == ref.update(x.tolist())
    check_state(det, ref)
