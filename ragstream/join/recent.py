"""The ids of final queries, remembered for a while after they closed.

A label or a repeated retrieval event for a query that is already final must be counted
as late or duplicate, not left waiting or reopening it, so a join remembers each final
id with its close time until a horizon passes (see `LabelJoin`). Close times are kept
nondecreasing (a query that closes out of order takes the latest close time so far), so
the oldest ids are always at the front: a dict answers "is it final?", and parallel lists
in close order let a whole batch's ids be added, and the expired ones dropped, in a few
bulk steps instead of a dictionary operation each.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import KeysView, Sequence
from itertools import accumulate, islice
from operator import le

__all__ = ["RecentFinal"]

_COMPACT = 4096


class RecentFinal:
    """Final query id -> close time (nondecreasing in the order added), at most `cap`."""

    __slots__ = ("_closed", "_ids", "_start", "_times", "cap")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._closed: dict[str, float] = {}
        self._ids: list[str] = []
        """The same ids in close order, from `_start` on, with their times."""
        self._times: list[float] = []
        self._start = 0

    def __len__(self) -> int:
        return len(self._closed)

    def __contains__(self, query_id: object) -> bool:
        return query_id in self._closed

    def keys(self) -> KeysView[str]:
        return self._closed.keys()

    def last(self) -> float:
        """The latest close time (-inf when empty)."""
        return self._times[-1] if len(self._times) > self._start else float("-inf")

    def add(self, query_ids: Sequence[str], closed: Sequence[float]) -> None:
        """Remember these ids (none remembered already), closed at these times in this
        order; each time is raised to the latest before it. The oldest go past `cap`."""
        if not query_ids:
            return
        last = self.last()
        if closed[0] < last or not all(map(le, closed, closed[1:])):
            closed = list(islice(accumulate(closed, max, initial=last), 1, None))
        self._closed.update(zip(query_ids, closed, strict=True))
        self._ids.extend(query_ids)
        self._times.extend(closed)
        excess = len(self._closed) - self.cap
        if excess > 0:
            self._drop(self._start + excess)

    def forget_before(self, before: float) -> None:
        """Drop the ids that closed before `before`."""
        self._drop(bisect_left(self._times, before, self._start))

    def items(self) -> list[tuple[str, float]]:
        """(id, close time), oldest first."""
        start = self._start
        return list(zip(self._ids[start:], self._times[start:], strict=True))

    def _drop(self, stop: int) -> None:
        start = self._start
        if stop <= start:
            return
        closed = self._closed
        for query_id in self._ids[start:stop]:
            del closed[query_id]
        if stop >= _COMPACT and 2 * stop >= len(self._ids):
            del self._ids[:stop], self._times[:stop]
            stop = 0
        self._start = stop
