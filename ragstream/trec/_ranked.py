"""What a join of qrels and run hands to the metric kernels.

Both joins -- the numpy one (`_join`) and the compiled reader (`_compiled`) -- produce the
same `Ranked` arrays, bit for bit, and raise the same errors (`errors`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

__all__ = ["Ranked", "Segment", "segments"]

_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]


@dataclass(frozen=True)
class Segment:
    """Consecutive queries as CSR arrays: query i ranks `rel[rel_offsets[i]:rel_offsets[i +
    1]]` -- the grades of its documents in trec_eval's order (0 when unjudged) -- and has
    judged `judged[judged_offsets[i]:judged_offsets[i + 1]]` (all its judgments, in file
    order)."""

    rel: _F64
    rel_offsets: _I64
    judged: _F64
    judged_offsets: _I64

    def __len__(self) -> int:
        return int(self.rel_offsets.size) - 1


@dataclass(frozen=True)
class Ranked:
    """The evaluated queries (in both files), as the metric kernels read them.

    The queries are stored in `segments`, end to end (the compiled scanner gives one per
    part of the run it read, as they were read, so that nothing is copied); `qids` are in
    byte order, and the query `qids[i]` is stored at `order[i]` (None: stored in byte
    order). `rel`, `rel_offsets`, `judged` and `judged_offsets` are the same queries as
    one set of CSR arrays in byte order (made when first read; the kernels do not need
    them).
    """

    qids: tuple[str, ...]
    segments: tuple[Segment, ...]
    num_qrels_queries: int
    """Queries with at least one judgment (the denominator of trec_eval -c)."""
    order: _I64 | None = None

    @cached_property
    def _canonical(self) -> Segment:
        """One segment, in byte order."""
        whole = _end_to_end(self.segments)
        if self.order is None:
            return whole
        return Segment(
            *_rows_in_order(whole.rel, whole.rel_offsets, self.order),
            *_rows_in_order(whole.judged, whole.judged_offsets, self.order),
        )

    @property
    def rel(self) -> _F64:
        return self._canonical.rel

    @property
    def rel_offsets(self) -> _I64:
        return self._canonical.rel_offsets

    @property
    def judged(self) -> _F64:
        return self._canonical.judged

    @property
    def judged_offsets(self) -> _I64:
        return self._canonical.judged_offsets


def _end_to_end(parts: tuple[Segment, ...]) -> Segment:
    """The segments' queries as one segment, in the same order."""
    if len(parts) == 1:
        return parts[0]
    return Segment(
        np.concatenate([np.zeros(0), *(p.rel for p in parts)]),
        _offsets_end_to_end([p.rel_offsets for p in parts]),
        np.concatenate([np.zeros(0), *(p.judged for p in parts)]),
        _offsets_end_to_end([p.judged_offsets for p in parts]),
    )


def _rows_in_order(values: _F64, offsets: _I64, order: _I64) -> tuple[_F64, _I64]:
    """CSR rows `order[0]`, `order[1]`, ... of (values, offsets), end to end."""
    index, reordered = segments(offsets[:-1][order], np.diff(offsets)[order])
    return values[index], reordered


def _offsets_end_to_end(offsets: list[_I64]) -> _I64:
    """CSR offsets of segments put end to end."""
    out, base = [], 0
    for bounds in offsets:
        out.append(bounds[:-1] + base)
        base += int(bounds[-1])
    return np.concatenate([*out, np.array([base], dtype=np.int64)])


def segments(starts: _I64, lengths: _I64) -> tuple[_I64, _I64]:
    """Indices that concatenate the segments [start, start + length) in the given order,
    and the CSR offsets of the result."""
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
    return index.astype(np.int64), offsets
