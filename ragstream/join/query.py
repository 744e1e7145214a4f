"""One open query: its ranking, the labels received so far, and what it contributes."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

import numpy as np
from numpy.typing import NDArray

__all__ = ["DocLike", "OpenQuery", "RankedDoc", "dedupe_ranking"]


class RankedDoc(TypedDict):
    """A retrieved or judged document as the join reads it (the event's own dicts fit)."""

    doc_id: str
    """The document's id, as the service reported it."""
    t_doc: NotRequired[float | None]
    """The document's own timestamp (Unix seconds), if known."""
    rel: NotRequired[float | None]
    """A graded label sent with the retrieval event, if any."""


DocLike = Mapping[str, Any]
"""Any mapping with `doc_id` and optional `t_doc` and `rel`: a `RankedDoc`, or an event's own
result and qrel dicts."""


def dedupe_ranking(results: Iterable[DocLike]) -> tuple[list[DocLike], int]:
    """Keep each doc id at its first position; return the ranking and the number of repeats."""
    seen: set[str] = set()
    ranking: list[DocLike] = []
    repeats = 0
    for doc in results:
        doc_id = doc["doc_id"]
        if doc_id in seen:
            repeats += 1
            continue
        seen.add(doc_id)
        ranking.append(doc)
    return ranking, repeats


def _effective_time(t_doc: float | None, ts: float) -> float:
    """SPEC §2: a missing t_doc dates from the event's ts; a later one is clamped to ts."""
    if t_doc is None or math.isnan(t_doc):
        return ts
    return min(t_doc, ts)


@dataclass(slots=True)
class OpenQuery:
    """A query whose labels may still change until `expires_at` (event time)."""

    query_id: str
    """Joins the events of one request."""
    partition: int
    """The Kafka partition the query's events arrive on."""
    labelset: tuple[str, ...]
    """The values of the configured service labels, in configured order."""
    ts: float
    """The retrieval event's time (Unix seconds)."""
    expires_at: float
    """Event time after which the query is final (`ts + label_ttl`)."""
    doc_ids: tuple[str, ...]
    """The ranking with repeats removed, in rank order."""
    doc_times: tuple[float, ...]
    """Effective document times of the ranking (missing -> ts, clamped to ts)."""
    repeats: int = 0
    """How many repeated doc ids the retrieval event carried."""
    labels: dict[str, float] = field(default_factory=dict)
    """The latest grade received per doc id, from any source."""
    label_times: dict[str, float] = field(default_factory=dict)
    """Effective document times of judged documents (for decayed ideal rankings)."""
    contribution: NDArray[np.float64] | None = None
    """The metric row this query currently has in the windows (None before the first)."""

    @classmethod
    def from_retrieval(
        cls,
        query_id: str,
        *,
        partition: int,
        labelset: tuple[str, ...],
        ts: float,
        ttl: float,
        results: Sequence[DocLike],
        qrels: Sequence[DocLike] = (),
    ) -> OpenQuery:
        """Open a query from its retrieval event; qrels first, then inline labels."""
        doc_ids: list[str] = []
        doc_times: list[float] = []
        seen: set[str] = set()
        inline: list[DocLike] = []
        for doc in results:  # one pass: dedupe, effective times (SPEC §2), inline labels
            doc_id = doc["doc_id"]
            if doc_id in seen:
                continue
            seen.add(doc_id)
            doc_ids.append(doc_id)
            t_doc = doc.get("t_doc")
            doc_times.append(ts if t_doc is None or t_doc != t_doc or t_doc > ts else t_doc)
            if doc.get("rel") is not None:
                inline.append(doc)
        query = cls(
            query_id=query_id,
            partition=partition,
            labelset=labelset,
            ts=ts,
            expires_at=ts + ttl,
            doc_ids=tuple(doc_ids),
            doc_times=tuple(doc_times),
            repeats=len(results) - len(doc_ids),
        )
        for doc in (*qrels, *inline):  # qrels first: an inline label arrives with the event
            rel = doc.get("rel")
            if rel is not None:
                query.set_label(doc["doc_id"], rel, doc.get("t_doc"))
        return query

    @property
    def labeled(self) -> bool:
        """True once any label is known; unlabeled queries count toward volume only."""
        return bool(self.labels)

    def set_label(self, doc_id: str, rel: float, t_doc: float | None = None) -> None:
        """Record a grade for one document; the latest received wins.

        The judged document's time is the one sent with a label, else its time in the
        ranking, else the query's ts; a later label without t_doc keeps the known time.
        """
        self.labels[doc_id] = rel
        if t_doc is not None:
            self.label_times[doc_id] = _effective_time(t_doc, self.ts)
        elif doc_id not in self.label_times:
            try:
                self.label_times[doc_id] = self.doc_times[self.doc_ids.index(doc_id)]
            except ValueError:
                self.label_times[doc_id] = self.ts

    def snapshot(self) -> dict[str, Any]:
        """A JSON-friendly copy of the query's state (the contribution as a list)."""
        contribution = None
        if self.contribution is not None:  # NaN (a metric without value) as null: strict JSON
            contribution = [None if v != v else v for v in self.contribution.tolist()]
        return {
            "query_id": self.query_id,
            "partition": self.partition,
            "labelset": list(self.labelset),
            "ts": self.ts,
            "expires_at": self.expires_at,
            "doc_ids": list(self.doc_ids),
            "doc_times": list(self.doc_times),
            "repeats": self.repeats,
            "labels": dict(self.labels),
            "label_times": dict(self.label_times),
            "contribution": contribution,
        }

    @classmethod
    def restore(cls, data: Mapping[str, Any]) -> OpenQuery:
        """Rebuild a query from `snapshot()` output."""
        return cls(
            query_id=str(data["query_id"]),
            partition=int(data["partition"]),
            labelset=tuple(str(v) for v in data["labelset"]),
            ts=float(data["ts"]),
            expires_at=float(data["expires_at"]),
            doc_ids=tuple(str(d) for d in data["doc_ids"]),
            doc_times=tuple(float(t) for t in data["doc_times"]),
            repeats=int(data["repeats"]),
            labels={str(k): float(v) for k, v in data["labels"].items()},
            label_times={str(k): float(v) for k, v in data["label_times"].items()},
            contribution=(
                None
                if data["contribution"] is None
                else np.array(
                    [math.nan if v is None else v for v in data["contribution"]], dtype=np.float64
                )
            ),
        )
