"""Exemplars of the final-query histograms: for each bucket of each histogrammed metric of a
label set, the newest final query that landed in it, by its trace id.

A query is an exemplar only when it has an OpenTelemetry trace id (32 lowercase hex
digits, not all zero), which is what a trace UI opens: with a trace field configured,
that field's value in its event (`ragstream.events.trace_ids`); else its id when that is
one, as queries read from spans have. Of the queries of a bucket the newest wins, by query
time, then by trace id, then by value: a total order, so keeping the greatest gives the same
exemplar whatever the order the queries were finalized in or the partitions merged in (a
resumed run keeps the same as one that never stopped). Memory is bounded by one exemplar
per label set, metric and bucket.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ragstream.events.trace_ids import is_trace_id
from ragstream.windows import bin_index

__all__ = [
    "Exemplar",
    "Exemplars",
    "Found",
    "by_labelset",
    "capture",
    "merge_exemplars",
    "snapshot_exemplars",
]


class Exemplar(NamedTuple):
    """A query of a bucket; compared as a tuple, so the greatest is the newest."""

    ts: float
    """The query's time (seconds since the epoch)."""
    trace_id: str
    value: float
    """The query's value of the metric."""


Exemplars = dict[tuple[int, int], Exemplar]
"""(metric column, bucket) -> its exemplar, for one label set."""


Found = tuple[Exemplars, npt.NDArray[np.float64], Sequence[float], Sequence[str | None]]
"""Final queries of one label set: where its exemplars are kept, the queries' rows
(`(n, C)`, NaN for no value), their times and their trace ids (their ids, or their trace
fields' values; None: none)."""


def capture(found: Iterable[Found], columns: Sequence[int], edges: npt.NDArray[np.float64]) -> None:
    """Keep in each label set's exemplars the newest of its queries of each bucket of
    ``columns``; bucket j holds the values in ``(edges[j-1], edges[j]]``, as the histograms
    count them. Queries without a trace id are passed over. All label sets' values are
    binned and sorted together, and only the newest of each label set, column and bucket
    is compared with the one kept, so that a batch costs little more than its values."""
    traced: list[tuple[float, str]] = []
    """(time, trace id) of each query with a trace id."""
    owners: list[int] = []
    held_by: list[Exemplars] = []
    blocks = []
    for held, block, ts, ids in found:
        rows = [(i, t) for i, t in enumerate(ids) if t is not None and is_trace_id(t)]
        if rows:
            owners += [len(held_by)] * len(rows)
            held_by.append(held)
            blocks.append(block[[i for i, _ in rows]])
            traced += [(float(ts[i]), trace_id) for i, trace_id in rows]
    if not traced:
        return
    values = np.concatenate(blocks)[:, columns]
    buckets = bin_index(np.nan_to_num(values, nan=0.0), edges)  # NaN: no bucket, below
    n = len(traced)
    rank = np.empty(n, dtype=np.int64)  # the order of (time, trace id), equal ones equal
    at, previous = -1, None
    for i in sorted(range(n), key=traced.__getitem__):
        if traced[i] != previous:
            at, previous = at + 1, traced[i]
        rank[i] = at
    row, col = np.nonzero(~np.isnan(values))  # a candidate per query and column with a value
    if not row.size:
        return
    value, bucket = values[row, col], buckets[row, col]
    cells = len(columns) * edges.size
    group = np.array(owners)[row] * cells + col * edges.size + bucket  # label set, column, bucket
    # by group, then as exemplars compare: the last of a group is its newest (the first of
    # equal ones, as `_keep` keeps it)
    order = np.lexsort((-row, value, group * n + rank[row]))
    ends = order[np.append(group[order][1:] != group[order][:-1], True)]
    newest = zip(*(a[ends].tolist() for a in (row, col, bucket, group, value)), strict=True)
    for r, c, b, g, v in newest:
        t, trace_id = traced[r]
        _keep(held_by[g // cells], (columns[c], b), Exemplar(t, trace_id, v))


def _keep(held: Exemplars, key: tuple[int, int], candidate: Exemplar) -> None:
    current = held.get(key)
    if current is None or candidate > current:
        held[key] = candidate


def merge_exemplars(parts: Iterable[Exemplars]) -> Exemplars:
    """The newest exemplar of each bucket over several partitions' of one label set (a
    fresh map)."""
    merged: Exemplars = {}
    for part in parts:
        for key, exemplar in part.items():
            _keep(merged, key, exemplar)
    return merged


def snapshot_exemplars(held: Exemplars) -> list[list[Any]]:
    """JSON-friendly, sorted: `[column, bucket, ts, trace_id, value]` rows."""
    return [[c, b, e.ts, e.trace_id, e.value] for (c, b), e in sorted(held.items())]


def by_labelset(data: Mapping[str, Any]) -> dict[tuple[str, ...], Exemplars]:
    """A tally snapshot's exemplars by label set, each from `snapshot_exemplars` rows
    (none in a snapshot without them)."""
    return {
        tuple(k): {(int(c), int(b)): Exemplar(float(t), str(q), float(v)) for c, b, t, q, v in rows}
        for k, rows in data.get("exemplars", [])
    }
