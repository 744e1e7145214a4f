"""Population stability index between a short window's histogram and the rest of a long
window's.

The windows keep fixed-bin histograms over [0, 1] (20 bins by default, right-closed, see
docs/windows.md). As for the z-score, the reference is the long window minus the short one
(bin counts subtract exactly), so the short window is not compared with itself:

    p_i = max(c_s,i / n_s, eps),   q_i = max(c_r,i / n_r, eps),   c_r = c_l - c_s
    PSI = Σ_i (p_i - q_i) · ln(p_i / q_i)

``eps`` (default 1e-4) stands in for an empty bin's share, where the logarithm would be
infinite; a bin empty on both sides adds 0. No signal (NaN) below ``min_count`` values in
the short window or ``min_reference`` in the reference. See docs/drift.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from ragstream.drift._alarm import Latched
from ragstream.drift._common import F64

__all__ = ["EPSILON", "Psi", "PsiParams", "psi"]

EPSILON = 1e-4


def psi(
    short: npt.ArrayLike,
    long: npt.ArrayLike,
    *,
    eps: float = EPSILON,
    min_count: int = 1,
    min_reference: int = 1,
) -> F64:
    """PSI of histograms ``(..., bins)`` (the short window's and the long window's counts),
    over the leading dimensions; NaN where a side has fewer values than its floor. Raises
    ``ValueError`` if a long window's bin holds fewer values than the short window's."""
    c_s = np.asarray(short, dtype=np.float64)
    c_l = np.asarray(long, dtype=np.float64)
    if c_s.shape != c_l.shape or c_s.ndim == 0:
        raise ValueError("histograms must have the same shape (..., bins)")
    c_r = c_l - c_s
    if np.any(c_r < 0) or np.any(c_s < 0):
        raise ValueError("a long window's bin holds fewer values than its short window's")
    n_s = c_s.sum(axis=-1)
    n_r = c_r.sum(axis=-1)
    ok = (n_s >= max(min_count, 1)) & (n_r >= max(min_reference, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.maximum(c_s / n_s[..., None], eps)
        q = np.maximum(c_r / n_r[..., None], eps)
        value = ((p - q) * np.log(p / q)).sum(axis=-1)
    out: F64 = np.where(ok, value, np.nan)
    return out


@dataclass(frozen=True, slots=True)
class PsiParams:
    """The settings of a :class:`Psi` (and of a :class:`~ragstream.drift.PsiBank`)."""

    threshold: float
    min_count: int
    min_reference: int
    eps: float
    release: float


class Psi(Latched):
    """Alarm on the PSI between one metric's short-window and long-window histograms.

    ``update`` takes the two histograms at one evaluation (``(bins,)``) or at a series of
    evaluations in time order (``(T, bins)``). The alarm turns on at ``psi >= threshold``
    and off below ``release * threshold`` or when the volume goes under a floor. PSI is
    symmetric: it sees a change of shape in either direction, not which way the mean went.
    """

    kind: ClassVar[str] = "psi"
    params = PsiParams
    floor = 1

    __slots__ = ("eps",)

    def __init__(
        self,
        threshold: float,
        min_count: int,
        min_reference: int,
        eps: float,
        release: float,
    ) -> None:
        if not 0.0 < eps < 1.0:
            raise ValueError("eps must be in (0, 1)")
        self.eps = float(eps)
        self._start(threshold, min_count, min_reference, release)

    def statistic(self, short: npt.ArrayLike, long: npt.ArrayLike) -> F64:
        """`psi` with this detector's ``eps`` and volume floors."""
        return psi(
            short, long, eps=self.eps, min_count=self.min_count, min_reference=self.min_reference
        )

    def severity(self, value: F64) -> F64:
        """PSI in threshold units."""
        out: F64 = value / self.threshold
        return out
