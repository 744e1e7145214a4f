"""From-scratch, one-query-at-a-time reference metrics (plain loops) and test data strategies."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from ragstream.metrics import RankingBatch


@dataclass(frozen=True)
class Query:
    """One ranked list with its judgments; `weights[i]` belongs to `rels[i]`."""

    rels: list[float]
    judged: list[float]
    weights: list[float]
    judged_weights: list[float]


def batch_of(queries: Sequence[Query], *, weighted: bool = False) -> RankingBatch:
    """The queries as one padded batch (optionally with their recency weights)."""
    return RankingBatch.from_lists(
        [q.rels for q in queries],
        [q.judged for q in queries],
        [q.weights for q in queries] if weighted else None,
        [q.judged_weights for q in queries] if weighted else None,
    )


def gain_of(grade: float, gain: str) -> float:
    g = grade if gain == "linear" else 2.0**grade - 1.0
    return max(g, 0.0)


def ref_rr(q: Query, decayed: bool, thr: float = 1.0) -> float:
    for i, r in enumerate(q.rels):
        if r >= thr:
            return (q.weights[i] if decayed else 1.0) / (i + 1)
    return 0.0


def ref_precision(q: Query, k: int, decayed: bool, thr: float = 1.0) -> float:
    total = 0.0
    for i, r in enumerate(q.rels[:k]):
        if r >= thr:
            total += q.weights[i] if decayed else 1.0
    return total / k


def _judged_relevant(q: Query, decayed: bool, thr: float) -> float:
    total = 0.0
    for j, r in enumerate(q.judged):
        if r >= thr:
            total += q.judged_weights[j] if decayed else 1.0
    return total


def ref_recall(q: Query, k: int, decayed: bool, thr: float = 1.0) -> float:
    denominator = _judged_relevant(q, decayed, thr)
    return ref_precision(q, k, decayed, thr) * k / denominator if denominator > 0 else 0.0


def ref_hit_rate(q: Query, k: int, thr: float = 1.0) -> float:
    return 1.0 if any(r >= thr for r in q.rels[:k]) else 0.0


def ref_ap(q: Query, thr: float = 1.0) -> float:
    denominator = _judged_relevant(q, False, thr)
    found, total = 0, 0.0
    for i, r in enumerate(q.rels):
        if r >= thr:
            found += 1
            total += found / (i + 1)
    return total / denominator if denominator > 0 else 0.0


def ref_dcg(q: Query, k: int, decayed: bool, gain: str = "linear") -> float:
    total = 0.0
    for i, r in enumerate(q.rels[:k]):
        total += gain_of(r, gain) * (q.weights[i] if decayed else 1.0) / math.log2(i + 2)
    return total


def ref_ndcg(q: Query, k: int, decayed: bool, gain: str = "linear") -> float:
    gains = [
        gain_of(r, gain) * (q.judged_weights[j] if decayed else 1.0) for j, r in enumerate(q.judged)
    ]
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(gains, reverse=True)[:k]))
    return ref_dcg(q, k, decayed, gain) / ideal if ideal > 0 else 0.0


@st.composite
def queries(draw: st.DrawFn, max_docs: int = 12) -> Query:
    """A consistent query: documents with a grade (or unjudged) and a weight in [0, 1];
    the ranking is some of them in some order, the judged list all judged ones."""
    n = draw(st.integers(0, max_docs))
    grades = draw(st.lists(st.none() | st.integers(-2, 4), min_size=n, max_size=n))
    # no subnormal weights (documents over ~1000 half-lives old): their sums keep too few
    # bits for ratios to agree to this test's 1e-12 across two summation orders
    weight = st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False)
    weights = draw(st.lists(weight, min_size=n, max_size=n))
    order = draw(st.permutations(range(n)))
    ranked = order[: draw(st.integers(0, n))]
    return Query(
        rels=[float(grades[i] or 0) for i in ranked],
        judged=[float(g) for g in grades if g is not None],
        weights=[weights[i] for i in ranked],
        judged_weights=[w for g, w in zip(grades, weights, strict=True) if g is not None],
    )
