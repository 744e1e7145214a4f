"""What a window read returns: label sets' totals in every window, as arrays."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragstream.windows.spec import F64, I64, WindowSpec

__all__ = ["LabelSet", "WindowTotals"]

LabelSet = tuple[str, ...]
"""Label values in the order of the configured label keys."""


@dataclass(frozen=True)
class WindowTotals:
    """Totals of label sets (merged over partitions) in every window at time ``at``: the
    one result of `WindowStore.read`, whichever summation it used.

    Arrays are indexed ``[labelset, window, ...]`` in the order of :attr:`labelsets` and
    ``spec.names``. Decayed values are evaluated at ``at`` and laid out half-life-major
    (``index = h * len(spec.decayed) + d``).
    """

    spec: WindowSpec
    at: float
    """The read time."""
    labelsets: list[LabelSet]
    """Label sets, sorted (the one asked for, when a read asks for one)."""
    queries: I64
    """``(L, W)``: rows (queries) in the window."""
    count: I64
    """``(L, W, C)``: values per plain column."""
    total: F64
    """``(L, W, C)``: sums per plain column."""
    total_sq: F64
    """``(L, W, C)``: sums of squares per plain column."""
    decayed_count: I64
    """``(L, W, H·D)``: values per decayed column."""
    decayed_total: F64
    """``(L, W, H·D)``: ``Σ v · exp(-λ(at - t))`` per decayed column."""
    histograms: I64 | None = None
    """``(L, W, C_hist, bins)``: the histograms of ``spec.histogrammed`` (when asked for)."""

    def mean(self) -> F64:
        """``(L, W, C)``: mean per plain column, NaN where empty."""
        with np.errstate(invalid="ignore", divide="ignore"):
            out: F64 = np.where(self.count > 0, self.total / self.count, np.nan)
        return out

    def decayed_mean(self) -> F64:
        """``(L, W, H, D)``: live decayed mean per half-life and metric, NaN where empty."""
        with np.errstate(invalid="ignore", divide="ignore"):
            flat = np.where(self.decayed_count > 0, self.decayed_total / self.decayed_count, np.nan)
        out: F64 = flat.reshape(*flat.shape[:2], len(self.spec.half_lives), len(self.spec.decayed))
        return out
