"""Intermediate arrays shared by the metric kernels, computed at most once per batch.

A `_Context` binds a batch to a relevance threshold, a gain function and the largest cutoff
it will be asked for. Every kernel reads its inputs from here, so `evaluate` pays for the
relevance masks, cumulative sums and the sorted ideal once, whatever the number of metrics.

Sums along a row are sequential (`cumsum`, `bincount`), so a row's value does not depend
on how much padding the batch adds: the batch result equals the one-by-one result bit for
bit. The one exception is the weighted count of judged relevant documents (the denominator
of recall_decayed), a fast vectorized row sum that may differ in the last bits.
"""

from __future__ import annotations

import math
from typing import Literal, get_args

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics.batch import RankingBatch

__all__ = ["Gain"]

Gain = Literal["linear", "exponential"]
"""Gain of a grade: `linear` = rel, `exponential` = 2^rel - 1 (both floored at 0)."""

_F64 = NDArray[np.float64]
_Bool = NDArray[np.bool_]


def _check_threshold(threshold: float) -> float:
    value = float(threshold)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(
            f"threshold must be a finite number > 0 (unjudged documents have grade 0 and "
            f"are never relevant), got {threshold!r}"
        )
    return value


def _check_k(k: int | None) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"cutoff k must be an integer >= 1, got {k!r}")
    return int(k)


def _check_gain(gain: str) -> Gain:
    if gain == "linear":
        return "linear"
    if gain == "exponential":
        return "exponential"
    raise ValueError(f"gain must be one of {get_args(Gain)}, got {gain!r}")


def _gain(grades: _F64, gain: Gain) -> _F64:
    """g(rel), floored at 0: trec_eval gives negative grades no gain and no ideal place."""
    if gain == "linear":
        return np.maximum(grades, 0.0)
    return np.maximum(np.exp2(grades) - 1.0, 0.0)


def _column(cumulative: _F64, k: int) -> _F64:
    """Value of a row-wise cumulative array at position min(k, width); 0 when it is empty.

    A copy, so that results handed out never share memory with each other or the cache.
    """
    if cumulative.shape[1] == 0:
        return np.zeros(cumulative.shape[0], dtype=np.float64)
    return cumulative[:, min(k, cumulative.shape[1]) - 1].copy()


def _safe_divide(numerator: _F64, denominator: _F64) -> _F64:
    """numerator / denominator, and 0 where the denominator is 0."""
    out = np.zeros_like(numerator)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


