"""The open queries of one partition as one table: a row per query, its columns side by side.

Every query of the partition has a row, numbered in the order the queries opened (row
numbers never change: the table keeps the number of its first kept row, `base`). The
columns are what every query needs: its id, label set and time (it expires `ttl` later),
and once scored the row it put in the windows (a matrix per batch of rows scored together,
`contribution`; a row with a detail keeps it there instead). Most retrieval
events never get a label: for them the table also keeps the times of the leading documents
as C doubles (`tops`, for the mean ages; from the compiled scanner's record or the decoded
event alike), the message (`raws`, to decode the ranking again if a label comes after all)
and, for an event the scanner graded (`Scanned.ranked`, `Scanned.judged`), its grades and
times as the kernels read them.

A query with labels of its own (inline labels the scanner did not grade, a decoded event
with labels or repeated documents, a label that came later, a snapshot) has an `OpenQuery`
in the sparse map `detail`: its labels, their times and its ranking. Such a row is scored
from the same columns, which its detail gives (`OpenQuery.columns`).

Rows leave from the front: a final row is `closed` once the caller has read it, and the
closed rows before the first open one are cut off when they are many.

With a trace field configured (`ragstream.events.trace_ids`), each row also has its query's
trace id (`traces`, for its exemplars); without, the column is never made.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from operator import attrgetter

import numpy as np
from numpy.typing import NDArray

from ragstream.events.scanner import Scanned
from ragstream.join.query import OpenQuery

__all__ = ["QueryTable", "Rows"]

_RANKED = attrgetter("ranked")
_JUDGED = attrgetter("judged")
_COMPACT = 1024
"""Closed rows at the front before they are cut off (when they are also at least an eighth
of the rows): the closed rows kept meanwhile hold their messages."""

Rows = range | list[int]
"""Row numbers: a run of them, or any in a given order."""


class QueryTable:
    """The open queries of one partition, a row each; see the module docstring."""

    __slots__ = (
        "_fresh_detail",
        "base",
        "closed",
        "detail",
        "fresh",
        "ids",
        "judged",
        "labelsets",
        "partition",
        "ranked",
        "raws",
        "starts",
        "tops",
        "traces",
        "ts",
        "ttl",
        "values",
    )

    def __init__(self, partition: int, ttl: float) -> None:
        self.partition = partition
        self.ttl = ttl
        """Seconds a row without detail stays open after its time (a detail has its own
        `expires_at`)."""
        self.base = 0
        """The number of the first row kept (index 0 of the columns)."""
        self.ids: list[str] = []
        self.labelsets: list[tuple[str, ...]] = []
        self.ts: list[float] = []
        """The queries' times on the clock."""
        self.tops: list[bytes | None] = []
        """Raw times of each query's leading documents, as the scanner gives them (C
        doubles; fewer than the cutoff when the ranking is shorter); None for a row opened
        with its `detail`."""
        self.raws: list[bytes | None] = []
        """Each query's message, to decode its ranking again (None: not kept)."""
        self.ranked: list[bytes | None] | None = None
        """Per row, its grades and times for the kernels as the scanner grades them
        (`Scanned.ranked`), None for a row without; None: no row has any."""
        self.judged: list[bytes | None] | None = None
        """Per row, its judged documents' grades and times (`Scanned.judged`), as
        `ranked`."""
        self.traces: list[str | None] | None = None
        """Per row, its query's trace id from the event's trace field (None for a row
        without); None: no row was given one (the field is not configured)."""
        self.values: list[NDArray[np.float64]] = []
        """The rows the queries without detail put in the windows: a matrix per run of
        rows scored together, the first of them at the same place in `starts`."""
        self.starts: list[int] = []
        self.closed = bytearray()
        """1 for a final row the caller has read (it may be cut off)."""
        self.detail: dict[int, OpenQuery] = {}
        """Row -> its `OpenQuery`, for the rows with labels of their own (see the module
        docstring)."""
        self.fresh = 0
        """The first row opened since the last `take_fresh`."""
        self._fresh_detail: list[int] = []
        """Rows from `fresh` on given a detail (they are not scored from their columns)."""

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def end(self) -> int:
        """The number the next row gets."""
        return self.base + len(self.ids)

    # -- rows in -------------------------------------------------------------------------

    def extend(
        self,
        ids: Sequence[str],
        labelsets: Sequence[tuple[str, ...]],
        ts: Sequence[float],
        raws: Sequence[bytes],
        tops: Sequence[bytes],
        events: Sequence[Scanned] | None,
        traces: Sequence[str | None] | None = None,
    ) -> int:
        """Rows for retrieval events without detail, in order: their leading document times
        (C doubles), from the scanner's records (`events`; None: none graded) their grades,
        and their trace ids (None: none); returns the first one's number."""
        first, n = self.end, len(ids)
        if traces is not None or self.traces is not None:
            self._trace(traces or [None] * n)
        self.ids += ids
        self.labelsets += labelsets
        self.ts += ts
        self.tops += tops
        self.raws += raws
        ranked = [None] * n if events is None else list(map(_RANKED, events))
        if self.ranked is not None or ranked.count(None) < n:
            if self.ranked is None:
                self.ranked, self.judged = (
                    [None] * (len(self.ids) - n),
                    [None] * (len(self.ids) - n),
                )
            assert self.judged is not None
            self.ranked += ranked
            self.judged += [None] * n if events is None else map(_JUDGED, events)
        self.closed += bytes(n)
        return first

    def add(self, query: OpenQuery, trace: str | None = None) -> int:
        """A row for a query opened as an object (its `detail`), with its trace id (None:
        none); returns its number."""
        row = self.end
        if trace is not None or self.traces is not None:
            self._trace([trace])
        self.ids.append(query.query_id)
        self.labelsets.append(query.labelset)
        self.ts.append(query.ts)
        self.tops.append(None)
        self.raws.append(None)
        if self.ranked is not None:
            assert self.judged is not None
            self.ranked.append(None)
            self.judged.append(None)
        self.closed.append(0)
        self.give_detail(row, query)
        return row

    def _trace(self, traces: Sequence[str | None]) -> None:
        """The trace ids of the rows about to be added (before `ids` grows)."""
        if self.traces is None:
            self.traces = [None] * len(self.ids)
        self.traces += traces

    def give_detail(self, row: int, query: OpenQuery) -> None:
        """Keep ``query`` as the row's detail: the row is scored from it from now on, and
        its contribution is the query's (`OpenQuery.contribution`), no longer `rows`."""
        self.detail[row] = query
        if row >= self.fresh:
            self._fresh_detail.append(row)

    # -- reading rows --------------------------------------------------------------------

    def trace(self, row: int) -> str | None:
        """The row's trace id (None: none given)."""
        traces = self.traces
        return None if traces is None else traces[row - self.base]

    def labeled(self, row: int) -> bool:
        """Whether the row has any label."""
        query = self.detail.get(row)
        if query is not None:
            return bool(query.labels)
        ranked = self.ranked
        return ranked is not None and ranked[row - self.base] is not None

    def contribution(self, row: int) -> NDArray[np.float64] | None:
        """The row a query without detail has in the windows (a view; None before it is
        scored: every row before `fresh` is)."""
        if row >= self.fresh:
            return None
        starts = self.starts
        i = bisect_right(starts, row) - 1
        row_values: NDArray[np.float64] = self.values[i][row - starts[i]]
        return row_values

    def labeled_contribution(self, row: int) -> NDArray[np.float64] | None:
        """The row a query with labels has in the windows (None: no label, or not scored)."""
        query = self.detail.get(row)
        if query is not None:
            return query.contribution if query.labels else None
        ranked = self.ranked
        if ranked is None or ranked[row - self.base] is None:
            return None
        return self.contribution(row)

    def query(self, row: int) -> OpenQuery:
        """The row as an `OpenQuery`: its detail, or one made in the state an eagerly
        opened query has (scored: a copy of its row and its message; before that, its
        leading document times to be scored from; one the scanner graded, with its labels
        from its message)."""
        query = self.detail.get(row)
        if query is not None:
            return query
        contribution = self.contribution(row)
        if contribution is not None:
            contribution = contribution.copy()
        at = row - self.base
        ts, raw = self.ts[at], self.raws[at]
        assert raw is not None
        if self.labeled(row):  # its labels from its message, as the scanner read them
            labelset = self.labelsets[at]
            query = OpenQuery.from_message(raw, self.partition, labelset, ts, self.ttl)
            if contribution is not None:
                query.contribution = contribution
                query.release()
            return query
        query = OpenQuery(
            self.ids[at],
            self.partition,
            self.labelsets[at],
            ts,
            ts + self.ttl,
            results=None,
            raw=raw,
            contribution=contribution,
        )
        if contribution is None:
            top = self.tops[at]
            assert top is not None
            query.keep_top(top)
        return query

    # -- scoring -------------------------------------------------------------------------

    def take_fresh(self) -> Rows:
        """The rows opened since the last call that are scored from their columns (not
        given a detail), in order."""
        fresh, end = self.fresh, self.end
        self.fresh = end
        if not self._fresh_detail:
            return range(fresh, end)
        given = set(self._fresh_detail)
        self._fresh_detail = []
        return [row for row in range(fresh, end) if row not in given]

    def columns(
        self, rows: Rows
    ) -> tuple[list[float], list[bytes], list[bytes | None] | None, list[bytes | None] | None]:
        """Times, leading document times and grades (None: no row has any) of rows scored
        from their columns."""
        base = self.base
        ranked, judged = self.ranked, self.judged
        if type(rows) is range:
            lo, hi = rows.start - base, rows.stop - base
            tops = self.tops[lo:hi]
            if ranked is not None:
                assert judged is not None
                ranked, judged = ranked[lo:hi], judged[lo:hi]
            return self.ts[lo:hi], tops, ranked, judged  # type: ignore[return-value]
        at = [row - base for row in rows]
        if ranked is not None:
            assert judged is not None
            ranked, judged = [ranked[i] for i in at], [judged[i] for i in at]
        ts, all_tops = self.ts, self.tops
        return [ts[i] for i in at], [all_tops[i] for i in at], ranked, judged  # type: ignore[misc]

    def store(self, rows: Rows, values: NDArray[np.float64]) -> None:
        """Keep the contributions of the rows `take_fresh` gave (one row of ``values``
        each, in order)."""
        if not len(rows):
            return
        start = rows[0]
        if type(rows) is not range:  # rows with a detail among them: left NaN here
            held = np.full((rows[-1] + 1 - start, values.shape[1]), np.nan)
            held[[row - start for row in rows]] = values
            values = held
        self.starts.append(start)
        self.values.append(values)

    # -- rows out ------------------------------------------------------------------------

    def close(self, rows: Sequence[int]) -> None:
        """The caller has read these final rows: they may be cut off."""
        if not rows:
            return
        at = np.fromiter(rows, dtype=np.int64, count=len(rows)) - self.base
        np.frombuffer(self.closed, dtype=np.uint8)[at] = 1
        detail = self.detail
        if detail:
            for row in list(filter(detail.__contains__, rows)):
                del detail[row]

    def compact(self) -> None:
        """Cut off the closed rows before the first open one, when they are many."""
        cut = self.closed.find(0)
        if cut < 0:
            cut = len(self.ids)
        if cut < _COMPACT or 8 * cut < len(self.ids):
            return
        del self.ids[:cut], self.labelsets[:cut], self.ts[:cut]
        del self.tops[:cut], self.raws[:cut], self.closed[:cut]
        if self.traces is not None:
            del self.traces[:cut]
        if self.ranked is not None:
            assert self.judged is not None
            del self.ranked[:cut], self.judged[:cut]
            if self.ranked.count(None) == len(self.ranked):
                self.ranked = self.judged = None
        self.base += cut
        starts = self.starts
        gone = bisect_right(starts, self.base) - 1  # the matrices wholly before the base
        if gone > 0:
            del starts[:gone], self.values[:gone]
