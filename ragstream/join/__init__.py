"""Late relevance labels joined to open queries (SPEC §3), pure and per partition."""

from ragstream.join.label_map import RowLabels
from ragstream.join.labels import JoinCounters, LabelJoin, LabelOutcome, PendingLabel
from ragstream.join.openings import Openings
from ragstream.join.table import QueryTable
from ragstream.join.view import QueryView

__all__ = [
    "JoinCounters",
    "LabelJoin",
    "LabelOutcome",
    "Openings",
    "PendingLabel",
    "QueryTable",
    "QueryView",
    "RowLabels",
]
