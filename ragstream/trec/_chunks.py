"""The kernels' work on joined files, cut into chunks of a bounded number of padded cells.

The kernels pad each chunk's rankings to its longest one. When the rankings of a segment
are of like length (a run of 100 documents a query), chunks are consecutive queries of
it. When they are not -- rankings cut where the metrics stop reading (`ranking_depth`):
most at the cutoff, a few on to a deep first relevant document -- padding every query to
the longest would cost many times the work, so the queries are grouped by length class
(lengths up to 1, 2, 4, 8, ... documents, of all segments together) and each group is
cut into chunks of its own. A chunk's padded arrays are read from the segments in one
`take` per piece (`Chunk.batch`). A query's values do not depend on its chunk: the
kernels sum along a row sequentially and never read the padding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics import RankingBatch
from ragstream.trec._ranked import Segment

__all__ = ["Chunk", "chunks", "padded_cells"]

_I64 = NDArray[np.int64]
_WASTE = 2  # group by length when padding to the longest would take this many times the cells
_CLASSES = 2 ** np.arange(63, dtype=np.int64)


@dataclass(frozen=True)
class Chunk:
    """Queries for one kernel call: rows of one or more segments (`pieces`: a segment and
    its rows, a slice or indices), padded when the kernels' thread asks for the `batch`;
    their values go to `at` among the queries of all segments end to end."""

    pieces: tuple[tuple[Segment, slice | _I64], ...]
    at: slice | _I64

    def batch(self) -> RankingBatch:
        """The chunk's queries padded for the kernels straight from the segments: row i is
        the `width` values from its query's first one on, in one `take` per piece (what
        lies past a row's length is padding, which the kernels never read), instead of
        gathering the queries and then padding them."""
        rel, rel_length = _padded([(g.rel, g.rel_offsets, rows) for g, rows in self.pieces])
        judged, judged_length = _padded(
            [(g.judged, g.judged_offsets, rows) for g, rows in self.pieces]
        )
        return RankingBatch(rel, rel_length, judged, judged_length)


def padded_cells(segments: tuple[Segment, ...] | list[Segment]) -> int:
    """The cells of the segments' queries, each as long as its ranking or judgments."""
    return sum(int(_widths(g).sum()) for g in segments)


def chunks(segments: tuple[Segment, ...] | list[Segment], cells: int) -> list[Chunk]:
    """The queries of `segments` in chunks of at most `cells` padded cells (one query at
    least), together covering every query once. Segments of like lengths are cut in
    consecutive queries; the others' queries are grouped by length class, a class's
    queries of all such segments together (a scanner's part may hold only a few)."""
    out: list[Chunk] = []
    classes: dict[int, list[tuple[Segment, _I64, int, int]]] = {}  # segment, rows, base, width
    base = 0
    for g in segments:
        widths = _widths(g)
        n = widths.size
        if n and int(widths.max()) * n > _WASTE * int(widths.sum()):
            for key, rows in _by_class(g):
                classes.setdefault(key, []).append((g, rows, base, int(widths[rows].max())))
        elif n:
            step = max(1, cells // max(1, int(widths.max())))
            out += [
                Chunk(
                    ((g, slice(lo, min(n, lo + step))),), slice(base + lo, base + min(n, lo + step))
                )
                for lo in range(0, n, step)
            ]
        base += n
    for pieces in classes.values():
        step = max(1, cells // max(1, max(width for *_, width in pieces)))
        taken: list[tuple[Segment, slice | _I64]] = []
        at: list[_I64] = []
        room = step
        for g, rows, first, _ in pieces:
            lo = 0
            while lo < rows.size:
                part = rows[lo : lo + room]
                taken.append((g, part))
                at.append(part + first)
                lo += part.size
                room -= part.size
                if room == 0:
                    out.append(Chunk(tuple(taken), np.concatenate(at)))
                    taken, at, room = [], [], step
        if taken:
            out.append(Chunk(tuple(taken), np.concatenate(at)))
    return out


def _widths(g: Segment) -> _I64:
    """Per query: the longer of its ranking and its judgments (its padded width)."""
    return np.maximum(np.diff(g.rel_offsets), np.diff(g.judged_offsets))


def _by_class(g: Segment) -> list[tuple[int, _I64]]:
    """Query indices grouped by the length classes (up to 1, 2, 4, ...) of their ranking
    and of their judgments, in order in each group, with the group's key."""
    rel = np.searchsorted(_CLASSES, np.diff(g.rel_offsets))
    key = rel * _CLASSES.size + np.searchsorted(_CLASSES, np.diff(g.judged_offsets))
    order = np.argsort(key.astype(np.int16), kind="stable")  # small ints: a radix sort
    cuts = np.flatnonzero(np.diff(key[order])) + 1
    return [(int(key[rows[0]]), rows) for rows in np.split(order, cuts) if rows.size]


def _padded(
    pieces: list[tuple[NDArray[np.float64], _I64, slice | _I64]],
) -> tuple[NDArray[np.float64], _I64]:
    """Rows of CSR arrays (values, offsets, rows) as one matrix as wide as the longest, and
    their lengths."""
    spans: list[tuple[NDArray[np.float64], _I64, _I64]] = []
    for values, offsets, rows in pieces:
        starts: _I64 = offsets[:-1][rows]
        spans.append((values, starts, offsets[1:][rows] - starts))
    lengths = spans[0][2] if len(spans) == 1 else np.concatenate([s[2] for s in spans])
    width = int(lengths.max(initial=0))
    out = np.empty((lengths.size, width), dtype=np.float64)
    at = 0
    for values, starts, span in spans:
        block = out[at : at + span.size]
        if values.size:  # clip: a row's last query may read past the values' end
            np.take(values, starts[:, None] + np.arange(width), out=block, mode="clip")
        else:
            block.fill(0.0)
        at += span.size
    return out, lengths
