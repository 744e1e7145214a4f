"""Scatter-add kernels shared by aggregates and bucket rings.

Every state array has a leading *slot* axis (one slot for a lone aggregate, one per bucket
for a ring), so a batch of rows is applied with a handful of ``np.bincount`` calls whatever
its size. A missing value (NaN) in a column is skipped in that column only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ragstream.windows.spec import F64, I64

__all__: list[str] = []

_SMALL = 256
"""Batches up to this many values use ``np.add.at`` (less fixed cost); larger ones
``np.bincount`` (less cost per value)."""


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

    Slots are small integers (``< nslots``), so a bincount replaces a sort.
    """
    if slots.size <= 1:
        return slots, np.zeros(slots.size, dtype=np.int64)
    used = np.bincount(slots, minlength=nslots) > 0
    rank = np.cumsum(used) - 1
    local: I64 = rank[slots]
    return np.flatnonzero(used), local


def _cells(local: I64, width: int) -> I64:
    """For each (row, column), its cell index among ``distinct x width`` cells."""
    cells: I64 = (local.reshape(-1, 1) * width + np.arange(width)).ravel()
    return cells


def _add_into(target: npt.NDArray[Any], distinct: I64, update: npt.NDArray[Any]) -> None:
    """``target[distinct] += update``; a lone slot uses a view (much cheaper than fancy
    indexing, and the common case: a batch that falls in one bucket)."""
    if distinct.size == 1 and target.ndim > 1:
        view = target[int(distinct[0])]
        view += update[0]
    else:
        target[distinct] += update


@dataclass(frozen=True)
class Digest:
    """A batch pre-digested once for every window it goes to: missing values as a mask,
    values with missing ones set to 0, and (for plain columns) their histogram bins."""

    present: npt.NDArray[np.bool_]
    """``(n, width)``: the value is not NaN."""
    values: F64
    """``(n, width)``: the values, 0 where missing."""
    bins: I64 | None
    """``(n, width)``: histogram bin of each value (plain columns only)."""

    @classmethod
    def of(cls, values: F64, edges: F64 | None = None) -> Digest:
        """Digest ``(n, width)`` rows; ``edges`` given for plain columns (histograms)."""
        present = ~np.isnan(values)
        filled = np.where(present, values, 0.0)
        return cls(present, filled, None if edges is None else bin_index(filled, edges))

    @property
    def size(self) -> int:
        """Number of rows."""
        return int(self.values.shape[0])

    def take(self, rows: npt.NDArray[np.bool_]) -> Digest:
        """The selected rows."""
        return Digest(
            self.present[rows], self.values[rows], None if self.bins is None else self.bins[rows]
        )


def scatter_plain(
    rows: I64,
    count: I64,
    total: F64,
    total_sq: F64,
    hist: npt.NDArray[np.signedinteger[Any]],
    distinct: I64,
    local: I64,
    batch: Digest,
    sign: int,
) -> None:
    """Add (``sign=1``) or retract (``sign=-1``) row i into slot ``distinct[local[i]]``.

    A fixed number of numpy calls whatever the batch size: ``np.add.at`` per statistic for
    small batches, ``np.bincount`` over the distinct slots touched for large ones.
    Histogram bins are right-closed (see :func:`bin_index`); cumulative counts are exactly
    Prometheus ``le`` buckets.
    """
    n, width = batch.values.shape
    if n == 0 or batch.bins is None:
        return
    if n * width <= _SMALL:
        slots = distinct[local]
        np.add.at(rows, slots, sign)
        r, c = np.nonzero(batch.present)
        s, v = slots[r], batch.values[r, c]
        np.add.at(count, (s, c), sign)
        np.add.at(total, (s, c), sign * v)
        np.add.at(total_sq, (s, c), sign * v * v)
        np.add.at(hist, (s, c, batch.bins[r, c]), sign)
        return
    bins = hist.shape[-1]
    cells = _cells(local, width)
    size = distinct.size * width
    present = batch.present.ravel()
    v = batch.values.ravel()
    shape = (distinct.size, width)
    counted = np.bincount(np.where(present, cells, size), minlength=size + 1)[:size]
    binned = np.where(present, cells * bins + batch.bins.ravel(), size * bins)
    _add_into(rows, distinct, sign * np.bincount(local, minlength=distinct.size))
    _add_into(count, distinct, sign * counted.reshape(shape))
    _add_into(total, distinct, sign * np.bincount(cells, weights=v, minlength=size).reshape(shape))
    sq = np.bincount(cells, weights=v * v, minlength=size).reshape(shape)
    _add_into(total_sq, distinct, sign * sq)
    binned_counts = np.bincount(binned, minlength=size * bins + 1)[:-1]
    _add_into(hist, distinct, sign * binned_counts.reshape((*shape, bins)))


def scatter_decayed(
    count: I64,
    total: F64,
    distinct: I64,
    local: I64,
    times: F64,
    batch: Digest,
    rates: F64,
    landmark: float,
    sign: int,
) -> None:
    """Forward-decay scatter: slot total += ``sign · v · exp(λ·(t - L))`` per column."""
    n, width = batch.values.shape
    if n == 0 or width == 0:
        return
    contrib = batch.values * np.exp(rates * (times.reshape(-1, 1) - landmark))
    if n * width <= _SMALL:
        r, c = np.nonzero(batch.present)
        s = distinct[local][r]
        np.add.at(count, (s, c), sign)
        np.add.at(total, (s, c), sign * contrib[r, c])
        return
    cells = _cells(local, width)
    size = distinct.size * width
    shape = (distinct.size, width)
    counted = np.bincount(np.where(batch.present.ravel(), cells, size), minlength=size + 1)
    _add_into(count, distinct, sign * counted[:size].reshape(shape))
    summed = np.bincount(cells, weights=contrib.ravel(), minlength=size).reshape(shape)
    _add_into(total, distinct, sign * summed)


def settle(count: I64, *sums: F64) -> None:
    """Where a count is back to zero, set its sums to exactly zero (no rounding residue)."""
    empty = count == 0
    for array in sums:
        array[empty] = 0.0


def decay_to(sums: F64, rates: F64, dt: float | F64) -> F64:
    """``sums · exp(-λ·dt)``, split in two factors so no intermediate under/overflows."""
    half = np.exp(-0.5 * rates * dt)
    result: F64 = sums * half * half
    return result
