"""When open queries expire: a heap of sorted runs, ordered by expiry time, then by arrival.

Queries of one partition usually open in event-time order with the same TTL, so their
expiry times arrive already sorted. A push that is not earlier than the newest run's last
time extends that run; an earlier one starts a new run. The heap (`heapq`) holds each
run once, keyed by its first entry not yet popped: (time, sequence number), the sequence
number counting pushes, so that ties leave in arrival order. Everything due leaves the
smallest run in one binary search and one slice, as far as the next run's key allows:
with times in order there is one run and a batch costs one step, whatever its size.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from operator import le

__all__ = ["ExpiryQueue"]

_COMPACT = 4096
"""Entries read past a run's head before they are cut from its lists (when they are also
at least half of them): amortised O(1) a pop."""


class _Run:
    """Entries pushed one after another in nondecreasing time order, from `start` on; the
    entry at index i was push number `seq + i`."""

    __slots__ = ("ids", "seq", "start", "times")

    def __init__(self, seq: int) -> None:
        self.times: list[float] = []
        self.ids: list[str] = []
        self.seq = seq
        self.start = 0


_Key = tuple[float, int, _Run]
"""A run in the heap: the time and sequence number of its first entry, then the run."""


class ExpiryQueue:
    """Query ids by expiry time (ties: first pushed first)."""

    __slots__ = ("_heap", "_last", "_len", "_seq")

    def __init__(self) -> None:
        self._heap: list[_Key] = []
        self._last: _Run | None = None
        """The newest run while it is in the heap (pushes may extend it)."""
        self._seq = 0
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def push(self, expires_at: float, query_id: str) -> None:
        self.push_many([expires_at], [query_id])

    def push_many(self, times: Sequence[float], query_ids: Sequence[str]) -> None:
        """`push` of each (time, id) in turn; times already in order (the usual run of a
        partition) extend the newest run in one step."""
        n = len(times)
        if not n:
            return
        if not all(map(le, times, times[1:])):  # out of order: a run each sorted stretch
            for expires_at, query_id in zip(times, query_ids, strict=True):
                self.push_many([expires_at], [query_id])
            return
        run = self._last
        if run is None or times[0] < run.times[-1]:
            run = self._last = _Run(self._seq)
            heapq.heappush(self._heap, (times[0], self._seq, run))
        run.times.extend(times)
        run.ids.extend(query_ids)
        self._seq += n
        self._len += n

    def ids(self) -> list[str]:
        """Every query id in the order they would be popped (pushed again in this order,
        they pop in it)."""
        entries = [
            (t, run.seq + run.start + i, query_id)
            for _, _, run in self._heap
            for i, (t, query_id) in enumerate(
                zip(run.times[run.start :], run.ids[run.start :], strict=True)
            )
        ]
        return [entry[2] for entry in sorted(entries)]

    def pop(self) -> tuple[float, str]:
        """The expiry time and id of the query that expires first (IndexError when
        empty)."""
        run = self._heap[0][2]  # IndexError when empty
        entry = run.times[run.start], run.ids[run.start]
        self._take(run, run.start + 1)
        return entry

    def pop_due(self, t_now: float) -> tuple[list[float], list[str]]:
        """The expiry times and ids of every query that expires before `t_now`, earliest
        first."""
        heap = self._heap
        out_times: list[float] = []
        out_ids: list[str] = []
        while heap and heap[0][0] < t_now:
            run = heap[0][2]
            times, start = run.times, run.start
            if len(heap) == 1:  # the usual case: one run, cut in one step
                stop = bisect_left(times, t_now, start)
            else:  # up to the next run's first entry (ties: the older run first)
                limit, seq, _ = min(heap[1:3])
                if limit >= t_now:
                    stop = bisect_left(times, t_now, start)
                elif run.seq < seq:
                    stop = bisect_right(times, limit, start)
                else:
                    stop = bisect_left(times, limit, start)
            out_times += times[start:stop]
            out_ids += run.ids[start:stop]
            self._take(run, stop)
        return out_times, out_ids

    def _take(self, run: _Run, start: int) -> None:
        """Move the smallest run's head to `start`: out of the heap when it is empty, else
        keyed again by its new head; its lists cut when what it passed is much."""
        self._len -= start - run.start
        if start == len(run.times):
            heapq.heappop(self._heap)
            if run is self._last:
                self._last = None
            return
        if start >= _COMPACT and 2 * start >= len(run.times):
            del run.times[:start], run.ids[:start]
            run.seq += start
            start = 0
        run.start = start
        heapq.heapreplace(self._heap, (run.times[start], run.seq + start, run))
