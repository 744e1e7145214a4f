"""Unlabeled queries opened together, kept as columns instead of one object each.

Most retrieval events never get a label: for them the agent needs the query's id (to
recognise a later label or a repeated event), its label set and time, the times of its
leading documents (for one row of the windows, computed for the whole block at once), the
message (to decode the ranking again if a label comes after all) and, once scored, the row
it put in the windows (to take it out again). A `LazyBlock` keeps those as lists and one
array for the queries of one scanned run; the join holds only ``id -> (block, position)``.

A query leaves its block when it gets a label, is looked up, or becomes final: it is then
made an `OpenQuery` (`LazyBlock.query`) with the same state an eagerly opened query has
after scoring, so everything downstream is unchanged.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragstream.join.query import OpenQuery

__all__ = ["LazyBlock", "LazyEntry"]


class LazyBlock:
    """The unlabeled queries of one partition opened in one run, by position."""

    __slots__ = ("labelsets", "partition", "query_ids", "raws", "rows", "tops", "ts", "ttl")

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


LazyEntry = tuple[LazyBlock, int]
"""A query kept in a block: the block and its position there."""
