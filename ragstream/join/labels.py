"""Late relevance labels: open queries with a TTL, early feedback buffered, bounded state.

One `LabelJoin` holds the open queries of one Kafka partition, so that a partition's state
can move between replicas whole. It is pure: the caller passes event times and the clock's
`t_now`, and reads back which queries changed (to recompute their metrics and replace their
contribution in the windows, SPEC §3) and which became final.
"""

from __future__ import annotations

import math
from array import array
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from operator import attrgetter
from typing import Any, cast

import numpy as np

from ragstream.events import DecodedRetrieval
from ragstream.events.scanner import Scanned
from ragstream.join.expiry import ExpiryQueue
from ragstream.join.label_map import UNKNOWN, RowLabels, decoded_again, labels_of
from ragstream.join.openings import Openings
from ragstream.join.recent import RecentFinal
from ragstream.join.table import QueryTable
from ragstream.join.view import QueryView

__all__ = ["JoinCounters", "LabelJoin", "LabelOutcome", "PendingLabel"]

_QUERY_ID = attrgetter("query_id")
_IDS = attrgetter("ids")
_TOP = attrgetter("top")


class LabelOutcome(StrEnum):
    """What happened to one label (feedback) event."""

    APPLIED = "applied"
    """The query was open: its metrics will be recomputed."""
    PENDING = "pending"
    """No retrieval event yet: the label waits for it."""
    LATE = "late"
    """The label's time is past the query's TTL, or the query is already final."""


@dataclass(frozen=True, slots=True)
class PendingLabel:
    """A label that arrived before its retrieval event."""

    doc_id: str
    rel: float
    ts: float
    """The label event's time."""
    arrived: float
    """`t_now` when it arrived; it waits until `arrived + pending_ttl`."""
    t_doc: float | None
    source: str
    """Where the grade comes from (the feedback event's `source`)."""


@dataclass(slots=True)
class JoinCounters:
    """Monotonic counts of what the join did; exported as counters."""

    opened: int = 0
    duplicate_retrievals: int = 0
    labels_applied: int = 0
    labels_pending: int = 0
    labels_late: int = 0
    pending_expired: int = 0
    pending_evicted: int = 0
    open_evicted: int = 0
    finalized: int = 0
    repeated_docs: int = 0

    def as_dict(self) -> dict[str, int]:
        return {name: int(getattr(self, name)) for name in self.__dataclass_fields__}


