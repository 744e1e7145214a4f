"""Per-query metric values for a batch of open queries, in one pass of the kernels.

The metrics are those of a `RowLayout` (`ragstream.pipeline.row_layout`): plain metrics; per
half-life the ratio metrics (which do not change with the read time) and the sum metrics
valued at the query's event time `ts` (a window decays them live from there, since
`sum_i g_i exp(-lam (t - t_doc_i)) = exp(-lam (t - ts)) * sum_i g_i exp(-lam (ts - t_doc_i))`);
and per cutoff the mean age of the top-k documents at `ts` (NaN without documents).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics import (
    Gain,
    RankingBatch,
    decay_rate,
    effective_doc_time,
    evaluate,
    mean_doc_ages,
)
from ragstream.pipeline.row_layout import RowLayout

__all__ = ["ScoredQueries", "Scorer"]

_F64 = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class ScoredQueries:
    """Metric rows of n queries; IR columns are NaN for unlabeled queries."""

    labeled: NDArray[np.bool_]
    """(n,) whether the query has any label."""
    ts: _F64
    """(n,) the queries' event times."""
    plain: _F64
    """(n, len(layout.plain))"""
    ratio: _F64
    """(n, H, len(layout.ratio))"""
    decayed: _F64
    """(n, H, len(layout.decayed)), valued at ts."""
    doc_age: _F64
    """(n, len(layout.doc_age)), at ts; NaN for queries without documents."""


