"""When open queries expire: a queue ordered by expiry time, cheap when times come in order.

Queries of one partition usually open in event-time order with the same TTL, so their
expiry times arrive already sorted. Those go to a FIFO (append and pop at either end, no
comparisons); only a time earlier than the FIFO's last goes to a binary heap. The earliest
entry is the smaller of the two heads, so the order is exact whatever the arrival order:
by expiry time, then by arrival (a sequence number breaks ties, in both parts alike).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Sequence
from operator import le

__all__ = ["ExpiryQueue"]

_Entry = tuple[float, int, str]
"""(expires_at, sequence number, query id)"""


class ExpiryQueue:
    """Query ids by expiry time (ties: first pushed first)."""

    __slots__ = ("_heap", "_in_order", "_seq")

    def __init__(self) -> None:
        self._in_order: deque[_Entry] = deque()
        """Entries pushed in nondecreasing time order (each at least the one before)."""
        self._heap: list[_Entry] = []
        """Entries that came earlier than the FIFO's last."""
        self._seq = 0

    def __len__(self) -> int:
        return len(self._in_order) + len(self._heap)

    def push(self, expires_at: float, query_id: str) -> None:
        entry = (expires_at, self._seq, query_id)
        self._seq += 1
        in_order = self._in_order
        if not in_order or expires_at >= in_order[-1][0]:
            in_order.append(entry)
        else:
            heapq.heappush(self._heap, entry)

    def push_many(self, times: Sequence[float], query_ids: Sequence[str]) -> None:
        """`push` of each (time, id) in turn; times already in order (the usual run of a
        partition) go to the FIFO in one step."""
        in_order, n = self._in_order, len(times)
        if n and (not in_order or times[0] >= in_order[-1][0]) and all(map(le, times, times[1:])):
            in_order.extend(zip(times, range(self._seq, self._seq + n), query_ids, strict=True))
            self._seq += n
            return
        push = self.push
        for expires_at, query_id in zip(times, query_ids, strict=True):
            push(expires_at, query_id)

    def ids(self) -> list[str]:
        """Every query id in the order they would be popped (pushed again in this order,
        they pop in it)."""
        return [entry[2] for entry in sorted([*self._in_order, *self._heap])]

    def pop(self) -> str:
        """The id of the query that expires first (IndexError when empty)."""
        in_order, heap = self._in_order, self._heap
        if heap and (not in_order or heap[0] < in_order[0]):
            return heapq.heappop(heap)[2]
        return in_order.popleft()[2]

    def pop_due(self, t_now: float) -> list[str]:
        """The ids of every query that expires before `t_now`, earliest first."""
        in_order, heap, out = self._in_order, self._heap, []
        if not heap:  # the usual case: one sorted run
            while in_order and in_order[0][0] < t_now:
                out.append(in_order.popleft()[2])
            return out
        while True:
            if heap and (not in_order or heap[0] < in_order[0]):
                if heap[0][0] >= t_now:
                    return out
                out.append(heapq.heappop(heap)[2])
            elif in_order and in_order[0][0] < t_now:
                out.append(in_order.popleft()[2])
            else:
                return out
