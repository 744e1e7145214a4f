"""Clocks: wall and event time, late and future events, batching independence."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.windows import Clock, ClockMode, Timing, WindowStore
from tests.support import defaults

T0 = 1_700_000_000.0


class FakeWall:
    """A settable wall clock."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_wall_mode_classifies_and_clamps() -> None:
    wall = FakeWall(T0)
    clock = Clock("wall", window=3600.0, buckets=60, tolerance=60.0, wall=wall)
    stamped = clock.stamp([T0 - 10.0, T0 + 59.0, T0 + 61.0, T0 - 3600.0, T0 - 3660.0, T0 - 3661.0])
    # Buckets are 60 s wide; at T0 (bucket k) the oldest live bucket is k - 60, which ends
    # at (k - 59) * 60 > T0 - 3600.
    # Buckets are 60 s wide. T0 is 20 s into bucket k, so the oldest live bucket, k - 60,
    # starts 3620 s before T0 (it ends after T0 - 3600, as the rule says).
    assert T0 % 60 == 20.0
    expected = [
        Timing.ON_TIME,
        Timing.ON_TIME,  # 59 s ahead: within the tolerance
        Timing.FUTURE,
        Timing.ON_TIME,
        Timing.LATE,  # 3660 s old: its bucket started 3680 s before T0
        Timing.LATE,
    ]
    assert stamped.timing.tolist() == expected
    assert clock.stamp([T0 - 3620.0, T0 - 3620.001]).timing.tolist() == [0, 1]
    assert stamped.times[2] == T0  # clamped to t_now
    assert stamped.times[1] == T0 + 59.0
    assert (clock.on_time, clock.late, clock.future) == (4, 3, 1)
    wall.t = T0 - 5.0  # the wall clock stepping back does not move t_now back
    assert clock.now() == T0


def test_late_rule_matches_the_longest_ring() -> None:
    spec = defaults.window_spec(columns=("x",), windows=(60.0, 600.0), buckets=10)
    wall = FakeWall(T0 + 1e6)
    clock = Clock.for_spec(spec, ClockMode.EVENT, wall=wall)
    windows = WindowStore(spec)  # a row lands when it lands in the longest ring
    clock.stamp([T0])
    probes = np.arange(T0 - 700.0, T0 + 1.0, 0.5)
    for t in probes:
        stamped = clock.stamp([t])
        landed = windows.add(0, (), T0, [t], [[0.5]])
        assert (stamped.timing[0] == Timing.LATE) == (not landed[0])


def test_event_mode_follows_the_largest_event_time() -> None:
    wall = FakeWall(T0 + 10_000.0)
    clock = Clock("event", window=600.0, buckets=60, tolerance=60.0, wall=wall)
    stamped = clock.stamp([T0, T0 + 100.0, T0 + 50.0, T0 - 700.0, T0 + 20_000.0, T0 + 200.0])
    assert stamped.timing.tolist() == [
        Timing.ON_TIME,
        Timing.ON_TIME,
        Timing.ON_TIME,
        Timing.LATE,  # older than the 600 s window at t_now = T0 + 100
        Timing.FUTURE,  # ahead of the wall clock: clamped to t_now
        Timing.ON_TIME,
    ]
    assert stamped.times[4] == T0 + 100.0
    assert clock.now() == T0 + 200.0 == stamped.now
    assert (clock.on_time, clock.late, clock.future) == (4, 1, 1)


def test_event_mode_first_event_from_the_future_clamps_to_wall() -> None:
    clock = Clock("event", window=86400.0, buckets=60, tolerance=60.0, wall=FakeWall(T0))
    assert clock.now() == T0  # no event yet: the wall clock
    stamped = clock.stamp([T0 + 1000.0])
    assert stamped.times.tolist() == [T0]
    assert clock.future == 1


batches_st = st.lists(st.floats(-2000.0, 300.0), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(batches_st, st.lists(st.integers(1, 5), min_size=1, max_size=40))
def test_event_mode_does_not_depend_on_batching(offsets: list[float], cuts: list[int]) -> None:
    times = [T0 + o for o in offsets]
    whole = Clock("event", window=600.0, buckets=10, tolerance=60.0, wall=FakeWall(T0 + 100.0))
    one_batch = whole.stamp(times)
    pieces = Clock("event", window=600.0, buckets=10, tolerance=60.0, wall=FakeWall(T0 + 100.0))
    timing: list[int] = []
    eff: list[float] = []
    i = 0
    for cut in cuts * 40:
        if i >= len(times):
            break
        part = pieces.stamp(times[i : i + cut])
        timing += part.timing.tolist()
        eff += part.times.tolist()
        i += cut
    assert timing == one_batch.timing.tolist()
    assert eff == one_batch.times.tolist()
    assert pieces.snapshot() == whole.snapshot()
    # Reference: classify one event at a time by the documented rule.
    now = -np.inf
    for t, got in zip(times, timing, strict=True):
        if t > T0 + 100.0 + 60.0:
            assert got == Timing.FUTURE
            now = max(now, T0 + 100.0) if now == -np.inf else now  # clamped to the wall
            continue
        now = max(now, t)
        late = np.floor(t / 60.0) < np.floor(now / 60.0) - 10
        assert got == (Timing.LATE if late else Timing.ON_TIME)


def test_snapshot_round_trip() -> None:
    wall = FakeWall(T0)
    clock = Clock("event", window=600.0, buckets=10, tolerance=60.0, wall=wall)
    clock.stamp([T0 - 10.0, T0 - 5000.0, T0 + 900.0])
    twin = Clock.restore(json.loads(json.dumps(clock.snapshot())), wall=wall)
    assert twin.snapshot() == clock.snapshot()
    assert twin.stamp([T0]).timing.tolist() == clock.stamp([T0]).timing.tolist()
    empty = Clock("event", window=86400.0, buckets=60, tolerance=60.0, wall=wall)
    assert Clock.restore(empty.snapshot(), wall=wall).now() == T0


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="tolerance"):
        Clock("wall", window=86400.0, buckets=60, tolerance=-1.0)
    clock = Clock("wall", window=86400.0, buckets=60, tolerance=60.0, wall=FakeWall(T0))
    with pytest.raises(ValueError, match="finite"):
        clock.stamp([float("nan")])