class _Context:
    """Cached building blocks of the kernels for one batch, threshold, gain and max cutoff."""

    __slots__ = ("_judged", "_masks", "_values", "batch", "gain", "kmax", "threshold", "width")

    def __init__(
        self, batch: RankingBatch, *, threshold: float = 1.0, gain: str = "linear", kmax: int = 1
    ) -> None:
        self.batch = batch
        self.threshold = _check_threshold(threshold)
        self.gain = _check_gain(gain)
        self.kmax = _check_k(kmax)
        self.width = min(self.kmax, batch.rel.shape[1])
        self._masks: dict[int, _Bool] = {}
        self._judged: _Bool | None = None
        self._values: dict[tuple[str, bool], _F64] = {}

    def weight(self) -> _F64:
        if self.batch.weight is None:
            raise ValueError("decayed metrics need a batch with recency weights")
        return self.batch.weight

    def judged_weight(self) -> _F64:
        if self.batch.judged_weight is None:
            raise ValueError("decayed metrics need a batch with recency weights")
        return self.batch.judged_weight

    def relevant(self, width: int) -> _Bool:
        """(Q, width) mask: ranked, within the row's length, and grade >= threshold."""
        if width not in self._masks:
            b = self.batch
            inside = np.arange(width) < b.length[:, None]
            self._masks[width] = (b.rel[:, :width] >= self.threshold) & inside
        return self._masks[width]

    def full_relevant(self) -> _Bool:
        """The relevance mask over whole rows (for rr and average precision)."""
        return self.relevant(self.batch.rel.shape[1])

    def top_relevant(self) -> _Bool:
        """The relevance mask over the first min(kmax, L) ranks."""
        width = self.batch.rel.shape[1]
        if width in self._masks:
            return self.full_relevant()[:, : self.width]
        return self.relevant(self.width)

    def hits(self, decayed: bool) -> _F64:
        """(Q, width) running count (or weight sum) of relevant documents in the top ranks."""
        key = ("hits", decayed)
        if key not in self._values:
            mask = self.top_relevant()
            if decayed:
                values = np.where(mask, self.weight()[:, : self.width], 0.0)
                self._values[key] = _running_sum(values)
            else:
                self._values[key] = _running_sum(mask.astype(np.float64))
        return self._values[key]

    def judged_mask(self) -> _Bool:
        """(Q, J) mask: judged, within the row's judged length, and grade >= threshold."""
        if self._judged is None:
            b = self.batch
            inside = np.arange(b.judged.shape[1]) < b.judged_length[:, None]
            self._judged = (b.judged >= self.threshold) & inside
        return self._judged

    def judged_relevant(self, decayed: bool) -> _F64:
        """(Q,) number (or weight sum) of judged documents with grade >= threshold."""
        key = ("judged_relevant", decayed)
        if key not in self._values:
            mask = self.judged_mask()
            if decayed:
                total = np.einsum("ij,ij->i", mask, self.judged_weight())
                self._values[key] = np.asarray(total, dtype=np.float64)
            else:
                self._values[key] = np.count_nonzero(mask, axis=1).astype(np.float64)
        return self._values[key]

    def cumulative_dcg(self, decayed: bool) -> _F64:
        """(Q, width) running DCG of the ranking: sum_i g(rel_i) * w_i / log2(i + 1)."""
        key = ("dcg", decayed)
        if key not in self._values:
            b = self.batch
            inside = np.arange(self.width) < b.length[:, None]
            gains = np.where(inside, _gain(b.rel[:, : self.width], self.gain), 0.0)
            if decayed:
                gains = gains * self.weight()[:, : self.width]
            self._values[key] = _running_sum(gains / _discount(self.width))
        return self._values[key]

    def cumulative_ideal(self, decayed: bool) -> _F64:
        """(Q, min(kmax, J)) running DCG of all judged documents sorted by g(rel) * w."""
        key = ("ideal", decayed)
        if key not in self._values:
            b = self.batch
            width = b.judged.shape[1]
            gains = _gain(b.judged, self.gain)
            if decayed:
                np.multiply(gains, self.judged_weight(), out=gains)
            np.copyto(gains, 0.0, where=np.arange(width) >= b.judged_length[:, None])
            top = min(self.kmax, width)
            best = None if decayed else _top_by_levels(gains, top)
            if best is None:
                best = _top_sorted(gains, top)
            self._values[key] = _running_sum(best / _discount(top))
        return self._values[key]


_NARROW = 32  # columns up to which a running sum column by column beats np.cumsum


def _running_sum(values: _F64) -> _F64:
    """Row-wise running sums, the bits of np.cumsum(values, axis=1) (each sum is the row's
    previous one plus the value, in order). Narrow rows -- the cutoffs, rankings of a
    retrieval -- are summed a column at a time, in place in `values` (a temporary of the
    caller's): numpy's cumsum walks them row by row, which is slower on so few columns."""
    if values.shape[1] > _NARROW:
        return np.cumsum(values, axis=1)
    for i in range(1, values.shape[1]):
        values[:, i] += values[:, i - 1]
    return values


def _top_sorted(gains: _F64, top: int) -> _F64:
    """The `top` largest values of each row, in descending order."""
    width = gains.shape[1]
    if top * _PARTITION_RATIO < width:
        gains = -np.partition(-gains, top - 1, axis=1)[:, :top]
    return np.sort(gains, axis=1)[:, ::-1][:, :top]


def _discount(width: int) -> _F64:
    """log2(i + 1) for ranks i = 1..width (trec_eval divides the gain by it)."""
    return np.log2(np.arange(2, width + 2, dtype=np.float64))


_MAX_LEVELS = 16
_PARTITION_RATIO = 8  # a partial sort pays off only for rows much longer than the cutoff


def _top_by_levels(gains: _F64, top: int) -> _F64 | None:
    """The `top` largest gains of each row, descending, when all gains are small integers.

    Graded judgments usually take a few integer levels (0..3), so counting each level per
    row is much cheaper than a partial sort. Returns None when the gains are not integers
    in [0, 16]; the caller then sorts.
    """
    rows = gains.shape[0]
    if gains.size == 0:
        return None
    highest = float(gains.max())
    if highest > _MAX_LEVELS:
        return None
    positive = np.count_nonzero(gains > 0)
    # best[:, p] = the number of levels L with p < (gains >= L in the row): the level of
    # the p-th largest gain, one comparison and one addition a level
    best = np.zeros((rows, top), dtype=np.float64)
    at_least = np.zeros(rows, dtype=np.int64)
    position = np.arange(top)
    counted = 0
    for level in range(int(highest), 0, -1):
        count = np.count_nonzero(gains == level, axis=1)
        counted += int(count.sum())
        at_least += count
        best += position < at_least[:, None]
    return best if counted == positive else None
