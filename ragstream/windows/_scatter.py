"""Scatter-add kernels shared by aggregates and bucket rings.

Every state array has a leading *slot* axis (one slot for a lone aggregate, one per bucket
for a ring), so a batch of rows is applied with a handful of ``np.bincount`` calls whatever
its size. A missing value (NaN) in a column is skipped in that column only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from ragstream.windows.spec import F64, I64

__all__: list[str] = []


def as_rows(values: npt.ArrayLike, width: int, what: str) -> F64:
    """``values`` as a float64 ``(n, width)`` array: one row (1-D) or rows (2-D or 3-D)."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 1:
        array = array.reshape(1, -1)
    elif array.ndim == 3:
        array = array.reshape(array.shape[0], -1)
    if array.ndim != 2 or array.shape[1] != width:
        raise ValueError(f"{what}: expected rows of {width} values, got shape {array.shape}")
    if np.isinf(array).any():
        raise ValueError(f"{what}: infinite values cannot be aggregated (use NaN for missing)")
    return array


def as_times(times: npt.ArrayLike, n: int) -> F64:
    """``times`` as a float64 ``(n,)`` array; a scalar applies to every row."""
    array = np.asarray(times, dtype=np.float64)
    if array.ndim == 0:
        array = np.full(n, float(array))
    if array.shape != (n,):
        raise ValueError(f"expected {n} times, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError("times must be finite")
    return array


def bin_index(values: F64, edges: F64) -> I64:
    """Right-closed bin of each value: the first j with ``clip(v, 0, 1) <= edges[j]``.

    An arithmetic guess ``ceil(v·bins) - 1`` corrected by one comparison each way against
    the published edges, so the result matches ``v <= edge`` exactly (Prometheus ``le``).
    """
    bins = edges.size
    clipped = np.minimum(np.maximum(values, 0.0), 1.0)
    guess: I64 = np.minimum(np.maximum(np.ceil(clipped * bins).astype(np.int64) - 1, 0), bins - 1)
    guess += clipped > edges[guess]
    guess -= (guess > 0) & (clipped <= edges[guess - 1])
    return guess


def group(slots: I64, nslots: int) -> tuple[I64, I64]:
    """The distinct slots of a batch (ascending) and each row's index among them.

    Slots are integers ``< nslots``: a bincount replaces a sort when ``nslots`` is small
    next to the batch, ``np.unique`` does the work otherwise (many series x slots).
    """
    if slots.size <= 1:
        return slots, np.zeros(slots.size, dtype=np.int64)
    if nslots > 8 * slots.size + 4096:
        distinct, local = np.unique(slots, return_inverse=True)
        return distinct, local.astype(np.int64, copy=False).reshape(-1)
    used = np.bincount(slots, minlength=nslots) > 0
    rank = np.cumsum(used) - 1
    inverse: I64 = rank[slots]
    return np.flatnonzero(used), inverse


def _cells(local: I64, width: int) -> I64:
    """For each (row, column), its cell index among ``distinct x width`` cells."""
    cells: I64 = (local.reshape(-1, 1) * width + np.arange(width)).ravel()
    return cells


def _bincount(cells: I64, keep: npt.NDArray[np.bool_], size: int) -> I64:
    """How many kept cells fall in each of ``size`` cells."""
    counts: I64 = np.bincount(np.where(keep, cells, size), minlength=size + 1)[:size]
    return counts


@dataclass(frozen=True)
class Digest:
    """A batch pre-digested once for every window it goes to: missing values as a mask,
    values with missing ones set to 0, and (for plain columns) the histogram bins of the
    histogrammed columns."""

    present: npt.NDArray[np.bool_]
    """``(n, width)``: the value is not NaN."""
    values: F64
    """``(n, width)``: the values, 0 where missing."""
    hist_values: F64 | None
    """``(n, width_hist)``: the histogrammed columns of `values` (plain columns only)."""
    hist_present: npt.NDArray[np.bool_] | None
    """``(n, width_hist)``: the histogrammed value is not NaN."""
    edges: F64 | None = None
    """The histograms' bin edges (plain columns only)."""

    @classmethod
    def of(cls, values: F64, edges: F64 | None = None, hist: I64 | None = None) -> Digest:
        """Digest ``(n, width)`` rows; ``edges`` given for plain columns (histograms of the
        columns ``hist``, default all)."""
        present = ~np.isnan(values)
        filled = np.where(present, values, 0.0)
        if edges is None:
            return cls(present, filled, None, None)
        if hist is None or hist.size == values.shape[1]:
            return cls(present, filled, filled, present, edges)
        return cls(present, filled, filled[:, hist], present[:, hist], edges)

    @property
    def size(self) -> int:
        """Number of rows."""
        return int(self.values.shape[0])

    @cached_property
    def bins(self) -> I64:
        """``(n, width_hist)``: histogram bin of each histogrammed value (plain columns
        only), found once for every window the batch goes to."""
        assert self.hist_values is not None
        assert self.edges is not None
        return bin_index(self.hist_values, self.edges)

    @cached_property
    def kept(self) -> Kept | None:
        """The present cells, when few enough for gathering them to pay (see `_kept`):
        found once for every window the batch goes to."""
        return _kept(self.present, self.values)

    @cached_property
    def hist_kept(self) -> Kept | None:
        """`kept` of the histogrammed columns, with their bins as values (found for those
        cells only)."""
        assert self.hist_values is not None
        assert self.hist_present is not None
        assert self.edges is not None
        every = self.hist_present is self.present  # every column histogrammed: `kept`
        kept = self.kept if every else _kept(self.hist_present, self.hist_values)
        if kept is None:
            return None
        return Kept(kept.rows, kept.columns, bin_index(kept.values, self.edges))

    def take(self, rows: npt.NDArray[np.bool_] | I64) -> Digest:
        """The selected rows."""
        return Digest(
            self.present[rows],
            self.values[rows],
            None if self.hist_values is None else self.hist_values[rows],
            None if self.hist_present is None else self.hist_present[rows],
            self.edges,
        )


@dataclass(frozen=True)
class PlainSums:
    """What a batch adds to each of ``m`` slots: rows, and per column count, sum, sum of
    squares and histogram bins."""

    rows: I64
    """``(m,)``"""
    count: I64
    """``(m, C)``"""
    total: F64
    """``(m, C)``"""
    total_sq: F64
    """``(m, C)``"""
    hist: I64
    """``(m, C_hist, bins)``"""


_SPARSE = 0.5
"""Gather the present cells when at most this share of them is present."""


@dataclass(frozen=True)
class Kept:
    """The present cells of a digest's ``(n, width)`` array, in row-major order."""

    rows: I64
    """Each cell's row."""
    columns: I64
    """Each cell's column."""
    values: npt.NDArray[Any]
    """Each cell's value (of the array the cells were found in)."""


def _kept(present: npt.NDArray[np.bool_], values: npt.NDArray[Any]) -> Kept | None:
    """The present cells of ``values``, when few enough are present for gathering them to
    pay (else None: every cell is summed).

    Summing only the present cells gives the same bits as summing all of them with 0 for
    the missing ones, in the same order: adding +0.0 never changes a sum that starts at
    +0.0. Rows of queries without labels carry a few present columns of dozens."""
    kept = np.flatnonzero(present)
    if kept.size > _SPARSE * present.size:
        return None
    rows, columns = np.divmod(kept, present.shape[1])
    return Kept(rows, columns, values.ravel()[kept])


def _kept_cells(local: I64, width: int, kept: Kept) -> I64:
    """The slot-major cell index of each kept cell."""
    cells: I64 = local[kept.rows] * width + kept.columns
    return cells


def plain_sums(local: I64, m: int, batch: Digest, bins: int) -> PlainSums:
    """Sum row i into slot ``local[i]`` of ``m``: one ``np.bincount`` per statistic,
    whatever the batch size. Histogram bins are right-closed (see :func:`bin_index`)."""
    width = batch.values.shape[1]
    size = m * width
    shape = (m, width)
    assert batch.hist_present is not None
    hwidth = batch.hist_present.shape[1]
    hsize = m * hwidth * bins
    kept = batch.kept
    if kept is None:
        cells = _cells(local, width)
        v = batch.values.ravel()
        count = _bincount(cells, batch.present.ravel(), size)
    else:
        cells = _kept_cells(local, width, kept)
        v = kept.values
        count = np.bincount(cells, minlength=size)
    total: F64 = np.bincount(cells, weights=v, minlength=size).astype(np.float64, copy=False)
    total_sq: F64 = np.bincount(cells, weights=v * v, minlength=size).astype(np.float64, copy=False)
    hkept = batch.hist_kept
    if hkept is None:
        hcells = _cells(local, hwidth) * bins + batch.bins.ravel()
        hist = _bincount(hcells, batch.hist_present.ravel(), hsize)
    else:
        hcells = _kept_cells(local, hwidth, hkept) * bins + hkept.values
        hist = np.bincount(hcells, minlength=hsize)
    return PlainSums(
        np.bincount(local, minlength=m),
        count.reshape(shape),
        total.reshape(shape),
        total_sq.reshape(shape),
        hist.reshape(m, hwidth, bins),
    )


def decayed_sums(
    local: I64, m: int, times: F64, batch: Digest, rates: F64, landmark: float
) -> tuple[I64, F64]:
    """Forward-decay sums per slot: count and ``Σ v · exp(λ·(t - L))`` per column; rows
    without any present value are left out (they add nothing)."""
    width = batch.values.shape[1]
    size = m * width
    rows = np.flatnonzero(batch.present.any(axis=1))
    if rows.size == 0:
        return np.zeros((m, width), dtype=np.int64), np.zeros((m, width))
    if rows.size < _SPARSE * batch.size:
        local, times, batch = local[rows], times[rows], batch.take(rows)
    cells = _cells(local, width)
    contrib = batch.values * np.exp(rates * (times.reshape(-1, 1) - landmark))
    counted = _bincount(cells, batch.present.ravel(), size).reshape(m, width)
    summed: F64 = np.bincount(cells, weights=contrib.ravel(), minlength=size).astype(
        np.float64, copy=False
    )
    return counted, summed.reshape(m, width)


def add_into(target: npt.NDArray[Any], distinct: I64, update: npt.NDArray[Any], sign: int) -> None:
    """``target[distinct] += sign · update`` for distinct indices; a lone slot uses a view
    (much cheaper than fancy indexing, and the common case: one bucket per batch)."""
    if distinct.size == 1 and target.ndim > 1:
        view = target[int(distinct[0])]
        if sign > 0:
            view += update[0]
        else:
            view -= update[0]
    elif sign > 0:
        target[distinct] += update
    else:
        target[distinct] -= update


def decay_to(sums: F64, rates: F64, dt: float | F64) -> F64:
    """``sums · exp(-λ·dt)``, split in two factors so no intermediate under/overflows."""
    half = np.exp(-0.5 * rates * dt)
    result: F64 = sums * half * half
    return result