class Scorer:
    """Turns open queries into metric rows with the batch kernels."""

    def __init__(self, layout: RowLayout, *, gain: Gain, threshold: float):
        self.layout = layout
        self.gain: Gain = gain
        self.threshold = threshold
        self._rates = [decay_rate(h) for h in layout.half_lives]

    def score(
        self,
        ts: _F64,
        tops: Sequence[bytes],
        ranked: Sequence[bytes | None] | None,
        judged: Sequence[bytes | None] | None,
    ) -> ScoredQueries:
        """Rows of queries from their columns (`ragstream.join.QueryTable.columns`,
        `QueryTable.labeled_columns`): their leading document times (C doubles, at least the largest
        cutoff's when the ranking has them) and, for those with labels (``ranked[i]`` and
        ``judged[i]`` not None, see `Scanned.ranked`; None: none has), the kernels on their
        grades, one pass for the batch (the kernels pad it to its longest ranking, which
        sets the order of their sums: a batch scored together gives the same bits)."""
        scored = self._unlabeled(ts, tops)
        if ranked is None or judged is None:
            return scored
        chosen = [i for i, grades in enumerate(ranked) if grades is not None]
        if chosen:
            at = np.array(chosen, dtype=np.intp)
            p, r, d = self._graded_kernels(
                [ranked[i] for i in chosen],  # type: ignore[misc]
                [judged[i] for i in chosen],  # type: ignore[misc]
                ts[at],
            )
            scored.plain[at], scored.ratio[at], scored.decayed[at] = p, r, d
            scored.labeled[at] = True
        return scored

    def _unlabeled(self, ts: _F64, tops: Sequence[bytes]) -> ScoredQueries:
        """`score` of queries without labels: the mean ages only."""
        n = len(tops)
        layout = self.layout
        h = len(self._rates)
        width = max(layout.cutoffs)
        packed = b"".join(tops)
        if len(packed) == 8 * width * n:  # `width` each: one buffer
            times = np.frombuffer(packed, dtype=np.float64).reshape(n, width).copy()
            length = np.full(n, width, dtype=np.int64)
        else:  # rows of unequal length
            sizes = [min(len(top) >> 3, width) for top in tops]
            length = np.array(sizes, dtype=np.int64).reshape(n)
            flat = np.frombuffer(b"".join([t[: 8 * width] for t in tops]), dtype=np.float64)
            times = _ragged(flat, length, width)
        return ScoredQueries(
            np.zeros(n, dtype=np.bool_),
            ts,
            np.full((n, len(layout.plain)), np.nan),
            np.full((n, h, len(layout.ratio)), np.nan),
            np.full((n, h, len(layout.decayed)), np.nan),
            self._ages(times, length, ts),
        )

    def _graded_kernels(
        self, ranked: Sequence[bytes], judged: Sequence[bytes], ts: _F64
    ) -> tuple[_F64, _F64, _F64]:
        """Plain, ratio and decayed rows of graded queries: their grades and raw times as C
        doubles (per query its n grades then its n times; the judged the same), the times
        made effective here, one kernel pass per half-life for the whole batch."""
        rel, rel_times, rel_offsets = _halves(ranked, ts)
        judged_rel, judged_times, judged_offsets = _halves(judged, ts)
        return self._evaluate(
            rel, rel_offsets, judged_rel, judged_offsets, rel_times, judged_times, ts
        )

    def _evaluate(
        self,
        rel: Sequence[float] | _F64,
        rel_offsets: NDArray[np.int64],
        judged: Sequence[float] | _F64,
        judged_offsets: NDArray[np.int64],
        flat_times: _F64,
        judged_times: Sequence[float] | _F64,
        ts: _F64,
    ) -> tuple[_F64, _F64, _F64]:
        """The kernels on the queries' grades and effective times (CSR: per query its
        ranked documents, and its judged documents)."""
        n = ts.shape[0]
        batch = RankingBatch.from_ragged(rel, rel_offsets, judged, judged_offsets)
        times = RankingBatch.from_ragged(flat_times, rel_offsets, judged_times, judged_offsets)
        layout = self.layout
        values = evaluate(batch, layout.plain_metrics, gain=self.gain, threshold=self.threshold)
        plain = _stack(values, layout.plain, n)
        h = len(self._rates)
        ratio = np.empty((n, h, len(layout.ratio)))
        decayed = np.empty((n, h, len(layout.decayed)))
        names = (*layout.ratio_metrics, *layout.decayed_metrics)
        for j, lam in enumerate(self._rates):
            weight = np.exp(-lam * (ts[:, None] - times.rel))
            judged_weight = np.exp(-lam * (ts[:, None] - times.judged))
            weighted = batch.with_weights(weight, judged_weight)
            values = evaluate(weighted, names, gain=self.gain, threshold=self.threshold)
            ratio[:, j, :] = _stack(values, layout.ratio, n)
            decayed[:, j, :] = _stack(values, layout.decayed, n)
        return plain, ratio, decayed

    def _ages(self, raw: _F64, length: NDArray[np.int64], ts: _F64) -> _F64:
        """Mean ages per cutoff of raw leading document times (`length` of each row)."""
        return mean_doc_ages(effective_doc_time(raw, ts), length, self.layout.cutoffs, ts)


def _halves(blobs: Sequence[bytes], ts: _F64) -> tuple[_F64, _F64, NDArray[np.int64]]:
    """Grades, effective times and CSR offsets from the scanner's blobs, one a query of n
    grades then n raw times (C doubles): query q's grades start at 2 * offset[q], so its
    flat document j is at j + offset[q], and its time n[q] further."""
    length = np.array([len(b) >> 4 for b in blobs], dtype=np.int64)
    offsets = _offsets(length)
    flat = np.frombuffer(b"".join(blobs), dtype=np.float64)
    at = np.arange(int(offsets[-1])) + np.repeat(offsets[:-1], length)
    times = effective_doc_time(flat[at + np.repeat(length, length)], np.repeat(ts, length))
    return flat[at], times, offsets


def _ragged(flat: _F64, length: NDArray[np.int64], width: int) -> _F64:
    """Rows of `width` from `flat`, row i its first ``length[i]`` values and zeros after
    (row-major: the order of `flat`)."""
    times = np.zeros((length.shape[0], width))
    times[np.arange(width) < length[:, None]] = flat
    return times


def _offsets(lengths: Sequence[int] | NDArray[np.int64]) -> NDArray[np.int64]:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _stack(values: dict[str, _F64], names: Sequence[str], n: int) -> _F64:
    out = np.empty((n, len(names)))
    for c, name in enumerate(names):
        out[:, c] = values[name]
    return out
