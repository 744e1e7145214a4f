"""Metric names: parsing ("ndcg@10", "mrr", "P@5"), trec_eval names, and batch evaluation.

Every name is read from the metric registry (`ragstream.metrics.registry.REGISTRY`): a
family registered there is parsed, evaluated and named like the built-in ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics._context import Gain, _Context
from ragstream.metrics.batch import RankingBatch
from ragstream.metrics.registry import DEFAULT_CUTOFFS, REGISTRY, MetricFamily

__all__ = [
    "DEFAULT_CUTOFFS",
    "MetricSpec",
    "RankingDepth",
    "evaluate",
    "parse_metric",
    "ranking_depth",
    "trec_name",
]

_TREC_STYLE = re.compile(r"^([a-z_]+?)_(\d+)$")


def _accepted() -> str:
    """What `parse_metric` accepts, for error messages (read from the registry)."""
    plain, trec, decayed = [], [], []
    for f in REGISTRY:
        at = "@k" if f.cutoff else ""
        plain.append(f"{f.name}{at} ({f.aliases[0]}{at})" if f.aliases else f.name + at)
        if f.trec is not None:
            trec.append(f"{f.trec}_k" if f.cutoff else f.trec)
        if f.decay is not None:
            decayed.append(f"{f.name}_decayed@k" if f.cutoff else f"{f.name}_decayed")
    return (
        f"accepted: {', '.join(plain)}; trec_eval names such as {', '.join(trec)}; "
        f"the decayed forms {', '.join(decayed)}"
    )


@dataclass(frozen=True)
class MetricSpec:
    """One per-query metric: a family, its cutoff (None without one), decayed or not."""

    family: str
    k: int | None = None
    decayed: bool = False

    def __post_init__(self) -> None:
        if self.family not in REGISTRY:
            raise ValueError(f"unknown metric family {self.family!r}; {_accepted()}")
        row = REGISTRY[self.family]
        if row.cutoff:
            if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
                raise ValueError(f"{self.family} needs an integer cutoff k >= 1, got {self.k!r}")
        elif self.k is not None:
            raise ValueError(f"{self.family} takes no cutoff, got k={self.k!r}")
        if self.decayed and row.decay is None:
            decayable = sorted(f.name for f in REGISTRY if f.decay is not None)
            raise ValueError(
                f"{self.family} has no decayed form; decayed forms exist for {', '.join(decayable)}"
            )

    @property
    def row(self) -> MetricFamily:
        """The family's registry row."""
        return REGISTRY[self.family]

    @property
    def name(self) -> str:
        """Canonical name: "ndcg@10", "ndcg_decayed@10", "rr", "rr_decayed", "ap"."""
        base = self.family + ("_decayed" if self.decayed else "")
        return base if self.k is None else f"{base}@{self.k}"

    @property
    def title(self) -> str:
        """The label people read in a table: "nDCG@10", "MRR", "P@5"."""
        return self.row.title(self.k, self.decayed)

    def __str__(self) -> str:
        return self.name


def parse_metric(text: str) -> MetricSpec:
    """Parse a metric name such as "ndcg@10", "P@5", "mrr", "map" or "recall_decayed@10"."""
    raw = text.strip()
    base, at, cutoff = raw.partition("@")
    base = base.strip().lower()
    if not at:  # trec_eval style: P_5, ndcg_cut_10, success_1
        match = _TREC_STYLE.match(base)
        if match is not None and REGISTRY.trec_family(match.group(1)) is not None:
            base, cutoff, at = match.group(1), match.group(2), "@"
    decayed = base.endswith("_decayed")
    if decayed:
        base = base.removesuffix("_decayed")
    row = REGISTRY.resolve(base) or (REGISTRY.trec_family(base) if at else None)
    if row is None:
        raise ValueError(f"unknown metric {text!r}; {_accepted()}")
    k: int | None = None
    if at:
        cutoff = cutoff.strip()
        if not cutoff.isascii() or not cutoff.isdigit() or int(cutoff) < 1:
            raise ValueError(f"invalid cutoff in {text!r}: k must be an integer >= 1")
        k = int(cutoff)
    if row.cutoff and k is None:
        raise ValueError(f"{text!r} needs a cutoff, e.g. {row.name}@10")
    if not row.cutoff and k is not None:
        raise ValueError(f"{text!r}: {row.name} takes no cutoff (write {row.name})")
    return MetricSpec(row.name, k, decayed)


def trec_name(spec: MetricSpec | str) -> str:
    """The trec_eval measure name: rr -> recip_rank, precision@5 -> P_5, ap -> map, ...

    Raises ValueError for metrics trec_eval does not have (dcg and the decayed forms).
    """
    spec = parse_metric(spec) if isinstance(spec, str) else spec
    measure = spec.row.trec
    if spec.decayed or measure is None:
        raise ValueError(f"trec_eval has no measure for {spec.name}")
    return measure if spec.k is None else f"{measure}_{spec.k}"


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
