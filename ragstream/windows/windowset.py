"""The configured sliding windows of one series, updated and read together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from ragstream.windows.aggregate import Aggregate
from ragstream.windows.decay import ForwardDecay
from ragstream.windows.ring import SlidingWindow, prepare_rows
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

    def decayed_sum(self) -> F64:
        """``Σ v · exp(-λ(at - t))`` per decayed value, shape ``(half-lives, metrics)``."""
        return self._grid(self.decay.value(self.at))

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
    """One :class:`SlidingWindow` per configured window length, fed the same rows."""

    def __init__(self, spec: WindowSpec) -> None:
        self.spec = spec
        self.windows: dict[str, SlidingWindow] = {
            name: SlidingWindow(spec, length)
            for name, length in zip(spec.names, spec.windows, strict=True)
        }

    def add(
        self,
        now: float,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Add rows to every window; returns which rows landed in at least one window."""
        return self._apply(now, times, values, decayed, retract=False)

    def retract(
        self,
        now: float,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Retract rows from every window where their bucket is still live; returns which
        rows were live somewhere (``False``: the retract was a no-op everywhere)."""
        return self._apply(now, times, values, decayed, retract=True)

    def _apply(
        self,
        now: float,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None,
        *,
        retract: bool,
    ) -> npt.NDArray[np.bool_]:
        rows = prepare_rows(self.spec, times, values, decayed)
        sign = -1 if retract else 1
        landed: npt.NDArray[np.bool_] | None = None
        for ring in self.windows.values():
            live = ring.apply_rows(now, *rows, sign)
            landed = live if landed is None else landed | live
        assert landed is not None  # a spec has at least one window
        return landed

    def read(self, now: float) -> dict[str, WindowRead]:
        """Every window's contents at ``now`` (decayed values evaluated at ``now``)."""
        return {
            name: WindowRead(ring.aggregate(now), ring.decay(now), now, self.spec.half_lives)
            for name, ring in self.windows.items()
        }

    def is_empty(self, now: float) -> bool:
        """True when every window is empty at ``now`` (the series can be pruned)."""
        return all(ring.is_empty(now) for ring in self.windows.values())

    @property
    def nbytes(self) -> int:
        """Bytes held by the windows' arrays (fixed at construction)."""
        return sum(ring.nbytes for ring in self.windows.values())

    def merge(self, other: WindowSet) -> WindowSet:
        """A new set equal to one that saw both streams."""
        merged = self.copy()
        merged.absorb(other)
        return merged

    def __add__(self, other: WindowSet) -> WindowSet:
        return self.merge(other)

    def absorb(self, other: WindowSet) -> None:
        """Merge ``other`` into this set, in place."""
        if other.spec != self.spec:
            raise ValueError("cannot merge window sets of different specs")
        for name, ring in self.windows.items():
            ring.absorb(other.windows[name])

    def copy(self) -> WindowSet:
        """An independent copy."""
        twin = WindowSet(self.spec)
        twin.windows = {name: ring.copy() for name, ring in self.windows.items()}
        return twin

    def state(self) -> dict[str, Any]:
        """JSON-friendly state without the spec."""
        return {name: ring.state() for name, ring in self.windows.items()}

    @classmethod
    def from_state(cls, spec: WindowSpec, state: dict[str, Any]) -> Self:
        """Inverse of :meth:`state`."""
        windows = cls(spec)
        windows.windows = {name: SlidingWindow.from_state(spec, state[name]) for name in spec.names}
        return windows

    def snapshot(self) -> dict[str, Any]:
        """JSON-friendly state including the spec."""
        return {"version": 1, "spec": self.spec.to_dict(), "windows": self.state()}

    @classmethod
    def restore(cls, snapshot: dict[str, Any]) -> Self:
        """Inverse of :meth:`snapshot`."""
        return cls.from_state(WindowSpec.from_dict(snapshot["spec"]), snapshot["windows"])
