"""Queries opened together, kept as columns instead of one object each.

Most retrieval events never get a label: for them the agent needs the query's id (to
recognise a later label or a repeated event), its label set and time, the times of its
leading documents (for one row of the windows, computed for the whole block at once), the
message (to decode the ranking again if a label comes after all) and, once scored, the row
it put in the windows (to take it out again). A `LazyBlock` keeps those as lists and one
array for the queries of one scanned run; the join holds only ``id -> (block, position)``.

Events that come with their labels (qrels, inline grades) stay in the block too when the
compiled scanner grades them (`Scanned.ranked`, `Scanned.judged`: per document its grade
and time, as C doubles): the block is scored with the kernels from those, and such a
query, when it becomes final, gives its row from the block.

A query leaves its block when it gets a label, is looked up, or becomes final where the
caller wants objects: it is then made an `OpenQuery` (`LazyBlock.query`; a graded one
from its message, decoded again) with the same state an eagerly opened query has after
scoring, so everything downstream is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

import numpy as np
from numpy.typing import NDArray

from ragstream.events.scanner import Scanned
from ragstream.join.query import OpenQuery

__all__ = ["LazyBlock", "LazyEntry"]

_RANKED = attrgetter("ranked")
_JUDGED = attrgetter("judged")


class LazyBlock:
    """The queries of one partition opened in one run, by position: unlabeled ones, and
    (when the scanner grades them) those that came with labels."""

    __slots__ = (
        "judged",
        "labelsets",
        "partition",
        "query_ids",
        "ranked",
        "raws",
        "rows",
        "tops",
        "ts",
        "ttl",
    )

    def __init__(self, partition: int, ttl: float) -> None:
        self.partition = partition
        self.ttl = ttl
        self.query_ids: list[str] = []
        self.labelsets: list[tuple[str, ...]] = []
        self.ts: list[float] = []
        """The queries' times on the clock."""
        self.tops: list[bytes] = []
        """Raw times of each query's leading documents, as the scanner gives them (C
        doubles; fewer than the cutoff when the ranking is shorter)."""
        self.raws: list[bytes] = []
        """Each query's message, to decode its ranking again."""
        self.ranked: list[bytes | None] | None = None
        """Per query, its grades and times for the kernels as the scanner grades them
        (`Scanned.ranked`), None for a query without labels; None: no query has any."""
        self.judged: list[bytes | None] | None = None
        """Per query, its judged documents' grades and times (`Scanned.judged`), as
        `ranked`."""
        self.rows: NDArray[np.float64] | None = None
        """The row each query put in the windows (None until the block is scored)."""

    def __len__(self) -> int:
        return len(self.query_ids)

    def query(self, at: int) -> OpenQuery:
        """The query at position ``at`` as an `OpenQuery`, in the state an eagerly opened
        query has: scored (its row, its message) or, before the block is scored, holding
        its leading document times to be scored from."""
        ts = self.ts[at]
        rows = self.rows
        if self.labeled(at):  # its labels from its message, as the scanner read them
            query = OpenQuery.from_message(
                self.raws[at], self.partition, self.labelsets[at], ts, self.ttl
            )
            if rows is not None:
                query.contribution = rows[at].copy()
                query.release()
            return query
        query = OpenQuery(
            self.query_ids[at],
            self.partition,
            self.labelsets[at],
            ts,
            ts + self.ttl,
            results=None,
            raw=self.raws[at],
            contribution=None if rows is None else rows[at].copy(),
        )
        if rows is None:
            query.keep_top(self.tops[at])
        return query

    def grade(self, scanned: Sequence[Scanned]) -> None:
        """Keep the grades of the block's queries from their scanned records, in the
        block's order (`ranked` and `judged` stay None when none has any)."""
        ranked = list(map(_RANKED, scanned))
        if ranked.count(None) < len(ranked):
            self.ranked = ranked
            self.judged = list(map(_JUDGED, scanned))

    def append(
        self, query_id: str, labelset: tuple[str, ...], ts: float, raw: bytes, scanned: Scanned
    ) -> None:
        """Keep one more query (its scanned record gives its leading document times, and
        its grades when it has any)."""
        if scanned.ranked is not None and self.ranked is None:
            self.ranked = [None] * len(self.query_ids)
            self.judged = [None] * len(self.query_ids)
        if self.ranked is not None:
            assert self.judged is not None
            self.ranked.append(scanned.ranked)
            self.judged.append(scanned.judged)
        self.query_ids.append(query_id)
        self.labelsets.append(labelset)
        self.ts.append(ts)
        self.tops.append(scanned.top)
        self.raws.append(raw)

    def labeled(self, at: int) -> bool:
        """Whether the query at position ``at`` came with labels."""
        ranked = self.ranked
        return ranked is not None and ranked[at] is not None


LazyEntry = tuple[LazyBlock, int]
"""A query kept in a block: the block and its position there."""
