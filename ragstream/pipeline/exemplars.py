"""Exemplars of the final-query histograms: for each bucket of each histogrammed metric of a
label set, the newest final query that landed in it, by its trace id.

A query is an exemplar only when its id is an OpenTelemetry trace id (32 lowercase hex
digits, not all zero), as queries read from spans are: that is what a trace UI opens. Of
the queries of a bucket the newest wins, by query time, then by id, then by value: a total
order, so keeping the greatest gives the same exemplar whatever the order the queries were
finalized in or the partitions merged in (a resumed run keeps the same as one that never
stopped). Memory is bounded by one exemplar per label set, metric and bucket.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ragstream.windows import bin_index

__all__ = [
    "Exemplar",
    "Exemplars",
    "by_labelset",
    "capture",
    "is_trace_id",
    "merge_exemplars",
    "restore_exemplars",
    "snapshot_exemplars",
]

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_ZERO = "0" * 32


class Exemplar(NamedTuple):
    """A query of a bucket; compared as a tuple, so the greatest is the newest."""

    ts: float
    """The query's time (seconds since the epoch)."""
    trace_id: str
    value: float
    """The query's value of the metric."""


Exemplars = dict[tuple[int, int], Exemplar]
"""(metric column, bucket) -> its exemplar, for one label set."""


def is_trace_id(query_id: str) -> bool:
    """Whether ``query_id`` is an OpenTelemetry trace id: 32 lowercase hex digits, not all
    zero (the W3C Trace Context's valid trace ids)."""
    return len(query_id) == 32 and query_id != _ZERO and _TRACE_ID.fullmatch(query_id) is not None


def capture(
    held: Exemplars,
    block: npt.NDArray[np.float64],
    ts: Sequence[float],
    ids: Sequence[str],
    columns: Sequence[int],
    edges: npt.NDArray[np.float64],
) -> None:
    """Keep in ``held`` the newest query of each bucket among the rows of ``block`` (one
    per query, `(n, C)`, NaN for no value) of ``columns``, whose times and ids are ``ts``
    and ``ids``; bucket j of a column holds the values in ``(edges[j-1], edges[j]]``, as
    the histograms count them. Queries whose id is no trace id are passed over."""
    rows = np.asarray([i for i, q in enumerate(ids) if is_trace_id(q)], dtype=np.int64)
    if not rows.size:
        return
    times = np.asarray(ts, dtype=np.float64)[rows]
    # the ids' ranks (equal ids equal), to order by (time, id, value) in numpy
    _, id_rank = np.unique(np.asarray([ids[i] for i in rows]), return_inverse=True)
    for column in columns:
        values = block[rows, column]
        present = np.flatnonzero(~np.isnan(values))
        if not present.size:
            continue
        order = present[np.lexsort((values[present], id_rank[present], times[present]))]
        buckets = bin_index(values[order], edges)
        # the newest of each bucket: the last in that order, the first of the reversed
        found, first = np.unique(buckets[::-1], return_index=True)
        for bucket, at in zip(found.tolist(), first.tolist(), strict=True):
            j = int(order[len(order) - 1 - at])
            candidate = Exemplar(float(times[j]), ids[int(rows[j])], float(values[j]))
            key = (column, bucket)
            current = held.get(key)
            if current is None or candidate > current:
                held[key] = candidate


def merge_exemplars(parts: Iterable[Exemplars]) -> Exemplars:
    """The newest exemplar of each bucket over several label sets' (a fresh map)."""
    merged: Exemplars = {}
    for part in parts:
        for key, exemplar in part.items():
            current = merged.get(key)
            if current is None or exemplar > current:
                merged[key] = exemplar
    return merged


def snapshot_exemplars(held: Exemplars) -> list[list[Any]]:
    """JSON-friendly, sorted: `[column, bucket, ts, trace_id, value]` rows."""
    return [[c, b, e.ts, e.trace_id, e.value] for (c, b), e in sorted(held.items())]


def restore_exemplars(rows: Iterable[Sequence[Any]]) -> Exemplars:
    """The exemplars of `snapshot_exemplars` output."""
    return {(int(c), int(b)): Exemplar(float(t), str(q), float(v)) for c, b, t, q, v in rows}


def by_labelset(data: Mapping[str, Any]) -> dict[tuple[str, ...], Exemplars]:
    """A tally snapshot's exemplars by label set (none in a snapshot without them)."""
    return {tuple(k): restore_exemplars(rows) for k, rows in data.get("exemplars", [])}
