"""One row of a `QueryTable` read out as values: what a caller sees of a query."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.join.label_map import RowLabels, decoded_again, labels_of

__all__ = ["QueryView"]


@dataclass(frozen=True, slots=True)
class QueryView:
    """A query as its row holds it when read (a copy: later changes do not show)."""

    query_id: str
    """Joins the events of one request."""
    partition: int
    """The Kafka partition the query's events arrive on."""
    labelset: tuple[str, ...]
    """The values of the configured service labels, in configured order."""
    ts: float
    """The retrieval event's time (Unix seconds)."""
    expires_at: float
    """Event time after which the query is final."""
    contribution: NDArray[np.float64] | None
    """The metric row the query has in the windows (None before it is scored)."""
    entry: RowLabels | None
    """Its ranking and grades (None: no label; the ranking is then read from `raw`)."""
    raw: bytes | None
    """The retrieval event's message, when the row keeps it."""

    def _entry(self) -> RowLabels:
        if self.entry is not None:
            return self.entry
        assert self.raw is not None
        return labels_of(decoded_again(self.raw), self.ts, self.expires_at)[0]

    @property
    def labels(self) -> dict[str, float]:
        """The latest grade per graded doc id, from any source."""
        return {} if self.entry is None else {d: g[0] for d, g in self.entry.grades.items()}

    @property
    def label_times(self) -> dict[str, float]:
        """Effective times of the graded documents."""
        return {} if self.entry is None else {d: g[1] for d, g in self.entry.grades.items()}

    @property
    def label_sources(self) -> dict[str, int]:
        """Graded documents by the source of their latest grade (`RowLabels.sources`)."""
        return {} if self.entry is None else self.entry.sources()

    @property
    def labeled(self) -> bool:
        """True once any document is graded."""
        return self.entry is not None and bool(self.entry.grades)

    @property
    def doc_ids(self) -> tuple[str, ...]:
        """The ranking with repeats removed, in rank order."""
        return self._entry().doc_ids

    @property
    def doc_times(self) -> tuple[float, ...]:
        """Effective document times of the ranking (missing -> ts, clamped to ts)."""
        return tuple(self._entry().doc_times)
