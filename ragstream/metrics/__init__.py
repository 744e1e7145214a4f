"""Retrieval metrics as pure, batch-first numpy kernels, with trec_eval conventions.

Build a `RankingBatch` (Q ranked lists and their judgments), then call a kernel or
`evaluate(batch, ["rr", "ndcg@10", ...])`. Every kernel returns one float64 value per query.
See docs/metrics.md for the definitions.
"""

from ragstream.metrics._context import Gain
from ragstream.metrics.batch import RankingBatch
from ragstream.metrics.dcg import dcg, ndcg
from ragstream.metrics.names import (
    CUTOFF_FAMILIES,
    DECAYABLE_FAMILIES,
    DEFAULT_CUTOFFS,
    FAMILIES,
    MetricSpec,
    evaluate,
    parse_metric,
    trec_name,
)
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
    recency_weight,
)

__all__ = [
    "CUTOFF_FAMILIES",
    "DECAYABLE_FAMILIES",
    "DEFAULT_CUTOFFS",
    "FAMILIES",
    "Gain",
    "MetricSpec",
    "RankingBatch",
    "average_precision",
    "dcg",
    "decay_rate",
    "effective_doc_time",
    "evaluate",
    "hit_rate",
    "mean_doc_age",
    "ndcg",
    "parse_metric",
    "precision",
    "recall",
    "recency_weight",
    "reciprocal_rank",
    "trec_name",
]
