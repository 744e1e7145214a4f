"""Clocks for the windows, and the late / future classification of event times.

- ``wall``: ``t_now`` is the wall clock (never moving backwards), for live runs.
- ``event``: ``t_now`` is the largest accepted event time, for replays, so that a replay
  gives the same numbers every time and whatever the batch sizes.

An event is *late* when its bucket in the longest window has already rotated out at
``t_now`` (bucket-granular, the same rule the windows use): counted, not aggregated. An
event more than ``tolerance`` ahead of the wall clock is *future*: counted and clamped to
``t_now``. In event mode the wall clock is still the reference for "future" (an event
cannot come from the real future, while gaps between event times in a replay are normal),
so replays of past data never see future events.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from ragstream.windows.spec import F64, WindowSpec, bucket_of

__all__ = ["Clock", "ClockMode", "Stamped", "Timing"]


class ClockMode(StrEnum):
    """Which time ``t_now`` follows."""

    WALL = "wall"
    EVENT = "event"


class Timing(IntEnum):
    """How an event's time relates to ``t_now``."""

    ON_TIME = 0
    LATE = 1
    FUTURE = 2


@dataclass(frozen=True)
class Stamped:
    """A batch of event times after classification."""

    times: F64
    """Effective times: future events clamped to ``t_now``; others unchanged."""
    timing: npt.NDArray[np.int8]
    """:class:`Timing` per event."""
    now: float
    """``t_now`` after the batch."""


class Clock:
    """``t_now`` in wall or event mode, with late and future events counted."""

    def __init__(
        self,
        mode: ClockMode | str,
        *,
        window: float,
        buckets: int,
        tolerance: float,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """`window`, `buckets`: the longest window's (the late rule); `tolerance`: how far
        past the wall clock an event may be before it counts as from the future."""
        if not (math.isfinite(tolerance) and tolerance >= 0):
            raise ValueError("tolerance must be finite and non-negative")
        self.mode = ClockMode(mode)
        self.window = float(window)
        self.buckets = int(buckets)
        self.width = self.window / self.buckets
        self.tolerance = float(tolerance)
        self.wall = wall
        self._now = -math.inf
        self.on_time = 0
        self.late = 0
        self.future = 0

    @classmethod
    def for_spec(
        cls,
        spec: WindowSpec,
        mode: ClockMode | str,
        *,
        wall: Callable[[], float] = time.time,
    ) -> Self:
        """A clock whose late rule matches the spec's longest window and whose future
        tolerance is the spec's horizon."""
        return cls(
            mode,
            window=spec.longest,
            buckets=spec.buckets,
            tolerance=spec.horizon,
            wall=wall,
        )

    @property
    def reached(self) -> float:
        """The largest ``t_now`` reached so far; -inf before the first (an event clock
        that has seen no event has not reached any time, whatever `now()` says)."""
        return self._now

    def now(self) -> float:
        """``t_now``: the wall clock, or the largest event time (the wall clock before any)."""
        if self.mode is ClockMode.WALL:
            self._now = max(self._now, float(self.wall()))
            return self._now
        return self._now if math.isfinite(self._now) else float(self.wall())

    def stamp(self, ts: npt.ArrayLike) -> Stamped:
        """Classify a batch of event times in arrival order, advance ``t_now``, count."""
        times = np.atleast_1d(np.asarray(ts, dtype=np.float64))
        if not np.isfinite(times).all():
            raise ValueError("event times must be finite")
        wall = float(self.wall())
        future = times > wall + self.tolerance
        if self.mode is ClockMode.WALL:
            self._now = max(self._now, wall)
            running = np.full(times.shape, self._now)
            prior = running
        else:
            start = np.array([self._now])
            base = np.where(future, -np.inf, times)
            # A future event before any accepted one is clamped to the wall clock, which
            # then is t_now; later future events clamp to the running t_now.
            first = np.maximum.accumulate(np.concatenate([start, base]))[:-1]
            base = np.where(future & ~np.isfinite(first), wall, base)
            acc = np.maximum.accumulate(np.concatenate([start, base]))
            running, prior = acc[1:], acc[:-1]
            prior = np.where(np.isfinite(prior), prior, wall)
        effective = np.where(future, prior, times)
        late = ~future & (
            bucket_of(times, self.width)
            < bucket_of(np.maximum(running, times), self.width) - self.buckets
        )
        if self.mode is ClockMode.EVENT and times.size:
            self._now = max(self._now, float(effective.max()))
        timing = np.full(times.shape, Timing.ON_TIME, dtype=np.int8)
        timing[late] = Timing.LATE
        timing[future] = Timing.FUTURE
        n_late, n_future = int(late.sum()), int(future.sum())
        self.late += n_late
        self.future += n_future
        self.on_time += times.size - n_late - n_future
        return Stamped(effective, timing, self._now if math.isfinite(self._now) else wall)

    def snapshot(self) -> dict[str, Any]:
        """JSON-friendly state (the wall-clock function is not part of it)."""
        return {
            "version": 1,
            "mode": self.mode.value,
            "window": self.window,
            "buckets": self.buckets,
            "tolerance": self.tolerance,
            "now": self._now if math.isfinite(self._now) else None,
            "on_time": self.on_time,
            "late": self.late,
            "future": self.future,
        }

    @classmethod
    def restore(cls, snapshot: dict[str, Any], *, wall: Callable[[], float] = time.time) -> Self:
        """Inverse of :meth:`snapshot`."""
        clock = cls(
            snapshot["mode"],
            window=float(snapshot["window"]),
            buckets=int(snapshot["buckets"]),
            tolerance=float(snapshot["tolerance"]),
            wall=wall,
        )
        clock._now = -math.inf if snapshot["now"] is None else float(snapshot["now"])
        clock.on_time = int(snapshot["on_time"])
        clock.late = int(snapshot["late"])
        clock.future = int(snapshot["future"])
        return clock
