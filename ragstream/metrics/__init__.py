"""Retrieval metrics as pure, batch-first numpy kernels, with trec_eval conventions.

Build a `RankingBatch` (Q ranked lists and their judgments), then call a kernel or
`evaluate(batch, ["rr", "ndcg@10", ...])`. Every kernel returns one float64 value per query;
the metric registry (`REGISTRY`) lists the families and how each is named and exported.
See docs/metrics.md for the definitions.
"""

from ragstream.metrics._context import Gain
from ragstream.metrics.batch import RankingBatch
from ragstream.metrics.dcg import dcg, ndcg
from ragstream.metrics.evaluate import RankingDepth, evaluate, ranking_depth
from ragstream.metrics.names import MetricSpec, parse_metric, trec_name
from ragstream.metrics.ranking import (
    average_precision,
    hit_rate,
    precision,
    recall,
    reciprocal_rank,
)
from ragstream.metrics.recency import (
    decay_rate,
    effective_doc_time,
    mean_doc_age,
    mean_doc_ages,
    recency_weight,
)
from ragstream.metrics.registry import DEFAULT_CUTOFFS, REGISTRY, MetricFamily

__all__ = [
    "DEFAULT_CUTOFFS",
    "REGISTRY",
    "Gain",
    "MetricFamily",
    "MetricSpec",
    "RankingBatch",
    "RankingDepth",
    "average_precision",
    "dcg",
    "decay_rate",
    "effective_doc_time",
    "evaluate",
    "hit_rate",
    "mean_doc_age",
    "mean_doc_ages",
    "ndcg",
    "parse_metric",
    "precision",
    "ranking_depth",
    "recall",
    "recency_weight",
    "reciprocal_rank",
    "trec_name",
]
