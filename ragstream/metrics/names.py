"""Metric names: parsing ("ndcg@10", "mrr", "P@5"), trec_eval names, and batch evaluation."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics._context import Gain, _Context
from ragstream.metrics.batch import RankingBatch
from ragstream.metrics.dcg import _dcg, _ndcg
from ragstream.metrics.ranking import (
    _average_precision,
    _hit_rate,
    _precision,
    _recall,
    _reciprocal_rank,
)

__all__ = [
    "CUTOFF_FAMILIES",
    "DECAYABLE_FAMILIES",
    "DEFAULT_CUTOFFS",
    "FAMILIES",
    "MetricSpec",
    "evaluate",
    "parse_metric",
    "trec_name",
]

DEFAULT_CUTOFFS: tuple[int, ...] = (1, 3, 5, 10)
"""Cutoffs k used when none are configured."""

CUTOFF_FAMILIES: frozenset[str] = frozenset({"precision", "recall", "hit_rate", "dcg", "ndcg"})
"""Families that need a cutoff k."""

FAMILIES: frozenset[str] = CUTOFF_FAMILIES | {"rr", "ap"}
"""All metric families; rr and ap have no cutoff."""

DECAYABLE_FAMILIES: frozenset[str] = frozenset({"rr", "precision", "recall", "dcg", "ndcg"})
"""Families with a recency-weighted `_decayed` form (hit rate and AP ignore weights)."""

_ALIASES: dict[str, str] = {
    "mrr": "rr",
    "recip_rank": "rr",
    "reciprocal_rank": "rr",
    "map": "ap",
    "average_precision": "ap",
    "p": "precision",
    "r": "recall",
    "hit": "hit_rate",
    "hits": "hit_rate",
    "hitrate": "hit_rate",
    "success": "hit_rate",
    "ndcg_cut": "ndcg",
}
_TREC_STYLE = re.compile(r"^(p|recall|success|ndcg_cut)_(\d+)$")
_TREC_NAMES: dict[str, str] = {
    "precision": "P",
    "recall": "recall",
    "hit_rate": "success",
    "ndcg": "ndcg_cut",
}
_ACCEPTED = (
    "accepted: rr (mrr), ap (map), precision@k (P@k), recall@k, hit_rate@k (success@k), "
    "dcg@k, ndcg@k, trec_eval names such as P_5 or ndcg_cut_10, and the decayed forms "
    "rr_decayed, precision_decayed@k, recall_decayed@k, dcg_decayed@k, ndcg_decayed@k"
)


@dataclass(frozen=True)
class MetricSpec:
    """One per-query metric: a family, its cutoff (None for rr and ap), decayed or not."""

    family: str
    k: int | None = None
    decayed: bool = False

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"unknown metric family {self.family!r}; {_ACCEPTED}")
        if self.family in CUTOFF_FAMILIES:
            if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
                raise ValueError(f"{self.family} needs an integer cutoff k >= 1, got {self.k!r}")
        elif self.k is not None:
            raise ValueError(f"{self.family} takes no cutoff, got k={self.k!r}")
        if self.decayed and self.family not in DECAYABLE_FAMILIES:
            raise ValueError(
                f"{self.family} has no decayed form; decayed forms exist for "
                f"{', '.join(sorted(DECAYABLE_FAMILIES))}"
            )

    @property
    def name(self) -> str:
        """Canonical name: "ndcg@10", "ndcg_decayed@10", "rr", "rr_decayed", "ap"."""
        base = self.family + ("_decayed" if self.decayed else "")
        return base if self.k is None else f"{base}@{self.k}"

    def __str__(self) -> str:
        return self.name


def parse_metric(text: str) -> MetricSpec:
    """Parse a metric name such as "ndcg@10", "P@5", "mrr", "map" or "recall_decayed@10"."""
    raw = text.strip()
    base, at, cutoff = raw.partition("@")
    base = base.strip().lower()
    trec = _TREC_STYLE.match(base) if not at else None
    if trec is not None:
        base, cutoff, at = trec.group(1), trec.group(2), "@"
    decayed = base.endswith("_decayed")
    if decayed:
        base = base.removesuffix("_decayed")
    family = _ALIASES.get(base, base)
    if family not in FAMILIES:
        raise ValueError(f"unknown metric {text!r}; {_ACCEPTED}")
    k: int | None = None
    if at:
        cutoff = cutoff.strip()
        if not cutoff.isascii() or not cutoff.isdigit() or int(cutoff) < 1:
            raise ValueError(f"invalid cutoff in {text!r}: k must be an integer >= 1")
        k = int(cutoff)
    if family in CUTOFF_FAMILIES and k is None:
        raise ValueError(f"{text!r} needs a cutoff, e.g. {family}@10")
    if family not in CUTOFF_FAMILIES and k is not None:
        raise ValueError(f"{text!r}: {family} takes no cutoff (write {family})")
    return MetricSpec(family, k, decayed)


def trec_name(spec: MetricSpec | str) -> str:
    """The trec_eval measure name: rr -> recip_rank, precision@5 -> P_5, ap -> map, ...

    Raises ValueError for metrics trec_eval does not have (dcg and the decayed forms).
    """
    spec = parse_metric(spec) if isinstance(spec, str) else spec
    if spec.decayed or spec.family == "dcg":
        raise ValueError(f"trec_eval has no measure for {spec.name}")
    if spec.family == "rr":
        return "recip_rank"
    if spec.family == "ap":
        return "map"
    return f"{_TREC_NAMES[spec.family]}_{spec.k}"


_F64 = NDArray[np.float64]
_KERNELS: dict[str, Callable[[_Context, MetricSpec], _F64]] = {
    "rr": lambda ctx, s: _reciprocal_rank(ctx, s.decayed),
    "ap": lambda ctx, s: _average_precision(ctx),
    "precision": lambda ctx, s: _precision(ctx, _k(s), s.decayed),
    "recall": lambda ctx, s: _recall(ctx, _k(s), s.decayed),
    "hit_rate": lambda ctx, s: _hit_rate(ctx, _k(s)),
    "dcg": lambda ctx, s: _dcg(ctx, _k(s), s.decayed),
    "ndcg": lambda ctx, s: _ndcg(ctx, _k(s), s.decayed),
}


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
    return {s.name: _KERNELS[s.family](ctx, s) for s in specs}


def _k(spec: MetricSpec) -> int:
    if spec.k is None:  # MetricSpec rules this out for the families that call here
        raise ValueError(f"{spec.family} needs a cutoff")
    return spec.k
