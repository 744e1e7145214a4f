"""Late relevance labels joined to open queries (SPEC §3), pure and per partition."""

from ragstream.join.block import LazyBlock, LazyEntry
from ragstream.join.labels import JoinCounters, LabelJoin, LabelOutcome, PendingLabel
from ragstream.join.query import DocLike, OpenQuery, RankedDoc, dedupe_ranking

__all__ = [
    "DocLike",
    "JoinCounters",
    "LabelJoin",
    "LabelOutcome",
    "LazyBlock",
    "LazyEntry",
    "OpenQuery",
    "PendingLabel",
    "RankedDoc",
    "dedupe_ranking",
]
