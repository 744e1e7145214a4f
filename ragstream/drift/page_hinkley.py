"""Page-Hinkley test on the stream of final per-query values, in standard deviations.

Each value is first standardised against the running mean and standard deviation of the
values before it (since the last reset), ``z_t = (x_t - m_{t-1}) / s_{t-1}``, so one set
of defaults fits every metric in [0, 1] whatever its spread. For a drop (``down``):

    g_t = max(0, g_{t-1} - z_t - delta)      alarm when g_t > threshold

which is Page-Hinkley's ``M_T - U_T`` (``U_T = Σ (z_t + delta)``, ``M_T = max U``) kept as
one bounded number. ``up`` accumulates ``z_t - delta``; ``both`` keeps the two. Under no
change ``z`` has mean 0 and ``g`` drifts down by ``delta`` a value; after a drop of
``d`` standard deviations it climbs by about ``d - delta`` a value.

Warm-up: the first ``min_instances`` values after a reset only build the reference (``g``
stays 0). Reset policy: at an alarm the detector restarts from nothing (reference and
``g``); the value that raised the alarm belongs to the old regime and is dropped. The
alarm flag is held for ``hold`` values (see :class:`~ragstream.drift._alarm.Held`).

``update`` takes a number or an array, with the result of the values one at a time (up to
float rounding). The numpy code (``_segment_numpy``) is the reference; the compiled loop
(``ragstream.drift._kernels.ph_segment``, the same bits) runs when built. See docs/drift.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from ragstream.drift._alarm import Held
from ragstream.drift._common import (
    F64,
    I64,
    Direction,
    as_values,
    check_version,
    count_in,
    finite_in,
)

try:
    from ragstream.drift import _kernels
except ImportError:  # not built (no C compiler at install time): numpy serves
    _kernels = None  # type: ignore[assignment]

__all__ = ["PageHinkley", "PageHinkleyParams"]

_CHUNK = 1 << 20


def _lindley(g0: float, steps: F64) -> F64:
    """``g_t = max(0, g_{t-1} + steps_t)`` from ``g0``, for every t at once."""
    s = g0 + np.cumsum(steps)
    out: F64 = s - np.minimum(np.minimum.accumulate(s), 0.0)
    return out


@dataclass(frozen=True, slots=True)
class PageHinkleyParams:
    """The settings of a :class:`PageHinkley`."""

    delta: float
    threshold: float
    min_instances: int
    direction: Direction
    hold: int


class PageHinkley(Held):
    """Page-Hinkley change detector (see the module docstring)."""

    kind: ClassVar[str] = "page_hinkley"
    params = PageHinkleyParams

    __slots__ = (
        "_g_down",
        "_g_up",
        "_m2",
        "_mean",
        "_n",
        "delta",
        "direction",
        "min_instances",
        "min_std",
        "threshold",
    )

    def __init__(
        self,
        delta: float,
        threshold: float,
        min_instances: int,
        direction: Direction | str,
        hold: int,
        min_std: float = 1e-6,
    ) -> None:
        if delta < 0 or threshold <= 0:
            raise ValueError("delta must be >= 0 and threshold > 0")
        if min_instances < 2:
            raise ValueError("min_instances must be at least 2")
        if min_std <= 0:
            raise ValueError("min_std must be positive")
        self.delta = float(delta)
        self.threshold = float(threshold)
        self.min_instances = int(min_instances)
        self.direction = Direction(direction)
        self.min_std = float(min_std)
        self._start_hold(hold)
        self._reset()

    def _reset(self) -> None:
        self._n = 0
        self._mean = 0.0
        self._m2 = 0.0
        self._g_down = 0.0
        self._g_up = 0.0

    # -- reads -----------------------------------------------------------------------------

    @property
    def count(self) -> int:
        """Values in the reference (since the last reset)."""
        return self._n

    @property
    def statistic(self) -> float:
        """``g`` of the watched side (the larger one for ``both``)."""
        if self.direction is Direction.DOWN:
            return self._g_down
        if self.direction is Direction.UP:
            return self._g_up
        return max(self._g_down, self._g_up)

    @property
    def score(self) -> float:
        """``statistic / threshold``: 1 is the alarm level."""
        return self.statistic / self.threshold

    # -- updates ---------------------------------------------------------------------------

    def update(self, values: npt.ArrayLike) -> I64:
        """Feed values in order (NaN skipped); offsets (into the finite values) of the
        values that raised an alarm."""
        x = as_values(values)
        offsets: list[int] = []
        start = 0
        while start < x.size:
            stop = min(start + _CHUNK, x.size)
            hit = self._segment(x[start:stop])
            if hit < 0:
                start = stop
            else:
                offsets.append(start + hit)
                self._reset()
                start += hit + 1
        return self._held(int(x.size), offsets)

    def _segment(self, x: F64) -> int:
        """Run ``x`` from the current state; the offset of the first alarm (the state is
        then left for the caller to reset) or -1 with the state advanced past ``x``."""
        if _kernels is None:
            return self._segment_numpy(x)
        hit, n, mean, m2, g_down, g_up = _kernels.ph_segment(
            np.ascontiguousarray(x).data,
            self._n,
            self._mean,
            self._m2,
            self._g_down,
            self._g_up,
            self.delta,
            self.threshold,
            self.min_instances,
            self.min_std,
            self.direction is not Direction.UP,
            self.direction is not Direction.DOWN,
        )
        self._n, self._mean, self._m2, self._g_down, self._g_up = n, mean, m2, g_down, g_up
        return hit

    def _segment_numpy(self, x: F64) -> int:
        """`_segment` in numpy: the reference."""
        m = x.size
        n0 = self._n
        shift = self._mean if n0 > 0 else float(x[0])
        y = x - shift
        cs = np.cumsum(y)
        cs2 = np.cumsum(y * y)
        before = np.concatenate(([0.0], cs[:-1]))
        before2 = np.concatenate(([0.0], cs2[:-1]))
        nj = n0 + np.arange(m, dtype=np.float64)
        active = nj >= self.min_instances
        if active.any():
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = shift + before / nj
                m2 = self._m2 + before2 - before * before / nj
                std = np.sqrt(np.maximum(m2, 0.0) / (nj - 1.0))
                z = np.where(active, (x - mean) / np.maximum(std, self.min_std), 0.0)
            g_down = g_up = None
            if self.direction is not Direction.UP:
                g_down = _lindley(self._g_down, np.where(active, -z - self.delta, 0.0))
            if self.direction is not Direction.DOWN:
                g_up = _lindley(self._g_up, np.where(active, z - self.delta, 0.0))
            hit = m
            for g in (g_down, g_up):
                if g is not None and (over := np.flatnonzero(g > self.threshold)).size:
                    hit = min(hit, int(over[0]))
            if hit < m:
                return hit
            if g_down is not None:
                self._g_down = float(g_down[-1])
            if g_up is not None:
                self._g_up = float(g_up[-1])
        total = n0 + m
        self._mean = shift + float(cs[-1]) / total
        self._m2 = self._m2 + float(cs2[-1]) - float(cs[-1]) ** 2 / total
        self._n = total
        return -1

    # -- persistence -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "version": 1,
            "delta": self.delta,
            "threshold": self.threshold,
            "min_instances": self.min_instances,
            "direction": self.direction.value,
            "min_std": self.min_std,
            "n": self._n,
            "mean": self._mean,
            "m2": self._m2,
            "g_down": self._g_down,
            "g_up": self._g_up,
            **self._hold_state(),
        }

    @classmethod
    def restore(cls, snapshot: dict[str, Any]) -> Self:
        """The detector of a snapshot, every number checked first (ValueError when one is
        out of range): the compiled loop trusts the state it is given."""
        check_version(snapshot, cls.kind)
        det = cls(
            delta=finite_in(snapshot, "delta"),
            threshold=finite_in(snapshot, "threshold"),
            min_instances=count_in(snapshot, "min_instances", low=2),
            direction=snapshot["direction"],
            hold=count_in(snapshot, "hold", low=1),
            min_std=finite_in(snapshot, "min_std"),
        )
        det._n = count_in(snapshot, "n")
        det._mean = finite_in(snapshot, "mean")
        det._m2 = finite_in(snapshot, "m2")
        det._g_down = finite_in(snapshot, "g_down")
        det._g_up = finite_in(snapshot, "g_up")
        det._restore_hold(snapshot)
        return det
