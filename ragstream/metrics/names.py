"""Metric names: parsing ("ndcg@10", "mrr", "P@5") and trec_eval names.

Every name is read from the metric registry (`ragstream.metrics.registry.REGISTRY`): a
family registered there is parsed and named like the built-in ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragstream.metrics.registry import REGISTRY, MetricFamily

__all__ = ["MetricSpec", "parse_metric", "trec_name"]

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
