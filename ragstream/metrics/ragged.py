"""Per-query values of rankings held as CSR arrays, by the compiled kernels.

`ragstream eval` joins its files into CSR arrays: for each query, the grades of its ranking
in trec_eval's order and its judged grades (`ragstream.trec`'s `Segment`). The numpy
kernels read padded matrices (`RankingBatch`), which the caller builds chunk by chunk.
For the families whose registry row says `compiled`, the extension `_ragged` evaluates
each query where it lies instead, in one pass over its grades, with the same double
operations in the same order as the numpy kernels: the same values, bit for bit
(tests/metrics/test_ragged.py holds them to the numpy kernels on random rankings).

`ragged_plan` returns None when the compiled kernels cannot serve the request -- the
extension is not built, a metric is recency-weighted, the gain is exponential (numpy's
exp2), or a family has no compiled twin -- and the caller uses the numpy kernels.

A plan also carries its kernel for other extensions (`_ragged.h`): the compiled scanner of
`ragstream eval` evaluates each query with it as soon as it has joined it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.metrics._context import Gain, _check_threshold, _discount
from ragstream.metrics.names import MetricSpec, parse_metric

try:
    from ragstream.metrics import _ragged
except ImportError:  # built without a C compiler: numpy's kernels serve every request
    _ragged = None  # type: ignore[assignment]

__all__ = ["RaggedPlan", "ragged_plan"]

_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]


@dataclass(frozen=True)
class RaggedPlan:
    """Metrics to compute over CSR rankings with the compiled kernels (see `ragged_plan`)."""

    names: tuple[str, ...]
    """The metrics' canonical names, in the order asked (the rows of `values`)."""
    codes: bytes
    ks: _I64
    threshold: float
    discount: _F64
    kernel: object
    """The same plan for other extensions, one query at a time (`_ragged.kernel`: a
    capsule; `ragstream.trec`'s scanner evaluates each query with it as it joins it)."""

    def values(
        self,
        rel: _F64,
        rel_offsets: _I64,
        judged: _F64,
        judged_offsets: _I64,
        start: int = 0,
        stop: int | None = None,
    ) -> _F64 | None:
        """(metrics, queries) values of the CSR queries start..stop: query i ranks
        `rel[rel_offsets[i]:rel_offsets[i + 1]]` and judged `judged[judged_offsets[i]:
        judged_offsets[i + 1]]`. The GIL is released meanwhile, so threads can share the
        queries. None when a grade is not finite (numpy's kernels then decide)."""
        if stop is None:
            stop = int(rel_offsets.size) - 1
        out = np.empty((len(self.names), max(0, stop - start)), dtype=np.float64)
        arrays = (
            np.ascontiguousarray(rel, dtype=np.float64).data,
            np.ascontiguousarray(rel_offsets, dtype=np.int64).data,
            np.ascontiguousarray(judged, dtype=np.float64).data,
            np.ascontiguousarray(judged_offsets, dtype=np.int64).data,
        )
        assert _ragged is not None  # a plan exists only when it is built
        done = _ragged.ragged(
            *arrays,
            self.codes,
            self.ks.data,
            self.threshold,
            self.discount.data,
            out.data,
            start,
            stop,
        )
        return out if done else None


def ragged_plan(
    metrics: Sequence[MetricSpec | str], *, gain: Gain = "linear", threshold: float = 1.0
) -> RaggedPlan | None:
    """The compiled kernels' plan for these metrics, or None when they cannot compute them
    (see the module docstring)."""
    if _ragged is None or gain != "linear":
        return None
    specs = [parse_metric(m) if isinstance(m, str) else m for m in metrics]
    if not specs or any(s.decayed or not s.row.compiled for s in specs):
        return None
    families: tuple[str, ...] = _ragged.FAMILIES
    codes = bytes(families.index(s.family) for s in specs)
    ks = np.array([s.k or 0 for s in specs], dtype=np.int64)
    discount = _discount(max(1, int(ks.max())))  # numpy's, as the numpy kernels divide by
    threshold = _check_threshold(threshold)
    kernel = _ragged.kernel(codes, ks.data, threshold, discount.data)
    return RaggedPlan(tuple(s.name for s in specs), codes, ks, threshold, discount, kernel)