@dataclass(slots=True)
class LabelJoin:
    """Open queries of one partition and the labels waiting for them.

    `label_ttl`: seconds a query stays open after its retrieval event.
    `pending_ttl`: seconds a label waits for its retrieval event.
    `max_open` / `max_pending`: caps; beyond them the oldest is finalized early or dropped,
    and counted. (Their defaults are the `join` settings'.)

    Final query ids are remembered for `label_ttl` after their query closed (its
    `expires_at`), at most `recent_final` of them (the oldest go first), so that a label or
    a repeated retrieval event for a final query is counted as late or duplicate rather than
    left waiting or reopening it. The horizon is `label_ttl` because that is how long labels
    are expected after a retrieval: a straggler up to twice the TTL after its query is still
    recognised, and the memory is at most rate x `label_ttl` ids, the bound of the open
    queries, whatever the number of events. (`pending_ttl` bounds how long feedback may
    precede its retrieval, not how late it may follow the close.) A label for a forgotten
    id waits `pending_ttl` and expires, like any unmatched label.
    """

    label_ttl: float
    pending_ttl: float
    max_open: int
    max_pending: int
    recent_final: int
    """Final ids remembered at most (the engine gives `max_open`: as many as are open)."""
    partition: int = 0
    """The partition whose queries these are."""
    counters: JoinCounters = field(default_factory=JoinCounters)
    table: QueryTable = field(init=False)
    """The open queries, a row each (`ragstream.join.table`)."""
    _open: dict[str, int] = field(default_factory=dict)
    """Open query id -> its row."""
    _expiry: ExpiryQueue = field(default_factory=ExpiryQueue)
    _pending: OrderedDict[str, list[PendingLabel]] = field(default_factory=OrderedDict)
    _pending_count: int = 0
    _final: RecentFinal = field(init=False)
    """Final query id -> when its query closed, nondecreasing (a late close takes the last
    time), so that expired ids leave from the front."""
    _dirty: dict[int, None] = field(default_factory=dict)
    """Rows opened or relabelled since the last `take_changed`, in arrival order."""
    _final_out: list[int] = field(default_factory=list)
    """Rows final since the last `advance`."""
    _handed: list[int] = field(default_factory=list)
    """Rows the last `advance` gave out (read by the caller since)."""

    def __post_init__(self) -> None:
        if self.label_ttl < 0 or self.pending_ttl < 0:
            raise ValueError("label_ttl and pending_ttl must be >= 0")
        if min(self.max_open, self.max_pending, self.recent_final) < 1:
            raise ValueError("max_open, max_pending and recent_final must be >= 1")
        self._final = RecentFinal(self.recent_final)
        self.table = QueryTable(self.partition, self.label_ttl)

    # -- input ---------------------------------------------------------------

    def open(self, batch: Openings) -> int:
        """Open queries from a run of retrieval events (`Openings`), in arrival order;
        returns how many were duplicates. One call for a run of them: thousands a batch.

        A query is a row of the table; one with labels the scanner did not grade (a
        decoded event's, a scanned record's `ids`) or labels waiting for it also gets an
        entry in the table's label map."""
        events = batch.events
        ids = list(map(_QUERY_ID, events))
        opened, final, pending = self._open, self._final, self._pending
        try:
            tops = list(map(_TOP, events))
        except AttributeError:  # decoded events among them: those one at a time
            return self._open_mixed(batch)
        scanned = cast("Sequence[Scanned]", events)
        if not (
            len(opened) + len(ids) <= self.max_open
            and opened.keys().isdisjoint(ids)
            and final.keys().isdisjoint(ids)
            and (not pending or pending.keys().isdisjoint(ids))
            and len(set(ids)) == len(ids)
            and list(map(_IDS, scanned)).count(None) == len(ids)
        ):  # duplicates, labels waiting or ungraded, the cap: one at a time, in order
            return self._open_each(batch)
        n, ttl, table, times = len(ids), self.label_ttl, self.table, batch.times
        first = table.extend(ids, batch.labelsets, times, batch.raws, tops, scanned, batch.traces)
        rows = range(first, first + n)
        opened.update(zip(ids, rows, strict=True))
        self._dirty.update(dict.fromkeys(rows))
        self._expiry.push_many([t + ttl for t in times], ids)
        self.counters.opened += n
        return 0

    def _open_mixed(self, batch: Openings) -> int:
        """`open` of a run with decoded events: each of them alone, the scanned ones
        between them in one step a stretch, in arrival order."""
        duplicates = start = 0
        for i, event in enumerate([*batch.events, None]):
            if event is not None and type(event) is not DecodedRetrieval:
                continue
            if start < i:
                duplicates += self.open(batch.slice(start, i))
            if event is not None:
                duplicates += self._open_each(batch.slice(i, i + 1))
            start = i + 1
        return duplicates

    def _open_each(self, batch: Openings) -> int:
        """`open` one event at a time (decoded events, duplicates, labels waiting or
        ungraded, the cap)."""
        opened, final, pending = self._open, self._final, self._pending
        ttl, table, counters = self.label_ttl, self.table, self.counters
        events, times, raws = batch.events, batch.times, batch.raws
        labelsets, traces = batch.labelsets, batch.traces
        duplicates = 0
        for i, event in enumerate(events):
            query_id = event.query_id
            if query_id in opened or query_id in final:
                duplicates += 1
                continue
            ts, raw, labelset = times[i], raws[i], labelsets[i]
            trace = None if traces is None else traces[i]
            its_trace = None if trace is None else [trace]  # as `extend` takes it
            waiting = pending.pop(query_id, None) if pending else None
            if type(event) is DecodedRetrieval:
                decoded = event
            else:  # a scanned record: decoded again only for labels it did not grade
                scanned = cast("Scanned", event)
                if scanned.ids is None and not waiting:
                    row = table.extend(
                        [query_id], [labelset], [ts], [raw], [scanned.top], [scanned], its_trace
                    )
                    self._keep(query_id, row, ts + ttl)
                    continue
                decoded = decoded_again(raw)
            entry, repeats, top = labels_of(decoded, ts, ts + ttl)
            counters.repeated_docs += repeats
            for label in waiting or ():
                self._pending_count -= 1
                if label.ts > entry.expires_at:
                    counters.labels_late += 1
                    continue
                entry.grade(label.doc_id, label.rel, label.t_doc, label.source)
                counters.labels_applied += 1
            if entry.grades:
                row = table.add(query_id, labelset, top, raw, entry, trace)
            else:  # no label: a row, its ranking read again from its message if need be
                row = table.extend([query_id], [labelset], [ts], [raw], [top], None, its_trace)
            self._keep(query_id, row, ts + ttl)
        counters.duplicate_retrievals += duplicates
        return duplicates

    def _keep(self, query_id: str, row: int, expires_at: float) -> None:
        """Count a new row and keep it open (the oldest finalized early past `max_open`)."""
        self.counters.opened += 1
        opened = self._open
        opened[query_id] = row
        self._expiry.push(expires_at, query_id)
        self._dirty[row] = None
        while len(opened) > self.max_open:
            self._evict_earliest()

    def label(
        self,
        query_id: str,
        doc_id: str,
        rel: float,
        *,
        ts: float,
        t_now: float,
        t_doc: float | None = None,
        source: str,
    ) -> LabelOutcome:
        """Apply one late label (feedback or judge, from ``source``) in arrival order."""
        row = self._open.get(query_id)
        if row is not None:
            table = self.table
            if ts > table.expires_at(row):
                self.counters.labels_late += 1
                return LabelOutcome.LATE
            table.entry(row).grade(doc_id, rel, t_doc, source)  # scored from it from now on
            self._dirty[row] = None
            self.counters.labels_applied += 1
            return LabelOutcome.APPLIED
        if query_id in self._final:
            self.counters.labels_late += 1
            return LabelOutcome.LATE
        waiting = self._pending.setdefault(query_id, [])
        waiting.append(PendingLabel(doc_id, rel, ts, t_now, t_doc, source))
        self._pending_count += 1
        self.counters.labels_pending += 1
        while self._pending_count > self.max_pending:
            _, dropped = self._pending.popitem(last=False)
            self._pending_count -= len(dropped)
            self.counters.pending_evicted += len(dropped)
        return LabelOutcome.PENDING

    # -- output --------------------------------------------------------------

    def take_changed(self) -> list[int]:
        """The rows opened or relabelled since the last call, in arrival order, each once
        (the caller scores them: `QueryTable.take_fresh` gives those scored from their
        columns, the others have an entry in the table's label map)."""
        changed = list(self._dirty)
        self._dirty.clear()
        return changed

    def advance(self, t_now: float) -> list[int]:
        """Finalize queries whose TTL ended before `t_now` and expire waiting labels.

        Returns the rows of the table of every query that became final since the last
        call, including those evicted early by `max_open`, valid to read until the next
        call. Call it after the changed queries have been scored, so that each final row
        has its last contribution."""
        self.table.close(self._handed)
        self.table.compact()
        self._expire(t_now)
        final, self._final_out = self._final_out, []
        self._handed = final
        return final

    def _expire(self, t_now: float) -> None:
        """Finalize the queries due at `t_now` (out to `_final_out`) and expire waiting
        labels."""
        closed, due = self._expiry.pop_due(t_now)
        self._close(due, closed)
        self._final.forget_before(t_now - self.label_ttl)
        while self._pending:
            query_id, waiting = next(iter(self._pending.items()))
            if waiting[0].arrived + self.pending_ttl >= t_now:
                break
            del self._pending[query_id]
            self._pending_count -= len(waiting)
            self.counters.pending_expired += len(waiting)

    def _close(self, query_ids: list[str], closed: list[float]) -> None:
        """Finalize these open queries, which expire at these times (in this order): out to
        the caller, their ids remembered (a few bulk steps: thousands a batch)."""
        if not query_ids:
            return
        self._final_out += map(self._open.pop, query_ids)
        self._final.add(query_ids, closed)
        self.counters.finalized += len(query_ids)

    def _evict_earliest(self) -> None:
        """Finalize the query that expires first, before its time (`max_open` reached)."""
        expires_at, query_id = self._expiry.pop()
        self._close([query_id], [expires_at])
        self.counters.open_evicted += 1

    # -- introspection and state --------------------------------------------

    @property
    def open_count(self) -> int:
        return len(self._open)

    @property
    def kept_count(self) -> int:
        """Open queries without an entry in the label map (counted in `open_count` too)."""
        labels = self.table.labels
        return sum(row not in labels for row in self._open.values())

    @property
    def pending_count(self) -> int:
        return self._pending_count

    def holds(self, query_id: str) -> bool:
        """Whether the query is open here."""
        return query_id in self._open

    def get(self, query_id: str) -> QueryView | None:
        """The open query with this id, read (`QueryTable.read`: no state changes)."""
        row = self._open.get(query_id)
        if row is None:
            return None
        return self.table.read(row)

    def snapshot(self) -> dict[str, Any]:
        """A JSON-friendly copy of the state; take dirty and final queries first. With
        trace ids in the table, `traces` maps each open query id that has one to it."""
        table, opened = self.table, self._open
        read = table.read
        snapshot: dict[str, Any] = {
            "label_ttl": self.label_ttl,
            "pending_ttl": self.pending_ttl,
            "max_open": self.max_open,
            "max_pending": self.max_pending,
            "recent_final": self.recent_final,
            "counters": self.counters.as_dict(),
            "open": [_open_record(read(opened[q])) for q in self._expiry.ids()],
            "pending": {
                qid: [[p.doc_id, p.rel, p.ts, p.arrived, p.t_doc, p.source] for p in waiting]
                for qid, waiting in self._pending.items()
            },
            "final": self._final.items(),
        }
        if table.traces is not None:  # open query id -> its trace id, for those with one
            traces = {q: table.trace(opened[q]) for q in self._expiry.ids()}
            snapshot["traces"] = {q: t for q, t in traces.items() if t is not None}
        return snapshot

    @classmethod
    def restore(cls, data: Mapping[str, Any], partition: int = 0) -> LabelJoin:
        """Rebuild a join of this partition from `snapshot()` output (an older one's
        grades and waiting labels without sources get `unknown`)."""
        join = cls(
            label_ttl=float(data["label_ttl"]),
            pending_ttl=float(data["pending_ttl"]),
            max_open=int(data["max_open"]),
            max_pending=int(data["max_pending"]),
            recent_final=int(data["recent_final"]),
            partition=partition,
            counters=JoinCounters(**data["counters"]),
        )
        table = join.table
        traces = data.get("traces", {})  # absent: none (or an older snapshot)
        for item in data["open"]:
            query_id, entry = str(item["query_id"]), _restored(item)
            labelset = tuple(str(v) for v in item["labelset"])
            trace = traces.get(query_id)
            join._open[query_id] = table.add(
                query_id,
                labelset,
                entry.doc_times.tobytes(),
                None,
                entry,
                None if trace is None else str(trace),
            )
            join._expiry.push(entry.expires_at, query_id)
        table.take_fresh()  # scored: each has its row in the windows
        for qid, waiting in data["pending"].items():
            join._pending[qid] = [_pending(*label) for label in waiting]
            join._pending_count += len(waiting)
        final = data["final"]  # made nondecreasing by `add`, also from older snapshots
        join._final.add([str(q) for q, _ in final], [float(e) for _, e in final])
        return join


