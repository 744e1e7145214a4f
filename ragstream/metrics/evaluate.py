"""Batch evaluation: several metrics' per-query values over a `RankingBatch`, and how far
into each ranking a set of metrics reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics._context import Gain, _Context
from ragstream.metrics.batch import RankingBatch
from ragstream.metrics.names import MetricSpec, parse_metric

__all__ = ["RankingDepth", "evaluate", "ranking_depth"]


@dataclass(frozen=True)
class RankingDepth:
    """How far into each ranking some metrics read: its first `k` documents, and on to its
    first relevant document when `to_relevant` (rr's)."""

    k: int
    to_relevant: bool


def ranking_depth(specs: Sequence[MetricSpec]) -> RankingDepth | None:
    """How far into each ranking `specs` read (their families' `reads`), None when one
    reads all of it. A ranking cut there (its first k documents and on to the first
    relevant one) has the same values as the whole ranking, by each kernel's definition."""
    if not specs or any(s.row.reads == "all" for s in specs):
        return None
    k = max((s.k for s in specs if s.row.reads == "top_k" and s.k is not None), default=0)
    return RankingDepth(max(k, 1), any(s.row.reads == "to_first_relevant" for s in specs))


def evaluate(
    batch: RankingBatch,
    metrics: Sequence[MetricSpec | str],
    *,
    gain: Gain = "linear",
    threshold: float = 1.0,
) -> dict[str, NDArray[np.float64]]:
    """Per-query values of several metrics, keyed by canonical name, in the order given.

    Shared work (relevance masks, running sums, the sorted ideal) is done once for all
    metrics. Decayed metrics use the batch's recency weights; plain ones ignore them.
    """
    specs = [parse_metric(m) if isinstance(m, str) else m for m in metrics]
    if any(s.decayed for s in specs) and not batch.has_weights:
        raise ValueError("decayed metrics need a batch with recency weights (with_weights)")
    kmax = max((s.k for s in specs if s.k is not None), default=1)
    ctx = _Context(batch, threshold=threshold, gain=gain, kmax=kmax)
    return {s.name: s.row.kernel(ctx, s.k, s.decayed) for s in specs}
