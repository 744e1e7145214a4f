"""Forward-decay sums (Cormode, Shkapenyuk, Srivastava, Xu, ICDE 2009).

A value ``v`` stamped at time ``t_i`` is worth ``v · exp(-λ(t - t_i))`` at time ``t``. Keeping
``S = Σ v_i · exp(λ(t_i - L))`` against a landmark ``L`` gives the decayed sum at any ``t`` in
O(1): ``Σ v_i · exp(-λ(t - t_i)) = S · exp(-λ(t - L))``. ``S`` grows like ``exp(λ(t - L))``,
so before any ``λ·(t - L)`` would pass ``max_exponent`` (default 300, far below the float64
limit of about 709) the landmark moves forward: ``S ← S · exp(-λ(L' - L))``, one rounding
per rebase, so reads stay exact to about 1e-15 relative.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

import numpy as np
import numpy.typing as npt

from ragstream.durations import decay_rate
from ragstream.windows._scatter import decay_to, settle
from ragstream.windows.spec import F64, I64

__all__ = ["ForwardDecay", "decay_rates"]


def decay_rates(half_lives: Sequence[float]) -> F64:
    """``λ = ln 2 / half_life`` for each half-life (seconds; see `decay_rate`)."""
    return np.array([decay_rate(h) for h in half_lives], dtype=np.float64)


class ForwardDecay:
    """Decayed sums of ``D`` columns, each with its own rate ``λ_d``, plus their counts, as
    a window holds them (`SlidingWindow.decay`): ``value(t)`` reads
    ``Σ v_i · exp(-λ(t - t_i))``. Merging aligns both to the later landmark.
    """

    __slots__ = ("_count", "_sum", "landmark", "max_exponent", "rates")

    def __init__(
        self, rates: npt.ArrayLike, landmark: float = 0.0, max_exponent: float = 300.0
    ) -> None:
        self.rates: F64 = np.array(rates, dtype=np.float64).reshape(-1)
        if not (np.isfinite(self.rates).all() and (self.rates > 0).all()):
            raise ValueError("decay rates must be positive and finite")
        if not (0 < max_exponent <= 600):
            raise ValueError("max_exponent must be in (0, 600]")
        self.landmark = float(landmark)
        self.max_exponent = float(max_exponent)
        self._count = np.zeros((1, self.rates.size), dtype=np.int64)
        self._sum = np.zeros((1, self.rates.size), dtype=np.float64)

    @classmethod
    def from_arrays(
        cls, rates: F64, landmark: float, count: I64, total: F64, max_exponent: float = 300.0
    ) -> Self:
        """An accumulator holding ``total`` (landmark-relative sums) and ``count`` (copied)."""
        acc = cls(rates, landmark, max_exponent)
        acc._count[0] = count
        acc._sum[0] = total
        return acc

    # -- merging ---------------------------------------------------------------------------

    def merge(self, other: ForwardDecay) -> ForwardDecay:
        """A new accumulator equal to one that saw both streams (landmark: the later one)."""
        if not np.array_equal(self.rates, other.rates):
            raise ValueError("cannot merge forward-decay sums with different rates")
        landmark = max(self.landmark, other.landmark)
        total = decay_to(self._sum[0], self.rates, landmark - self.landmark) + decay_to(
            other._sum[0], other.rates, landmark - other.landmark
        )
        merged = ForwardDecay.from_arrays(
            self.rates, landmark, self._count[0] + other._count[0], total, self.max_exponent
        )
        settle(merged._count, merged._sum)
        return merged

    def __add__(self, other: ForwardDecay) -> ForwardDecay:
        return self.merge(other)

    # -- reads -----------------------------------------------------------------------------

    @property
    def count(self) -> I64:
        """Values per column (NaN excluded)."""
        out: I64 = self._count[0].copy()
        return out

    @property
    def total(self) -> F64:
        """The landmark-relative sums ``S`` (for inspection; read with :meth:`value`)."""
        out: F64 = self._sum[0].copy()
        return out

    def value(self, t: float) -> F64:
        """``Σ v_i · exp(-λ(t - t_i)) = S · exp(-λ(t - L))`` per column."""
        return decay_to(self._sum[0], self.rates, t - self.landmark)

    def mean(self, t: float) -> F64:
        """Decayed sum divided by count; NaN where a column has no values."""
        n = self._count[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            out: F64 = np.where(n > 0, self.value(t) / n, np.nan)
        return out

    def __repr__(self) -> str:
        return f"ForwardDecay(rates={self.rates.tolist()!r}, landmark={self.landmark})"
