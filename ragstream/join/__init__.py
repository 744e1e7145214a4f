"""Late relevance labels joined to open queries (SPEC §3), pure and per partition."""

from ragstream.join.label_map import RowLabels
from ragstream.join.labels import LabelJoin, LabelOutcome
from ragstream.join.openings import Openings
from ragstream.join.table import QueryTable
from ragstream.join.view import QueryView

__all__ = [
    "LabelJoin",
    "LabelOutcome",
    "Openings",
    "QueryTable",
    "QueryView",
    "RowLabels",
]
