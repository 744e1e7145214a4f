"""The open queries of one partition as one table: a row per query, its columns side by side.

Every query of the partition has a row, numbered in the order the queries opened (row
numbers never change: the table keeps the number of its first kept row, `base`). The
columns are what every query needs: its id, label set and time (it expires `ttl` later),
the times of its leading documents as C doubles (`tops`, for the mean ages), its message
(`raws`, to read its ranking again if a label comes after all), for an event the scanner
graded (`Scanned.ranked`, `Scanned.judged`) its grades and times as the kernels read them,
and once scored the row it put in the windows (a matrix per batch of rows scored together,
`contribution`).

Most retrieval events never get a label. A row with labels of its own (inline labels the
scanner did not grade, a label that came later) has an entry in the sparse label map
`labels` (`ragstream.join.label_map`): its ranking, its graded documents with the source of
each grade, and its contribution; such a row is scored from its leading document times and
its entry (`labeled_columns`).

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
from ragstream.join.label_map import RowLabels, decoded_again, labels_of
from ragstream.join.view import QueryView

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
        "_fresh_labeled",
        "base",
        "closed",
        "fresh",
        "ids",
        "judged",
        "labels",
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
        """Seconds a row stays open after its time (an entry of `labels` has its own
        `expires_at`)."""
        self.base = 0
        """The number of the first row kept (index 0 of the columns)."""
        self.ids: list[str] = []
        self.labelsets: list[tuple[str, ...]] = []
        self.ts: list[float] = []
        """The queries' times on the clock."""
        self.tops: list[bytes] = []
        """Raw times of each query's leading documents, as the scanner gives them (C
        doubles, NaN: not given; fewer than the cutoff when the ranking is shorter)."""
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
        """The rows the queries without an entry put in the windows: a matrix per run of
        rows scored together, the first of them at the same place in `starts`."""
        self.starts: list[int] = []
        self.closed = bytearray()
        """1 for a final row the caller has read (it may be cut off)."""
        self.labels: dict[int, RowLabels] = {}
        """The sparse label map: row -> its entry, for the rows with labels of their own
        (and the rows restored from a snapshot, which have no message)."""
        self.fresh = 0
        """The first row opened since the last `take_fresh`."""
        self._fresh_labeled: list[int] = []
        """Rows from `fresh` on given an entry (they are not scored from their columns)."""

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
        raws: Sequence[bytes | None],
        tops: Sequence[bytes],
        events: Sequence[Scanned] | None,
        traces: Sequence[str | None] | None = None,
    ) -> int:
        """Rows for retrieval events, in order: their leading document times (C doubles),
        from the scanner's records (`events`; None: none graded) their grades, and their
        trace ids (None: none); returns the first one's number."""
        first, n = self.end, len(ids)
        if traces is not None or self.traces is not None:
            if self.traces is None:
                self.traces = [None] * len(self.ids)
            self.traces += [None] * n if traces is None else traces
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

    def add(
        self,
        query_id: str,
        labelset: tuple[str, ...],
        top: bytes,
        raw: bytes | None,
        entry: RowLabels,
        trace: str | None = None,
    ) -> int:
        """A row for a query with its entry (the entry's `ts`; `raw`: its message, None
        for a row restored from a snapshot) and its trace id (None: none); returns its
        number."""
        traces = None if trace is None else [trace]
        row = self.extend([query_id], [labelset], [entry.ts], [raw], [top], None, traces)
        self.give_labels(row, entry)
        return row

    def give_labels(self, row: int, entry: RowLabels) -> None:
        """Keep ``entry`` as the row's: the row is scored from it from now on, and its
        contribution is the entry's, no longer `values`."""
        self.labels[row] = entry
        if row >= self.fresh:
            self._fresh_labeled.append(row)

    def expires_at(self, row: int) -> float:
        """When the row's query is final."""
        entry = self.labels.get(row)
        return self.ts[row - self.base] + self.ttl if entry is None else entry.expires_at

    def entry(self, row: int) -> RowLabels:
        """The row's entry, given to it first if it has none: its ranking read from its
        message (decoded again), with the grades the scanner read there, and its current
        contribution."""
        entry = self.labels.get(row)
        if entry is None:
            entry = self._entry_of(row)
            self.give_labels(row, entry)
        return entry

    def _entry_of(self, row: int) -> RowLabels:
        """A new entry for a row without one, as `entry` gives it (the table unchanged)."""
        at = row - self.base
        raw = self.raws[at]
        assert raw is not None
        ts = self.ts[at]
        entry = labels_of(decoded_again(raw), ts, ts + self.ttl)[0]
        contribution = self.contribution(row)
        entry.contribution = None if contribution is None else contribution.copy()
        return entry

    # -- reading rows --------------------------------------------------------------------

    def trace(self, row: int) -> str | None:
        """The row's trace id (None: none given)."""
        traces = self.traces
        return None if traces is None else traces[row - self.base]

    def labeled(self, row: int) -> bool:
        """Whether the row has any label."""
        entry = self.labels.get(row)
        if entry is not None:
            return bool(entry.grades)
        ranked = self.ranked
        return ranked is not None and ranked[row - self.base] is not None

    def contribution(self, row: int) -> NDArray[np.float64] | None:
        """The row a query without an entry has in the windows (a view; None before it
        is scored: every row before `fresh` is)."""
        if row >= self.fresh:
            return None
        starts = self.starts
        i = bisect_right(starts, row) - 1
        row_values: NDArray[np.float64] = self.values[i][row - starts[i]]
        return row_values

    def labeled_contribution(self, row: int) -> NDArray[np.float64] | None:
        """The row a query with labels has in the windows (None: no label, or not scored)."""
        entry = self.labels.get(row)
        if entry is not None:
            return entry.contribution if entry.grades else None
        ranked = self.ranked
        if ranked is None or ranked[row - self.base] is None:
            return None
        return self.contribution(row)

    def read(self, row: int) -> QueryView:
        """The row's query as values (copies: the table is not changed)."""
        at = row - self.base
        live = self.labels.get(row)
        entry = None
        if live is not None:
            grades = dict(live.grades)
            entry = RowLabels(
                live.ts, live.expires_at, live.doc_ids, live.doc_times, grades, live.contribution
            )
            contribution = live.contribution
        else:
            if self.labeled(row):
                entry = self._entry_of(row)
            contribution = self.contribution(row)
        return QueryView(
            self.ids[at],
            self.partition,
            self.labelsets[at],
            self.ts[at],
            self.expires_at(row),
            None if contribution is None else contribution.copy(),
            entry,
            self.raws[at],
        )

    # -- scoring -------------------------------------------------------------------------

    def take_fresh(self) -> Rows:
        """The rows opened since the last call that are scored from their columns (not
        given an entry), in order."""
        fresh, end = self.fresh, self.end
        self.fresh = end
        if not self._fresh_labeled:
            return range(fresh, end)
        given = set(self._fresh_labeled)
        self._fresh_labeled = []
        return [row for row in range(fresh, end) if row not in given]

    def columns(
        self, rows: Rows
    ) -> tuple[list[float], list[bytes], list[bytes | None] | None, list[bytes | None] | None]:
        """Times, leading document times and grades (None: no row has any) of rows scored
        from their columns alone."""
        base = self.base
        ranked, judged = self.ranked, self.judged
        if type(rows) is range:
            lo, hi = rows.start - base, rows.stop - base
            tops = self.tops[lo:hi]
            if ranked is not None:
                assert judged is not None
                ranked, judged = ranked[lo:hi], judged[lo:hi]
            return self.ts[lo:hi], tops, ranked, judged
        at = [row - base for row in rows]
        if ranked is not None:
            assert judged is not None
            ranked, judged = [ranked[i] for i in at], [judged[i] for i in at]
        ts, all_tops = self.ts, self.tops
        return [ts[i] for i in at], [all_tops[i] for i in at], ranked, judged

    def labeled_columns(self, row: int) -> tuple[float, bytes, bytes | None, bytes | None]:
        """Time, leading document times and grades (`RowLabels.columns`) of a row with an
        entry."""
        at = row - self.base
        return (self.ts[at], self.tops[at], *self.labels[row].columns())

    def store(self, rows: Rows, values: NDArray[np.float64]) -> None:
        """Keep the contributions of the rows `take_fresh` gave (one row of ``values``
        each, in order)."""
        if not len(rows):
            return
        start = rows[0]
        if type(rows) is not range:  # rows with an entry among them: left NaN here
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
        labels = self.labels
        if labels:
            for row in list(filter(labels.__contains__, rows)):
                del labels[row]

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
