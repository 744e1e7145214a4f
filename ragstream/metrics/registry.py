"""The metric registry: one row per metric family, read by everything that names a metric.

A row says what a family is (its kernel, whether it takes a cutoff, whether and how it has
a recency-weighted form), how the field names it (trec_eval's measure, aliases, the label
people read in a table), and how the agent exports it (the Prometheus family and help,
whether final per-query values get a histogram). Name parsing (`parse_metric`), the
kernels' dispatch (`evaluate`), the agent's row layout, the exporter, the console tables,
`replay`'s report and `eval`'s output all read these rows; none keeps a table of its own.

Adding a metric is one kernel function and one row::

    def _relevant_retrieved(ctx, k, decayed):      # (Q,) values, see ragstream.metrics.ranking
        return ctx.hits(decayed)[:, min(k, ctx.width) - 1]

    REGISTRY.add(MetricFamily("relevant", _relevant_retrieved, help="Relevant in the top k."))

The row order is the order of the agent's columns: families without a cutoff first, then
the others, each cutoff in turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics._context import _Context
from ragstream.metrics.dcg import _dcg, _ndcg
from ragstream.metrics.ranking import (
    _average_precision,
    _hit_rate,
    _precision,
    _recall,
    _reciprocal_rank,
)

__all__ = [
    "DEFAULT_CUTOFFS",
    "REGISTRY",
    "Decay",
    "Kernel",
    "MetricFamily",
    "MetricRegistry",
    "Reads",
]

DEFAULT_CUTOFFS: tuple[int, ...] = (1, 3, 5, 10)
"""Cutoffs k used when none are configured."""

Kernel = Callable[[_Context, "int | None", bool], NDArray[np.float64]]
"""`kernel(ctx, k, decayed)`: one float64 value per query of the context's batch; `k` is
None for families without a cutoff, `decayed` is True for the recency-weighted form."""

Decay = Literal["sum", "ratio"]
"""How a family's recency-weighted form behaves in a window: `sum` metrics decay live (a
common factor exp(-λ(t - ts)) per query), `ratio` metrics are the same at every read time
(the factor cancels)."""

Reads = Literal["top_k", "to_first_relevant", "all"]
"""How much of a ranking a family's kernel reads: its top k (the cutoff), its documents
down to the first relevant one (rr), or all of them (ap). `ragstream eval` keeps only what
the metrics asked for read (see `ranking_depth`); the values never depend on the rest."""


@dataclass(frozen=True)
class MetricFamily:
    """One metric family (see the module docstring)."""

    name: str
    """Canonical name, as in "ndcg@10": lower case, no `@`, not ending in `_decayed`."""
    kernel: Kernel
    help: str
    """Help of the windowed Prometheus gauge."""
    cutoff: bool = True
    """Takes a cutoff k (`ndcg@10`); False: none (`rr`)."""
    decay: Decay | None = None
    """The recency-weighted form (`ndcg_decayed@10`), None when there is none."""
    decayed_help: str = ""
    """Help of the `_decayed` gauge."""
    streamed: bool = True
    """Kept in the agent's windows and exported; False: offline (`ragstream eval`) only."""
    histogram: bool = False
    """Final per-query values get a Prometheus histogram, and the windows a histogram per
    column (quantiles, PSI)."""
    trec: str | None = None
    """trec_eval's measure: `P` for precision (`P_5`), `recip_rank` for rr; None when
    trec_eval has none."""
    trec_position: int = 1_000
    """Place in trec_eval's measure table, which orders its output."""
    aliases: tuple[str, ...] = ()
    """Other names accepted for the family (lower case), e.g. `mrr`."""
    display: str = ""
    """What a table shows people (`nDCG` -> `nDCG@10`); default: the name."""
    prometheus: str = ""
    """The gauge's name after `ragstream_`; default: `retrieval_<name>`."""
    reads: Reads | None = None
    """How much of a ranking the kernel reads; default: `top_k` with a cutoff, else `all`."""
    compiled: bool = False
    """`kernel` has a compiled twin over CSR rankings (`ragstream.metrics.ragged`: the same
    operations, the same bits), which `ragstream eval` runs instead when it is built."""

    def __post_init__(self) -> None:
        name = self.name
        if not name or name != name.lower() or "@" in name or name.endswith("_decayed"):
            raise ValueError(f"invalid metric family name {name!r}")
        if self.decay is not None and not self.decayed_help:
            object.__setattr__(self, "decayed_help", f"Mean recency-weighted {name}.")
        if not self.display:
            object.__setattr__(self, "display", name)
        if not self.prometheus:
            object.__setattr__(self, "prometheus", f"retrieval_{name}")
        if self.reads is None:
            object.__setattr__(self, "reads", "top_k" if self.cutoff else "all")
        elif self.reads == "top_k" and not self.cutoff:
            raise ValueError(f"{name}: a family without a cutoff cannot read only the top k")

    def title(self, k: int | None = None, decayed: bool = False) -> str:
        """The people-facing label: `nDCG@10`, `MRR`, `P@5 (decayed)`."""
        text = self.display if k is None else f"{self.display}@{k}"
        return f"{text} (decayed)" if decayed else text

    def gauge(self, decayed: bool = False) -> str:
        """The windowed gauge's name after `ragstream_`."""
        return self.prometheus + ("_decayed" if decayed else "")