def _open_record(query: QueryView) -> dict[str, Any]:
    """An open query as the snapshot keeps it (the contribution as a list, NaN as null)."""
    contribution = query.contribution
    grades = query.entry.grades if query.entry is not None else {}
    return {
        "query_id": query.query_id,
        "labelset": list(query.labelset),
        "ts": query.ts,
        "expires_at": query.expires_at,
        "doc_ids": list(query.doc_ids),
        "doc_times": list(query.doc_times),
        "labels": {doc_id: g[0] for doc_id, g in grades.items()},
        "label_times": {doc_id: g[1] for doc_id, g in grades.items()},
        "sources": {doc_id: g[2] for doc_id, g in grades.items()},
        "contribution": None
        if contribution is None
        else [None if v != v else v for v in contribution.tolist()],
    }


def _restored(item: Mapping[str, Any]) -> RowLabels:
    """The entry of an open query from its snapshot record (`_open_record`)."""
    times = item["label_times"]
    sources = item.get("sources") or {}  # absent from older snapshots
    contribution = item["contribution"]
    return RowLabels(
        float(item["ts"]),
        float(item["expires_at"]),
        tuple(str(d) for d in item["doc_ids"]),
        array("d", [float(t) for t in item["doc_times"]]),
        {
            str(d): (float(rel), float(times[d]), str(sources.get(d, UNKNOWN)))
            for d, rel in item["labels"].items()
        },
        None
        if contribution is None
        else np.array([math.nan if v is None else v for v in contribution], dtype=np.float64),
    )


def _pending(
    doc_id: str, rel: float, ts: float, arrived: float, t_doc: float | None, source: str = UNKNOWN
) -> PendingLabel:
    """A waiting label from its snapshot record (older ones have no source)."""
    return PendingLabel(
        str(doc_id),
        float(rel),
        float(ts),
        float(arrived),
        None if t_doc is None else float(t_doc),
        str(source),
    )
