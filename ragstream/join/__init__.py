"""Late relevance labels joined to open queries (SPEC §3), pure and per partition."""

from ragstream.join.labels import JoinCounters, LabelJoin, LabelOutcome, PendingLabel
from ragstream.join.query import OpenQuery, RankedDoc, dedupe_ranking
from ragstream.join.table import QueryTable

__all__ = [
    "JoinCounters",
    "LabelJoin",
    "LabelOutcome",
    "OpenQuery",
    "PendingLabel",
    "QueryTable",
    "RankedDoc",
    "dedupe_ranking",
]
