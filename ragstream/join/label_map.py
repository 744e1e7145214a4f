"""The sparse label map of a `QueryTable`: per labeled row, its graded documents.

A row gets an entry (`RowLabels`) when it has labels the table's columns do not hold: a
retrieval event with labels the compiled scanner did not grade, a label that came later, or
labels that waited for their retrieval event. A row restored from a snapshot has one too,
labeled or not, since it has no message to read its ranking from. An entry holds what
scoring reads beyond the row's columns: the ranking (doc ids, effective times), each graded
document's latest grade with its time and source, and the row's current contribution.

SPEC §2 and §3: repeats count once, at their first position; a missing `t_doc` dates from
the query's `ts`, a later one is clamped to `ts`; qrels apply first, then every inline
`rel` in list order, then later labels in arrival order, the latest grade of a document
winning (it keeps the place of its first grade).
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from ragstream.events import DecodedRetrieval, Limits, decode_event

__all__ = [
    "INLINE",
    "QRELS",
    "UNKNOWN",
    "Grade",
    "RowLabels",
    "decoded_again",
    "doubles",
    "labels_of",
]

INLINE = "inline"
"""The source of a retrieval result's own `rel`."""
QRELS = "qrels"
"""The source of a grade in the retrieval event's `qrels`."""
UNKNOWN = "unknown"
"""The source of a grade restored from a snapshot that did not keep sources."""

Grade = tuple[float, float, str]
"""A graded document's (rel, effective time, source)."""

_SCAN = 8
"""Grades looked up by a scan of the ranking each, up to this many (a dictionary beyond)."""


def _effective(t_doc: float | None, ts: float) -> float:
    """SPEC §2: a missing (None, NaN) t_doc dates from ts; a later one is clamped to ts."""
    return ts if t_doc is None or t_doc != t_doc or t_doc > ts else t_doc


def doubles(times: Iterable[float | None]) -> bytes:
    """Times as C doubles, None as NaN (how the table keeps leading document times)."""
    return array("d", [math.nan if t is None else t for t in times]).tobytes()


def decoded_again(raw: bytes) -> DecodedRetrieval:
    """A retrieval event's message decoded again: it was valid once (for the scanner,
    msgspec or the reference), whatever its size."""
    event = decode_event(raw, Limits(max_message_bytes=len(raw)))
    assert isinstance(event, DecodedRetrieval)
    return event


class RowLabels:
    """One labeled row's entry: its ranking, its grades and its contribution."""

    __slots__ = ("contribution", "doc_ids", "doc_times", "expires_at", "grades", "ts")

    def __init__(
        self,
        ts: float,
        expires_at: float,
        doc_ids: tuple[str, ...],
        doc_times: array[float],
        grades: dict[str, Grade] | None = None,
        contribution: NDArray[np.float64] | None = None,
    ) -> None:
        self.ts = ts
        """The query's time."""
        self.expires_at = expires_at
        """When the query is final (a restored row keeps its own)."""
        self.doc_ids = doc_ids
        """The ranking without repeats, in rank order."""
        self.doc_times = doc_times
        """The ranking's effective times (C doubles)."""
        self.grades: dict[str, Grade] = {} if grades is None else grades
        """Doc id -> its latest grade, in the order of each document's first grade."""
        self.contribution = contribution
        """The row the query has in the windows (None before it is scored)."""

    def grade(self, doc_id: str, rel: float, t_doc: float | None, source: str) -> None:
        """Record a grade; the latest wins. The judged document's time is the one sent
        with it, else the one an earlier grade gave, else its time in the ranking, else ts."""
        grades = self.grades
        if t_doc is not None:
            t = _effective(t_doc, self.ts)
        elif doc_id in grades:
            t = grades[doc_id][1]
        else:
            try:
                t = self.doc_times[self.doc_ids.index(doc_id)]
            except ValueError:
                t = self.ts
        grades[doc_id] = (rel, t, source)

    def sources(self) -> dict[str, int]:
        """Graded documents by the source of their latest grade."""
        return dict(Counter(source for _, _, source in self.grades.values()))

    def columns(self) -> tuple[bytes, bytes] | tuple[None, None]:
        """The grades as the scanner grades an event (`Scanned.ranked`, `Scanned.judged`):
        per ranked document its grade (0 unjudged), then its time (a judged one's label
        time); per judged document, in the order of its first grade, its grade, then its
        time. (None, None) without grades."""
        grades = self.grades
        if not grades:
            return None, None
        doc_ids = self.doc_ids
        ranked = array("d", bytes(8 * len(doc_ids)))
        times = array("d", self.doc_times)
        if len(grades) <= _SCAN:
            for doc_id, (rel, t, _) in grades.items():
                if doc_id in doc_ids:
                    at = doc_ids.index(doc_id)
                    ranked[at], times[at] = rel, t
        else:
            where = {doc_id: at for at, doc_id in enumerate(doc_ids)}
            for doc_id, (rel, t, _) in grades.items():
                at = where.get(doc_id, -1)
                if at >= 0:
                    ranked[at], times[at] = rel, t
        judged = array("d", [g[0] for g in grades.values()])
        judged.extend([g[1] for g in grades.values()])
        return (ranked + times).tobytes(), judged.tobytes()


def labels_of(
    event: DecodedRetrieval, ts: float, expires_at: float
) -> tuple[RowLabels, int, bytes]:
    """A row's entry from its decoded retrieval event (its qrels, then its inline labels),
    the number of repeated documents, and its ranking's raw times as C doubles (NaN: not
    given), the row's leading document times."""
    results = event.results
    ids = tuple([doc.doc_id for doc in results])
    if len(set(ids)) == len(ids):  # the usual event: each document once, its own time
        raw_times: Sequence[float | None] = [doc.t_doc for doc in results]
        inline = [(d.doc_id, d.rel, d.t_doc) for d in results if d.rel is not None]
        repeats = 0
    else:
        ranking = event.ranking()
        ids = tuple([doc["doc_id"] for doc in ranking.docs])
        raw_times = [doc.get("t_doc") for doc in ranking.docs]
        inline = list(ranking.labels)
        repeats = ranking.repeats
    times = array("d", [_effective(t, ts) for t in raw_times])
    entry = RowLabels(ts, expires_at, ids, times)
    for qrel in event.qrels or ():
        entry.grade(qrel.doc_id, qrel.rel, qrel.t_doc, QRELS)
    for doc_id, rel, t_doc in inline:
        entry.grade(doc_id, rel, t_doc, INLINE)
    return entry, repeats, doubles(raw_times)
