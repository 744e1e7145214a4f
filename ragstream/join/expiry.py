"""When open queries expire: a queue ordered by expiry time, cheap when times come in order.

Queries of one partition usually open in event-time order with the same TTL, so their
expiry times arrive already sorted. Those go to a FIFO (parallel lists of times, sequence
numbers and ids, read from a moving head: pushes append, and everything due leaves in one
binary search and one slice); only a time earlier than the FIFO's last goes to a binary
heap. The earliest entry is the smaller of the two heads, so the order is exact whatever
the arrival order: by expiry time, then by arrival (a sequence number breaks ties, in both
parts alike).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Sequence
from operator import le

__all__ = ["ExpiryQueue"]

_Entry = tuple[float, int, str]
"""(expires_at, sequence number, query id)"""
_COMPACT = 4096
"""Entries read past the FIFO's head before they are cut from its lists (when they are
also at least half of them): amortised O(1) a pop."""


class ExpiryQueue:
    """Query ids by expiry time (ties: first pushed first)."""

    __slots__ = ("_heap", "_ids", "_seq", "_seqs", "_start", "_times")

    def __init__(self) -> None:
        self._times: list[float] = []
        """The FIFO: entries pushed in nondecreasing time order (each at least the one
        before), from `_start` on."""
        self._seqs: list[int] = []
        self._ids: list[str] = []
        self._start = 0
        self._heap: list[_Entry] = []
        """Entries that came earlier than the FIFO's last."""
        self._seq = 0

    def __len__(self) -> int:
        return len(self._times) - self._start + len(self._heap)

    def push(self, expires_at: float, query_id: str) -> None:
        times = self._times
        if len(times) == self._start or expires_at >= times[-1]:
            times.append(expires_at)
            self._seqs.append(self._seq)
            self._ids.append(query_id)
        else:
            heapq.heappush(self._heap, (expires_at, self._seq, query_id))
        self._seq += 1

    def push_many(self, times: Sequence[float], query_ids: Sequence[str]) -> None:
        """`push` of each (time, id) in turn; times already in order (the usual run of a
        partition) go to the FIFO in one step."""
        fifo, n = self._times, len(times)
        if (
            n
            and (len(fifo) == self._start or times[0] >= fifo[-1])
            and all(map(le, times, times[1:]))
        ):
            fifo.extend(times)
            self._seqs.extend(range(self._seq, self._seq + n))
            self._ids.extend(query_ids)
            self._seq += n
            return
        push = self.push
        for expires_at, query_id in zip(times, query_ids, strict=True):
            push(expires_at, query_id)

    def ids(self) -> list[str]:
        """Every query id in the order they would be popped (pushed again in this order,
        they pop in it)."""
        start = self._start
        fifo = zip(self._times[start:], self._seqs[start:], self._ids[start:], strict=True)
        return [entry[2] for entry in sorted([*fifo, *self._heap])]

    def pop(self) -> tuple[float, str]:
        """The expiry time and id of the query that expires first (IndexError when
        empty)."""
        heap, start = self._heap, self._start
        if heap and (
            start == len(self._times) or heap[0] < (self._times[start], self._seqs[start])
        ):
            expires_at, _, query_id = heapq.heappop(heap)
            return expires_at, query_id
        entry = self._times[start], self._ids[start]  # IndexError when both are empty
        self._cut(start + 1)
        return entry

    def pop_due(self, t_now: float) -> tuple[list[float], list[str]]:
        """The expiry times and ids of every query that expires before `t_now`, earliest
        first."""
        times, start, heap = self._times, self._start, self._heap
        if not heap:  # the usual case: one sorted run, cut in one step
            stop = bisect_left(times, t_now, start)
            due = times[start:stop], self._ids[start:stop]
            self._cut(stop)
            return due
        out_times: list[float] = []
        out_ids: list[str] = []
        while True:
            start = self._start
            in_order = start < len(times)
            if heap and (not in_order or heap[0] < (times[start], self._seqs[start])):
                if heap[0][0] >= t_now:
                    break
                expires_at, _, query_id = heapq.heappop(heap)
            elif in_order and times[start] < t_now:
                expires_at, query_id = times[start], self._ids[start]
                self._cut(start + 1)
            else:
                break
            out_times.append(expires_at)
            out_ids.append(query_id)
        return out_times, out_ids

    def _cut(self, start: int) -> None:
        """Move the FIFO's head to `start`; drop what it passed once that is much."""
        if start >= _COMPACT and 2 * start >= len(self._times):
            del self._times[:start], self._seqs[:start], self._ids[:start]
            start = 0
        self._start = start
