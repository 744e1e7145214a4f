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

import itertools
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
    rows = sorted(
        (i for i, query_id in enumerate(ids) if is_trace_id(query_id)),
        key=lambda i: (ts[i], ids[i]),
    )  # oldest first
    if not rows:
        return
    values = block[np.ix_(rows, columns)]
    buckets = bin_index(np.nan_to_num(values, nan=0.0), edges)  # NaN: no bucket, below
    tied = any((ts[a], ids[a]) == (ts[b], ids[b]) for a, b in itertools.pairwise(rows))
    if len(rows) <= _FEW or tied:  # each value against the held one
        for i, row_values, row_buckets in zip(rows, values.tolist(), buckets.tolist(), strict=True):
            t, query_id = float(ts[i]), ids[i]
            for column, value, bucket in zip(columns, row_values, row_buckets, strict=True):
                if value == value:  # not NaN
                    _keep(held, (column, bucket), Exemplar(t, query_id, value))
        return
    # many, each (time, id) once: the last of each (column, bucket) in row order is the
    # newest (an index assigned several times keeps the last value assigned)
    r, c = np.nonzero(~np.isnan(values))
    keys = c * edges.size + buckets[r, c]
    last = np.full(len(columns) * edges.size, -1, dtype=np.int64)
    last[keys] = np.arange(keys.size)
    for at in last[last >= 0].tolist():
        row, col = int(r[at]), int(c[at])
        exemplar = Exemplar(float(ts[rows[row]]), ids[rows[row]], float(values[row, col]))
        _keep(held, (columns[col], int(buckets[row, col])), exemplar)


_FEW = 4
"""Up to this many queries, `capture` compares them one by one (fewer numpy calls)."""


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


def restore_exemplars(rows: Iterable[Sequence[Any]]) -> Exemplars:
    """The exemplars of `snapshot_exemplars` output."""
    return {(int(c), int(b)): Exemplar(float(t), str(q), float(v)) for c, b, t, q, v in rows}


def by_labelset(data: Mapping[str, Any]) -> dict[tuple[str, ...], Exemplars]:
    """A tally snapshot's exemplars by label set (none in a snapshot without them)."""
    return {tuple(k): restore_exemplars(rows) for k, rows in data.get("exemplars", [])}
