"""One open query: its ranking, the labels received so far, and what it contributes.

Most retrieval events never get a label before their TTL ends, and for those the
ranking is read only once, for the mean age of the top documents. So a query keeps the
decoded result list as it came (`DecodedDoc` Structs) and builds the deduplicated ranking
-- doc ids and effective document times, a Python step per document -- only when it is
first needed: a label, the metric kernels, or a snapshot. Opening a query costs a few
operations over the list (repeats, inline labels), not one Python step per document.

When the query is opened with its message's bytes (`raw`), it can also let go of the
decoded documents once scored (`release`) and decode the message again in the rare case
it needs them later (a late label, a snapshot). An open query then holds a handful of
objects instead of about a hundred (a Struct, a string and two floats per document), which
matters because every object held for the label TTL is freed long after it was last
touched, at the cost of a cache miss each.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NotRequired, TypedDict, TypeVar

import numpy as np
from numpy.typing import NDArray

from ragstream.events import (
    DecodedDoc,
    DecodedQrel,
    DecodedRetrieval,
    InlineLabel,
    Limits,
    decode_event,
    inline_labels,
)
from ragstream.events.scanner import Scanned

__all__ = ["TOP_DOCS", "DocLike", "OpenQuery", "RankedDoc", "dedupe_ranking"]

TOP_DOCS = 10
"""Document times read at opening (the largest default cutoff): enough for the ages."""


class RankedDoc(TypedDict):
    """A retrieved or judged document as the join reads it (the event's own dicts fit)."""

    doc_id: str
    """The document's id, as the service reported it."""
    t_doc: NotRequired[float | None]
    """The document's own timestamp (Unix seconds), if known."""
    rel: NotRequired[float | None]
    """A graded label sent with the retrieval event, if any."""


DocLike = Mapping[str, Any] | DecodedDoc | DecodedQrel
"""A `RankedDoc`, any mapping with `doc_id` and optional `t_doc` and `rel`, or a decoded
document or qrel (which read like mappings)."""


_Doc = TypeVar("_Doc", bound=DocLike)


def dedupe_ranking(results: Iterable[_Doc]) -> tuple[list[_Doc], int]:
    """Keep each doc id at its first position; return the ranking and the number of repeats."""
    seen: set[str] = set()
    ranking: list[_Doc] = []
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


def _doubles(times: list[float | None]) -> array[float]:
    """The times as C doubles, None as NaN: copied while the decoded floats are in the
    cache, so that reading them for a whole batch later touches one object per query."""
    try:
        return array("d", times)  # type: ignore[arg-type]
    except TypeError:
        return array("d", [math.nan if t is None else t for t in times])


def _decoded_again(raw: bytes) -> DecodedRetrieval:
    """A retrieval event's message decoded again: it was valid once (for the scanner,
    msgspec or the reference), whatever its size."""
    event = decode_event(raw, Limits(max_message_bytes=len(raw)))
    assert isinstance(event, DecodedRetrieval)
    return event


class OpenQuery:
    """A query whose labels may still change until `expires_at` (event time).

    `doc_ids` and `doc_times` (the ranking without repeats) are built from the decoded
    results on first use; `top_doc_times` reads the first documents without building them.
    """

    __slots__ = (
        "_doc_ids",
        "_doc_times",
        "_raw",
        "_raw_times",
        "_results",
        "_top",
        "contribution",
        "expires_at",
        "label_times",
        "labels",
        "labelset",
        "partition",
        "query_id",
        "repeats",
        "ts",
    )

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
    repeats: int
    """How many repeated doc ids the retrieval event carried."""
    labels: dict[str, float]
    """The latest grade received per doc id, from any source."""
    label_times: dict[str, float]
    """Effective document times of judged documents (for decayed ideal rankings)."""
    contribution: NDArray[np.float64] | None
    """The metric row this query currently has in the windows (None before the first)."""

    def __init__(
        self,
        query_id: str,
        partition: int,
        labelset: tuple[str, ...],
        ts: float,
        expires_at: float,
        *,
        results: Sequence[DecodedDoc] | None = (),
        raw: bytes | None = None,
        repeats: int = 0,
        doc_ids: tuple[str, ...] | None = None,
        doc_times: tuple[float, ...] | None = None,
        labels: dict[str, float] | None = None,
        label_times: dict[str, float] | None = None,
        contribution: NDArray[np.float64] | None = None,
    ) -> None:
        """A query from its decoded `results` (ranking built on first use; `raw`, the
        retrieval event's message, lets it decode them again after `release`; None: not
        decoded yet, from `raw` when needed), or from its ranking `doc_ids` and
        `doc_times` (without repeats) when those are given."""
        self.query_id = query_id
        self.partition = partition
        self.labelset = labelset
        self.ts = ts
        self.expires_at = expires_at
        self.repeats = repeats
        self.labels = {} if labels is None else labels
        self.label_times = {} if label_times is None else label_times
        self.contribution = contribution
        if (doc_ids is None) != (doc_times is None):
            raise ValueError("give both doc_ids and doc_times, or neither")
        self._results: Sequence[DecodedDoc] | None = results if doc_ids is None else ()
        self._raw = raw if doc_ids is None else None
        self._doc_ids = doc_ids
        self._doc_times = doc_times
        self._raw_times: memoryview[float] | None = None
        """The ranking's times as the scanner read them (C doubles: NaN missing, maybe
        after ts), until `doc_times` makes them effective; the kernels take them raw."""
        self._top: array[float] | bytes | None = None
        """Raw times of the leading documents: C doubles, as an array or their bytes."""

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
        raw: bytes | None = None,
    ) -> OpenQuery:
        """Open a query from its retrieval event; qrels first, then every inline label in
        list order, a repeated document's included (see `inline_labels`).

        `raw`: the event's message (the JSON the results were decoded from), kept so that
        `release` may drop the decoded documents."""
        try:  # decoded documents (the hot path): attribute reads, no conversion
            grades = {doc.doc_id: doc.rel for doc in results}  # type: ignore[union-attr]
            docs: Sequence[DecodedDoc] = results  # type: ignore[assignment]
        except AttributeError:  # mappings (tests, producers): converted once
            docs = [doc if isinstance(doc, DecodedDoc) else DecodedDoc.of(doc) for doc in results]
            grades = {doc.doc_id: doc.rel for doc in docs}
        unique = len(grades)  # one pass gives the repeats and whether any inline label came
        query = cls(
            query_id,
            partition,
            labelset,
            ts,
            ts + ttl,
            results=docs,
            raw=raw,
            repeats=len(docs) - unique,
        )
        inline: list[InlineLabel] = []
        if unique == len(docs):  # read while the documents are fresh in the cache
            query._top = _doubles([doc.t_doc for doc in docs[:TOP_DOCS]])
            if list(grades.values()).count(None) != unique:  # no repeats: each its own time
                inline = [(d.doc_id, d.rel, d.t_doc) for d in docs if d.rel is not None]
        else:  # every inline rel counts, a repeat's too, with its document's time
            inline = inline_labels([(doc.doc_id, doc.rel, doc.t_doc) for doc in docs])
        for qrel in qrels:  # qrels first: an inline label arrives with the event
            if type(qrel) is DecodedQrel:  # decoded: attributes, and rel is always there
                query.set_label(qrel.doc_id, qrel.rel, qrel.t_doc)
                continue
            rel = qrel.get("rel")
            if rel is not None:
                query.set_label(qrel["doc_id"], rel, qrel.get("t_doc"))
        for doc_id, rel, t_doc in inline:  # in list order: the last of a document wins
            query.set_label(doc_id, rel, t_doc)
        return query

    @classmethod
    def from_scanned(
        cls,
        scanned: Scanned,
        partition: int,
        labelset: tuple[str, ...],
        ts: float,
        ttl: float,
        raw: bytes,
    ) -> OpenQuery:
        """Open a query from a retrieval event read by the compiled scanner (no repeats:
        the scanner declines those, so its inline labels are one per labelled document, each
        with its own time), as `from_retrieval` would from the decoded event.

        It keeps its leading document times (the scanner's C doubles) and the message, the
        state `release` leaves; a labeled one also gets its ranking at once (its labels
        need it now, and the kernels next), then qrels and inline labels as in
        `from_retrieval`. A graded record (`Scanned.ranked`) carries no ids or labels:
        that query is decoded from its message (`from_message`)."""
        if scanned.ranked is not None:  # graded: the labels are read from the message
            return cls.from_message(raw, partition, labelset, ts, ttl)
        query = cls(scanned.query_id, partition, labelset, ts, ts + ttl, results=None, raw=raw)
        query._top = scanned.top  # bytes: cheaper to keep than to convert, read once
        ids = scanned.ids
        if ids is None:
            return query
        query._doc_ids = ids
        times = query._raw_times = memoryview(scanned.times or b"").cast("d")
        grades, label_times = query.labels, query.label_times
        # `set_label` inlined, with `_effective_time` (a call per label costs as much as the
        # rest; C doubles are never None, NaN is the one value unequal to itself): the time
        # sent with a label, else the document's in the ranking, else ts
        for labels in (scanned.qrels, scanned.inline):  # qrels first, as in from_retrieval
            for doc_id, rel, t_doc in labels or ():
                grades[doc_id] = rel
                if t_doc is not None:
                    label_times[doc_id] = ts if t_doc != t_doc or t_doc > ts else t_doc
                elif doc_id not in label_times:
                    try:
                        t = times[ids.index(doc_id)]
                    except ValueError:
                        t = ts
                    label_times[doc_id] = ts if t != t or t > ts else t
        return query

    @classmethod
    def from_message(
        cls, raw: bytes, partition: int, labelset: tuple[str, ...], ts: float, ttl: float
    ) -> OpenQuery:
        """Open a query from a retrieval event's message that was valid once (the compiled
        scanner read it), decoded again: `from_retrieval` of the decoded event."""
        event = _decoded_again(raw)
        return cls.from_retrieval(
            event.query_id,
            partition=partition,
            labelset=labelset,
            ts=ts,
            ttl=ttl,
            results=event.results,
            qrels=event.qrels or (),
            raw=raw,
        )

    def keep_top(self, top: bytes) -> None:
        """Hold the raw times of the leading documents (C doubles, as the scanner gives
        them) until the query is scored, as `from_scanned` does."""
        self._top = top

    def plain_top(self) -> bytes | None:
        """The leading document times as a table row keeps them (C doubles), when the query
        needs no detail: no label, no repeat, its message kept; else None."""
        top = self._top
        if self.labels or self.repeats or self._raw is None or top is None:
            return None
        return bytes(top)

    def _docs(self) -> Sequence[DecodedDoc]:
        """The decoded results, decoded again from the message after `release`."""
        if self._results is None:
            assert self._raw is not None
            self._results = _decoded_again(self._raw).results
        return self._results

    def release(self) -> None:
        """Drop what can be derived from the message again (decoded documents, ranking):
        call it once the query is scored. No effect without the message. A labeled query
        keeps its ranking (doc ids and effective times, not the decoded documents): its
        next label reads it instead of decoding the message again (labeled queries are
        few; the many unlabeled ones drop everything)."""
        if self._raw is None:
            return
        if self.labels:  # `doc_times` builds the ranking (`doc_ids` too) if it is not yet
            self._doc_times = self.doc_times
            self._results, self._top, self._raw_times = (), None, None
            return
        self._results = self._top = self._doc_ids = self._doc_times = None
        self._raw_times = None

    def _rank(self) -> None:
        """Build `doc_ids` and `doc_times` from the results (SPEC §2: repeats count once, at
        their first position; a missing t_doc dates from ts, a later one is clamped to ts)."""
        ts = self.ts
        docs = dedupe_ranking(self._docs())[0] if self.repeats else self._docs()
        self._doc_ids = tuple([doc.doc_id for doc in docs])
        self._doc_times = tuple([_effective_time(doc.t_doc, ts) for doc in docs])
        self._results = ()
        self._top = self._raw_times = None

    @property
    def doc_ids(self) -> tuple[str, ...]:
        """The ranking with repeats removed, in rank order."""
        if self._doc_ids is None:
            self._rank()
        assert self._doc_ids is not None
        return self._doc_ids

    @property
    def doc_times(self) -> tuple[float, ...]:
        """Effective document times of the ranking (missing -> ts, clamped to ts)."""
        if self._doc_times is None:
            raw, ts = self._raw_times, self.ts
            if raw is not None and self._doc_ids is not None:  # `_effective_time` inlined
                self._doc_times = tuple([ts if t != t or t > ts else t for t in raw])
            else:
                self._rank()
        assert self._doc_times is not None
        return self._doc_times

    def top_doc_times(self, width: int) -> Sequence[float | None]:
        """Times of the first `width` documents of the ranking, raw or effective: None or
        NaN means the query's ts, and any time after ts counts as ts (see `doc_times`)."""
        top: Sequence[float] | None
        top = memoryview(self._top).cast("d") if type(self._top) is bytes else self._top
        if top is not None and (width <= TOP_DOCS or len(top) < TOP_DOCS):
            return top[:width] if width < len(top) else top
        if self._doc_times is not None or self._raw_times is not None or self.repeats:
            return self.doc_times[:width]
        return [doc.t_doc for doc in self._docs()[:width]]

    def raw_ranking(self) -> tuple[Sequence[str], Sequence[float | None]]:
        """Doc ids and times of the ranking; the times raw (as in `top_doc_times`) unless
        the ranking has been built. No repeats: the caller need not deduplicate."""
        if self._doc_ids is None and not self.repeats:
            results = self._docs()
            return [doc.doc_id for doc in results], [doc.t_doc for doc in results]
        if self._doc_times is None and self._raw_times is not None and self._doc_ids is not None:
            return self._doc_ids, self._raw_times  # a labeled scanned query, not yet scored
        return self.doc_ids, self.doc_times

    def columns(self, width: int) -> tuple[bytes, bytes | None, bytes | None]:
        """The query as the scorer reads a table's rows: the raw times of its first `width`
        documents (C doubles, NaN: none) and, when it has labels, its grades and times as
        the scanner grades an event (`Scanned.ranked`, `Scanned.judged`): per ranked
        document its grade (0 unjudged), then its time (a judged one's label time); per
        judged document, in the order of its first label, its grade, then its label time."""
        top = self.top_doc_times(width)
        if isinstance(top, memoryview | array):  # C doubles already
            packed = bytes(top)
        else:
            packed = _doubles(list(top)).tobytes()
        labels = self.labels
        if not labels:
            return packed, None, None
        doc_ids, doc_times = self.raw_ranking()
        label_times = self.label_times
        grades = array("d", bytes(8 * len(doc_ids)))
        times = _doubles(list(doc_times))
        for doc_id, at in _positions(doc_ids, labels):
            grades[at] = labels[doc_id]
            times[at] = label_times[doc_id]
        judged = array("d", labels.values())
        judged.extend([label_times[doc_id] for doc_id in labels])
        return packed, (grades + times).tobytes(), judged.tobytes()

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
            str(data["query_id"]),
            int(data["partition"]),
            tuple(str(v) for v in data["labelset"]),
            float(data["ts"]),
            float(data["expires_at"]),
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

    def __repr__(self) -> str:
        return (
            f"OpenQuery(query_id={self.query_id!r}, partition={self.partition}, "
            f"labelset={self.labelset!r}, ts={self.ts!r}, labels={self.labels!r})"
        )


def _positions(doc_ids: Sequence[str], labels: Mapping[str, float]) -> list[tuple[str, int]]:
    """(doc id, rank position) of the judged documents that are in the ranking (which has no
    repeats): a scan of the ranking per label while labels are few, a dictionary beyond."""
    if len(labels) <= _SCAN_LABELS:
        out = []
        for doc_id in labels:
            try:
                out.append((doc_id, doc_ids.index(doc_id)))
            except ValueError:  # judged but not retrieved
                continue
        return out
    where = {doc_id: at for at, doc_id in enumerate(doc_ids)}
    return [(doc_id, where[doc_id]) for doc_id in labels if doc_id in where]


_SCAN_LABELS = 8
