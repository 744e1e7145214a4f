"""The configured sliding windows of one series, updated and read together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ragstream.windows.aggregate import Aggregate
from ragstream.windows.decay import ForwardDecay
from ragstream.windows.sliding_window import SlidingWindow, prepare_rows
from ragstream.windows.spec import F64, WindowSpec

__all__ = ["WindowRead", "WindowSet"]


@dataclass(frozen=True)
class WindowRead:
    """What one window holds at a read time ``at``; reads of partitions merge with ``+``."""

    aggregate: Aggregate
    """Plain columns: counts, sums, sums of squares, histograms."""
    decay: ForwardDecay
    """Decayed columns as forward-decay sums (half-life-major, see :class:`WindowSpec`)."""
    at: float
    """The read time: decayed values are evaluated here."""
    half_lives: tuple[float, ...] = ()
    """Half-lives of the decayed values, for their ``(half-lives, metrics)`` shape."""

    @property
    def queries(self) -> int:
        """Rows (queries) in the window."""
        return self.aggregate.rows

    def mean(self) -> F64:
        """Mean per plain column (NaN where empty)."""
        return self.aggregate.mean()

    def stderr(self) -> F64:
        """Standard error of the mean per plain column."""
        return self.aggregate.stderr()

    def decayed_mean(self) -> F64:
        """Live decayed mean per half-life and metric (NaN where empty)."""
        return self._grid(self.decay.mean(self.at))

    def _grid(self, flat: F64) -> F64:
        if not self.half_lives:
            return np.zeros((0, 0))
        return flat.reshape(len(self.half_lives), -1)

    def merge(self, other: WindowRead) -> WindowRead:
        """The read of both series together (same read time)."""
        return WindowRead(
            self.aggregate + other.aggregate, self.decay + other.decay, self.at, self.half_lives
        )

    def __add__(self, other: WindowRead) -> WindowRead:
        return self.merge(other)


class WindowSet:
    """One :class:`SlidingWindow` per configured window length, fed the same rows; holds
    ``capacity`` series side by side (series 0 unless told otherwise)."""

    def __init__(self, spec: WindowSpec, capacity: int = 1) -> None:
        self.spec = spec
        self.windows: dict[str, SlidingWindow] = {
            name: SlidingWindow(spec, length, capacity)
            for name, length in zip(spec.names, spec.windows, strict=True)
        }

    @property
    def capacity(self) -> int:
        """Series ids below this have room."""
        return next(iter(self.windows.values())).capacity

    def reserve(self, capacity: int) -> None:
        """Make room for series ids below ``capacity``."""
        for ring in self.windows.values():
            ring.reserve(capacity)

    def add(
        self,
        now: float,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None = None,
        series: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Add rows to every window (row i to series ``series[i]``, default 0); returns
        which rows landed in at least one window."""
        return self.apply(now, times, values, decayed, 1, series)

    def retract(
        self,
        now: float,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None = None,
        series: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Retract rows from every window where their bucket is still live; returns which
        rows were live somewhere (``False``: the retract was a no-op everywhere)."""
        return self.apply(now, times, values, decayed, -1, series)

    def apply(
        self,
        now: float,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None,
        sign: int,
        series: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.bool_]:
        """:meth:`add` (``sign=1``) or :meth:`retract` (``-1``)."""
        stamps, plain, drows = prepare_rows(self.spec, times, values, decayed)
        ids = None
        if series is not None:
            ids = np.asarray(series, dtype=np.int64).reshape(-1)
            if ids.size == 1 and stamps.size != 1:
                ids = np.full(stamps.size, int(ids[0]), dtype=np.int64)
            if ids.shape != stamps.shape:
                raise ValueError(f"expected {stamps.size} series ids, got shape {ids.shape}")
            if ids.size and (ids.min() < 0 or ids.max() >= self.capacity):
                raise ValueError("series ids must be in [0, capacity)")
        landed: npt.NDArray[np.bool_] | None = None
        for ring in self.windows.values():
            live = ring.apply_rows(now, stamps, plain, drows, sign, ids)
            landed = live if landed is None else landed | live
        assert landed is not None  # a spec has at least one window
        return landed

    def read(self, now: float, series: int = 0) -> dict[str, WindowRead]:
        """Every window's contents for one series at ``now`` (decayed values evaluated at
        ``now``)."""
        return {
            name: WindowRead(
                ring.aggregate(now, series), ring.decay(now, series), now, self.spec.half_lives
            )
            for name, ring in self.windows.items()
        }

    def empty_series(self, now: float) -> npt.NDArray[np.bool_]:
        """Per series id: every window is empty at ``now``."""
        empty: npt.NDArray[np.bool_] | None = None
        for ring in self.windows.values():
            mine = ring.empty_series(now)
            empty = mine if empty is None else empty & mine
        assert empty is not None
        return empty

    def clear(self, series: npt.ArrayLike) -> None:
        """Forget the given series in every window."""
        for ring in self.windows.values():
            ring.clear(series)

    @property
    def nbytes(self) -> int:
        """Bytes held by the windows' arrays (fixed by the capacity)."""
        return sum(ring.nbytes for ring in self.windows.values())

    def state(self, series: int = 0) -> dict[str, Any]:
        """JSON-friendly state of one series without the spec."""
        return {name: ring.state(series) for name, ring in self.windows.items()}

    def load(self, series: int, state: dict[str, Any]) -> None:
        """Merge one series' :meth:`state` into series ``series``."""
        for name, ring in self.windows.items():
            ring.load(series, state[name])