class MetricRegistry:
    """Metric families by name, in row order; `REGISTRY` is the one the project reads."""

    def __init__(self, families: list[MetricFamily]) -> None:
        self._families: dict[str, MetricFamily] = {}
        self._names: dict[str, str] = {}
        for family in families:
            self.add(family)

    def add(self, family: MetricFamily) -> None:
        """Register a family (its name and aliases must be new)."""
        taken = [n for n in (family.name, *family.aliases) if n in self._names]
        if taken:
            raise ValueError(f"metric names already registered: {taken}")
        self._families[family.name] = family
        for name in (family.name, *family.aliases):
            self._names[name] = family.name

    def remove(self, name: str) -> MetricFamily:
        """Unregister a family (e.g. one a test added); returns it."""
        family = self._families.pop(name)
        for alias in (family.name, *family.aliases):
            del self._names[alias]
        return family

    def __iter__(self) -> Iterator[MetricFamily]:
        return iter(list(self._families.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._families

    def __getitem__(self, name: str) -> MetricFamily:
        return self._families[name]

    def resolve(self, name: str) -> MetricFamily | None:
        """The family of a name or alias (lower case), or None."""
        canonical = self._names.get(name)
        return None if canonical is None else self._families[canonical]

    def trec_family(self, measure: str) -> MetricFamily | None:
        """The family whose trec_eval measure (with a cutoff, as `P` in `P_5`) is
        `measure`, compared case-insensitively; None if none is."""
        wanted = measure.lower()
        for family in self._families.values():
            if family.cutoff and family.trec is not None and family.trec.lower() == wanted:
                return family
        return None

    def streamed(self) -> list[MetricFamily]:
        """The families the agent keeps: without a cutoff first, then the others (the
        order of its columns)."""
        kept = [f for f in self._families.values() if f.streamed]
        return [f for f in kept if not f.cutoff] + [f for f in kept if f.cutoff]


REGISTRY = MetricRegistry(
    [
        MetricFamily(
            "rr",
            _reciprocal_rank,
            compiled=True,
            help="Mean reciprocal rank of the first relevant document over the window.",
            cutoff=False,
            decay="sum",
            decayed_help="Mean recency-weighted reciprocal rank, decayed live.",
            histogram=True,
            trec="recip_rank",
            trec_position=1,
            aliases=("mrr", "recip_rank", "reciprocal_rank"),
            display="MRR",
            prometheus="retrieval_mrr",
            reads="to_first_relevant",
        ),
        MetricFamily(
            "ap",
            _average_precision,
            compiled=True,
            help="Mean average precision over the window.",
            cutoff=False,
            streamed=False,
            trec="map",
            trec_position=0,
            aliases=("map", "average_precision"),
            display="MAP",
        ),
        MetricFamily(
            "precision",
            _precision,
            compiled=True,
            help="Mean precision@k (relevant in the top k / k) over the window.",
            decay="sum",
            decayed_help="Mean recency-weighted precision@k, decayed live.",
            histogram=True,
            trec="P",
            trec_position=2,
            aliases=("p",),
            display="P",
        ),
        MetricFamily(
            "recall",
            _recall,
            compiled=True,
            help="Mean recall@k (relevant in the top k / all judged relevant).",
            decay="ratio",
            decayed_help="Mean recency-weighted recall@k (a ratio: constant in time).",
            histogram=True,
            trec="recall",
            trec_position=3,
            aliases=("r",),
            display="R",
        ),
        MetricFamily(
            "hit_rate",
            _hit_rate,
            compiled=True,
            help="Share of queries with a relevant document in the top k.",
            trec="success",
            trec_position=5,
            aliases=("hit", "hits", "hitrate", "success"),
            display="Hit",
        ),
        MetricFamily(
            "dcg",
            _dcg,
            compiled=True,
            help="Mean DCG@k (linear or exponential gain, log2 discount).",
            decay="sum",
            decayed_help="Mean recency-weighted DCG@k, decayed live.",
            display="DCG",
        ),
        MetricFamily(
            "ndcg",
            _ndcg,
            compiled=True,
            help="Mean NDCG@k (ideal ranking over all judged documents).",
            decay="ratio",
            decayed_help="Mean recency-weighted NDCG@k (a ratio: constant in time).",
            histogram=True,
            trec="ndcg_cut",
            trec_position=4,
            aliases=("ndcg_cut",),
            display="nDCG",
        ),
    ]
)
"""The project's metrics; see docs/metrics.md for their definitions."""
