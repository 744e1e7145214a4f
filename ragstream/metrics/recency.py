"""Recency weights for the decayed metrics, and the mean age of the top-k documents.

A document's weight at read time t is

    w_i(t) = exp(-lambda * max(0, t - t_doc_i)),   lambda = ln 2 / half_life,

so a document one half-life old counts half. A document without a timestamp dates from its
event's `ts`, and a timestamp later than `ts` is clamped to `ts`: no weight exceeds 1.
Times are Unix seconds (float64).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ragstream.durations import decay_rate

__all__ = [
    "decay_rate",
    "effective_doc_time",
    "mean_doc_age",
    "mean_doc_ages",
    "recency_weight",
]

_F64 = NDArray[np.float64]


def effective_doc_time(t_doc: ArrayLike, ts: ArrayLike) -> _F64:
    """The time a document ages from: min(t_doc, ts), and ts where t_doc is NaN (missing).

    `ts` is a scalar, one value per row of a 2-D `t_doc` (shape (Q,)), or the shape of
    `t_doc` itself.
    """
    doc = np.asarray(t_doc, dtype=np.float64)
    event = _per_row(np.asarray(ts, dtype=np.float64), doc, "ts")
    if not np.all(np.isfinite(event)):
        raise ValueError("event times ts must be finite")
    return np.where(np.isnan(doc), event, np.minimum(doc, event))


def recency_weight(t_doc_eff: ArrayLike, t: ArrayLike, lam: float) -> _F64:
    """w = exp(-lam * max(0, t - t_doc_eff)); `t` is a scalar or one read time per row.

    With lam = 0 every weight is exactly 1.
    """
    rate = float(lam)
    if not (math.isfinite(rate) and rate >= 0):
        raise ValueError(f"decay rate must be finite and >= 0, got {lam!r}")
    doc = np.asarray(t_doc_eff, dtype=np.float64)
    now = _per_row(np.asarray(t, dtype=np.float64), doc, "t")
    return np.exp(-rate * np.maximum(0.0, now - doc))


def mean_doc_age(t_doc_eff: ArrayLike, length: ArrayLike, k: int, t: ArrayLike) -> _F64:
    """doc_age_seconds@k: mean of max(0, t - t_doc) over the top min(k, n) documents, (Q,).

    `t_doc_eff` is (Q, L) with `length` (Q,) documents per row; `t` is a scalar or (Q,).
    A row without documents (n = 0) has no age: its value is NaN, and aggregates must leave
    it out (count it in neither the sum nor the number of queries).
    """
    ages: _F64 = mean_doc_ages(t_doc_eff, length, [k], t)[:, 0]
    return ages


def mean_doc_ages(
    t_doc_eff: ArrayLike, length: ArrayLike, cutoffs: Sequence[int], t: ArrayLike
) -> _F64:
    """`mean_doc_age` at every cutoff at once, (Q, len(cutoffs)): one running sum along
    the rows serves every cutoff (the same additions in the same order, so the same
    values as one call per cutoff)."""
    for k in cutoffs:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"cutoff k must be an integer >= 1, got {k!r}")
    doc = np.asarray(t_doc_eff, dtype=np.float64)
    if doc.ndim != 2:
        raise ValueError(f"t_doc_eff must be 2-D (queries x documents), got {doc.ndim}-D")
    lengths = np.asarray(length, dtype=np.int64)
    if lengths.shape != (doc.shape[0],) or (
        lengths.size and (lengths.min() < 0 or lengths.max() > doc.shape[1])
    ):
        raise ValueError(f"length must have shape ({doc.shape[0]},) with values in [0, L]")
    out = np.full((doc.shape[0], len(cutoffs)), np.nan)
    width = min(max(cutoffs, default=0), doc.shape[1])
    if not width:
        return out
    now = _per_row(np.asarray(t, dtype=np.float64), doc, "t")
    age = np.maximum(0.0, now - doc[:, :width])
    age = np.where(np.arange(width) < lengths[:, None], age, 0.0)
    running = np.cumsum(age, axis=1)
    for c, k in enumerate(cutoffs):
        n = np.minimum(lengths, int(k))
        np.divide(running[:, min(int(k), width) - 1], n, out=out[:, c], where=n > 0)
    return out


def _per_row(values: _F64, doc: _F64, name: str) -> _F64:
    """Give a per-row vector a trailing axis so that it broadcasts along the rows of `doc`."""
    if values.ndim >= 1 and values.ndim == doc.ndim - 1:
        values = values[..., None]
    try:
        shape = np.broadcast_shapes(values.shape, doc.shape)
    except ValueError:
        shape = ()
    if shape != doc.shape:
        raise ValueError(
            f"{name} must be a scalar, one value per row, or of the documents' shape "
            f"{doc.shape}; got shape {np.shape(values)}"
        )
    return values
