"""A mergeable vector aggregate: count, sum, sum of squares and a histogram per column."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from ragstream.windows._scatter import Digest, add_into, as_rows, plain_sums, settle
from ragstream.windows.spec import F64, I64

__all__ = ["Aggregate"]

_ZERO_SLOT = np.zeros(1, dtype=np.int64)


class Aggregate:
    """Count, sum, sum of squares for each named column, and a [0, 1] histogram for each
    of ``hist_columns`` (default: every column).

    Rows are added and retracted exactly: counts and histogram bins are integers, sums are
    float64 and are reset to exactly 0 whenever their count returns to 0. NaN in a column
    means "no value" there (the row still counts in :attr:`rows`). Two aggregates merge by
    adding their arrays, so ``a + b`` equals one aggregate that saw both streams.
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
        self, columns: Sequence[str], bins: int = 20, hist_columns: Sequence[str] | None = None
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

    @classmethod
    def from_arrays(
        cls,
        columns: Sequence[str],
        rows: int,
        count: I64,
        total: F64,
        total_sq: F64,
        hist: I64,
        hist_columns: Sequence[str] | None = None,
    ) -> Self:
        """An aggregate holding the given totals (copied); shapes ``(C,)`` and
        ``(C_hist, bins)``."""
        agg = cls(columns, bins=hist.shape[-1], hist_columns=hist_columns)
        agg._rows[0] = rows
        agg._count[0] = count
        agg._sum[0] = total
        agg._sum_sq[0] = total_sq
        agg._hist[0] = hist
        return agg

    # -- updates ---------------------------------------------------------------------------

    def add(self, values: npt.ArrayLike) -> None:
        """Add one row ``(C,)`` or a batch ``(n, C)``."""
        self._apply(values, 1)

    def retract(self, values: npt.ArrayLike) -> None:
        """Remove one row or a batch that was added before (the inverse of :meth:`add`)."""
        self._apply(values, -1)

    def _apply(self, values: npt.ArrayLike, sign: int) -> None:
        rows = as_rows(values, len(self.columns), "Aggregate")
        if rows.shape[0] == 0:
            return
        local = np.zeros(rows.shape[0], dtype=np.int64)
        edges = np.arange(1, self.bins + 1, dtype=np.float64) / self.bins
        sums = plain_sums(local, 1, Digest.of(rows, edges, self._hist_index), self.bins)
        add_into(self._rows, _ZERO_SLOT, sums.rows, sign)
        add_into(self._count, _ZERO_SLOT, sums.count, sign)
        add_into(self._sum, _ZERO_SLOT, sums.total, sign)
        add_into(self._sum_sq, _ZERO_SLOT, sums.total_sq, sign)
        add_into(self._hist, _ZERO_SLOT, sums.hist, sign)
        if sign < 0:
            settle(self._count, self._sum, self._sum_sq)

    # -- merging ---------------------------------------------------------------------------

    def merge(self, other: Aggregate) -> Aggregate:
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
        settle(merged._count, merged._sum, merged._sum_sq)
        return merged

    def __add__(self, other: Aggregate) -> Aggregate:
        return self.merge(other)

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

    def variance(self) -> F64:
        """Sample variance ``(Σx² - (Σx)²/n) / (n - 1)``, clipped at 0; NaN below 2 values."""
        n = self._count[0].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            ss = self._sum_sq[0] - self._sum[0] ** 2 / n
            out: F64 = np.where(n > 1, np.maximum(ss, 0.0) / (n - 1), np.nan)
        return out

    def stderr(self) -> F64:
        """Standard error of the mean, ``sqrt(variance / n)``; NaN below 2 values."""
        n = self._count[0].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out: F64 = np.sqrt(self.variance() / n)
        return out

    def get(self, column: str) -> tuple[int, float, float]:
        """``(count, mean, stderr)`` of one column."""
        i = self.columns.index(column)
        return int(self._count[0, i]), float(self.mean()[i]), float(self.stderr()[i])

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
        return cls.from_arrays(
            columns,
            int(snapshot["rows"]),
            np.asarray(snapshot["count"], dtype=np.int64).reshape(width),
            np.asarray(snapshot["sum"], dtype=np.float64).reshape(width),
            np.asarray(snapshot["sum_sq"], dtype=np.float64).reshape(width),
            np.asarray(snapshot["hist"], dtype=np.int64).reshape(len(hist_columns), bins),
            hist_columns,
        )

    def __repr__(self) -> str:
        return f"Aggregate(columns={self.columns!r}, rows={self.rows})"
