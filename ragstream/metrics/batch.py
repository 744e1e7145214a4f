"""Many ranked lists with their judgments, padded into rectangular arrays for the kernels."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["RankingBatch"]


@dataclass(frozen=True, slots=True, eq=False)  # arrays: compare fields, not batches
class RankingBatch:
    """Q ranked lists with their judgments, padded to rectangular float64 arrays.

    Row q holds query q. Columns past a row's length are padding and are never read, so
    their content does not matter (the constructors write 0). The caller removes repeated
    documents (a repeat counts once, at its first rank) and makes sure every labelled
    retrieved document also appears among the judged grades.
    """

    rel: NDArray[np.float64]
    """(Q, L) grade of the document at rank r in column r-1; unjudged documents are 0."""
    length: NDArray[np.int64]
    """(Q,) number of ranked documents in each row (at most L)."""
    judged: NDArray[np.float64]
    """(Q, J) grades of all judged documents of the query, retrieved or not, in any order."""
    judged_length: NDArray[np.int64]
    """(Q,) number of judged documents in each row (at most J)."""
    weight: NDArray[np.float64] | None = None
    """(Q, L) recency weight of each ranked document, in [0, 1]; None means all 1."""
    judged_weight: NDArray[np.float64] | None = None
    """(Q, J) recency weight of each judged document; given together with `weight`."""

    def __post_init__(self) -> None:
        rel = _matrix(self.rel, "rel")
        judged = _matrix(self.judged, "judged")
        q = rel.shape[0]
        if judged.shape[0] != q:
            raise ValueError(f"rel has {q} rows but judged has {judged.shape[0]}")
        length = _lengths(self.length, q, rel.shape[1], "length")
        judged_length = _lengths(self.judged_length, q, judged.shape[1], "judged_length")
        if (self.weight is None) != (self.judged_weight is None):
            raise ValueError("give both weight and judged_weight, or neither")
        object.__setattr__(self, "rel", rel)
        object.__setattr__(self, "judged", judged)
        object.__setattr__(self, "length", length)
        object.__setattr__(self, "judged_length", judged_length)
        if self.weight is not None and self.judged_weight is not None:
            weight = _matrix(self.weight, "weight")
            judged_weight = _matrix(self.judged_weight, "judged_weight")
            if weight.shape != rel.shape:
                raise ValueError(f"weight has shape {weight.shape}, rel has {rel.shape}")
            if judged_weight.shape != judged.shape:
                raise ValueError(
                    f"judged_weight has shape {judged_weight.shape}, judged has {judged.shape}"
                )
            object.__setattr__(self, "weight", weight)
            object.__setattr__(self, "judged_weight", judged_weight)

    @property
    def num_queries(self) -> int:
        """Q, the number of ranked lists."""
        return int(self.rel.shape[0])

    @property
    def has_weights(self) -> bool:
        """True when the batch carries recency weights (needed by the decayed metrics)."""
        return self.weight is not None

    def with_weights(
        self, weight: ArrayLike | None, judged_weight: ArrayLike | None
    ) -> RankingBatch:
        """The same lists with other recency weights (or none), e.g. for another half-life."""
        return dataclasses.replace(
            self,
            weight=None if weight is None else np.asarray(weight, dtype=np.float64),
            judged_weight=None
            if judged_weight is None
            else np.asarray(judged_weight, dtype=np.float64),
        )

    @classmethod
    def from_ragged(
        cls,
        rel: ArrayLike,
        rel_offsets: ArrayLike,
        judged: ArrayLike,
        judged_offsets: ArrayLike,
        weight: ArrayLike | None = None,
        judged_weight: ArrayLike | None = None,
    ) -> RankingBatch:
        """Pad CSR input: row q is `values[offsets[q]:offsets[q + 1]]` (offsets has Q + 1 items).

        `weight` is aligned with `rel` and `judged_weight` with `judged` (same offsets).
        Vectorized: one masked assignment per array, no loop over rows or documents.
        """
        rel_offsets_a = _offsets(rel_offsets, "rel_offsets")
        judged_offsets_a = _offsets(judged_offsets, "judged_offsets")
        if rel_offsets_a.shape != judged_offsets_a.shape:
            raise ValueError(
                f"rel_offsets describe {rel_offsets_a.size - 1} rows, "
                f"judged_offsets {judged_offsets_a.size - 1}"
            )
        rel_pad, length = _pad(rel, rel_offsets_a, "rel")
        judged_pad, judged_length = _pad(judged, judged_offsets_a, "judged")
        weight_pad = None if weight is None else _pad(weight, rel_offsets_a, "weight")[0]
        judged_weight_pad = (
            None
            if judged_weight is None
            else _pad(judged_weight, judged_offsets_a, "judged_weight")[0]
        )
        return cls(rel_pad, length, judged_pad, judged_length, weight_pad, judged_weight_pad)

    @classmethod
    def from_lists(
        cls,
        rankings: Sequence[Sequence[float]],
        judged: Sequence[Sequence[float]],
        weights: Sequence[Sequence[float]] | None = None,
        judged_weights: Sequence[Sequence[float]] | None = None,
    ) -> RankingBatch:
        """Build from Python lists of grades (one list per query); for tests and small inputs."""
        if len(rankings) != len(judged):
            raise ValueError(f"{len(rankings)} rankings but {len(judged)} judged lists")
        rel, rel_offsets = _flatten(rankings)
        judged_flat, judged_offsets = _flatten(judged)
        weight = None if weights is None else _flatten(weights)[0]
        judged_weight = None if judged_weights is None else _flatten(judged_weights)[0]
        return cls.from_ragged(rel, rel_offsets, judged_flat, judged_offsets, weight, judged_weight)


def _matrix(value: ArrayLike, name: str) -> NDArray[np.float64]:
    array = np.asarray(value, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D (queries x documents), got {array.ndim}-D")
    return array


def _lengths(value: ArrayLike, rows: int, cols: int, name: str) -> NDArray[np.int64]:
    array = np.asarray(value)
    if array.shape != (rows,):
        raise ValueError(f"{name} must have shape ({rows},), got {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must hold integers, got {array.dtype}")
    lengths = array.astype(np.int64, copy=False)
    if lengths.size and (lengths.min() < 0 or lengths.max() > cols):
        raise ValueError(f"{name} must lie in [0, {cols}]")
    return lengths


def _offsets(value: ArrayLike, name: str) -> NDArray[np.int64]:
    array = np.asarray(value)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be 1-D with Q + 1 items")
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must hold integers, got {array.dtype}")
    offsets = array.astype(np.int64, copy=False)
    if offsets[0] < 0 or np.any(np.diff(offsets) < 0):
        raise ValueError(f"{name} must be non-negative and non-decreasing")
    return offsets


def _pad(
    values: ArrayLike, offsets: NDArray[np.int64], name: str
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Scatter CSR values into a zero-padded (Q, max length) matrix."""
    flat = np.asarray(values, dtype=np.float64)
    if flat.ndim != 1:
        raise ValueError(f"{name} must be 1-D (CSR values)")
    if offsets[-1] > flat.size:
        raise ValueError(f"{name} has {flat.size} values but the offsets end at {offsets[-1]}")
    lengths = np.diff(offsets)
    rows = lengths.size
    width = int(lengths.max()) if rows else 0
    out = np.zeros((rows, width), dtype=np.float64)
    if offsets[-1] > offsets[0]:
        # A boolean mask is filled in row-major order, which is exactly the CSR order.
        out[np.arange(width) < lengths[:, None]] = flat[offsets[0] : offsets[-1]]
    return out, lengths


def _flatten(lists: Sequence[Sequence[float]]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    lengths = np.fromiter((len(row) for row in lists), dtype=np.int64, count=len(lists))
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.fromiter(
        (float(x) for row in lists for x in row), dtype=np.float64, count=int(offsets[-1])
    )
    return flat, offsets
