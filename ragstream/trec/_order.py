"""trec_eval's ranking order, vectorized: by query, score descending, doc id descending.

The rank column of a run is ignored. Files are usually written query by query in rank
order, so each step first *checks* whether the order already holds (one comparison of
neighbours) and only sorts what does not: whole query blocks, then scores within a query,
then the documents of each tie group, compared as words (C `strcmp` order).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["lex_greater", "trec_order"]

_U64 = NDArray[np.uint64]
_I64 = NDArray[np.int64]
_F64 = NDArray[np.float64]
_BOOL = NDArray[np.bool_]


def lex_greater(a: _U64, b: _U64) -> _BOOL:
    """Row-wise `a > b` for word matrices, compared word by word (byte order)."""
    greater = np.zeros(a.shape[0], dtype=bool)
    undecided = np.ones(a.shape[0], dtype=bool)
    for column in range(a.shape[1]):
        greater |= undecided & (a[:, column] > b[:, column])
        undecided &= a[:, column] == b[:, column]
    return greater


def trec_order(qcodes: _I64, scores: _F64, words: _U64) -> _I64:
    """The permutation that groups records by query, then sorts each query's records by
    score (descending), then document words (descending).

    Queries keep their file order when each is contiguous. Document ids must be unique
    within a query (duplicates are removed before).
    """
    perm = _group_queries(qcodes)
    q = qcodes[perm]
    s = scores[perm]
    same = q[1:] == q[:-1]
    if np.any(same & (s[1:] > s[:-1])):
        perm = perm[np.lexsort((-s, q))]  # (codes ascending; the order of queries is free)
        q = qcodes[perm]
        s = scores[perm]
        same = q[1:] == q[:-1]
    pairs = np.flatnonzero(same & (s[1:] == s[:-1]))
    if pairs.size == 0:
        return perm
    left, right = words[perm[pairs]], words[perm[pairs + 1]]
    if np.all(lex_greater(left, right)):
        return perm
    return _sort_ties(perm, pairs, words)


def _group_queries(qcodes: _I64) -> _I64:
    """A permutation that makes each query's records contiguous.

    Identity when they already are (queries may come in any order); otherwise a stable
    sort by query code.
    """
    n = qcodes.size
    heads = np.flatnonzero(np.concatenate(([True], qcodes[1:] != qcodes[:-1]))) if n else qcodes
    if np.unique(qcodes[heads]).size == heads.size:
        return np.arange(n, dtype=np.int64)
    perm: _I64 = np.argsort(qcodes, kind="stable").astype(np.int64)
    return perm


def _sort_ties(perm: _I64, pairs: _I64, words: _U64) -> _I64:
    """Reorder each run of equal (query, score) records by document id, descending."""
    in_tie = np.zeros(perm.size, dtype=bool)
    in_tie[pairs] = True
    in_tie[pairs + 1] = True
    starts = np.zeros(perm.size, dtype=bool)
    starts[pairs] = True
    starts[pairs[1:][pairs[1:] - 1 == pairs[:-1]]] = False  # continues the previous tie
    rows = np.flatnonzero(in_tie)
    group = np.cumsum(starts[rows])  # tie rows ascend, and every group starts at one
    tied = words[perm[rows]]
    keys = [~tied[:, c] for c in range(tied.shape[1] - 1, -1, -1)]
    order = np.lexsort((*keys, group))
    out = perm.copy()
    out[rows] = perm[rows][order]
    return out
