"""Late relevance labels: open queries with a TTL, early feedback buffered, bounded state.

One `LabelJoin` holds the open queries of one Kafka partition, so that a partition's state
can move between replicas whole. It is pure: the caller passes event times and the clock's
`t_now`, and reads back which queries changed (to recompute their metrics and replace their
contribution in the windows, SPEC §3) and which became final.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import repeat
from operator import attrgetter
from typing import Any

from ragstream.events.scanner import Scanned
from ragstream.join.block import LazyBlock, LazyEntry
from ragstream.join.expiry import ExpiryQueue
from ragstream.join.query import DocLike, OpenQuery
from ragstream.join.recent import RecentFinal

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
    t_doc: float | None = None


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
    counters: JoinCounters = field(default_factory=JoinCounters)
    _open: dict[str, OpenQuery] = field(default_factory=dict)
    _expiry: ExpiryQueue = field(default_factory=ExpiryQueue)
    _pending: OrderedDict[str, list[PendingLabel]] = field(default_factory=OrderedDict)
    _pending_count: int = 0
    _final: RecentFinal = field(init=False)
    """Final query id -> when its query closed, nondecreasing (a late close takes the last
    time), so that expired ids leave from the front."""
    _lazy: dict[str, LazyEntry] = field(default_factory=dict)
    """Open queries kept in blocks (unlabeled ones from scanned runs), by id."""
    _fresh: list[LazyBlock] = field(default_factory=list)
    """Blocks opened since the last `take_changed` (not scored yet)."""
    _dirty: dict[str, OpenQuery | LazyEntry] = field(default_factory=dict)
    _final_out: list[OpenQuery | LazyEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.label_ttl < 0 or self.pending_ttl < 0:
            raise ValueError("label_ttl and pending_ttl must be >= 0")
        if min(self.max_open, self.max_pending, self.recent_final) < 1:
            raise ValueError("max_open, max_pending and recent_final must be >= 1")
        self._final = RecentFinal(self.recent_final)

    # -- input ---------------------------------------------------------------

    def open(
        self,
        query_id: str,
        *,
        partition: int,
        labelset: tuple[str, ...],
        ts: float,
        results: Sequence[DocLike],
        qrels: Sequence[DocLike] = (),
        raw: bytes | None = None,
    ) -> OpenQuery | None:
        """Open a query from its retrieval event; None if it is a duplicate.

        `raw`: the event's message, so that the query may drop its decoded documents once
        scored (see `OpenQuery.release`)."""
        if self._known(query_id):
            return None
        query = OpenQuery.from_retrieval(
            query_id,
            partition=partition,
            labelset=labelset,
            ts=ts,
            ttl=self.label_ttl,
            results=results,
            qrels=qrels,
            raw=raw,
        )
        self._register(query)
        return query

    def open_scanned(
        self,
        partition: int,
        events: Sequence[Scanned],
        labelsets: Sequence[tuple[str, ...]] | None,
        times: Sequence[float],
        raws: Sequence[bytes],
        *,
        lazy: bool = True,
    ) -> int:
        """`open` for retrieval events read by the compiled scanner, in arrival order: the
        events, their label sets (None: all ``()``), their times on the clock and their
        messages; returns how many were duplicates. One call for a run of them: thousands a
        batch.

        ``lazy``: keep the queries without any label (and no label waiting) in a
        `LazyBlock`, scored for the whole block (`take_changed`); the caller says whether
        the leading document times the scanner keeps are all its scoring reads."""
        ids = list(map(_QUERY_ID, events))
        if labelsets is None:
            labelsets = [()] * len(ids)
        opened, final, pending, kept = self._open, self._final, self._pending, self._lazy
        if (
            len(opened) + len(kept) + len(ids) <= self.max_open
            and opened.keys().isdisjoint(ids)
            and kept.keys().isdisjoint(ids)
            and final.keys().isdisjoint(ids)
            and (not pending or pending.keys().isdisjoint(ids))
            and len(set(ids)) == len(ids)
        ):  # the usual run: all new, no label waiting, room for all
            self._open_new(partition, events, ids, labelsets, times, raws, lazy)
            return 0
        new, ttl, register = OpenQuery.from_scanned, self.label_ttl, self._register
        push, dirty, cap = self._expiry.push, self._dirty, self.max_open
        duplicates = direct = 0
        block: LazyBlock | None = None
        for scanned, query_id, labelset, ts, raw in zip(
            events, ids, labelsets, times, raws, strict=True
        ):
            if query_id in opened or query_id in final or query_id in kept:
                duplicates += 1
                continue
            if (
                lazy
                and scanned.ids is None  # no label came with it, or graded ones
                and len(opened) + len(kept) < cap
                and not (pending and query_id in pending)
            ):
                if block is None:
                    block = LazyBlock(partition, ttl)
                    self._fresh.append(block)
                entry = (block, len(block.query_ids))
                block.append(query_id, labelset, ts, raw, scanned)
                kept[query_id] = dirty[query_id] = entry
                push(ts + ttl, query_id)
                direct += 1
                continue
            query = new(scanned, partition, labelset, ts, ttl, raw)
            if pending or len(opened) + len(kept) >= cap:
                register(query)
                continue
            # `_register` when no label waits and the cap is not reached (the scanner
            # declines repeated documents, so there are none to count)
            opened[query_id] = query
            push(query.expires_at, query_id)
            dirty[query_id] = query
            direct += 1
        counters = self.counters
        counters.duplicate_retrievals += duplicates
        counters.opened += direct
        return duplicates

    def _open_new(
        self,
        partition: int,
        events: Sequence[Scanned],
        ids: list[str],
        labelsets: Sequence[tuple[str, ...]],
        times: Sequence[float],
        raws: Sequence[bytes],
        lazy: bool,
    ) -> None:
        """`open_scanned` of a run of new queries, when none has a label waiting and all fit
        under the cap: the same state as one at a time, built with a few bulk steps (the
        unlabeled queries' block lists, ``kept`` and ``_dirty`` updated from them, the
        expiry times pushed together); only labeled queries become objects."""
        n, ttl = len(ids), self.label_ttl
        if lazy:  # the queries that came with their labels as objects (not graded)
            eager = [i for i, got in enumerate(map(_IDS, events)) if got is not None]
        else:
            eager = list(range(n))
        values: list[OpenQuery | LazyEntry]
        if len(eager) < n:
            block = LazyBlock(partition, ttl)
            self._fresh.append(block)
            if not eager:  # the run of unlabeled queries
                lazy_at: Sequence[int] = range(n)
                block.query_ids, block.labelsets = ids, list(labelsets)
                block.ts, block.raws = list(times), list(raws)
                block.tops = list(map(_TOP, events))
                block.grade(events)
            else:
                taken = set(eager)
                lazy_at = [i for i in range(n) if i not in taken]
                block.query_ids = [ids[i] for i in lazy_at]
                block.labelsets = [labelsets[i] for i in lazy_at]
                block.ts = [times[i] for i in lazy_at]
                block.raws = [raws[i] for i in lazy_at]
                kept_events = [events[i] for i in lazy_at]
                block.tops = list(map(_TOP, kept_events))
                block.grade(kept_events)
            entries = list(zip(repeat(block), range(len(lazy_at))))
            self._lazy.update(zip(block.query_ids, entries, strict=True))
            if not eager:
                values = entries  # type: ignore[assignment]
            else:
                values = [None] * n  # type: ignore[list-item]
                for at, entry in zip(lazy_at, entries, strict=True):
                    values[at] = entry
        else:
            values = [None] * n  # type: ignore[list-item]
        new, opened = OpenQuery.from_scanned, self._open
        for i in eager:
            query = values[i] = new(events[i], partition, labelsets[i], times[i], ttl, raws[i])
            opened[ids[i]] = query
        self._dirty.update(zip(ids, values, strict=True))
        self._expiry.push_many([t + ttl for t in times], ids)
        self.counters.opened += n

    def _known(self, query_id: str) -> bool:
        """Whether a retrieval event for this query came before (counted as a duplicate)."""
        if query_id in self._open or query_id in self._final or query_id in self._lazy:
            self.counters.duplicate_retrievals += 1
            return True
        return False

    def _register(self, query: OpenQuery) -> None:
        """Count a new query, apply the labels that waited for it, and keep it open."""
        counters, query_id = self.counters, query.query_id
        counters.opened += 1
        if query.repeats:
            counters.repeated_docs += query.repeats
        if self._pending:
            for label in self._pending.pop(query_id, ()):
                self._pending_count -= 1
                if label.ts > query.expires_at:
                    counters.labels_late += 1
                    continue
                query.set_label(label.doc_id, label.rel, label.t_doc)
                counters.labels_applied += 1
        opened = self._open
        opened[query_id] = query
        self._expiry.push(query.expires_at, query_id)
        self._dirty[query_id] = query
        while len(opened) + len(self._lazy) > self.max_open:
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
    ) -> LabelOutcome:
        """Apply one late label (feedback or judge) in arrival order."""
        query = self._open.get(query_id)
        if query is None and query_id in self._lazy:
            query = self._unblock(query_id)
        if query is not None:
            if ts > query.expires_at:
                self.counters.labels_late += 1
                return LabelOutcome.LATE
            query.set_label(doc_id, rel, t_doc)
            self._dirty[query_id] = query
            self.counters.labels_applied += 1
            return LabelOutcome.APPLIED
        if query_id in self._final:
            self.counters.labels_late += 1
            return LabelOutcome.LATE
        waiting = self._pending.setdefault(query_id, [])
        waiting.append(PendingLabel(doc_id, rel, ts, t_now, t_doc))
        self._pending_count += 1
        self.counters.labels_pending += 1
        while self._pending_count > self.max_pending:
            _, dropped = self._pending.popitem(last=False)
            self._pending_count -= len(dropped)
            self.counters.pending_evicted += len(dropped)
        return LabelOutcome.PENDING

    # -- output --------------------------------------------------------------

    def take_dirty(self) -> list[OpenQuery]:
        """Queries opened or relabelled since the last call (each once), in arrival order,
        when none was opened in a block (`open`, `open_scanned(lazy=False)`); else see
        `take_changed`, which also returns the blocks to score."""
        if self._fresh:
            raise RuntimeError("queries were opened in blocks: take them with take_changed")
        changed, _ = self.take_changed()
        return changed  # type: ignore[return-value]  # no block: every item is a query

    def take_changed(self) -> tuple[list[OpenQuery | LazyEntry], list[LazyBlock]]:
        """What changed since the last call, in arrival order, each once: queries opened or
        relabelled, and (block, position) for the queries opened in a block; and the blocks
        opened since, whose `rows` the caller sets when it scores them."""
        changed = list(self._dirty.values())
        self._dirty.clear()
        fresh, self._fresh = self._fresh, []
        return changed, fresh

    def _unblock(self, query_id: str) -> OpenQuery:
        """The query kept in a block as an open `OpenQuery` (a label came for it);
        changed when its block has not been scored, so that it is scored as one."""
        block, at = self._lazy.pop(query_id)
        query = self._open[query_id] = block.query(at)
        if block.rows is None:
            self._dirty[query_id] = query
        return query

    def advance(self, t_now: float, *, unlabeled: bool = True) -> list[OpenQuery]:
        """Finalize queries whose TTL ended before `t_now` and expire waiting labels.

        Returns every query that became final since the last call, including those evicted
        early by `max_open`; ``unlabeled=False``: only those with a label (the rest are
        finalized and counted all the same, without an object each). Call it after the
        changed queries have been scored, so that each final query carries its last
        contribution.
        """
        if not unlabeled:
            return [
                item[0].query(item[1]) if type(item) is tuple else item  # type: ignore[misc]
                for item in self.advance_labeled(t_now)
            ]
        self._expire(t_now)
        final, self._final_out = self._final_out, []
        return [item[0].query(item[1]) if type(item) is tuple else item for item in final]  # type: ignore[misc]

    def advance_labeled(self, t_now: float) -> list[OpenQuery | LazyEntry]:
        """`advance(unlabeled=False)` without making objects of the labeled queries kept
        in blocks: those come as (block, position), their rows in the block's `rows`."""
        self._expire(t_now)
        final, self._final_out = self._final_out, []
        out: list[OpenQuery | LazyEntry] = []
        for item in final:
            if type(item) is tuple:
                ranked = item[0].ranked  # `LazyBlock.labeled`, inlined: thousands a batch
                if ranked is not None and ranked[item[1]] is not None:
                    out.append(item)
            elif item.labels:  # type: ignore[union-attr]
                out.append(item)
        return out

    def _expire(self, t_now: float) -> None:
        """Finalize the queries due at `t_now` (out to `_final_out`) and expire waiting
        labels."""
        closed, due = self._expiry.pop_due_timed(t_now)
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
        items: list[OpenQuery | LazyEntry | None] = list(
            map(self._lazy.pop, query_ids, repeat(None))
        )
        if None in items:  # objects: labeled, or left their block
            opened = self._open
            for at, item in enumerate(items):
                if item is None:
                    items[at] = opened.pop(query_ids[at])
        self._final_out.extend(items)  # type: ignore[arg-type]
        self._final.add(query_ids, closed)
        self.counters.finalized += len(query_ids)

    def _evict_earliest(self) -> None:
        """Finalize the query that expires first, before its time (`max_open` reached)."""
        expires_at, query_id = self._expiry.pop_timed()
        self._close([query_id], [expires_at])
        self.counters.open_evicted += 1

    # -- introspection and state --------------------------------------------

    @property
    def open_count(self) -> int:
        return len(self._open) + len(self._lazy)

    @property
    def kept_count(self) -> int:
        """Open queries kept in blocks (counted in `open_count` too)."""
        return len(self._lazy)

    @property
    def pending_count(self) -> int:
        return self._pending_count

    def holds(self, query_id: str) -> bool:
        """Whether the query is open here (as an object or kept in a block)."""
        return query_id in self._open or query_id in self._lazy

    def get(self, query_id: str) -> OpenQuery | None:
        """The open query with this id; a read only: one kept in a block stays there and
        is given as a copy in the state an eagerly opened query has (`LazyBlock.query`)."""
        query = self._open.get(query_id)
        if query is None and query_id in self._lazy:
            block, at = self._lazy[query_id]
            query = block.query(at)
        return query

    def snapshot(self) -> dict[str, Any]:
        """A JSON-friendly copy of the state; take dirty and final queries first."""
        return {
            "label_ttl": self.label_ttl,
            "pending_ttl": self.pending_ttl,
            "max_open": self.max_open,
            "max_pending": self.max_pending,
            "recent_final": self.recent_final,
            "counters": self.counters.as_dict(),
            "open": [self._snapshot_of(q) for q in self._expiry.ids()],
            "pending": {
                qid: [[p.doc_id, p.rel, p.ts, p.arrived, p.t_doc] for p in waiting]
                for qid, waiting in self._pending.items()
            },
            "final": self._final.items(),
        }

    def _snapshot_of(self, query_id: str) -> dict[str, Any]:
        """One open query's snapshot, a query kept in a block left there."""
        query = self.get(query_id)
        assert query is not None
        return query.snapshot()

    @classmethod
    def restore(cls, data: Mapping[str, Any]) -> LabelJoin:
        """Rebuild a join from `snapshot()` output."""
        join = cls(
            label_ttl=float(data["label_ttl"]),
            pending_ttl=float(data["pending_ttl"]),
            max_open=int(data["max_open"]),
            max_pending=int(data["max_pending"]),
            recent_final=int(data["recent_final"]),
            counters=JoinCounters(**data["counters"]),
        )
        for item in data["open"]:
            query = OpenQuery.restore(item)
            join._open[query.query_id] = query
            join._expiry.push(query.expires_at, query.query_id)
        for qid, waiting in data["pending"].items():
            join._pending[qid] = [
                PendingLabel(str(d), float(r), float(ts), float(a), None if t is None else float(t))
                for d, r, ts, a, t in waiting
            ]
            join._pending_count += len(waiting)
        final = data["final"]  # made nondecreasing by `add`, also from older snapshots
        join._final.add([str(q) for q, _ in final], [float(e) for _, e in final])
        return join
