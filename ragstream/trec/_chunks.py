"""The kernels' work on joined files, cut into chunks of a bounded number of padded cells.

The kernels pad each chunk's rankings to its longest one. When the rankings of a segment
are of like length (a run of 100 documents a query), chunks are consecutive queries, views
of the segment. When they are not -- rankings cut where the metrics stop reading
(`ranking_depth`): most at the cutoff, a few on to a deep first relevant document --
padding every query to the longest would cost many times the work, so the queries are
grouped by length class (lengths up to 1, 2, 4, 8, ... documents) and each group is
gathered into chunks of its own. A query's values do not depend on its chunk: the kernels
sum along a row sequentially, whatever the padding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.trec._ranked import Segment

__all__ = ["Chunk", "chunks", "padded_cells"]

_I64 = NDArray[np.int64]
_WASTE = 2  # group by length when padding to the longest would take this many times the cells
_CLASSES = 2 ** np.arange(63, dtype=np.int64)


@dataclass(frozen=True)
class Chunk:
    """Queries for one kernel call: rows `rows` of `source` (gathered when the kernels'
    thread reads `queries`); their values go to `at` among the queries of all segments
    end to end."""

    source: Segment
    rows: slice | _I64
    at: slice | _I64

    @property
    def queries(self) -> Segment:
        """The chunk's queries as CSR arrays: views of the source, or gathered."""
        g, rows = self.source, self.rows
        if isinstance(rows, slice):
            lo, hi = rows.start, rows.stop
            r0, j0 = g.rel_offsets[lo], g.judged_offsets[lo]
            return Segment(
                g.rel[r0 : g.rel_offsets[hi]],
                g.rel_offsets[lo : hi + 1] - r0,
                g.judged[j0 : g.judged_offsets[hi]],
                g.judged_offsets[lo : hi + 1] - j0,
            )
        rel, rel_offsets = _take(g.rel, g.rel_offsets, rows)
        judged, judged_offsets = _take(g.judged, g.judged_offsets, rows)
        return Segment(rel, rel_offsets, judged, judged_offsets)


def padded_cells(segments: tuple[Segment, ...] | list[Segment]) -> int:
    """The cells of the segments' queries, each as long as its ranking or judgments."""
    return sum(int(_widths(g).sum()) for g in segments)


def chunks(segments: tuple[Segment, ...] | list[Segment], cells: int) -> list[Chunk]:
    """The queries of `segments` in chunks of at most `cells` padded cells (one query at
    least), together covering every query once."""
    out: list[Chunk] = []
    base = 0
    for g in segments:
        widths = _widths(g)
        n = widths.size
        if n and int(widths.max()) * n > _WASTE * int(widths.sum()):
            for rows in _by_class(g):
                step = max(1, cells // max(1, int(widths[rows].max())))
                out += [
                    Chunk(g, part, part + base)
                    for part in (rows[lo : lo + step] for lo in range(0, rows.size, step))
                ]
        elif n:
            step = max(1, cells // max(1, int(widths.max())))
            out += [
                Chunk(g, slice(lo, min(n, lo + step)), slice(base + lo, base + min(n, lo + step)))
                for lo in range(0, n, step)
            ]
        base += n
    return out


def _widths(g: Segment) -> _I64:
    """Per query: the longer of its ranking and its judgments (its padded width)."""
    return np.maximum(np.diff(g.rel_offsets), np.diff(g.judged_offsets))


def _by_class(g: Segment) -> list[_I64]:
    """Query indices grouped by the length classes (up to 1, 2, 4, ...) of their ranking
    and of their judgments, in order in each group."""
    rel = np.searchsorted(_CLASSES, np.diff(g.rel_offsets))
    key = rel * _CLASSES.size + np.searchsorted(_CLASSES, np.diff(g.judged_offsets))
    order = np.argsort(key.astype(np.int16), kind="stable")  # small ints: a radix sort
    cuts = np.flatnonzero(np.diff(key[order])) + 1
    return [rows for rows in np.split(order, cuts) if rows.size]


def _take(
    values: NDArray[np.float64], offsets: _I64, rows: _I64
) -> tuple[NDArray[np.float64], _I64]:
    """The CSR rows `rows` of (values, offsets), end to end."""
    starts = offsets[rows]
    lengths = offsets[rows + 1] - starts
    new = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=new[1:])
    index = np.repeat(starts - new[:-1], lengths) + np.arange(new[-1], dtype=np.int64)
    return values[index], new
