"""The agent's windows, simulated for the drift benchmark at a scrape interval.

Queries are summed into 5-second cells (count, sum, sum of squares, a 20-bin histogram
over [0, 1] with right-closed bins, as the windows keep them). A window of length ``W``
with ``B`` buckets of width ``w = W / B`` read at time ``t`` covers the buckets
``k >= floor(t / w) - B`` (bucket-granular, docs/windows.md): with every bucket width a
multiple of the cell, that is the cells from ``(floor(t / w) - B) · w`` to ``t``, one
difference of cumulative sums. ``tests/drift/test_bench_windows.py`` checks the reads
against ``ragstream.windows``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ragstream.drift import Moments

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

__all__ = ["CELL", "Cells", "WindowReads"]

CELL = 5.0
BINS = 20
_EDGES = np.arange(1, BINS + 1, dtype=np.float64) / BINS


@dataclass(frozen=True)
class WindowReads:
    """One window read at each scrape time."""

    n: I64
    total: F64
    total_sq: F64
    hist: I64  # (scrapes, bins)

    def moments(self) -> Moments:
        return Moments(self.n, self.total, self.total_sq)


@dataclass
class Cells:
    """Per-cell sums over ``[0, duration)``."""

    duration: float
    cells: int = field(init=False)
    count: I64 = field(init=False)
    total: F64 = field(init=False)
    total_sq: F64 = field(init=False)
    hist: I64 = field(init=False)
    after: I64 = field(init=False)
    """Queries at or after ``mark`` (the change), per cell."""
    mark: float = np.inf

    def __post_init__(self) -> None:
        self.cells = int(np.ceil(self.duration / CELL))
        self.count = np.zeros(self.cells, dtype=np.int64)
        self.total = np.zeros(self.cells)
        self.total_sq = np.zeros(self.cells)
        self.hist = np.zeros(self.cells * BINS, dtype=np.int64)
        self.after = np.zeros(self.cells, dtype=np.int64)

    def add(self, times: F64, values: F64) -> None:
        cell = (times // CELL).astype(np.int64)
        m = self.cells
        self.count += np.bincount(cell, minlength=m)
        self.total += np.bincount(cell, weights=values, minlength=m)
        self.total_sq += np.bincount(cell, weights=values * values, minlength=m)
        b = np.searchsorted(_EDGES, np.clip(values, 0.0, 1.0), side="left")
        self.hist += np.bincount(cell * BINS + b, minlength=m * BINS)
        if np.isfinite(self.mark):
            self.after += np.bincount(cell[times >= self.mark], minlength=m)

    def scrapes(self, interval: float, start: float = 0.0) -> F64:
        """Scrape times: multiples of ``interval`` in ``(start, duration]``."""
        first = np.floor(start / interval) + 1
        out: F64 = np.arange(first, np.floor(self.duration / interval) + 1) * interval
        return out

    def read(self, at: F64, window: float, buckets: int = 60) -> WindowReads:
        """The window of length ``window`` read at each time in ``at`` (cell boundaries)."""
        width = window / buckets
        ratio = width / CELL
        if abs(ratio - round(ratio)) > 1e-9 or np.any(
            np.abs(at / CELL - np.round(at / CELL)) > 1e-9
        ):
            raise ValueError("bucket widths and read times must be multiples of the cell")
        hi = np.round(at / CELL).astype(np.int64)
        lo = np.maximum((np.floor(at / width + 1e-9) - buckets) * round(ratio), 0).astype(np.int64)
        c = np.concatenate(([0], np.cumsum(self.count)))
        s = np.concatenate(([0.0], np.cumsum(self.total)))
        q = np.concatenate(([0.0], np.cumsum(self.total_sq)))
        h = np.concatenate(
            (np.zeros((1, BINS), dtype=np.int64), np.cumsum(self.hist.reshape(-1, BINS), axis=0))
        )
        return WindowReads(c[hi] - c[lo], s[hi] - s[lo], q[hi] - q[lo], h[hi] - h[lo])

    def queries_after_mark(self, at: F64) -> I64:
        """Queries at or after the mark and before each time in ``at``."""
        c = np.concatenate(([0], np.cumsum(self.after)))
        out: I64 = c[np.round(at / CELL).astype(np.int64)]
        return out
