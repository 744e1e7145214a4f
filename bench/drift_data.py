"""Synthetic per-query metric streams for the drift benchmark: reciprocal rank and nDCG.

Each metric is a mixture of a *good* and a *bad* retrieval regime. Before the change every
query is good; after it a share ``w`` of the queries is bad, with ``w`` chosen so that the
mean drops by exactly the requested amount (``w = drop / (mean_good - mean_bad)``): a
partial outage or a worse index for part of the traffic, the usual shape of a quality
incident.

- ``rr``: no relevant document in the top 10 (rr = 0), else the first relevant rank is a
  geometric variable truncated to 1..10 (rr = 1, 1/2, ..., 1/10). Good: P(0) = 0.25,
  p = 0.5 (mean 0.520); bad: P(0) = 0.6, p = 0.2 (mean 0.177).
- ``ndcg``: mass at 0 (nothing relevant retrieved) and at 1 (ideal ranking), otherwise a
  Beta. Good: P(0) = 0.15, P(1) = 0.25, Beta(2.5, 1.5) (mean 0.625); bad: P(0) = 0.4,
  P(1) = 0.1, Beta(1.5, 2.5) (mean 0.2875).

Arrivals are a Poisson process at the given rate (queries per second).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]

__all__ = ["MODELS", "Model", "arrivals"]

_RR_VALUES = np.r_[0.0, 1.0 / np.arange(1, 11)]


def _rr_pmf(p_none: float, p: float) -> F64:
    ranks = np.arange(1, 11)
    geo = p * (1 - p) ** (ranks - 1)
    geo /= geo.sum()
    out: F64 = np.r_[p_none, (1 - p_none) * geo]
    return out


@dataclass(frozen=True)
class Model:
    """One metric's good and bad regimes."""

    name: str

    def means(self) -> tuple[float, float]:
        """Exact means of the good and the bad regime."""
        if self.name == "rr":
            return (
                float(_rr_pmf(0.25, 0.5) @ _RR_VALUES),
                float(_rr_pmf(0.6, 0.2) @ _RR_VALUES),
            )
        return 0.25 + 0.60 * 2.5 / 4.0, 0.10 + 0.50 * 1.5 / 4.0

    def bad_share(self, drop: float) -> float:
        good, bad = self.means()
        share = drop / (good - bad)
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"a drop of {drop} is out of reach for {self.name}")
        return share

    def sample(self, rng: np.random.Generator, n: int, drop: float = 0.0) -> F64:
        """``n`` per-query values whose mean is ``mean_good - drop``."""
        bad = rng.random(n) < self.bad_share(drop) if drop else np.zeros(n, dtype=bool)
        u = rng.random(n)
        if self.name == "rr":
            cum_good = np.cumsum(_rr_pmf(0.25, 0.5))
            cum_bad = np.cumsum(_rr_pmf(0.6, 0.2))
            idx = np.where(
                bad,
                np.searchsorted(cum_bad, u, side="right"),
                np.searchsorted(cum_good, u, side="right"),
            )
            out: F64 = _RR_VALUES[np.minimum(idx, 10)]
            return out
        p0 = np.where(bad, 0.4, 0.15)
        p1 = np.where(bad, 0.1, 0.25)
        beta = np.where(bad, rng.beta(1.5, 2.5, n), rng.beta(2.5, 1.5, n))
        mixed: F64 = np.where(u < p0, 0.0, np.where(u < p0 + p1, 1.0, beta))
        return mixed


MODELS = (Model("rr"), Model("ndcg"))


def arrivals(
    rng: np.random.Generator,
    model: Model,
    rate: float,
    start: float,
    end: float,
    change_at: float = np.inf,
    drop: float = 0.0,
    chunk: int = 1 << 20,
) -> Iterator[tuple[F64, F64]]:
    """(times, values) of the queries in ``[start, end)`` in chunks, Poisson at ``rate``;
    queries at or after ``change_at`` have the mean dropped by ``drop``."""
    t = start
    while t < end:
        times = t + np.cumsum(rng.exponential(1.0 / rate, chunk))
        times = times[times < end]
        if times.size == 0:
            return
        before = times < change_at
        values = np.empty(times.size)
        k = int(before.sum())
        values[:k] = model.sample(rng, k)
        values[k:] = model.sample(rng, times.size - k, drop)
        yield times, values
        t = float(times[-1])
        if times.size < chunk:
            return
