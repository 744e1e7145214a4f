"""A mergeable vector aggregate: count, sum, sum of squares and a histogram per column."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from ragstream.windows._scatter import Digest, as_rows, plain_sums
from ragstream.windows.spec import F64, I64

__all__ = ["Aggregate"]


class Aggregate:
    """Count, sum, sum of squares for each named column, and a [0, 1] histogram for each
    of ``hist_columns`` (default: every column).

    Counts and histogram bins are integers, sums float64. NaN in a column means "no value"
    there (the row still counts in :attr:`rows`). Two aggregates merge by adding their
    arrays, so ``a + b`` equals one aggregate that saw both streams.
    """

    __slots__ = (
        "_count",
        "_hist",
        "_hist_index",
        "_rows",
        "_sum",
        "_sum_sq",
        "bins",
        "columns",
        "hist_columns",
    )

    def __init__(
        self, columns: Sequence[str], bins: int, hist_columns: Sequence[str] | None = None
    ) -> None:
        if bins < 1:
            raise ValueError("bins must be at least 1")
        self.columns: tuple[str, ...] = tuple(columns)
        self.bins = bins
        wanted = set(self.columns if hist_columns is None else hist_columns)
        if not wanted <= set(self.columns):
            raise ValueError("hist_columns must be among the columns")
        self.hist_columns: tuple[str, ...] = tuple(c for c in self.columns if c in wanted)
        """Columns with a histogram, in column order."""
        self._hist_index = np.asarray(
            [i for i, c in enumerate(self.columns) if c in wanted], dtype=np.int64
        )
        width = len(self.columns)
        self._rows = np.zeros(1, dtype=np.int64)
        self._count = np.zeros((1, width), dtype=np.int64)
        self._sum = np.zeros((1, width), dtype=np.float64)
        self._sum_sq = np.zeros((1, width), dtype=np.float64)
        self._hist = np.zeros((1, len(self.hist_columns), bins), dtype=np.int64)

    # -- updates ---------------------------------------------------------------------------

    def add(self, values: npt.ArrayLike) -> None:
        """Add one row ``(C,)`` or a batch ``(n, C)``."""
        rows = as_rows(values, len(self.columns), "Aggregate")
        if rows.shape[0] == 0:
            return
        local = np.zeros(rows.shape[0], dtype=np.int64)
        edges = np.arange(1, self.bins + 1, dtype=np.float64) / self.bins
        sums = plain_sums(local, 1, Digest.of(rows, edges, self._hist_index), self.bins)
        self._rows += sums.rows
        self._count += sums.count
        self._sum += sums.total
        self._sum_sq += sums.total_sq
        self._hist += sums.hist

    # -- merging ---------------------------------------------------------------------------

    def __add__(self, other: Aggregate) -> Aggregate:
        """A new aggregate equal to one that saw both streams."""
        if (other.columns, other.bins, other.hist_columns) != (
            self.columns,
            self.bins,
            self.hist_columns,
        ):
            raise ValueError("cannot merge aggregates with different columns or bins")
        merged = Aggregate(self.columns, self.bins, self.hist_columns)
        merged._rows = self._rows + other._rows
        merged._count = self._count + other._count
        merged._sum = self._sum + other._sum
        merged._sum_sq = self._sum_sq + other._sum_sq
        merged._hist = self._hist + other._hist
        return merged

    # -- reads -----------------------------------------------------------------------------

    @property
    def rows(self) -> int:
        """Rows currently aggregated (with or without values)."""
        return int(self._rows[0])

    @property
    def count(self) -> I64:
        """Values per column (NaN excluded)."""
        out: I64 = self._count[0].copy()
        return out

    @property
    def total(self) -> F64:
        """Sum per column."""
        out: F64 = self._sum[0].copy()
        return out

    @property
    def total_sq(self) -> F64:
        """Sum of squares per column."""
        out: F64 = self._sum_sq[0].copy()
        return out

    @property
    def histogram(self) -> I64:
        """Bin counts ``(C_hist, bins)``, one row per :attr:`hist_columns`; bin j counts
        values in ``((j)/bins, (j+1)/bins]``, bin 0 also holds 0. Values are clipped into
        [0, 1] first."""
        out: I64 = self._hist[0].copy()
        return out

    def mean(self) -> F64:
        """``sum / n`` per column; NaN where a column has no values."""
        n = self._count[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            out: F64 = np.where(n > 0, self._sum[0] / n, np.nan)
        return out

    # -- persistence -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """JSON-friendly state: lists of ints and floats (floats round-trip exactly)."""
        return {
            "version": 1,
            "columns": list(self.columns),
            "bins": self.bins,
            "hist_columns": list(self.hist_columns),
            "rows": self.rows,
            "count": self._count[0].tolist(),
            "sum": self._sum[0].tolist(),
            "sum_sq": self._sum_sq[0].tolist(),
            "hist": self._hist[0].tolist(),
        }

    @classmethod
    def restore(cls, snapshot: dict[str, Any]) -> Self:
        """Inverse of :meth:`snapshot` (without ``hist_columns``: every column has one)."""
        columns = list(snapshot["columns"])
        bins = int(snapshot["bins"])
        width = len(columns)
        hist_columns = list(snapshot.get("hist_columns", columns))
        agg = cls(columns, bins, hist_columns)
        agg._rows[0] = int(snapshot["rows"])
        agg._count[0] = np.asarray(snapshot["count"], dtype=np.int64).reshape(width)
        agg._sum[0] = np.asarray(snapshot["sum"], dtype=np.float64).reshape(width)
        agg._sum_sq[0] = np.asarray(snapshot["sum_sq"], dtype=np.float64).reshape(width)
        agg._hist[0] = np.asarray(snapshot["hist"], dtype=np.int64).reshape(len(hist_columns), bins)
        return agg

    def __repr__(self) -> str:
        return f"Aggregate(columns={self.columns!r}, rows={self.rows})"
