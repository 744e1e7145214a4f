"""Graded ranking metrics, per query, batch-first: dcg@k and ndcg@k.

    dcg@k  = sum_{i <= min(k, n)} g(rel_i) * w_i / log2(i + 1)
    ndcg@k = dcg@k / idcg@k

with g(rel) = rel (`linear`, trec_eval's `ndcg_cut`) or 2^rel - 1 (`exponential`), both
floored at 0 so that negative grades neither add nor subtract (as in trec_eval). idcg@k is
the dcg@k of **all judged documents of the query**, retrieved or not, sorted by
g(rel) * w; ndcg is 0 when idcg is 0. w_i is the recency weight when the batch carries
weights (the decayed forms) and 1 otherwise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics._context import Gain, _check_k, _column, _Context, _safe_divide
from ragstream.metrics.batch import RankingBatch

__all__ = ["dcg", "ndcg"]

_F64 = NDArray[np.float64]


def dcg(b: RankingBatch, k: int, *, gain: Gain = "linear") -> _F64:
    """dcg@k = sum over the top min(k, n) ranks of g(rel_i) * w_i / log2(i + 1)."""
    return _dcg(_Context(b, gain=gain, kmax=k), k, b.has_weights)


def ndcg(b: RankingBatch, k: int, *, gain: Gain = "linear") -> _F64:
    """ndcg@k = dcg@k / idcg@k, idcg over all judged documents; 0 when idcg is 0."""
    return _ndcg(_Context(b, gain=gain, kmax=k), k, b.has_weights)


def _dcg(ctx: _Context, k: int | None, decayed: bool) -> _F64:
    return _column(ctx.cumulative_dcg(decayed), _check_k(k))


def _ndcg(ctx: _Context, k: int | None, decayed: bool) -> _F64:
    cutoff = _check_k(k)
    ideal = _column(ctx.cumulative_ideal(decayed), cutoff)
    return _safe_divide(_column(ctx.cumulative_dcg(decayed), cutoff), ideal)
