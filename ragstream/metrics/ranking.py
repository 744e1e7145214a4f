"""Binary-relevance ranking metrics, per query, batch-first: rr, precision, recall, hit rate, AP.

Each kernel (`_name(ctx, k, decayed)`, one row of `ragstream.metrics.registry`) reads the
shared arrays of a `_Context`; the public functions wrap them for one metric. A document
is relevant when its grade is >= `threshold` (trec_eval's relevance level,
default 1). Unjudged documents have grade 0 and are never relevant. When the batch carries
recency weights, rr, precision and recall use them (the decayed forms); hit rate and
average precision ignore them. Each function returns a float64 array of shape (Q,).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics._context import _check_k, _column, _Context, _safe_divide
from ragstream.metrics.batch import RankingBatch

__all__ = ["average_precision", "hit_rate", "precision", "recall", "reciprocal_rank"]

_F64 = NDArray[np.float64]


def reciprocal_rank(b: RankingBatch, *, threshold: float = 1.0) -> _F64:
    """rr = 1 / rank of the first relevant document, no cutoff; 0 if none (trec `recip_rank`).

    Decayed: w_r / r, the weight of that first relevant document over its rank.
    """
    return _reciprocal_rank(_Context(b, threshold=threshold), None, b.has_weights)


def precision(b: RankingBatch, k: int, *, threshold: float = 1.0) -> _F64:
    """precision@k = |relevant in top k| / k, always k even when fewer were ranked (trec `P_k`).

    Decayed: sum of w_i over the relevant documents in the top k, divided by k.
    """
    return _precision(_Context(b, threshold=threshold, kmax=k), k, b.has_weights)


def recall(b: RankingBatch, k: int, *, threshold: float = 1.0) -> _F64:
    """recall@k = |relevant in top k| / |judged relevant|; 0 when none is judged relevant.

    The denominator counts all judged relevant documents, retrieved or not (trec
    `recall_k`). Decayed: sum of w_i over relevant top-k documents divided by the sum of
    the judged weights of all judged relevant documents.
    """
    return _recall(_Context(b, threshold=threshold, kmax=k), k, b.has_weights)


def hit_rate(b: RankingBatch, k: int, *, threshold: float = 1.0) -> _F64:
    """hit_rate@k = 1 if any relevant document is in the top k, else 0 (trec `success_k`)."""
    return _hit_rate(_Context(b, threshold=threshold, kmax=k), k, False)


def average_precision(b: RankingBatch, *, threshold: float = 1.0) -> _F64:
    """AP = sum over relevant ranks r of precision@r, divided by |judged relevant| (trec `map`).

    No cutoff; relevant documents that were not retrieved contribute 0; 0 when none is
    judged relevant.
    """
    return _average_precision(_Context(b, threshold=threshold), None, False)


def _reciprocal_rank(ctx: _Context, k: int | None, decayed: bool) -> _F64:
    mask = ctx.full_relevant()
    rows = mask.shape[0]
    if mask.shape[1] == 0:
        return np.zeros(rows, dtype=np.float64)
    first = mask.argmax(axis=1)
    found = mask[np.arange(rows), first]
    numerator = ctx.weight()[np.arange(rows), first] if decayed else 1.0
    return np.where(found, numerator / (first + 1.0), 0.0)


def _precision(ctx: _Context, k: int | None, decayed: bool) -> _F64:
    cutoff = _check_k(k)
    return _column(ctx.hits(decayed), cutoff) / float(cutoff)


def _recall(ctx: _Context, k: int | None, decayed: bool) -> _F64:
    hits = _column(ctx.hits(decayed), _check_k(k))
    return _safe_divide(hits, ctx.judged_relevant(decayed))


def _hit_rate(ctx: _Context, k: int | None, decayed: bool) -> _F64:
    return (_column(ctx.hits(False), _check_k(k)) > 0).astype(np.float64)


def _average_precision(ctx: _Context, k: int | None, decayed: bool) -> _F64:
    mask = ctx.full_relevant()
    rows = mask.shape[0]
    row, col = np.nonzero(mask)
    per_row = np.bincount(row, minlength=rows)
    start = np.cumsum(per_row) - per_row
    ordinal = np.arange(row.size) - start[row] + 1.0
    total = np.bincount(row, weights=ordinal / (col + 1.0), minlength=rows).astype(np.float64)
    return _safe_divide(total, ctx.judged_relevant(False))
